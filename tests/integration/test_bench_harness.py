#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark harness's own logic (bench/run.py, bench/benchlib), without
running any benchmark or booting anything: statistics, output parsers
(cpuio.sh, wrk, iperf3), the command line, the OCI bundle recipe, the rootfs
copier, which figures kvrun takes on an emulating host with and without
--force-emulated and the reasons for the others, a failed kvrun session,
the result schema, the report's labels and "not available" notes, the
template suite's parsers, plan and reasons, and the pod suite's bundles and
sessions driven through a stand-in runtime (a script that runs the
container's process on the host)."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from taplib import Tap

SRC = os.environ.get("KVRUN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "bench"))

from benchlib import emulated, report, rootfs, runtimes, suite_cpuio, suite_datapath, suite_density, suite_fs, suite_net, suite_pod, suite_servers, suite_sizing, suite_template, util  # noqa: E402
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
r, missing = suite_cpuio.parse(out)
t.eq((r["bc"], r["compile"]), (2.5, 3.5), "cpuio: step times from BENCH lines")
t.eq((r["randread_iops"], r["randread_p99"]), (1234.5, 2.5), "cpuio: fio IOPS and p99 in ms")
t.eq(missing, {}, "cpuio: nothing missing when every step finished")
r, missing = suite_cpuio.parse("BENCH bc 1.0 2.0\nBENCH-TIMEOUT tar_small 1200\nBENCH-SKIP rm_small\n")
t.eq(sorted(r), ["bc"], "cpuio: a killed step has no time")
t.ok("within 1200 s" in missing.get("tar_small", "") and "skipped" in missing.get("rm_small", ""),
     "cpuio: a step out of time and the one after it are not available, with why", missing)
t.ok(all(f"{k})" in rootfs.CPUIO_SH for k in list(suite_cpuio.STEPS) + ["fio"]),
     "cpuio: cpuio.sh knows every step the suite asks for")

wrk_out = "  Latency Distribution\n     50%  1.20ms\n     99%  850.00us\nRequests/sec:  1000.5\n"
m = suite_servers.WRK_RE.search(wrk_out)
t.eq((m.group(1), m.group(2)), ("850.00", "us"), "wrk: p99 line with its unit")
wrk_full = ("Running 3s test @ http://10.213.200.2:8080/1k\n  2 threads and 8 connections\n"
            "  Latency Distribution\n     50%  1.20ms\n     99%  850.00us\n"
            "  3001 requests in 3.00s, 3.5MB read\nRequests/sec:  1000.5\n")
t.eq(suite_servers.parse_wrk(wrk_full), (1000.5, 0.85), "wrk: requests/s and p99 in ms")
wrk_none = ("  Latency Distribution\n     50%    0.00us\n     99%    0.00us\n"
            "  0 requests in 3.00s, 0.00B read\n  Socket errors: connect 0, read 0, write 0, timeout 8\n"
            "Requests/sec:      0.00\n")
t.eq(suite_servers.parse_wrk(wrk_none), (0.0, None), "wrk: no request completed: 0/s and no p99")

ip_ok = {"start": {}, "end": {"sum_sent": {"bits_per_second": 2.5e9}, "sum_received": {"bits_per_second": 2.4e9}}}
t.eq(suite_net.parse_iperf3(json.dumps(ip_ok)), 2400.0, "iperf3: Mbit/s received at the far end")
try:
    suite_net.parse_iperf3(json.dumps({"start": {}, "end": {}, "error": "unable to connect to server: refused"}))
    t.ok(False, "iperf3: its error is raised")
except RuntimeError as e:
    t.ok("unable to connect" in str(e), "iperf3: its error is raised with its message", str(e))

ns = suite_servers.Netns(201)
t.eq((ns.name, ns.peer, ns.addr, ns.peer_addr), ("kvbench-201", "kvbench-201-peer", "10.213.201.2", "10.213.201.1"),
     "netns: container and peer namespace, addresses of a private range")
t.eq(ns.client(["wrk", "x"]), ["ip", "netns", "exec", "kvbench-201-peer", "wrk", "x"],
     "netns: clients run in the peer namespace")
t.ok(ns.name.startswith(suite_servers.NS_PREFIX) and ns.peer.startswith(suite_servers.NS_PREFIX),
     "netns: both names are found again by the leftover cleanup")

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

# The command line (bench/run.py, loaded as a module: nothing runs).
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(SRC, "bench", "run.py"))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)
a = run.parse_args([])
t.eq((a.suites, a.runs, a.force_emulated, a.runtime_names),
     (run.SUITES, 3, False, ["kvrun", "runc", "crun"]), "args: defaults (every suite, net among them)")
t.ok("net" in run.SUITES, "args: net is a suite")
a = run.parse_args(["--suite", "net,cpu-io", "--force-emulated", "--quick", "--runtimes", "kvrun,runc"])
t.eq((a.suites, a.force_emulated, a.quick, a.runtime_names), (["net", "cpu-io"], True, True, ["kvrun", "runc"]),
     "args: --suite, --force-emulated, --quick, --runtimes")
