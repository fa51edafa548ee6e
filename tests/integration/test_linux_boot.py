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

The ACPI part boots kvrun's own kernel ($KVRUN_TEST_KVRUN_KERNEL, else
/usr/local/share/kvrun/kernel/vmlinux from `scripts/setup.sh --kernel`)
with `kvrun boot --acpi` and a small virtio-blk disk (`--disk`) that the
kernel can only find through the DSDT; its /init checks /sys/block/vda and
the ACPI devices, then powers off, which must end the VM through the FADT
sleep register (exit 0). On native KVM it also runs without --acpi (the
disk then comes from virtio_mmio.device= on the command line) and with 1,
2 and 4 vCPUs; on a kvm_pvm host one ACPI boot (1 vCPU) runs.

KVRUN_TEST_LINUX_PARTS (comma-separated "mp", "acpi"; default both)
selects the parts.
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

ACPI_INIT = r"""#!/bin/sh
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
vda=no
[ -e /sys/block/vda ] && vda=yes
sectors=$($bb cat /sys/block/vda/size 2>/dev/null || echo 0)
tables=no
[ -e /sys/firmware/acpi/tables/DSDT ] && tables=yes
cpus=$($bb grep -c '^processor' /proc/cpuinfo)
echo "KVRUN-ACPI-MARKER cpus=$cpus vda=$vda sectors=$sectors dsdt=$tables"
echo "KVRUN-ACPI-DEVICES $($bb ls /sys/bus/acpi/devices 2>/dev/null | $bb tr '\n' ' ')"
case " $($bb cat /proc/cmdline) " in
*" kvrun_action=reboot "*) $bb reboot -f ;;
*) $bb poweroff -f ;;
esac
"""
ACPI_RE = re.compile(r"KVRUN-ACPI-MARKER cpus=(\d+) vda=(\w+) sectors=(\d+) dsdt=(\w+)")
DISK_BYTES = 4 << 20

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
if not os.path.isfile(guestlib.busybox_path()):
    t.skip_all(f"no static busybox at {guestlib.busybox_path()} (install busybox-static)")
parts = set(os.environ.get("KVRUN_TEST_LINUX_PARTS", "mp,acpi").split(","))
kernel, tried = guestlib.find_kernel()
kvrun_kernel = os.environ.get("KVRUN_TEST_KVRUN_KERNEL", "/usr/local/share/kvrun/kernel/vmlinux")
if "mp" in parts and not kernel and "acpi" in parts and not os.path.isfile(kvrun_kernel):
    t.skip_all(f"no Linux guest kernel: tried {', '.join(tried)} and {kvrun_kernel}; "
               "set KVRUN_TEST_KERNEL to a vmlinux, or build kvrun's kernel with `scripts/setup.sh --kernel`")

kind = guestlib.host_kind()


def skip(what, reason):
    t.diag(f"SKIP {what}: {reason}")
    t.ok(True, f"{what} # SKIP {reason}")


def kernel_has_acpi_config(path):
    config = os.path.join(os.path.dirname(path), "config")
    return os.path.isfile(config) and "CONFIG_ACPI=y" in open(config).read()


def report(name, r, mark):
    t.diag(f"{name}: exit status {r.rc} after {r.elapsed:.1f} s (wall, whole kvrun run)")
    if mark in r.seen:
        t.diag(f"{name}: /init marker on the console {r.seen[mark]:.1f} s after kvrun started")
    tm = guestlib.timings_of(r)
    if tm:
        t.diag(f"{name}: kvrun timings: setup {tm.get('setup_us', 0) / 1000:.1f} ms, "
               f"total {tm.get('total_us', 0) / 1e6:.1f} s, RSS {tm.get('rss_kib')} KiB "
               f"(monitor {tm.get('monitor_rss_kib')} KiB), result {tm.get('result')}")


