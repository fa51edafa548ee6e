#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""VM snapshot and restore with `kvrun boot` and the test guest.

The guest (test=snapshot) writes a memory pattern, loads known values into
its callee-saved and XMM registers, asks for a snapshot through the test
device and, once it runs again, checks all of that plus interrupts and (with
2 vCPUs) that the AP is still counting. It prints TAP across the two
processes: the lines before the snapshot come from the saving process, the
rest (and the plan) from each restoring one, so their concatenation must be
a complete, passing TAP stream.

Then broken snapshot files: a byte flipped in each section, a flipped
header, a truncated file, a wrong format version, a file that is no
snapshot, a missing file, a device mismatch, and an unwritable target; each
is refused with exit status 125 (or the guest told so), a message naming the
problem, and nothing left behind.
"""
import os
import struct
import tempfile

import guestlib
from taplib import Tap

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
if not os.path.isfile(GUEST):
    t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={GUEST!r})")
    t.done()

VM_TIMEOUT_S = 60
HEADER_FMT = "<8sII64s16sIIIIQQII"
SECTION_FMT = "<16sQQII"
SEC_MEMORY = 0x2


def save(path, cpus=1, mem="64M", stop=True, extra=()):
    args = ["--kernel", GUEST, "--test-device", "--console", "--cpus", str(cpus), "--memory", mem,
            "--cmdline", f"test=snapshot mem_expect={mem} snap_fill=8M", "--timeout", str(VM_TIMEOUT_S),
            "--snapshot-on-port", path, "--timings"] + (["--snapshot-stop"] if stop else []) + list(extra)
    return guestlib.boot(args, timeout=VM_TIMEOUT_S + 30)


def restore(path, extra=("--test-device",)):
    args = ["--restore", path, "--console", "--timeout", str(VM_TIMEOUT_S), "--timings"] + list(extra)
    return guestlib.boot(args, timeout=VM_TIMEOUT_S + 30)


def check_tap(name, text, r, want_restored):
    results, plan = guestlib.parse_tap(text)
    bad = [d for ok, d in results if not ok]
    t.ok(results and not bad, f"{name}: every guest check passed ({len(results)})",
         r.describe() + ("\nfailed: " + "; ".join(bad) if bad else ""))
    t.ok(plan is not None and plan == len(results), f"{name}: guest TAP plan matches its {len(results)} lines",
         r.describe())
    where = "restored VM" if want_restored else "saved VM"
    t.ok(f"running in the {where}" in text, f"{name}: guest says it runs in the {where}", r.describe())
    return results


def listing(d):
    return sorted(os.listdir(d))


def read_header(path):
    with open(path, "rb") as f:
        data = f.read(4096)
    fields = struct.unpack_from(HEADER_FMT, data)
    nsec = fields[11]
    off = struct.calcsize(HEADER_FMT)
    secs = []
    for i in range(nsec):
        name, s_off, s_len, crc, flags = struct.unpack_from(SECTION_FMT, data, off + i * struct.calcsize(SECTION_FMT))
        secs.append((name.rstrip(b"\0").decode(), s_off, s_len, flags))
    return fields, secs


def refused(name, path, want, extra=("--test-device",)):
    d = os.path.dirname(path)
    before = listing(d)
    r = restore(path, extra)
    t.eq(r.rc, guestlib.EXIT_STATUS["error"], f"{name}: refused with exit status 125")
    t.ok(want in r.err, f"{name}: message says '{want}'", r.describe())
    t.ok("ok " not in r.out + r.err, f"{name}: the guest never ran", r.describe())
    t.eq(listing(d), before, f"{name}: nothing left behind")


with tempfile.TemporaryDirectory(prefix="kvrun-snap-") as tmp:
    snap = os.path.join(tmp, "vm.snap")

    # Save and stop, then restore several times from the one file.
    r = save(snap)
    t.eq(r.rc, 0, "save: kvrun boot --snapshot-on-port --snapshot-stop ends with status 0")
    t.ok(os.path.isfile(snap), "save: snapshot file written", r.describe())
    t.eq(listing(tmp), ["vm.snap"], "save: no temporary files left")
    t.ok("snapshot written to" in r.err, "save: says the snapshot was written", r.describe())
    tm = guestlib.timings_of(r) or {}
    t.ok(tm.get("snapshot_us", 0) > 0 and tm.get("snapshot_bytes", 0) > 0,
         "save: --timings reports snapshot_us and snapshot_bytes", r.err[-1500:])
    t.diag(f"save: {tm.get('snapshot_us')} us, {tm.get('snapshot_bytes')} bytes written, "
           f"{tm.get('snapshot_mem_pages')} pages, file {os.path.getsize(snap)} bytes apparent, "
           f"{os.stat(snap).st_blocks * 512} on disk")
    before_snap = r.out + r.err
    pre, _ = guestlib.parse_tap(before_snap)
    t.ok(pre and all(ok for ok, _ in pre), f"save: the {len(pre)} guest checks before the snapshot passed",
         r.describe())
    for i in range(3):
        rr = restore(snap)
        t.eq(rr.rc, 0, f"restore #{i + 1}: guest ends with status 0")
        check_tap(f"restore #{i + 1}", before_snap + "\n" + rr.out + rr.err, rr, True)
        tmr = guestlib.timings_of(rr) or {}
        t.ok("restore_us" in tmr, f"restore #{i + 1}: --timings reports restore_us", rr.err[-1500:])
        t.diag(f"restore #{i + 1}: restore_us {tmr.get('restore_us')}, load {tmr.get('restore_load_us')} us, "
               f"{rr.elapsed:.2f} s in all")
    rr = restore(snap, ("--test-device", "--restore-trust-memory"))
    t.eq(rr.rc, 0, "restore --restore-trust-memory: guest ends with status 0")

    # Save and go on: the saved VM passes the same checks; its file restores.
    snap2 = os.path.join(tmp, "cont.snap")
    r = save(snap2, stop=False)
    t.eq(r.rc, 0, "save and continue: guest ends with status 0")
    check_tap("save and continue", r.out + r.err, r, False)
    rr = restore(snap2)
    t.eq(rr.rc, 0, "save and continue: its snapshot restores, status 0")
    pre = (r.out + r.err).split("requesting a snapshot")[0]
    check_tap("save and continue, restored", pre + "\n" + rr.out + rr.err, rr, True)
    os.unlink(snap2)

    # Two vCPUs: the AP keeps counting and takes interrupts after restore.
    snap3 = os.path.join(tmp, "smp.snap")
    r = save(snap3, cpus=2)
    t.eq(r.rc, 0, "2 vCPUs: saved")
    rr = restore(snap3)
    t.eq(rr.rc, 0, "2 vCPUs: restored guest ends with status 0")
    results = check_tap("2 vCPUs", r.out + r.err + "\n" + rr.out + rr.err, rr, True)
    passed = {d for ok, d in results if ok}
    t.ok("snapshot: 1 APs still counting" in passed, "2 vCPUs: AP still counting after restore", rr.describe())
    t.ok("snapshot: test interrupt delivered to AP 1" in passed, "2 vCPUs: AP takes interrupts after restore",
         rr.describe())
    os.unlink(snap3)

    # Broken files, each in its own copy.
    with open(snap, "rb") as f:
        good = f.read()
    fields, secs = read_header(snap)
    bad = os.path.join(tmp, "bad.snap")

    def write_bad(data):
        with open(bad, "wb") as f:
            f.write(data)

    memmap = next(s for s in secs if s[0] == "memmap")
    first_page, _ = struct.unpack_from("<QQ", good, memmap[1])
    for name, off, length, flags in secs:
        if flags & SEC_MEMORY:
            pos = off + first_page * 4096 + 100  # inside a stored page
        else:
            pos = off + length // 2
        data = bytearray(good)
        data[pos] ^= 0x40
        write_bad(data)
        refused(f"byte flipped in section '{name}'", bad, f"section '{name}' checksum mismatch")
    data = bytearray(good)
    data[20] ^= 0x01  # inside the build string
    write_bad(data)
    refused("byte flipped in the header", bad, "header checksum mismatch")
    for cut in (len(good) // 2, len(good) - 1, 2000):
        write_bad(good[:cut])
        refused(f"truncated to {cut} bytes", bad, "truncated")
    data = bytearray(good)
    struct.pack_into("<I", data, 8, 99)
    write_bad(data)
    refused("format version 99", bad, "format version 99, this kvrun reads version 1")
    write_bad(b"\x7fELF" + bytes(8000))
    refused("not a snapshot", bad, "not a kvrun snapshot")
    os.unlink(bad)
    refused("missing file", os.path.join(tmp, "missing.snap"), "No such file or directory")
    refused("restored without --test-device", snap, "device 'test-device'", extra=())

    # A snapshot that cannot be written: the guest hears so, nothing is left.
    nodir = os.path.join(tmp, "no-such-dir", "x.snap")
    before = listing(tmp)
    r = save(nodir)
    t.eq(r.rc, guestlib.EXIT_STATUS["crash"], "unwritable target with --snapshot-stop: VM ends as a crash (122)")
    t.ok("cannot create snapshot file" in r.err, "unwritable target: message names the problem", r.describe())
    t.eq(listing(tmp), before, "unwritable target: nothing left behind")
    r = save(nodir, stop=False)
    results, _ = guestlib.parse_tap(r.out + r.err)
    t.ok(any(not ok and "took the snapshot (status 4)" in d for ok, d in results),
         "unwritable target, going on: the guest is told the snapshot failed", r.describe())

t.done()