for bad in (["--suite", "net,nope"], ["--runtimes", "kvrun,gvisor"]):
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "run.py")] + bad, capture_output=True, text=True)
    t.ok(p.returncode == 2 and "unknown" in p.stderr, f"args: {' '.join(bad)} is refused", p.stderr)

# Which figures kvrun takes, and why not the others.
t.eq(emulated.reason("net/iperf3_in", False, False), None, "emulated: a native host takes every figure")
t.eq(emulated.reason("net/iperf3_in", True, False), emulated.EMULATED_REASON,
     "emulated: without --force-emulated nothing, with the host's reason")
for key in ("start/true_p50", "cpu-io/bc", "cpu-io/tar_small", "cpu-io/rm_small", "net/iperf3_out", "nginx/10m_rps"):
    t.eq(emulated.reason(key, True, True), None, f"emulated: --force-emulated takes {key}")
for key in ("pg/tpcb_tps", "memory/nginx10_pss", "start/parallel16", "cpu-io/compile", "cpu-io/fio_randread_iops"):
    why = emulated.reason(key, True, True)
    t.ok(why and why.startswith(emulated.EMULATED_REASON) and "not run even with --force-emulated: " in why
         and len(why) > len(emulated.EMULATED_REASON) + 40, f"emulated: {key} stays not available, saying why", why)


class Args:
    def __init__(self, force, suites=()):
        self.build, self.kvrun, self.runs, self.quick, self.force_emulated, self.out = \
            "build", "/nonexistent/kvrun", 3, True, force, "/nonexistent"
        self.suites = list(suites)


os.environ["KVRUN_EMULATING_HOST"] = "1"
for force in (False, True):
    ctx = run.Context(Args(force))
    ctx.rt = {"kvrun": None, "runc": None, "crun": None}
    ctx.kvrun_workload_reason = None if force else emulated.EMULATED_REASON
    net_keys = ["net/iperf3_in", "nginx/1k_rps"]
    t.eq(ctx.runtimes_for(net_keys), (["kvrun"] if force else []) + ["runc", "crun"],
         f"context: net runtimes on an emulating host {'with' if force else 'without'} --force-emulated")
    t.eq(ctx.runtimes_for(["pg/tpcb_tps"]), ["runc", "crun"], "context: pg never runs kvrun under emulation")
    t.eq((ctx.boot_timeout("kvrun"), ctx.boot_timeout("runc")), (1800, 120),
         "context: a kvrun guest under emulation gets minutes to boot")
    ctx.results.add("net", "iperf3_in", "runc", 900.0, unit="Mbit/s", better="higher", title="in")
    ctx.na_kvrun_for(["net/iperf3_in", "pg/tpcb_tps"], "tx/s", "higher")
    kv = ctx.results.metrics["net/iperf3_in"]["runtimes"].get("kvrun")
    t.eq(kv, None if force else {"not_available": emulated.EMULATED_REASON},
         "context: net figures not available for kvrun only without --force-emulated")
    t.ok("not run even with" in ctx.results.metrics["pg/tpcb_tps"]["runtimes"]["kvrun"]["not_available"] or not force,
         "context: pg not available for kvrun with the forced-run reason")
# cpu-io's steps per runtime: an emulated kvrun guest takes the small set,
# in the net session's boot when net is in the run.
for suites, kv, in_net in ((["cpu-io"], suite_cpuio.SMALL, False), (["net", "cpu-io"], [], True)):
    c = run.Context(Args(True, suites))
    c.rt = {"kvrun": None, "runc": None}
    t.eq((c.cpuio_in_net, suite_cpuio.steps_for(c, "kvrun")), (in_net, kv),
         f"cpu-io: kvrun's steps under --force-emulated with suites {','.join(suites)}")
    runc_steps = suite_cpuio.steps_for(c, "runc")
    t.ok("fio" in runc_steps and "compile" in runc_steps and (("bc" in runc_steps) != in_net),
         f"cpu-io: runc's steps with suites {','.join(suites)}", runc_steps)
c = run.Context(Args(False, ["net", "cpu-io"]))
t.ok(not c.cpuio_in_net, "cpu-io: without --force-emulated the small steps stay in cpu-io")
del os.environ["KVRUN_EMULATING_HOST"]

# A failing kvrun session: figures not available with kvrun's error, no
# further kvrun session, the suite goes on; a failing runc session raises.
calls = []


def session(rtname):
    calls.append(rtname)
    if rtname == "kvrun":
        raise RuntimeError("kvrun run -d x failed: boom")


keys = ["net/iperf3_in", "net/iperf3_out"]
t.eq(ctx.guarded("kvrun", keys, session, "kvrun"), False, "guarded: a failed kvrun session")
t.eq(ctx.guarded("kvrun", keys, session, "kvrun"), False, "guarded: no second kvrun session after a failure")
t.eq(calls, ["kvrun"], "guarded: the failed session ran once")
t.ok(ctx.results.metrics["net/iperf3_out"]["runtimes"]["kvrun"]["not_available"].endswith("boom")
     and any("boom" in n for n in ctx.results.notes), "guarded: kvrun's error is the reason, and noted")
