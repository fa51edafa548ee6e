# SPDX-License-Identifier: Apache-2.0
"""datapath: the device data path at native guest speed, and exits: what it
costs per operation.

The freestanding test guest's benchmark mode (tests/guest/bench*.c) sets
its queues up at CPL0 and drives the devices from CPL3 with interrupts
suppressed, polling the used rings: no guest kernel code runs per request,
so on a host that emulates only the guest's CPL0 code (kvm_pvm) the loop
runs natively. kvrun reports each workload on `kvrun boot --bench-out`
with the guest's TSC figures and the exits, doorbells and interrupts it
cost (KVM's binary statistics and kvrun's counters). The same operations
done directly on the host (bench/datapath-host.c) are the physical limit;
QEMU microvm running the same guest is the peer.

Figures (per run, runtimes in turn): virtio-blk 4 KiB random read and
write, 1 MiB sequential read and write, at queue depths 1, 32 and 128, on
a raw file and on the copy-on-write disk of that file; IOPS for 4 KiB,
MB/s for 1 MiB, from the guest's own cycles."""
import json
import os
import shutil
import subprocess

from .suite_start import rotate
from .util import log, sh

S = "datapath"
SE = "exits"
# Taken on a nested kvm_pvm host: the guest's CPL3 loop runs natively, its
# CPL0 set-up is emulated (docs/benchmarks.md).
LABEL = "nested kvm_pvm, guest CPL3"
BLK_WORKLOADS = [(m, bs, qd) for m, bs in (("randread", "4K"), ("randwrite", "4K"), ("read", "1M"), ("write", "1M"))
                 for qd in (1, 32, 128)]
# Targets (the brief of record, docs/benchmarks.md): kvrun / host-direct.
TARGETS = {("randread", "4K", 32): 0.80, ("read", "1M", 32): 0.90, ("write", "1M", 32): 0.90,
           ("read", "1M", 128): 0.90, ("write", "1M", 128): 0.90}
DISKS = ("raw", "cow")


def ops_for(bs, qd, quick):
    if bs == "1M":
        return 100 if quick else 300
    if qd == 1:
        return 3000 if quick else 10000
    return 20000 if quick else 60000


def disk_mib(quick):
    return 256 if quick else 512


def build_host_tool(ctx):
    """bench/datapath-host.c (needs liburing-dev), rebuilt when changed."""
    out = os.path.join(ctx.cache, "datapath-host")
    src = os.path.join(ctx.src, "bench", "datapath-host.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        sh(["cc", "-O2", "-o", out, src, "-luring"])
    return out


def make_disk(ctx):
    """A file of random data (reads of holes would cost nothing), reused."""
    d = os.path.join(ctx.cache, "datapath")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"disk-{disk_mib(ctx.quick)}M.img")
    if not os.path.exists(path):
        chunk = os.urandom(1 << 20)
        with open(path + ".tmp", "wb") as f:
            for _ in range(disk_mib(ctx.quick)):
                f.write(chunk)
        os.rename(path + ".tmp", path)
    # In the page cache for every side alike.
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass
    return path


def spec(workloads, quick):
    return ",".join(f"{m}:{bs}:{qd}:{ops_for(bs, qd, quick)}" for m, bs, qd in workloads)


def metric_name(kind, m, bs, qd):
    return f"blk {m} {bs} qd{qd} ({kind})"


def unit_of(bs):
    return ("IOPS", "ops") if bs == "4K" else ("MB/s", "bytes")


def record(ctx, rt, kind, m, bs, qd, ops, nbytes, seconds, label=None):
    unit, what = unit_of(bs)
    v = ops / seconds if what == "ops" else nbytes / seconds / 1e6
    meta = {"unit": unit, "better": "higher", "title": metric_name(kind, m, bs, qd)}
    if label:
        meta["label"] = label
    ctx.results.add(S, metric_name(kind, m, bs, qd), rt, v, **meta)


def kvrun_blk(ctx, disk, kind, tmp, datapath=True):
    """One kvrun boot running every block workload on one disk kind; its
    figures to datapath (unless not datapath) and exits."""
    out = os.path.join(tmp, f"bench-{kind}.json")
    overlay = os.path.join(tmp, "overlay.img")
    if kind == "cow":
        open(overlay, "w").close()
        arg = f"{overlay},base={disk}"
    else:
        arg = disk
    # The first workload touches every buffer page once (not recorded).
    warm = "read:1M:128:128"
    cmdline = f"test=bench bench_blk={warm},{spec(BLK_WORKLOADS, ctx.quick)}"
    r = subprocess.run([ctx.kvrun_bin, "boot", "--kernel", ctx.test_guest, "--test-device", "--memory", "512M",
                        "--disk", arg, "--bench-out", out, "--cmdline", cmdline, "--timeout", "900"],
                       capture_output=True, text=True, timeout=960)
    lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
    if r.returncode != 0 or len(lines) != len(BLK_WORKLOADS) + 1:
        fails = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("not ok") or "kvrun boot:" in x]
        raise RuntimeError(f"kvrun boot (bench, {kind} disk) exit {r.returncode}, {len(lines)} bench lines: "
                           f"{' '.join(fails)[-300:]}")
    for d, (m, bs, qd) in zip(lines[1:], BLK_WORKLOADS):
        if d["errors"]:
            raise RuntimeError(f"{d['name']}: {d['errors']} errors")
        seconds = d["cycles"] / (d["tsc_khz"] * 1e3)
        if datapath:
            record(ctx, "kvrun", kind, m, bs, qd, d["ops"], d["bytes"], seconds, LABEL)
        exits(ctx, kind, m, bs, qd, d)
    if kind == "cow":
        os.unlink(overlay)


