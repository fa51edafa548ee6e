#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun boot` against the freestanding test guest (tests/guest).

Each scenario boots the guest with --test-device --console and checks two
things: every TAP line the guest printed over the serial port (each is
re-reported here, prefixed with the scenario), and the exit status that
says how the VM ended. Then the ways `kvrun boot` must refuse to start.
Needs /dev/kvm; skips loudly without it.
"""
import os
import re
import signal
import struct
import tempfile

import guestlib
from guestlib import EXIT_STATUS
from taplib import Tap

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
if not os.path.isfile(GUEST):
    t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={GUEST!r})")
    t.done()
t.diag(f"host: {guestlib.host_kind()} KVM, guest: {GUEST}")

# Generous: a guest run takes well under a second of guest time; this only
# bounds a hang.
VM_TIMEOUT_S = 60


def guest_args(test, cpus=1, mem="128M", extra="", timeout=VM_TIMEOUT_S, console="--console",
               test_device=True):
    cmdline = f"test={test} mem_expect={mem} {extra}".strip()
    return ["--kernel", GUEST] + (["--test-device"] if test_device else []) + [
        console, "--cpus", str(cpus), "--memory", mem, "--cmdline", cmdline, "--timeout", str(timeout)]


def check_guest_tap(name, r, must_pass=()):
    """Re-reports the guest's TAP lines and checks the plan, and that each
    line in must_pass (exact descriptions) is among the passed ones."""
    text = r.out + "\n" + r.err
    results, plan = guestlib.parse_tap(text)
    passed = {desc for ok, desc in results if ok}
    for ok, desc in results:
        t.ok(ok, f"{name}: guest: {desc}", r.describe())
    t.ok(plan is not None and plan == len(results) and plan > 0,
         f"{name}: guest printed a plan matching its {len(results)} results", r.describe())
    for want in must_pass:
        t.ok(want in passed, f"{name}: guest passed '{want}'", r.describe())
    return results


def run_scenario(name, test, status, cpus=1, mem="128M", extra="", must_pass=(), tap=True, more=()):
    r = guestlib.boot(guest_args(test, cpus, mem, extra) + list(more), timeout=VM_TIMEOUT_S + 30)
    t.diag(f"{name}: exit status {r.rc} in {r.elapsed:.2f} s")
    if tap:
        check_guest_tap(name, r, must_pass)
    t.eq(r.rc, status, f"{name}: exit status")
    return r


# Scenarios that report TAP and end through the exit port (0 = all passed).
r = run_scenario("basic 128M", "basic", EXIT_STATUS["guest-exit-0"], mem="128M", more=["--timings"],
                 must_pass=["e820: RAM total 0x7f9fc00 matches mem_expect 0x8000000",
                            "port: rep insb from an unclaimed port fills all ones"])
t.ok("# string-io: rep outsb reached the console" in r.out + r.err,
     "basic 128M: string I/O (rep outsb) reached the console", r.describe())
tm = guestlib.timings_of(r)
t.ok(tm is not None and tm.get("boot_marker_us") is not None and tm.get("result") == "guest-exit",
     "basic 128M: --timings saw the guest's boot marker", r.err[-2000:])
if tm:
    t.diag(f"basic 128M: timings {tm}")
run_scenario("basic 2G", "basic", EXIT_STATUS["guest-exit-0"], mem="2G",
             must_pass=["e820: RAM total 0x7ff9fc00 matches mem_expect 0x80000000"])
# 32 is the most vCPUs `kvrun boot` accepts (VM_MAX_CPUS).
for n in (1, 2, 4, 32):
    must = [f"smp: MP table lists {n} CPUs, the VMM created {n}"]
    if n > 1:
        must.append(f"smp: {n - 1} of {n - 1} APs online (atomic counter)")
    run_scenario(f"smp {n} vCPUs", "smp", EXIT_STATUS["guest-exit-0"], cpus=n, must_pass=must)
run_scenario("irq", "irq", EXIT_STATUS["guest-exit-0"],
             must_pass=["irq: test line delivered to the BSP (APIC id 0)",
                        "irq: 8250 THR-empty interrupt on GSI 4 (IIR 0x2)"])
run_scenario("irq 2 vCPUs", "irq", EXIT_STATUS["guest-exit-0"], cpus=2,
             must_pass=["irq: test line delivered to the AP with APIC id 1"])
run_scenario("mmio", "mmio", EXIT_STATUS["guest-exit-0"],
             must_pass=["mmio: test window reads return offset ^ 0x5a5a5a5a"])
run_scenario("all 2 vCPUs", "all", EXIT_STATUS["guest-exit-0"], cpus=2)

# Ways of ending the VM other than "all checks passed".
r = run_scenario("poweroff", "poweroff", EXIT_STATUS["guest-exit-0"], tap=False)
t.ok("powering off with exit code 0" in r.out + r.err, "poweroff: guest console reached the exit", r.describe())
run_scenario("poweroff code 3", "poweroff", EXIT_STATUS["guest-exit"](3), extra="exit_code=3", tap=False)
r = run_scenario("reset", "reset", EXIT_STATUS["reboot"], tap=False)
t.ok("resetting through the i8042" in r.out + r.err, "reset: guest console reached the reset", r.describe())
t.ok("not ok" not in r.out, "reset: the VM ended at the reset", r.describe())
r = run_scenario("reset via 0xcf9", "reset", EXIT_STATUS["reboot"], extra="reset_via=cf9", tap=False)
t.ok("resetting through port 0xcf9" in r.out + r.err, "reset via 0xcf9: guest console reached the reset",
     r.describe())
r = run_scenario("triplefault", "triplefault", EXIT_STATUS["triple-fault"], tap=False)
t.ok("loading an empty IDT" in r.out + r.err, "triplefault: guest console reached the fault", r.describe())
t.ok("not ok" not in r.out, "triplefault: the VM ended at the fault", r.describe())

# --console=FILE: the guest's output goes to the file, not to stderr.
with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "console.log")
    r = guestlib.boot(guest_args("mmio", console=f"--console={log}"), timeout=VM_TIMEOUT_S + 30)
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    results, plan = guestlib.parse_tap(text)
    t.ok(r.rc == 0 and plan and len(results) == plan and all(ok for ok, _ in results),
         "console file: guest TAP passed and landed in the file", r.describe() + "\nfile:\n" + text[-1500:])
    t.ok("ok 1 -" not in r.err, "console file: nothing of the guest's on stderr", r.describe())

# Without --test-device the exit port is not there: the guest's write does
# nothing, it halts, and only --timeout ends the VM.
r = guestlib.boot(guest_args("poweroff", timeout=3, test_device=False), timeout=60)
t.eq(r.rc, EXIT_STATUS["timeout"], "no --test-device: exit port absent, the VM ends on --timeout")
t.ok("powering off" in r.out + r.err, "no --test-device: guest reached its exit", r.describe())

# spin: ended by --timeout, then by SIGTERM; no kvrun process may be left.
before = guestlib.kvrun_pids()
r = guestlib.boot(guest_args("spin", cpus=2, timeout=2), timeout=60)
t.diag(f"spin --timeout 2: exit status {r.rc} in {r.elapsed:.2f} s")
t.eq(r.rc, EXIT_STATUS["timeout"], "spin --timeout 2: exit status says timeout")
t.ok(not r.timed_out and r.elapsed < 30, "spin --timeout 2: kvrun ended by itself", r.describe())
t.ok("spinning" in r.out + r.err, "spin --timeout 2: guest was running", r.describe())
t.eq(guestlib.kvrun_pids() - before, set(), "spin --timeout 2: no kvrun process left behind")

for sig in (signal.SIGTERM, signal.SIGINT):
    name = f"spin + {sig.name}"
    r = guestlib.boot(guest_args("spin", cpus=2), timeout=60, stop_signal=sig, wait_for="spinning",
                      stop_after=15)
    t.diag(f"{name}: exit status {r.rc} in {r.elapsed:.2f} s")
    t.eq(r.rc, EXIT_STATUS["signal"](sig), f"{name}: exit status says signal")
    t.ok(not r.timed_out, f"{name}: kvrun ended on the signal", r.describe())
    t.eq(guestlib.kvrun_pids() - before, set(), f"{name}: no kvrun process left behind")


# Refusals: each names the file and exits non-zero, without starting a VM.
def refuse(name, args, needle):
    r = guestlib.boot(args, timeout=60)
    t.eq(r.rc, EXIT_STATUS["error"], f"{name}: refused with the kvrun error status")
    t.ok(needle in r.err, f"{name}: error message names {needle}", r.describe())
    t.ok("ok 1 -" not in r.out + r.err, f"{name}: no guest ran", r.describe())


def patched_guest(tmp, name, data, edits):
    """A copy of the guest ELF with (offset, struct format, value) edits;
    offsets may be relative to the first program header ("ph+N")."""
    phoff, = struct.unpack_from("<Q", data, 32)
    buf = bytearray(data)
    for off, fmt, value in edits:
        if isinstance(off, str):
            off = phoff + int(off[3:])
        struct.pack_into(fmt, buf, off, value)
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(buf)
    return path


with tempfile.TemporaryDirectory() as tmp:
    garbage = os.path.join(tmp, "garbage-kernel")
    with open(garbage, "wb") as f:
        f.write(b"this is not a kernel\n" * 200)
    refuse("garbage kernel", ["--kernel", garbage, "--test-device", "--timeout", "10"], garbage)

    truncated = os.path.join(tmp, "truncated-guest")
    with open(GUEST, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[: guestlib.elf_load_midpoint(data)])
    refuse("truncated ELF", ["--kernel", truncated, "--test-device", "--timeout", "10"], truncated)

    missing = os.path.join(tmp, "no-such-kernel")
    refuse("missing kernel", ["--kernel", missing, "--test-device", "--timeout", "10"], missing)

    # Kernel files are input too: nothing in them may make kvrun write
    # outside guest RAM, over its boot structures, or crash.
    refuse("guest larger than RAM", ["--kernel", GUEST, "--memory", "16M", "--test-device", "--timeout", "10"],
           GUEST)
    for name, edits in (
        ("p_paddr near 2^64", [("ph+24", "<Q", 0xfffffffffffff000)]),
        ("p_paddr in the MMIO hole", [("ph+24", "<Q", 0xd0000000)]),
        ("p_memsz near 2^64", [("ph+40", "<Q", 0xffffffffffff0000)]),
        ("p_paddr 0 (over the boot structures)", [("ph+24", "<Q", 0)]),
        ("e_phnum 65535", [(56, "<H", 0xffff)]),
        ("e_phoff past the end", [(32, "<Q", 0xfffffffffffffff0)]),
    ):
        path = patched_guest(tmp, re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"), data, edits)
        refuse(f"ELF with {name}", ["--kernel", path, "--test-device", "--timeout", "10"], path)

    no_initrd = os.path.join(tmp, "no-such-initrd")
    refuse("missing initrd", ["--kernel", GUEST, "--initrd", no_initrd, "--test-device", "--timeout", "10"],
           no_initrd)

t.done()