t.eq(ctx.results.metrics["net/iperf3_in"]["runtimes"]["runc"]["samples"], [900.0],
     "guarded: the other runtimes' samples are kept")
try:
    ctx.guarded("runc", keys, lambda: (_ for _ in ()).throw(RuntimeError("runc broke")))
    t.ok(False, "guarded: a failed runc session raises")
except RuntimeError:
    t.ok(True, "guarded: a failed runc session raises")

# Results: a figure first seen not available gets unit and title later;
# a runtime not available stays so.
R = Results()
R.na("net", "iperf3_out", "kvrun", "not available: x")
R.add("net", "iperf3_out", "runc", 5.0, unit="Mbit/s", better="higher", title="out")
R.add("net", "iperf3_out", "kvrun", 1.0, unit="Mbit/s", better="higher", title="out")
m = R.finish()["net/iperf3_out"]
t.eq((m["unit"], m["better"], m["title"], m["runtimes"]["kvrun"]), ("Mbit/s", "higher", "out", {"not_available": "not available: x"}),
     "results: meta from the first sample, not available kept")
t.eq(sorted(m["runtimes"]["runc"]), ["max", "median", "min", "n", "samples"], "results: per-runtime schema")

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
R = Results()
for v in (1000.0, 1100.0, 900.0):
    R.add("net", "iperf3_in", "runc", v, unit="Mbit/s", better="higher", title="iperf3 in")
for v in (10.0, 12.0, 11.0):
    R.add("net", "iperf3_in", "kvrun", v)
res = {"metrics": R.finish()}
res["metrics"]["net/iperf3_in"]["runtimes"]["kvrun"]["label"] = emulated.LABEL
lines = report.table(res)
row = [x for x in lines if x.startswith("| iperf3 in")]
t.ok(row and f"11.0 (10.0–12.0) *[{emulated.LABEL}]*" in row[0] and f"0.01 {report.LABELLED}" in row[0],
     "report: an emulated kvrun figure and its ratio are labelled", row)
t.ok(any(x.startswith(report.LABELLED) and emulated.LABEL in x for x in lines), "report: the label's note", lines)
t.eq(report.legend(list(res["metrics"].values()), "kvrun"), f"kvrun ({emulated.LABEL})", "report: the plot legend too")
t.ok("### Network (iperf3)" in lines, "report: the net suite's table")

# The template suite: the monitor's restore record (text and JSON --log),
# template build's line, kvrun's error, how many runs, and why not.
T = suite_template
rec_text = ('time="2026-11-30T06:00:00Z" level=info msg="VM: restoring template /t/ab.snap"\n'
            'time="2026-11-30T06:00:00Z" level=info msg="VM: template restored: restore_us=4213 lookup_us=900 '
            'open_us=312 create_us=2100 load_us=1500 start_us=301 mem_mib=64 vcpus=1"\n')
rec_json = ('{"level":"info","msg":"VM: template restored: restore_us=17000 lookup_us=1 open_us=2 create_us=3 '
            'load_us=4 start_us=5 mem_mib=1024 vcpus=2","time":"2026-11-30T06:00:00Z"}\n')
r = T.parse_restore(rec_text + rec_json)
t.eq([(x["kind"], x["restore_us"], x["mem_mib"], x["vcpus"]) for x in r], [("template", 4213, 64, 1), ("template", 17000, 1024, 2)],
     "template: restore records from text and JSON logs, in order")
t.eq((r[0]["open_us"], r[0]["create_us"], r[0]["load_us"], r[0]["start_us"]), (312, 2100, 1500, 301),
     "template: the record's breakdown")
t.eq(T.parse_restore('{"level":"info","msg":"VM: cold boot (templates off)"}\n'), [], "template: a cold boot has no record")
t.eq(T.parse_build("/tmp/t/0123456789abcdef.snap (1 vCPU, 256 MiB, built in 115.3 s)\n"),
     ("/tmp/t/0123456789abcdef.snap", 1, 256, 115.3), "template: build line parsed")
t.eq(T.parse_build("something else\n"), None, "template: no build line")
t.eq(T.kvrun_error('time="x" level=info msg="VM: cold boot"\ntime="x" level=error msg="timed out after 1700 s waiting"\n'),
     "timed out after 1700 s waiting", "template: kvrun's error from a text log")
t.eq(T.kvrun_error('{"level":"error","msg":"template /t/x.snap: section \\"vcpu0\\" checksum mismatch","time":"x"}'),
     'template /t/x.snap: section "vcpu0" checksum mismatch', "template: kvrun's error from a JSON log")
t.eq(T.counts(True, True), {"restore": 5, "create": 3, "cold": 1}, "template: --quick on an emulating host")
t.eq(T.counts(False, False), {"restore": 10, "create": 10, "cold": 10}, "template: full run on native KVM")
t.eq(T.percentiles([5.0, 1.0, 3.0, 2.0, 4.0]), (3.0, 5.0), "template: p50 and p95 of the creates")
t.eq(T.per_container([1024, 2048, 3072]), 2.0, "template: MiB per container")
t.eq((T.meta("restore_64")["unit"], T.meta("build_1024")["unit"], T.meta("pss_3")["unit"], T.meta("create_p95")["unit"]),
     ("ms", "s", "MiB", "ms"), "template: units")