def exits(ctx, kind, m, bs, qd, d):
    """Per block request: what it cost in exits, doorbells and interrupts."""
    st, ops = d["stats"], d["ops"]
    vcpu, own = st["kvm_vcpu"], st["kvrun"]
    uexits = own["exit_io"] + own["exit_mmio"] + own["exit_other"]
    # The two marks are MMIO exits of their own: not the workload's.
    uexits = max(0, uexits - 2)
    name = f"{m} {bs} qd{qd} ({kind})"
    figs = [
        ("userspace exits per 128 requests", 128 * uexits / ops, "exits"),
        ("KVM exits per request", max(0, vcpu.get("exits", 0) - 2) / ops, "exits"),
        ("emulated instructions per request", max(0, vcpu.get("insn_emulation", 0) - 2) / ops, "insns"),
        ("doorbells per request", own["doorbell_signals"] / ops, "kicks"),
        ("interrupts per request", own["irq_raised"] / ops, "irqs"),
        ("device passes per request", own["queue_passes"] / ops, "passes"),
    ]
    for what, v, unit in figs:
        ctx.results.add(SE, f"blk {name}: {what}", "kvrun", v, unit=unit, better="lower",
                        title=f"blk {name}: {what}", label=LABEL)


def host_blk(ctx, tool, disk):
    for m, bs, qd in BLK_WORKLOADS:
        r = sh([tool, "blk", disk, m, bs, str(qd), str(ops_for(bs, qd, ctx.quick))], timeout=600)
        d = json.loads(r.stdout)
        for kind in DISKS:
            record(ctx, "host-direct", kind, m, bs, qd, d["ops"], d["bytes"], d["ns"] / 1e9)


def qemu_na(ctx, why):
    for kind in DISKS:
        for m, bs, qd in BLK_WORKLOADS:
            unit, _ = unit_of(bs)
            ctx.results.na(S, metric_name(kind, m, bs, qd), "qemu-microvm", why, unit=unit, better="higher",
                           title=metric_name(kind, m, bs, qd))


def run(ctx):
    ctx.test_guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    if not os.path.exists(ctx.test_guest):
        raise RuntimeError(f"{ctx.test_guest} not built")
    tool = build_host_tool(ctx)
    disk = make_disk(ctx)
    tmp = os.path.join(ctx.work, "datapath")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    # The guest's writes land in the file: a copy for them, so the host
    # side and every run read the same data.
    wdisk = os.path.join(tmp, "disk.img")
    shutil.copyfile(disk, wdisk)
    sides = ["kvrun raw", "kvrun cow", "host-direct"]
    for run_i in range(ctx.runs):
        for side in rotate(sides, run_i):
            log(f"datapath run {run_i + 1}/{ctx.runs}: {side}")
            if side == "host-direct":
                host_blk(ctx, tool, wdisk)
            else:
                kind = side.split()[1]
                ctx.guarded("kvrun", [f"{S}/{metric_name(kind, *BLK_WORKLOADS[0])}"], kvrun_blk, ctx,
                            wdisk, kind, tmp)
    qemu_na(ctx, ctx.qemu_reason if getattr(ctx, "qemu_reason", None) else
            "not available: QEMU cannot load the test guest yet (no PVH entry)")
    for kind in DISKS:
        for (m, bs, qd), want in TARGETS.items():
            ctx.results.metric(S, metric_name(kind, m, bs, qd))["target"] = {"vs": "host-direct", "min": want}
    shutil.rmtree(tmp, ignore_errors=True)


def run_exits(ctx):
    """The exits suite without datapath in the run: kvrun's block runs for
    their cost per request."""
    ctx.test_guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    disk = make_disk(ctx)
    tmp = os.path.join(ctx.work, "datapath")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    wdisk = os.path.join(tmp, "disk.img")
    shutil.copyfile(disk, wdisk)
    for run_i in range(ctx.runs):
        for kind in rotate(list(DISKS), run_i):
            log(f"exits run {run_i + 1}/{ctx.runs}: kvrun {kind}")
            ctx.guarded("kvrun", [f"{SE}/blk {kind}"], kvrun_blk, ctx, wdisk, kind, tmp, False)
    shutil.rmtree(tmp, ignore_errors=True)
