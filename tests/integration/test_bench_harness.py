#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark harness's own logic (bench/benchlib), without running any
benchmark: statistics, output parsers, the OCI bundle recipe, the rootfs
copier, the report's handling of figures that are not available."""
import json
import os
import sys
import tempfile

from taplib import Tap

SRC = os.environ.get("KVRUN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "bench"))

from benchlib import report, rootfs, runtimes, suite_cpuio, suite_servers, util  # noqa: E402
from benchlib.results import Results  # noqa: E402

t = Tap()

xs = list(range(1, 101))
t.eq(util.percentile(xs, 50), 50, "percentile: p50 of 1..100")
t.eq(util.percentile(xs, 99), 99, "percentile: p99 of 1..100")
t.eq(util.percentile([7], 95), 7, "percentile: one sample")
s = util.summary([3, 1, 2, None])
t.eq((s["median"], s["min"], s["max"], s["n"]), (2, 1, 3, 3), "summary: median, range, None dropped")
t.eq(util.summary([]), None, "summary: nothing to summarise")

os.environ["KVRUN_EMULATING_HOST"] = "1"
t.ok(util.host_kind()["emulating"], "host kind: KVRUN_EMULATING_HOST=1 forces emulating")
os.environ["KVRUN_EMULATING_HOST"] = "0"
t.ok(not util.host_kind()["emulating"], "host kind: KVRUN_EMULATING_HOST=0 forces native")
del os.environ["KVRUN_EMULATING_HOST"]

fio = {"jobs": [{"read": {"iops": 1234.5, "clat_ns": {"percentile": {"99.000000": 2500000}}}, "write": {}}]}
out = ("BENCH bc 100.25 102.75\nBENCH compile 10.0 13.5\nFIO-BEGIN randread\n" + json.dumps(fio) +
       "\nFIO-END\n")
r = suite_cpuio.parse(out)
t.eq((r["bc"], r["compile"]), (2.5, 3.5), "cpuio: step times from BENCH lines")
t.eq((r["randread_iops"], r["randread_p99"]), (1234.5, 2.5), "cpuio: fio IOPS and p99 in ms")

wrk_out = "  Latency Distribution\n     50%  1.20ms\n     99%  850.00us\nRequests/sec:  1000.5\n"
m = suite_servers.WRK_RE.search(wrk_out)
t.eq((m.group(1), m.group(2)), ("850.00", "us"), "wrk: p99 line with its unit")

with tempfile.TemporaryDirectory() as d:
    lim = runtimes.Limits(cpus=2, memory_mib=512)
    b = runtimes.write_bundle(os.path.join(d, "b"), "/nonexistent", ["/bin/true"], lim, netns="kvbench-3",
                              uid=999, gid=999)
    cfg = json.load(open(os.path.join(b, "config.json")))
    res = cfg["linux"]["resources"]
    t.eq((res["cpu"]["quota"], res["cpu"]["period"], res["memory"]["limit"]), (200000, 100000, 512 << 20),
         "bundle: the CPU quota and memory limit")
    t.ok({"type": "network", "path": "/var/run/netns/kvbench-3"} in cfg["linux"]["namespaces"],
         "bundle: the harness's network namespace by path")
    t.eq((cfg["process"]["user"], cfg["root"]["readonly"]), ({"uid": 999, "gid": 999}, False),
         "bundle: user and a writable root")

    root = os.path.join(d, "root")
    rootfs.skeleton(root)
    rootfs.add_binary(root, "/usr/bin/env")
    t.ok(os.path.exists(root + os.path.realpath("/usr/bin/env")), "rootfs: the binary at its own path")
    libs = rootfs.ldd_libs(os.path.realpath("/usr/bin/env"))
    t.ok(libs and all(os.path.exists(root + os.path.join(os.path.realpath(os.path.dirname(x)),
                                                          os.path.basename(x))) for x in libs),
         "rootfs: every library ldd names, and the loader", libs)

R = Results()
R.add("pg", "tpcb_tps", "runc", 100.0, unit="tx/s", better="higher", title="tps")
R.add("pg", "tpcb_tps", "runc", 120.0)
R.add("pg", "tpcb_tps", "runc", 110.0)
R.add("pg", "tpcb_tps", "crun", 55.0)
R.na("pg", "tpcb_tps", "kvrun", "not available: because")
res = {"metrics": R.finish()}
lines = report.table(res)
row = [x for x in lines if x.startswith("| tps")]
t.ok(row and "110 (100–120)" in row[0] and "n/a [1]" in row[0] and "0.50" in row[0],
     "report: median (range), n/a with footnote, crun/runc ratio", lines)
t.ok("1. not available: because" in lines, "report: the reason is printed", lines)

# The distro-kernel boot comparison says why it cannot run on an emulating host.
from benchlib import suite_vmm  # noqa: E402


class FakeCtx:
    host = {"emulating": True}
    force_emulated = False
    EMULATED_REASON = "not available: guest kernel emulated on this host"
    results = Results()


suite_vmm.distro_boot(FakeCtx)
d = FakeCtx.results.metrics.get("vmm/lx_distro_run", {}).get("runtimes", {})
t.ok(len(d) == 2 and all(v.get("not_available", "").startswith("not available: guest kernel emulated") and
                         "pvmhost=1" in v["not_available"] for v in d.values()),
     "distro boot bench: not available on an emulating host, with the reason", d)
t.done()