t.ok("64 MiB" in T.meta("restore_64")["title"] and "host side" in T.meta("restore_64")["title"],
     "template: restore title names the size and says host side", T.meta("restore_64")["title"])
t.eq(T.kvrun_reasons(False, False, None, {}), {}, "template: native KVM takes everything")
rs = T.kvrun_reasons(True, False, None, {})
t.ok(all(rs.get(f"template/{k}") == emulated.EMULATED_REASON for k in ("create_p50", "pss_1", "rss_3"))
     and not any(k.startswith(("template/restore_", "template/build_")) for k in rs),
     "template: emulating without --force-emulated: restore and build taken, create and memory not", rs)
t.eq(T.kvrun_reasons(True, True, None, {}), {}, "template: --force-emulated takes everything")
rs = T.kvrun_reasons(True, True, None, {256: "timed out"})
t.ok(all("template build --memory 256` failed here: timed out" in rs.get(f"template/{k}", "")
         for k in ("build_256", "restore_256", "create_p50", "pss_3")) and "template/restore_64" not in rs,
     "template: a failed build covers its size and the create and memory figures", rs)
rs = T.kvrun_reasons(False, False, "not available: `kvrun run` fails", {})
t.eq(T.reason_for(rs, "template/restore_64"), "not available: `kvrun run` fails", "template: kvrun not starting covers all")
t.ok(emulated.host_side("template/restore_1024") and not emulated.host_side("template/create_p50")
     and not emulated.host_side("template/build_64"), "template: only restore time is host-side")
t.eq(T.parse_running('{"level":"info","msg":"VM: running: host_us=20710 disk_us=215","time":"x"}\n'
                    'time="x" level=info msg="VM: running: host_us=31000 disk_us=12000"\n'), (31000, 12000),
     "template: the last `VM: running` record, text or JSON")
t.eq(T.parse_running('{"level":"info","msg":"VM: template restored: restore_us=1"}'), None,
     "template: no `VM: running` record")
m = T.meta("host_postgres", "postgres rootfs, 200 MiB in 3000 files")
t.ok(m["unit"] == "ms" and "postgres rootfs, 200 MiB" in m["title"] and "host side" in m["title"],
     "template: host-side create title names the rootfs", m["title"])
t.eq(T.meta("disk_busybox", "busybox")["unit"], "ms", "template: root disk figure in ms")
t.ok(emulated.host_side("template/host_busybox") and emulated.host_side("template/disk_postgres"),
     "template: the host side of create is host-side")
R = Results()
R.add("template", "restore_64", "kvrun", 5.0, **T.meta("restore_64"))
R.add("template", "create_p50", "kvrun", 20000.0, **T.meta("create_p50"))
R.add("template", "create_p50", T.COLD, 120000.0)
R.add("template", "create_p50", "runc", 100.0)
R.na("template", "create_p95", T.COLD, emulated.EMULATED_REASON, **T.meta("create_p95"))
res = {"metrics": R.finish()}
emulated.label_metrics(res["metrics"])
t.ok("label" not in res["metrics"]["template/restore_64"]["runtimes"]["kvrun"]
     and res["metrics"]["template/create_p50"]["runtimes"][T.COLD]["label"] == emulated.LABEL
     and res["metrics"]["template/create_p50"]["runtimes"]["kvrun"]["label"] == emulated.LABEL
     and "label" not in res["metrics"]["template/create_p50"]["runtimes"]["runc"],
     "template: create and cold boot labelled under emulation, restore not", res["metrics"])
lines = report.table(res)
head = [x for x in lines if x.startswith("| measurement")]
row = [x for x in lines if x.startswith("| create until it returns") and "p50" in x]
t.ok("### Templates (create from a VM snapshot)" in lines and head and "kvrun (cold boot)/runc" in head[0],
     "template: its table, with the cold boot's ratio to runc", lines)
t.ok(row and "200.00 " + report.LABELLED in row[0] and "1200.00 " + report.LABELLED in row[0],
     "template: labelled ratios to runc", row)
t.ok(any("n/a [" in x for x in lines if "p95" in x) and f"1. {emulated.EMULATED_REASON}" in lines,
     "template: a not-available cell with its reason", lines)
a = run.parse_args(["--suite", "template", "--quick"])
t.ok(a.suites == ["template"] and "template" in run.NAMED_SUITES and "template" not in run.SUITES,
     "args: template is a suite, run only when named")

# fs: kvrun's virtio-fs server in both lock modes against bindfs, plain
# and forwarding locks, compared like for like.
a = run.parse_args(["--suite", "fs", "--runtimes", "runc"])
t.ok(a.suites == ["fs"] and "fs" in run.NAMED_SUITES and "fs" not in run.SUITES, "args: fs is run only when named")
R = Results()
for name, v in ((suite_fs.KVRUN_GUEST, 300.0), ("bindfs", 200.0)):
    unit, better, title = suite_fs.FIGURES["seq_read"]
    R.add("fs", "seq_read", name, v, unit=unit, better=better, title=title)
