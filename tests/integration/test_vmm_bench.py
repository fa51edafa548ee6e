#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The test guest's data-path benchmark mode (tests/guest/bench*.c) in
short: a few hundred virtio-blk requests driven from CPL3 with their data
checked, and the marks kvrun writes for them (`kvrun boot --bench-out`).

- reads (random 4 KiB at queue depth 8, sequential 1 MiB at depth 2) must
  find the seeded pattern in every word they read;
- a sequential 4 KiB write at depth 4 writes another pattern, which must
  be in the image afterwards, with every other block untouched;
- each workload ran at CPL3, completed every request without error, and
  has one JSON line in the bench output with its operations, bytes, the
  host time between the marks, the guest's TSC rate and the exits it
  cost (KVM's statistics and kvrun's counters).

Needs /dev/kvm; skips loudly without it.
"""
import json
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

SEED, WSEED = 91, 7
DISK = 4 << 20
WRITES = 64
M64 = (1 << 64) - 1
WORKLOADS = [("randread", "4K", 8, 300), ("read", "1M", 2, 8), ("write", "4K", 4, WRITES)]


def pattern(seed, start, length):
    """The words of bench_word(seed, off) for [start, start + length)."""
    k = (seed * 0x9e3779b97f4a7c15) & M64
    return struct.pack(f"<{length // 8}Q", *(((off ^ k) + seed) & M64 for off in range(start, start + length, 8)))


with tempfile.TemporaryDirectory() as tmp:
    img = os.path.join(tmp, "disk.img")
    out = os.path.join(tmp, "bench.json")
    with open(img, "wb") as f:
        f.write(pattern(SEED, 0, DISK))
    spec = ",".join(f"{m}:{bs}:{qd}:{n}" for m, bs, qd, n in WORKLOADS)
    cmdline = f"test=bench bench_blk={spec} bench_check=1 bench_seed={SEED} bench_wseed={WSEED}"
    r = guestlib.boot(["--kernel", GUEST, "--test-device", "--console", "--memory", "256M", "--disk", img,
                       "--bench-out", out, "--cmdline", cmdline, "--timeout", "120"], timeout=150)
    results, plan = guestlib.parse_tap(r.out + "\n" + r.err)
    for ok, desc in results:
        t.ok(ok, f"guest: {desc}", r.describe())
    t.ok(plan is not None and plan == len(results) and plan > 0,
         f"guest printed a plan matching its {len(results)} results", r.describe())
    t.ok(r.rc == 0, f"kvrun boot exit status {r.rc} (expected 0)", r.describe())
    names = [f"blk-{m}-{bs}-qd{qd}" for m, bs, qd, _ in WORKLOADS]
    t.ok(all(f"bench: {n} ran at CPL3" in {d for ok, d in results if ok} for n in names),
         "every workload ran at CPL3")

    lines = []
    if os.path.exists(out):
        with open(out) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    t.eq([d["name"] for d in lines], names, "one bench line per workload, in order")
    for d, (m, bs, qd, n) in zip(lines, WORKLOADS):
        size = int(bs[:-1]) << (10 if bs[-1] == "K" else 20)
        t.ok(d["ops"] == n and d["bytes"] == n * size and d["errors"] == 0 and d["queue_depth"] == qd,
             f"{d['name']}: {n} requests of {size} bytes, no errors", json.dumps(d)[:400])
        t.ok(d["host_ns"] > 0 and d["cycles"] > 0 and d["tsc_khz"] > 0, f"{d['name']}: timed on both sides")
        # The polling vCPU runs through the window; the process's CPU holds it.
        t.ok(0 < d["vcpu_cpu_ns"] <= d["cpu_ns"] and d["vcpu_cpu_ns"] <= 2 * d["host_ns"],
             f"{d['name']}: host CPU time of the process and of the vCPU thread", str(d))
        own = d["stats"]["kvrun"]
        t.eq(own["blk_requests"], n, f"{d['name']}: the device counted {n} requests")
        t.ok(own["doorbell_signals"] >= d["kicks"] > 0 or own["notify_exits"] >= d["kicks"],
             f"{d['name']}: the guest's {d['kicks']} doorbells reached the device",
             f"kvrun counters: {own}")
        t.eq(own["exit_mmio"], 1, f"{d['name']}: one userspace exit in the window, the END mark's")
        vcpu = d["stats"]["kvm_vcpu"]
        t.ok(not vcpu or vcpu.get("exits", 0) >= d["kicks"],
             f"{d['name']}: KVM counted at least one exit per doorbell ({vcpu.get('exits')})")

    with open(img, "rb") as f:
        data = f.read()
    t.eq(len(data), DISK, "image size unchanged")
    w = WRITES * 4096
    t.ok(data[:w] == pattern(WSEED, 0, w), f"the {WRITES} written blocks hold the written pattern")
    t.ok(data[w:] == pattern(SEED, w, DISK - w), "every other block is untouched")
t.done()