def run_mp_part():
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

    # Without ACPI tables (no --acpi; kvrun adds acpi=off) the kernel cannot
    # power off: reboot(POWER_OFF) returns, init exits, the kernel panics
    # and panic=-1 resets through the i8042.
    expected_status = EXIT_STATUS["reboot"]

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
            report(name, r, "KVRUN-LINUX-MARKER")
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
            t.eq(r.rc, expected_status, f"{name}: exit status")


def run_acpi_part():
    if not os.path.isfile(kvrun_kernel):
        skip("linux ACPI boot", f"kvrun's kernel {kvrun_kernel} is missing: build it with "
             "`scripts/setup.sh --kernel` (or set KVRUN_TEST_KVRUN_KERNEL)")
        return
    if not kernel_has_acpi_config(kvrun_kernel):
        skip("linux ACPI boot", f"{kvrun_kernel}: no config with CONFIG_ACPI=y beside it")
        return
    if kind == "pvm":
        matrix = [(1, True)]
        t.diag("kvm_pvm host: kvrun's kernel runs emulated (3-6 min per boot here); running one ACPI boot")
        t.diag("(1 vCPU, --acpi, one virtio-blk disk); the full matrix (with and without --acpi, 1/2/4 vCPUs)")
        t.diag("runs on native KVM hosts")
        vm_timeout = 1000
    else:
        matrix = [(c, acpi) for acpi in (True, False) for c in (1, 2, 4)]
        vm_timeout = 120
    t.diag(f"host: {kind} KVM, kvrun's kernel: {kvrun_kernel}")
    with tempfile.TemporaryDirectory() as tmp:
        initrd = os.path.join(tmp, "initramfs.cpio")
        guestlib.write_initramfs(initrd, ACPI_INIT)
        disk = os.path.join(tmp, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(DISK_BYTES)
        for cpus, acpi in matrix:
            name = f"kvrun kernel {cpus} vCPU {'--acpi' if acpi else 'no ACPI'} with a disk"
            # Without tables the kernel cannot power off (it would halt):
            # /init reboots instead.
            cmdline = guestlib.linux_cmdline(kind) + ("" if acpi else " kvrun_action=reboot")
            args = ["--kernel", kvrun_kernel, "--initrd", initrd, "--cmdline", cmdline,
                    "--cpus", str(cpus), "--memory", "256M", "--disk", disk + ",ro", "--console",
                    "--timeout", str(vm_timeout), "--timings"]
            if acpi:
                args.append("--acpi")
            r = guestlib.boot(args, timeout=vm_timeout + 60, marks=["KVRUN-ACPI-MARKER"])
            text = r.out + "\n" + r.err
            report(name, r, "KVRUN-ACPI-MARKER")
            m = ACPI_RE.search(text)
            if not t.ok(m is not None, f"{name}: /init ran and printed its marker", r.describe()):
                continue
            devs = re.search(r"KVRUN-ACPI-DEVICES (.*)", text)
            t.diag(f"{name}: ACPI devices: {devs.group(1).strip() if devs else '?'}")
            t.eq(int(m.group(1)), cpus, f"{name}: processors in /proc/cpuinfo")
            t.eq(m.group(2), "yes", f"{name}: the disk appeared as /sys/block/vda")
            t.eq(int(m.group(3)), DISK_BYTES // 512, f"{name}: vda has the image's size in sectors")
            t.eq(m.group(4), "yes" if acpi else "no", f"{name}: DSDT in /sys/firmware/acpi/tables")
            if acpi:
                t.ok(devs is not None and "LNRO0005:00" in devs.group(1),
                     f"{name}: the disk's LNRO0005 device came from the DSDT", r.describe())
                t.eq(r.rc, EXIT_STATUS["poweroff"], f"{name}: poweroff -f ends the VM through ACPI S5")
            else:
                t.eq(r.rc, EXIT_STATUS["reboot"], f"{name}: reboot -f ends the VM through the i8042")


if "mp" in parts:
    if kernel:
        run_mp_part()
    else:
        skip("linux MP-table boot", f"no Linux guest kernel: tried {', '.join(tried)}; "
             "set KVRUN_TEST_KERNEL to a vmlinux")
if "acpi" in parts:
    run_acpi_part()
t.done()