res = {"metrics": R.finish()}
lines = report.table(res)
head = [x for x in lines if x.startswith("| measurement")]
row = [x for x in lines if x.startswith("| sequential read")]
t.ok(head and f"{suite_fs.KVRUN_GUEST}/bindfs" in head[0] and "/runc" not in head[0] and row and
     row[0].rstrip().endswith("| 1.50 |"), "fs: a kvrun (guest locks)/bindfs ratio column", lines)
R.add("fs", "seq_read", "kvrun", 200.0)
R.add("fs", "seq_read", suite_fs.BINDFS_LOCKS, 400.0)
lines = report.table({"metrics": R.finish()})
head = [x for x in lines if x.startswith("| measurement")]
row = [x for x in lines if x.startswith("| sequential read")]
t.ok(head and head[0].rstrip().endswith(f"| {suite_fs.KVRUN_GUEST}/bindfs | kvrun/{suite_fs.BINDFS_LOCKS} |") and
     "| kvrun/bindfs |" not in head[0] and row and row[0].rstrip().endswith("| 1.50 | 0.50 |"),
     "fs: like for like, kvrun (host locks) against bindfs forwarding locks", lines)
t.ok(list(suite_fs.SERVERS) == ["kvrun", suite_fs.KVRUN_GUEST, "bindfs", suite_fs.BINDFS_LOCKS] and
     suite_fs.SERVERS["kvrun"] == ["--locks", "host"] and suite_fs.SERVERS[suite_fs.KVRUN_GUEST] == ["--locks", "guest"]
     and "--enable-lock-forwarding" in suite_fs.SERVERS[suite_fs.BINDFS_LOCKS], "fs: the four servers")
t.ok(emulated.host_side("fs/seq_read") and emulated.host_side("fs/create"),
     "fs: host-side figures, never labelled as an emulated guest")


class FakeCtx:
    build = "/nonexistent-build"
    results = Results()


suite_fs.run(FakeCtx)
m = FakeCtx.results.metrics
t.ok(len(m) == len(suite_fs.FIGURES) and all(
    "not available" in d["not_available"] for x in m.values() for d in x["runtimes"].values()),
     "fs: without its tools every figure is not available, with the reason", m)

# The sizing suite: memhog's line, when the RSS is back, its figures.
Z = suite_sizing
t.eq(Z.parse_alloc("ready\ngo\nallocated 1024 MiB in 187.3 s\n"), (1024, 187.3), "sizing: memhog's allocation line")
t.eq(Z.parse_alloc("ready\ngo\n"), None, "sizing: no allocation line yet")
samples = [(0.0, 1200 << 10), (2.1, 900 << 10), (4.3, 300 << 10), (4.4, 100 << 10)]
t.eq(Z.returned_at(samples, 250 << 10), (4.3, 300 << 10), "sizing: back within 64 MiB of the RSS at go")
t.eq(Z.returned_at(samples[:2], 250 << 10), None, "sizing: not back yet")
t.eq(runtimes.Limits(cpus=None, memory_mib=None).resources(), {}, "sizing: no limit writes no resources")
t.eq(runtimes.Limits(cpus=2, memory_mib=1024).resources()["memory"], {"limit": 1 << 30}, "limits: the recipe's")
t.ok(emulated.reason("sizing/return_s", True, True) is None and emulated.reason("sizing/idle_pss", True, False)
     == emulated.EMULATED_REASON, "sizing: taken with --force-emulated only, on an emulating host")
t.ok(all(Z.meta(k)["unit"] in ("MiB", "s") for k in Z.TITLES), "sizing: units")
t.eq((Z.amount(1024), Z.amount(128)), ("1 GiB", "128 MiB"), "sizing: the amount in words")
t.eq((Z.slack_mib(1024), Z.slack_mib(128)), (64, 32), "sizing: the return's slack, a quarter of a small amount")
t.eq(Z.meta("alloc_s", 128)["title"], "128 MiB written by a process in the container (timed inside it)",
     "sizing: the title says what was written")
t.eq(Z.meta("return_s")["title"], "1 GiB freed: until the RSS is back within 64 MiB", "sizing: 1 GiB by default")


class SizingCtx:
    def __init__(self, emulating, mib=None):
        self.host, self.sizing_mib = {"emulating": emulating}, mib


t.eq((Z.alloc_mib(SizingCtx(False)), Z.alloc_mib(SizingCtx(True)), Z.alloc_mib(SizingCtx(True, 512))),
     (1024, Z.EMULATED_ALLOC_MIB, 512), "sizing: 1 GiB natively, less where emulated, --sizing-mib over both")
