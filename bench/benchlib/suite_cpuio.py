# SPDX-License-Identifier: Apache-2.0
"""cpu-io: bc, tar unpack and rm -rf of a small and of a large tree, a
parallel compile and fio 4k random read/write, all in one container per
run (tools rootfs, cpuio.sh), timed inside the container. Under an
emulated guest kernel kvrun runs only the steps it can finish (bc and the
small tree), each with a time limit."""
import json
import os
import re
import subprocess

from . import rootfs
from .runtimes import write_bundle
from .suite_start import rotate
from .util import log

S = "cpu-io"
STEPS = {
    "bc": "echo 2^1000000 | bc",
    "tar_small": "tar -xf of glibc's bits/ headers (228 files, 1.2 MB)",
    "rm_small": "rm -rf of that small tree",
    "tar_unpack": "tar -xf of /usr/include (8k files, 130 MB)",
    "rm_rf": "rm -rf of that tree",
    "compile": "make -j2 of common/ vmm/ virtio/ (gcc -O2 -c)",
}
FIO = [f"fio_{rw}_{k}" for rw in ("randread", "randwrite") for k in ("iops", "p99")]
# The steps an emulated kvrun guest can finish (emulated.FORCED).
SMALL = ["bc", "tar_small", "rm_small"]
# Seconds a step may take inside a kvrun guest whose kernel is emulated.
EMULATED_STEP_LIMIT = 1200


def parse(out):
    """Step times (s), fio figures, and {step: why} for steps not finished."""
    res, missing = {}, {}
    for m in re.finditer(r"^BENCH (\S+) ([\d.]+) ([\d.]+)$", out, re.M):
        res[m.group(1)] = float(m.group(3)) - float(m.group(2))
    for m in re.finditer(r"^BENCH-TIMEOUT (\S+) (\d+)$", out, re.M):
        missing[m.group(1)] = f"not available: did not finish within {m.group(2)} s (killed)"
    for m in re.finditer(r"^BENCH-SKIP (\S+)$", out, re.M):
        missing[m.group(1)] = "not available: skipped after an earlier step ran out of time"
    for m in re.finditer(r"^FIO-BEGIN (\S+)\n(.*?)^FIO-END$", out, re.M | re.S):
        job = json.loads(m.group(2))["jobs"][0]
        side = job["read"] if m.group(1) == "randread" else job["write"]
        res[m.group(1) + "_iops"] = side["iops"]
        res[m.group(1) + "_p99"] = side["clat_ns"]["percentile"]["99.000000"] / 1e6
    return res, missing


def steps_for(ctx, rt):
    """cpuio.sh's step list for rt: all of them, or the figures kvrun
    takes under an emulated guest kernel."""
    steps = list(STEPS) + ["fio"]
    if rt == "kvrun":
        steps = [s for s in STEPS if not ctx.kvrun_reason(f"{S}/{s}")]
    if ctx.cpuio_in_net:  # taken in the net suite's sessions
        steps = [s for s in steps if s not in SMALL]
    return steps


def record(ctx, rt, res, missing):
    for k, desc in STEPS.items():
        if k in res:
            ctx.results.add(S, k, rt, res[k], unit="s", better="lower", title=desc)
        elif k in missing:
            ctx.results.na(S, k, rt, missing[k], unit="s", better="lower", title=desc)


def exec_small(ctx, rt, cid):
    """The small steps with `RT exec` in the running container cid (the net
    rootfs has what they need): one boot of an emulated kvrun guest serves
    both suites."""
    limit = EMULATED_STEP_LIMIT if ctx.kvrun_emulated(rt) else 3600
    r = ctx.rt[rt]
    p = subprocess.run(r.argv("exec", cid, "/usr/local/bin/cpuio.sh", "0", str(limit), *SMALL),
                       capture_output=True, text=True, env=r.env, stdin=subprocess.DEVNULL,
                       timeout=limit * len(SMALL) + 600)
    if p.returncode != 0:
        raise RuntimeError(f"{rt} exec cpuio.sh: {(p.stderr.strip() or p.stdout.strip())[-600:]}")
    record(ctx, rt, *parse(p.stdout))


def session(ctx, root, rt, i):
    """One run of cpuio.sh under rt."""
    R = ctx.results
    limit = EMULATED_STEP_LIMIT if ctx.kvrun_emulated(rt) else 3600
    steps = steps_for(ctx, rt)
    b = write_bundle(os.path.join(ctx.work, f"b-tools-{rt}"), root,
                     ["/usr/local/bin/cpuio.sh", str(ctx.fio_duration), str(limit)] + steps, ctx.limits)
    try:
        _, r = ctx.rt[rt].run(b, f"cpuio-{rt}-{i}", timeout=ctx.boot_timeout(rt) + limit * len(steps) + 600)
        if r.returncode != 0:
            raise RuntimeError(f"{rt} cpuio.sh: {(r.stderr.strip() or r.stdout.strip())[-600:]}")
    except BaseException:
        ctx.rt[rt].remove(f"cpuio-{rt}-{i}")
        raise
    res, missing = parse(r.stdout)
    record(ctx, rt, res, missing)
    if "fio" not in steps or "fio" in missing:
        return
    for rw in ("randread", "randwrite"):
        R.add(S, f"fio_{rw}_iops", rt, res[f"{rw}_iops"], unit="IOPS", better="higher",
              title=f"fio 4k {rw}, O_DIRECT, QD1: IOPS")
        R.add(S, f"fio_{rw}_p99", rt, res[f"{rw}_p99"], unit="ms", better="lower",
              title=f"fio 4k {rw}: p99 completion latency")


def run(ctx):
    root = rootfs.ensure(ctx.cache, "tools", ctx.src)
    names = [rt for rt in ctx.runtimes_for([]) if steps_for(ctx, rt)]
    log(f"cpu-io: bc, tar, rm, compile, fio {ctx.fio_duration}s x2; {', '.join(names)}")
    for i in range(ctx.runs):
        for rt in rotate(names, i):
            ctx.guarded(rt, [f"{S}/{k}" for k in steps_for(ctx, rt) if k != "fio"] or [f"{S}/fio"],
                        session, ctx, root, rt, i)
    ctx.na_kvrun_for([f"{S}/{k}" for k in STEPS] + [f"{S}/{k}" for k in FIO], None, None)
