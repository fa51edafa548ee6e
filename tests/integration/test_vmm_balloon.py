#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Guest RAM costs the host only what the guest touched, and virtio-balloon
gives back what the guest frees: the freestanding test guest (tests/guest
virtio-balloon.c) under `kvrun boot --balloon --timings`, whose JSON line
reports the resident size of the guest RAM mapping (guest_rss_kib) when the
VM ends.

- 2 GiB of RAM, a guest that touches almost nothing: the mapping stays
  small (KVM's memory slot and the VMM populate nothing).
- 256 MiB written by the guest, then reported free (free page reporting,
  2 MiB blocks): every page reads zero in the guest, and the mapping holds
  far less than 256 MiB at the end; the same guest keeping its pages
  (balloon_keep=1) holds them, so the figure is no accident.
- Inflate and deflate, a report outside RAM (DEVICE_NEEDS_RESET, then a
  reset): the guest's own TAP lines.
- Snapshot: half the pages reported, a snapshot, the rest written again
  and reported: the file stores only the pages not given back, and the VM
  restored from it (with --balloon) serves its balloon's queues; without
  --balloon the restore is refused naming the device.

Needs /dev/kvm; skips loudly without it.
"""
import os
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

VM_TIMEOUT_S = 120
MIB = 1024


def boot(name, cmdline, memory="512M", extra=(), status=0, ends=True):
    """A run's guest TAP lines, exit status and --timings; ends: the guest
    runs to its plan (not stopped at a snapshot)."""
    args = ["--kernel", GUEST, "--test-device", "--console", "--memory", memory, "--timings",
            "--cmdline", cmdline, "--timeout", str(VM_TIMEOUT_S)] + list(extra)
    r = guestlib.boot(args, timeout=VM_TIMEOUT_S + 30)
    results, plan = guestlib.parse_tap(r.out + "\n" + r.err)
    for ok, desc in results:
        t.ok(ok, f"{name}: guest: {desc}", r.describe())
    if ends:
        t.ok(plan is not None and plan == len(results) and plan > 0,
             f"{name}: guest printed a plan matching its {len(results)} results", r.describe())
    else:
        t.ok(plan is None and len(results) >= 13, f"{name}: stopped at the snapshot after {len(results)} checks",
             r.describe())
    t.ok(r.rc == status, f"{name}: exit status {r.rc} (expected {status})", r.describe())
    tm = guestlib.timings_of(r) or {}
    t.ok("guest_rss_kib" in tm, f"{name}: --timings reports guest_rss_kib", r.describe())
    return r, tm


before = guestlib.kvrun_pids()

_, tm = boot("lazy 2 GiB", "test=basic", memory="2G")
rss = tm.get("guest_rss_kib", 1 << 40)
t.diag(f"lazy 2 GiB: guest RAM resident at the end: {rss} KiB")
t.ok(rss < 32 * MIB, f"lazy 2 GiB: a guest touching little costs little ({rss} KiB < 32 MiB)")

_, tm = boot("report 256M", "test=virtio-balloon balloon_fill=256M", extra=["--balloon"])
given = tm.get("guest_rss_kib", 1 << 40)
t.diag(f"report 256M: guest RAM resident at the end: {given} KiB")
t.ok(given < 64 * MIB, f"report 256M: the reported memory went back to the host ({given} KiB < 64 MiB)")

_, tm = boot("keep 256M", "test=virtio-balloon balloon_fill=256M balloon_keep=1", extra=["--balloon"])
kept = tm.get("guest_rss_kib", 0)
t.diag(f"keep 256M: guest RAM resident at the end: {kept} KiB")
t.ok(kept >= 256 * MIB, f"keep 256M: the same pages kept are resident ({kept} KiB >= 256 MiB)")

with tempfile.TemporaryDirectory() as tmp:
    snap = os.path.join(tmp, "balloon.snap")
    r, tm = boot("snapshot", "test=virtio-balloon balloon_fill=128M balloon_snapshot=1",
                 extra=["--balloon", "--snapshot-on-port", snap, "--snapshot-stop"], ends=False)
    pages = tm.get("snapshot_mem_pages", 0)
    t.diag(f"snapshot: {pages} guest pages stored, {tm.get('snapshot_bytes')} bytes written")
    # 128 MiB written, 64 MiB of it reported before the save: the other 64
    # MiB (16384 pages) and the guest's own few pages are stored.
    t.ok(16384 <= pages < 16384 + 1024, f"snapshot: the pages given back are not stored ({pages} pages)",
         r.describe())
    rr = guestlib.boot(["--restore", snap, "--test-device", "--console", "--balloon", "--timeout",
                        str(VM_TIMEOUT_S)], timeout=VM_TIMEOUT_S + 30)
    results, plan = guestlib.parse_tap(rr.out + "\n" + rr.err)
    after = [(ok, d) for ok, d in results if "restored VM" in d or "after it" in d or "snapshot's content" in d
             or "every report used" in d or "before the snapshot" in d]
    for ok, desc in after:
        t.ok(ok, f"restored: guest: {desc}", rr.describe())
    t.ok(len(after) == 5, f"restored: the guest's 5 checks after the snapshot ran ({len(after)})", rr.describe())
    # The lines before the snapshot came from the saving process: the plan
    # counts them too, and status 0 says every check of the run passed.
    t.ok(rr.rc == 0 and plan is not None and plan > len(results), f"restored: exit status {rr.rc}, plan {plan}",
         rr.describe())
    rr = guestlib.boot(["--restore", snap, "--test-device", "--console", "--timeout", "30"], timeout=60)
    t.ok(rr.rc == 125 and "virtio-balloon" in rr.err,
         "restore without --balloon is refused, naming virtio-balloon", rr.describe())

t.eq(guestlib.kvrun_pids() - before, set(), "no kvrun process left behind")
t.done()