t.eq(Z.config(SizingCtx(True))["alloc_mib"], Z.EMULATED_ALLOC_MIB, "sizing: the results record the amount written")
t.eq(run.parse_args(["--suite", "sizing", "--sizing-mib", "256"]).sizing_mib, 256, "args: --sizing-mib")
a = run.parse_args(["--suite", "sizing"])
t.ok(a.suites == ["sizing"] and "sizing" in run.NAMED_SUITES and "sizing" not in run.SUITES,
     "args: sizing is a suite, run only when named")
R = Results()
R.add("sizing", "idle_pss", "kvrun", 80.0, **Z.meta("idle_pss"))
R.add("sizing", "idle_pss", Z.SMALL, 40.0)
R.add("sizing", "idle_pss", "runc", 2.0)
res = {"metrics": R.finish()}
emulated.label_metrics(res["metrics"])
lines = report.table(res)
head = [x for x in lines if x.startswith("| measurement")]
t.ok(head and "kvrun (256 MiB)" in head[0] and "kvrun (256 MiB)/runc" in head[0] and any(
    x.startswith("### Guest sizing") for x in lines), "sizing: its table with both guest sizes and ratios", lines)

# datapath, exits, density: one command each, never in the default set.
for s_ in ("datapath", "exits", "density"):
    a = run.parse_args(["--suite", s_])
    t.ok(a.suites == [s_] and s_ in run.NAMED_SUITES and s_ not in run.SUITES, f"args: {s_} runs only when named")

# The data path's table: ratios to host-direct and QEMU, targets met or
# missed by how much, labels on kvrun's cells, QEMU's reason.
D = suite_datapath
R = Results()
name = D.metric_name("raw", "randread", "4K", 32)
for v in (100.0, 110.0, 90.0):
    R.add(D.S, name, "host-direct", v * 1000, unit="IOPS", better="higher", title=name)
for v in (70.0, 72.0, 71.0):
    R.add(D.S, name, "kvrun", v * 1000, unit="IOPS", better="higher", title=name, label=D.LABEL)
R.na(D.S, name, "qemu-microvm", D.VSOCK_QEMU_NA, unit="IOPS", better="higher", title=name)
R.metric(D.S, name)["target"] = {"vs": "host-direct", "min": 0.8}
net = D.net_name("tx", "1500")
R.add(D.S, net, "host-direct", 100.0, unit="frames/s", better="higher", title=net)
R.add(D.S, net, "kvrun", 85.0, unit="frames/s", better="higher", title=net)
R.add(D.S, net, "qemu-microvm", 50.0, unit="frames/s", better="higher", title=net)
R.metric(D.S, net)["target"] = {"vs": "host-direct", "min": 0.8}
res = {"metrics": R.finish()}
emulated.label_metrics(res["metrics"])
t.ok("label" not in res["metrics"][f"{D.S}/{name}"]["runtimes"]["kvrun"],
     "datapath: kvrun's figures keep their own label, not the emulated guest kernel's")
lines = report.table(res)
head = [x for x in lines if x.startswith("| measurement")]
row = [x for x in lines if x.startswith(f"| {name}")]
nrow = [x for x in lines if x.startswith(f"| {net}")]
t.ok(head and "kvrun/host-direct" in head[0] and "kvrun/qemu-microvm" in head[0] and "target" in head[0],
     "datapath: ratios to host-direct and to QEMU, and the target", head)
t.ok(row and "| 0.71 |" in row[0] and "≥ 0.80: missed by 11%" in row[0] and "n/a [" in row[0],
     "datapath: a missed target says by how much; QEMU not available with its reason", row)
t.ok(nrow and "| 0.85 | 1.70 |" in nrow[0] and "≥ 0.80: met" in nrow[0], "datapath: a met target", nrow)
t.ok(f"{D.VSOCK_QEMU_NA}" in " ".join(lines), "datapath: the reason in the notes", lines)
t.eq(D.net_name("rx", "64K"), "net TAP to guest 64 KiB TSO frames", "datapath: names of TSO frames")
t.eq(D.spec([("randread", "4K", 32), ("read", "1M", 1)], True), "randread:4K:32:20000,read:1M:1:100",
     "datapath: the guest's workload list")

# The exits table: one row per operation, a column per figure, one table
# per kind.
R = Results()
fake = {"ops": 128, "stats": {"kvm_vcpu": {"exits": 65, "insn_emulation": 33},
                              "kvrun": {"exit_io": 0, "exit_mmio": 2, "exit_other": 0, "doorbell_signals": 32,
                                        "irq_raised": 0, "queue_passes": 4}}}

class FakeCtx:
    results = R

D.exits(FakeCtx, "raw", "randread", "4K", 128, fake)
D.per_op(FakeCtx, D.net_name("tx", "64"), dict(fake, ops=64), "frame")
lines = report.table({"metrics": R.finish()})
row = [x for x in lines if x.startswith("| blk randread 4K qd128 (raw) |")]
t.ok(row and "| 1.00 |" in row[0] and "| 0.50 |" in row[0] and "| 0.25 |" in row[0],
     "exits: per 128 requests (the END mark's exit taken off), per request", row)
t.eq(sum(1 for x in lines if x.startswith("| what |")), 2, "exits: a table for blk and one for net")

