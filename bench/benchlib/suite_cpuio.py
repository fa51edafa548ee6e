# SPDX-License-Identifier: Apache-2.0
"""cpu-io: bc, tar unpack, rm -rf, a parallel compile and fio 4k random
read/write, all in one container per run (tools rootfs, cpuio.sh), timed
inside the container."""
import json
import os
import re

from . import rootfs
from .runtimes import write_bundle
from .suite_start import rotate
from .util import log

S = "cpu-io"
STEPS = {
    "bc": "echo 2^1000000 | bc",
    "tar_unpack": "tar -xf of /usr/include (8k files, 130 MB)",
    "rm_rf": "rm -rf of that tree",
    "compile": "make -j2 of common/ vmm/ virtio/ (gcc -O2 -c)",
}


def parse(out):
    res = {}
    for m in re.finditer(r"^BENCH (\S+) ([\d.]+) ([\d.]+)$", out, re.M):
        res[m.group(1)] = float(m.group(3)) - float(m.group(2))
    for m in re.finditer(r"^FIO-BEGIN (\S+)\n(.*?)^FIO-END$", out, re.M | re.S):
        job = json.loads(m.group(2))["jobs"][0]
        side = job["read"] if m.group(1) == "randread" else job["write"]
        res[m.group(1) + "_iops"] = side["iops"]
        res[m.group(1) + "_p99"] = side["clat_ns"]["percentile"]["99.000000"] / 1e6
    return res


def run(ctx):
    root = rootfs.ensure(ctx.cache, "tools", ctx.src)
    b = write_bundle(os.path.join(ctx.work, "b-tools"), root, ["/usr/local/bin/cpuio.sh", str(ctx.fio_duration)],
                     ctx.limits)
    names = ctx.workload_runtimes()
    log(f"cpu-io: bc, tar, rm, compile, fio {ctx.fio_duration}s x2; {', '.join(names)}")
    R = ctx.results
    for i in range(ctx.runs):
        for rt in rotate(names, i):
            _, r = ctx.rt[rt].run(b, f"cpuio-{rt}-{i}", timeout=1800)
            if r.returncode != 0:
                raise RuntimeError(f"{rt} cpuio.sh: {r.stderr.strip()[-600:]}")
            res = parse(r.stdout)
            for k, desc in STEPS.items():
                R.add(S, k, rt, res[k], unit="s", better="lower", title=desc)
            for rw in ("randread", "randwrite"):
                R.add(S, f"fio_{rw}_iops", rt, res[f"{rw}_iops"], unit="IOPS", better="higher",
                      title=f"fio 4k {rw}, O_DIRECT, QD1: IOPS")
                R.add(S, f"fio_{rw}_p99", rt, res[f"{rw}_p99"], unit="ms", better="lower",
                      title=f"fio 4k {rw}: p99 completion latency")
    ctx.na_kvrun_for([f"{S}/{k}" for k in STEPS] +
                     [f"{S}/fio_{rw}_{k}" for rw in ("randread", "randwrite") for k in ("iops", "p99")],
                     None, None)
