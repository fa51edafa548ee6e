#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun boot --acpi` against the freestanding test guest (test=acpi).

The guest finds the RSDP (BIOS-area scan and boot_params.acpi_rsdp_addr),
checks the checksums of RSDP, XSDT, FADT, MADT and DSDT, counts the MADT's
local APICs against the vCPUs, the DSDT's virtio-mmio devices against the
--disk options, and then writes SLP_TYP|SLP_EN to the FADT's sleep control
register: the VM must end as a power-off (exit 0, result "poweroff"), or,
with acpi_action=reset, as a reboot through RESET_REG. Without --acpi the
same scenario must fail. Needs /dev/kvm; skips loudly without it.
"""
import os
import re
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
VM_TIMEOUT_S = 60


def run(name, cpus=1, disks=(), acpi=True, extra=""):
    cmdline = f"test=acpi acpi_virtio={len(disks)} {extra}".strip()
    args = ["--kernel", GUEST, "--test-device", "--console", "--timings", "--cpus", str(cpus),
            "--memory", "128M", "--cmdline", cmdline, "--timeout", str(VM_TIMEOUT_S)]
    for d in disks:
        args += ["--disk", d]
    if acpi:
        args.append("--acpi")
    r = guestlib.boot(args, timeout=VM_TIMEOUT_S + 30)
    t.diag(f"{name}: exit status {r.rc} in {r.elapsed:.2f} s")
    return r


def check_pass(name, r, want_rc, want_result):
    text = r.out + "\n" + r.err
    results, plan = guestlib.parse_tap(text)
    for ok, desc in results:
        t.ok(ok, f"{name}: guest: {desc}", r.describe())
    t.ok(plan is not None and plan == len(results) and plan > 0,
         f"{name}: guest printed a plan matching its {len(results)} results", r.describe())
    t.eq(r.rc, want_rc, f"{name}: exit status")
    tm = guestlib.timings_of(r)
    t.eq(tm.get("result") if tm else None, want_result, f"{name}: kvrun saw the VM end as {want_result}")
    return results


with tempfile.TemporaryDirectory() as tmp:
    disks = []
    for i in range(2):
        path = os.path.join(tmp, f"disk{i}.img")
        with open(path, "wb") as f:
            f.truncate(1 << 20)
        disks.append(path)

    r = run("acpi 1 vCPU")
    results = check_pass("acpi 1 vCPU", r, EXIT_STATUS["poweroff"], "poweroff")
    t.ok(any("MADT has 1 enabled local APICs for 1 vCPUs" in d for ok, d in results if ok),
         "acpi 1 vCPU: the MADT count was checked", r.describe())
    t.ok("writing SLP_TYP 5 | SLP_EN" in r.out + r.err, "acpi 1 vCPU: the guest wrote S5 to the sleep register",
         r.describe())

    r = run("acpi 2 vCPUs 1 disk", cpus=2, disks=disks[:1])
    results = check_pass("acpi 2 vCPUs 1 disk", r, EXIT_STATUS["poweroff"], "poweroff")
    t.ok(any("DSDT describes 1 virtio-mmio devices" in d for ok, d in results if ok),
         "acpi 2 vCPUs 1 disk: the disk is in the DSDT", r.describe())

    r = run("acpi 4 vCPUs 2 disks", cpus=4, disks=[disks[0], disks[1] + ",ro"])
    results = check_pass("acpi 4 vCPUs 2 disks", r, EXIT_STATUS["poweroff"], "poweroff")
    t.ok(any("MADT has 4 enabled local APICs for 4 vCPUs" in d for ok, d in results if ok)
         and any("DSDT describes 2 virtio-mmio devices" in d for ok, d in results if ok),
         "acpi 4 vCPUs 2 disks: 4 local APICs and 2 devices", r.describe())

    r = run("acpi reset", extra="acpi_action=reset")
    check_pass("acpi reset", r, EXIT_STATUS["reboot"], "reboot")
    t.ok("writing 0x1 to RESET_REG 0x600" in r.out + r.err, "acpi reset: the guest wrote RESET_REG",
         r.describe())

    # Without --acpi there are no tables: the scenario must fail (exit 1
    # through the test device), which shows that it can.
    r = run("no --acpi", disks=disks[:1], acpi=False)
    text = r.out + "\n" + r.err
    results, plan = guestlib.parse_tap(text)
    t.ok(("acpi: RSDP found by scanning 0xe0000-0xfffff" in {d for ok, d in results if not ok}),
         "no --acpi: the guest found no RSDP", r.describe())
    t.ok(any(not ok and d.startswith("acpi: LINT0 masked") for ok, d in results),
         "no --acpi: LINT0 stays unmasked (ExtINT) for MP-table boots", r.describe())
    t.eq(r.rc, EXIT_STATUS["guest-exit"](1), "no --acpi: exit status 1 (checks failed)")

    # The command line the guest got: device fragments and acpi=off without
    # --acpi, the caller's words alone with it.
    for acpi in (False, True):
        name = "cmdline " + ("--acpi" if acpi else "no --acpi")
        args = ["--kernel", GUEST, "--test-device", "--console", "--memory", "128M", "--disk", disks[0],
                "--cmdline", "test=basic mem_expect=128M", "--timeout", str(VM_TIMEOUT_S)]
        r = guestlib.boot(args + (["--acpi"] if acpi else []), timeout=VM_TIMEOUT_S + 30)
        m = re.search(r"# cmdline: (.*)", r.out + r.err)
        line = m.group(1).strip() if m else ""
        t.diag(f"{name}: guest command line: {line!r}")
        if acpi:
            t.eq(line, "test=basic mem_expect=128M", f"{name}: the command line is the caller's alone")
        else:
            t.ok(re.fullmatch(r"test=basic mem_expect=128M virtio_mmio\.device=4K@0xd0001000:\d+ acpi=off", line),
                 f"{name}: the disk as virtio_mmio.device= and acpi=off appended", r.describe())
        t.eq(r.rc, EXIT_STATUS["guest-exit-0"], f"{name}: basic checks passed")

    # What --acpi refuses.
    r = guestlib.boot(["--restore", os.path.join(tmp, "none.snap"), "--acpi"], timeout=30)
    t.ok(r.rc == EXIT_STATUS["error"] and "--acpi" in r.err, "--acpi with --restore is refused", r.describe())
    r = guestlib.boot(["--kernel", GUEST, "--disk", disks[0] + ",rw"], timeout=30)
    t.ok(r.rc == EXIT_STATUS["error"] and "unknown option 'rw'" in r.err, "--disk PATH,rw is refused",
         r.describe())
    r = guestlib.boot(["--kernel", GUEST, "--disk", os.path.join(tmp, "missing.img"), "--test-device"],
                      timeout=30)
    t.ok(r.rc == EXIT_STATUS["error"] and "missing.img" in r.err, "--disk with a missing image is an error",
         r.describe())
t.done()