# Density's target is a bound on kvrun's own figure.
R = Results()
R.add("density", "pss_30", "kvrun", 12.0, unit="MiB", better="lower", title="host PSS per idle container, 30")
R.add("density", "pss_30", "runc", 0.5, unit="MiB", better="lower", title="host PSS per idle container, 30")
R.metric("density", "pss_30")["target"] = {"max": 10}
lines = report.table({"metrics": R.finish()})
row = [x for x in lines if x.startswith("| host PSS")]
t.ok(row and "| 24.00 |" in row[0] and "≤ 10 MiB: missed by 20%" in row[0], "density: ratio to runc, bound missed",
     row)
t.eq(suite_density.cpu_ticks([os.getpid()]) >= 0, True, "density: CPU ticks of a process")
t.eq(run.parse_args(["--suite", "density", "--density-counts", "30"]).density_counts, [30], "args: --density-counts")
t.eq(run.parse_args(["--suite", "density"]).density_counts, None, "args: density's counts by default")
with tempfile.NamedTemporaryFile("w", suffix=".console") as f:
    f.write("x" * 700 + "\nlast line\n\nguest-init: error\n")
    f.flush()
    tail = suite_density.console_tail(f.name)
    t.ok(tail.endswith("last line | guest-init: error") and len(tail) < 620, "density: a console's end on one line",
         tail)
t.eq(suite_density.console_tail("/nonexistent/x.console"), "", "density: no console file")


class SelfRuntime:
    def init_pid(self, cid):
        return os.getpid()


t.eq(suite_density.partial(SelfRuntime(), [], 30), "", "density: a set that failed at its first container")
t.ok("the 2 of 30 started before it, idle: host PSS" in suite_density.partial(SelfRuntime(), ["a", "b"], 30),
     "density: a set that failed later says what the containers before took")
# The pod suite: the bundles as containerd's CRI makes them, and its two
# pods per session driven through a stand-in for the runtime (a script
# that runs the container's process on the host: no VM, no namespace).
P = suite_pod
a = run.parse_args(["--suite", "pod", "--runtimes", "kvrun,runc"])
t.ok(a.suites == ["pod"] and "pod" in run.NAMED_SUITES and "pod" not in run.SUITES, "args: pod runs only when named")
FAKE_RUNTIME = r'''#!/usr/bin/env python3
import json, os, signal, subprocess, sys
a, root, logf = sys.argv[1:], None, None
while a[0].startswith("--"):
    if a[0] == "--root":
        root = a[1]
    elif a[0] == "--log":
        logf = a[1]
    a = a[2:]
verb, rest = a[0], a[1:]
cid = rest[-1] if verb != "kill" else rest[0]
path = os.path.join(root, cid + ".json")
if verb == "create":
    with open(path, "w") as f:
        json.dump({"bundle": rest[1], "pid": 0}, f)
    if logf and cid.endswith("-sbx"):
        with open(logf, "a") as f:
            f.write('{"level":"info","msg":"VM: template restored: restore_us=1 mem_mib=256 vcpus=1"}\n')
    sys.exit(0)
if not os.path.exists(path):
    sys.exit(f"no container {cid}")
st = json.load(open(path))
if verb == "start":
    cfg = json.load(open(os.path.join(st["bundle"], "config.json")))
    st["pid"] = subprocess.Popen(cfg["process"]["args"], stdin=subprocess.DEVNULL, start_new_session=True).pid
    with open(path, "w") as f:
        json.dump(st, f)
    with open(os.path.join(root, "pids"), "a") as f:
        f.write(f"{st['pid']}\n")
elif verb == "state":
    print(json.dumps(st))
elif verb in ("kill", "delete"):
    try:
        os.kill(st["pid"], signal.SIGKILL) if st["pid"] else None
    except ProcessLookupError:
        pass
    if verb == "delete":
        os.unlink(path)
'''


class PodCtx:
    def __init__(self, work):
        self.work, self.results = work, Results()

    def boot_timeout(self, name):
        return 30


class PodEnv:
    def __init__(self, d):
        self.d, self.n = d, 0

    def log_path(self, tag):
        self.n += 1
        return os.path.join(self.d, f"{self.n}-{tag}.log")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


