#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Boots a real Linux kernel with `kvrun boot` and a test initramfs
(busybox-static, built here): /init mounts /proc, prints a marker with the
processors it sees in /proc/cpuinfo and MemTotal, then ends the VM the way
the test asks (kvrun_action=reboot|poweroff|panic on the command line).

Kernel: $KVRUN_TEST_KERNEL, else ../shared/guest-kernel/vmlinux beside the
source tree; skips loudly when there is none. On native KVM the full matrix
runs (1, 2, 4 vCPUs x 128 MiB, 2 GiB, and each way of ending). On a kvm_pvm
host guest kernel code is emulated (~2 minutes per boot) and the kernel
needs one vCPU, so one representative boot runs there.
"""
import os
import re
import tempfile

import guestlib
from guestlib import EXIT_STATUS
from taplib import Tap

INIT = r"""#!/bin/sh
bb=/bin/busybox
$bb mount -t proc proc /proc
action=reboot
for w in $($bb cat /proc/cmdline); do
	case "$w" in kvrun_action=*) action="${w#kvrun_action=}" ;; esac
done
cpus=$($bb grep -c '^processor' /proc/cpuinfo)
mem=$($bb awk '/^MemTotal:/ {print $2}' /proc/meminfo)
up=$($bb cut -d' ' -f1 /proc/uptime)
echo "KVRUN-LINUX-MARKER cpus=$cpus memtotal_kb=$mem uptime=$up action=$action"
case "$action" in
poweroff) $bb poweroff -f ;;
panic) echo "KVRUN-LINUX-PANIC"; exit 1 ;;
*) $bb reboot -f ;;
esac
"""
MARKER_RE = re.compile(r"KVRUN-LINUX-MARKER cpus=(\d+) memtotal_kb=(\d+) uptime=([\d.]+) action=(\w+)")
MEM = {"128M": 128 << 20, "2G": 2 << 30}

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
kernel, tried = guestlib.find_kernel()
if not kernel:
    t.skip_all(f"no Linux guest kernel: tried {', '.join(tried)}; set KVRUN_TEST_KERNEL to a vmlinux")
if not os.path.isfile(guestlib.busybox_path()):
    t.skip_all(f"no static busybox at {guestlib.busybox_path()} (install busybox-static)")

kind = guestlib.host_kind()
config = os.path.join(os.path.dirname(kernel), "config")
kernel_has_acpi = os.path.isfile(config) and "CONFIG_ACPI=y" in open(config).read()
if kind == "pvm":
    # CPL0 guest code is emulated here: a boot takes about 2 minutes.
    matrix = [(1, "128M", "reboot")]
    t.diag("kvm_pvm host: the guest kernel runs emulated (~2 min per boot) and needs one vCPU;")
    t.diag("running one representative boot (1 vCPU, 128 MiB, reboot); the full matrix runs on native KVM")
    vm_timeout = 900
else:
    matrix = [(c, m, "poweroff") for c in (1, 2, 4) for m in ("128M", "2G")]
    matrix += [(1, "128M", "reboot"), (2, "128M", "panic")]
    vm_timeout = 120
t.diag(f"host: {kind} KVM, kernel: {kernel}")


def expected_status(action):
    # Without ACPI the kernel cannot power off: reboot(POWER_OFF) returns,
    # init exits, the kernel panics and panic=-1 resets through the i8042.
    if action == "poweroff" and kernel_has_acpi:
        return EXIT_STATUS["poweroff"]
    return EXIT_STATUS["reboot"]


with tempfile.TemporaryDirectory() as tmp:
    initrd = os.path.join(tmp, "initramfs.cpio")
    guestlib.write_initramfs(initrd, INIT)
    t.diag(f"initramfs: {os.path.getsize(initrd)} bytes (busybox-static, uncompressed newc)")
    for cpus, mem, action in matrix:
        name = f"linux {cpus} vCPU {mem} {action}"
        cmdline = f"{guestlib.linux_cmdline(kind)} kvrun_action={action}"
        args = ["--kernel", kernel, "--initrd", initrd, "--cmdline", cmdline, "--cpus", str(cpus),
                "--memory", mem, "--console", "--timeout", str(vm_timeout), "--timings"]
        r = guestlib.boot(args, timeout=vm_timeout + 60, marks=["KVRUN-LINUX-MARKER"])
        text = r.out + "\n" + r.err
        t.diag(f"{name}: exit status {r.rc} after {r.elapsed:.1f} s (wall, whole kvrun run)")
        if "KVRUN-LINUX-MARKER" in r.seen:
            t.diag(f"{name}: /init marker on the console {r.seen['KVRUN-LINUX-MARKER']:.1f} s after kvrun started")
        tm = guestlib.timings_of(r)
        if tm:
            t.diag(f"{name}: kvrun timings: setup {tm.get('setup_us', 0) / 1000:.1f} ms, "
                   f"total {tm.get('total_us', 0) / 1e6:.1f} s, RSS {tm.get('rss_kib')} KiB "
                   f"(monitor {tm.get('monitor_rss_kib')} KiB), result {tm.get('result')}")
        m = MARKER_RE.search(text)
        if not t.ok(m is not None, f"{name}: /init ran and printed its marker", r.describe()):
            continue
        t.diag(f"{name}: guest uptime at marker {m.group(3)} s")
        t.eq(int(m.group(1)), cpus, f"{name}: processors in /proc/cpuinfo")
        mem_kb = int(m.group(2))
        t.ok(MEM[mem] // 2048 < mem_kb <= MEM[mem] // 1024,
             f"{name}: MemTotal {mem_kb} kB fits {mem} of RAM", f"MemTotal {mem_kb} kB")
        t.eq(m.group(4), action, f"{name}: /init saw kvrun_action")
        if action == "panic":
            t.ok("Kernel panic" in text, f"{name}: kernel panicked when init exited", r.describe())
        t.eq(r.rc, expected_status(action), f"{name}: exit status")

t.done()