with tempfile.TemporaryDirectory() as d:
    b = P.write_pod_bundle(os.path.join(d, "sbx"), "/nonexistent", "p-sbx", "sandbox")
    cfg = json.load(open(os.path.join(b, "config.json")))
    t.eq(cfg["annotations"], {"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": "p-sbx"},
         "pod: the sandbox carries containerd's CRI annotations")
    t.ok(cfg["hostname"] == "bench" and cfg["linux"]["resources"]["memory"]["limit"] == 256 << 20 and
         cfg["linux"]["resources"]["cpu"]["quota"] == 100000 and
         all("path" not in n for n in cfg["linux"]["namespaces"]), "pod: the sandbox's own namespaces, 1 CPU, 256 MiB",
         cfg)
    b = P.write_pod_bundle(os.path.join(d, "a"), "/nonexistent", "p-sbx", "container", 4242)
    cfg = json.load(open(os.path.join(b, "config.json")))
    ns = {n["type"]: n.get("path") for n in cfg["linux"]["namespaces"]}
    t.eq(ns, {"pid": None, "mount": None, "network": "/proc/4242/ns/net", "ipc": "/proc/4242/ns/ipc",
              "uts": "/proc/4242/ns/uts"}, "pod: an app container joins the sandbox's network, IPC and UTS by path")
    t.ok(cfg["annotations"] == {"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": "p-sbx"}
         and "hostname" not in cfg and cfg["linux"]["resources"] == {}, "pod: an app container: annotations, no "
         "hostname, no limits", cfg)
    t.eq(P.per_app(1000, 5096), 2.0, "pod: PSS per app container added, MiB")
    t.eq(P.vm_pids([os.getpid()]), [], "pod: a process without a KVM VM is not one")

    fake = os.path.join(d, "fake-runtime")
    with open(fake, "w") as f:
        f.write(FAKE_RUNTIME)
    os.chmod(fake, 0o755)
    state = os.path.join(d, "state")
    os.makedirs(state)
    P.SETTLE_S = 0
    ctx = PodCtx(os.path.join(d, "work"))
    os.makedirs(ctx.work)
    rt = runtimes.Runtime("runc", fake, state)
    P.session(ctx, "runc", rt, None, 0, "/nonexistent", ["/nonexistent-a", "/nonexistent-b"])
    m = ctx.results.finish()
    t.eq(sorted(k.split("/")[1] for k in m), sorted(P.TIMES + P.MEMORY),
         "pod: a runc session gives the times and the memory figures, no kvrun facts")
    t.ok(all(m[f"pod/{k}"]["runtimes"]["runc"]["n"] == 1 and m[f"pod/{k}"]["runtimes"]["runc"]["median"] > 0
             for k in P.TIMES + ["pss_0", "pss_1", "pss_2"]), "pod: one sample of each, above 0", m)
    tm = {k: m[f"pod/{k}"]["runtimes"]["runc"]["median"] for k in P.TIMES}
    t.ok(tm["total_ms"] >= tm["sandbox_ms"] + tm["app_a_ms"] + tm["app_b_ms"] - 1,
         "pod: the whole is from the sandbox's create to the last app container answering", tm)
    pss = [m[f"pod/pss_{k}"]["runtimes"]["runc"]["median"] for k in range(3)]
    t.ok(pss[0] < pss[1] < pss[2], "pod: each app container's process adds to the pod's PSS", pss)
    cfg = json.load(open(os.path.join(ctx.work, "pod-t0-runc", "b-b", "config.json")))
    pids = [int(x) for x in open(os.path.join(state, "pids")).read().split()]
    t.ok(len(pids) == 6 and {"type": "network", "path": f"/proc/{pids[0]}/ns/net"} in cfg["linux"]["namespaces"],
         "pod: B joins the namespaces of the sandbox's process (its state's pid)", (pids, cfg["linux"]["namespaces"]))
    t.ok(open(os.path.join(ctx.work, "pod-t0-runc", "pod-t0-runc-a.out")).read() == "ready\n",
         "pod: an app container's stdout is the harness's file")
    t.eq([x for x in os.listdir(state) if x != "pids"] + [p for p in pids if alive(p)], [],
         "pod: both pods deleted, none of their processes left")

    # kvrun: the VMs of the pod (the stand-in makes none: the figure says
    # 0 and a note says which were found) and the template's use, from the
    # sandbox's --log; the times are labelled, the counts not.
    ctx = PodCtx(os.path.join(d, "work"))
    rt = runtimes.Runtime("kvrun", fake, state)
    P.timed_pod(ctx, "kvrun", rt, PodEnv(d), 1, "/nonexistent", ["/nonexistent-a", "/nonexistent-b"])
    m = ctx.results.finish()
    t.eq((m["pod/vms"]["runtimes"]["kvrun"]["samples"], m["pod/from_template"]["runtimes"]["kvrun"]["samples"]),
         ([0], [1]), "pod: kvrun's VMs counted, the sandbox's restore read from its --log")
    t.ok(any("not the sandbox's monitor" in n for n in ctx.results.notes), "pod: a pod without its one VM is noted",
         ctx.results.notes)
    emulated.label_metrics(m)
    t.ok(m["pod/total_ms"]["runtimes"]["kvrun"].get("label") == emulated.LABEL and
         "label" not in m["pod/vms"]["runtimes"]["kvrun"] and "label" not in m["pod/from_template"]["runtimes"]["kvrun"],
         "pod: under emulation kvrun's times are labelled, the counts not")
    t.eq(os.listdir(state), ["pids"], "pod: the kvrun pod deleted too")
t.ok(emulated.reason("pod/total_ms", True, True) is None and emulated.reason("pod/pss_2", True, False) ==
     emulated.EMULATED_REASON, "pod: kvrun takes it on an emulating host with --force-emulated only")
res = {"metrics": m}
lines = report.table(res)
t.ok("### Pod (a sandbox and two app containers)" in lines, "pod: its table", lines)
t.done()
