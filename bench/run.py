#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun's benchmark harness: kvrun against runc and crun (and QEMU microvm
for the VMM) on the same work, in one run. See docs/benchmarks.md.

  bench/run.py [--suite start,memory,pg,nginx,net,cpu-io,vmm,template,sizing,pod] [--runs N] [--quick]
               [--force-emulated] [--runtimes kvrun,runc,crun] [--sizing-mib N]
               [--density-counts N,N...] [--out DIR]

Needs root, scripts/setup.sh --bench, and a built ./build (kvrun, the test
guest). Writes bench/results/<date>/: results.json (every sample),
results.md (medians, spread, ratios) and PNG plots.
"""
import argparse
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import emulated, report, suite_cpuio, suite_datapath, suite_density, suite_fs, suite_net, suite_pod, suite_servers, suite_sizing, suite_start, suite_template, suite_vmm  # noqa: E402
from benchlib.results import Results  # noqa: E402
from benchlib.runtimes import Limits, cgroup_layout, make_runtimes, own_cgroup  # noqa: E402
from benchlib.util import host_info, loadavg, log, sh, write_json  # noqa: E402

SUITES = ["start", "memory", "pg", "nginx", "net", "cpu-io", "vmm"]
# Suites run only when named: template builds three templates (three Linux
# boots); fs compares kvrun's virtio-fs server with bindfs on /dev/fuse (no
# container runtime takes part); sizing boots two guests per run and writes
# 1 GiB in one (128 MiB where the guest kernel is emulated); datapath, exits and density: one command each;
# pod builds a template and two pods (sandbox and two app containers) per
# run and runtime (docs/benchmarks.md).
NAMED_SUITES = ["template", "fs", "sizing", "datapath", "exits", "density", "pod"]
EMULATED = emulated.EMULATED
EMULATED_REASON = emulated.EMULATED_REASON


class Context:
    """What every suite needs: paths, runtimes, settings, the results."""

    EMULATED_REASON = EMULATED_REASON

    def __init__(self, a):
        self.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.build = os.path.abspath(a.build)
        self.cache = os.path.join(self.src, "bench", ".cache")
        self.work = os.path.join(self.cache, "work")
        self.out = a.out
        self.python = sys.executable
        self.kvrun_bin = os.path.abspath(a.kvrun or os.path.join(self.build, "runtime", "kvrun"))
        self.kernel_dir = os.environ.get("KVRUN_GUEST_KERNEL_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "guest-kernel"))
        self.runs = max(3, a.runs)
        self.quick = a.quick
        self.force_emulated = a.force_emulated
        self.sizing_mib = getattr(a, "sizing_mib", None)
        self.density_counts = getattr(a, "density_counts", None)
        self.start_runs = 10 if a.quick else 20
        self.duration = 5 if a.quick else 10  # pgbench -T
        self.wrk_duration = 3 if a.quick else 5
        self.iperf_duration = 3 if a.quick else 10
        self.fio_duration = 3 if a.quick else 8
        self.pg_scale = 4
        self.settle = 2.0
        self.limits = Limits(cpus=2, memory_mib=1024)
        self.results = Results()
        self.host = host_info()["host"]
        self.kvrun_reason_start = None
        self.kvrun_workload_reason = None
        self.kvrun_failed = {}  # figure -> kvrun's error, once a session failed
        # One boot of an emulated kvrun guest serves net and cpu-io's small steps.
        self.cpuio_in_net = self.host["emulating"] and a.force_emulated and "net" in getattr(a, "suites", [])

    def workload_runtimes(self):
        order = [r for r in ("kvrun", "runc", "crun") if r in self.rt]
        if self.kvrun_workload_reason:
            order = [r for r in order if r != "kvrun"]
        return order

    def kvrun_reason(self, key):
        """Why kvrun does not take figure key ("suite/name") here, or None."""
        if self.kvrun_reason_start:
            return self.kvrun_workload_reason
        return emulated.reason(key, self.host["emulating"], self.force_emulated)

    def runtimes_for(self, keys):
        """The runtimes that take all of the figures keys, kvrun first."""
        order = [r for r in ("kvrun", "runc", "crun") if r in self.rt]
        if "kvrun" in order and any(self.kvrun_reason(k) for k in keys):
            order.remove("kvrun")
        return order

    def kvrun_emulated(self, rtname):
        """Whether rtname is kvrun running a guest kernel under emulation."""
        return rtname == "kvrun" and self.host["emulating"]

    def boot_timeout(self, rtname):
        """Seconds a server gets to answer after `run -d`: under emulation
        a kvrun guest boots for minutes (2 to 14 here)."""
        return 1800 if self.kvrun_emulated(rtname) else 120

    def guarded(self, rtname, keys, fn, *args):
        """fn(*args) for one session of rtname. A kvrun session that fails
        does not end the suite: its figures keep the samples already taken
        (the failure is noted) or become not available with kvrun's error,
        and kvrun takes no further session of this suite. Returns False
        once kvrun has failed here."""
        if rtname == "kvrun" and self.kvrun_failed.get(keys[0]):
            return False
        try:
            fn(*args)
            return True
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            if rtname != "kvrun":
                raise
            err = str(e).strip().replace("\n", " ")[-400:]
            log(f"kvrun failed: {err}")
            self.results.notes.append(f"a kvrun session for {', '.join(keys)} failed: {err}")
            for key in keys:
                self.kvrun_failed[key] = err
                m = self.results.metrics.get(key, {}).get("runtimes", {}).get("kvrun")
                if not m or not m.get("samples"):
                    suite, name = key.split("/", 1)
                    self.results.na(suite, name, "kvrun", f"not available: kvrun failed here: {err}")
            return False

    def na_kvrun_for(self, keys, unit, better):
        """Mark kvrun not available for the figures it does not take."""
        if "kvrun" not in self.rt:
            return
        for key in keys:
            why = self.kvrun_reason(key)
            if not why:
                continue
            suite, name = key.split("/", 1)
            m = self.results.metrics.get(key)
            if m:
                m["runtimes"]["kvrun"] = {"not_available": why}
            elif unit:
                self.results.na(suite, name, "kvrun", why, unit=unit, better=better)


def build_shim(ctx):
    shim = os.path.join(ctx.cache, "vmm-setup-shim.so")
    src = os.path.join(ctx.src, "bench", "vmm-setup-shim.c")
    if not os.path.exists(shim) or os.path.getmtime(shim) < os.path.getmtime(src):
        sh(["cc", "-O2", "-shared", "-fPIC", "-o", shim, src, "-ldl"])
    return shim


def check_tools(suites):
    need = {"start": ["runc", "crun"], "memory": ["pgbench", "ip"], "pg": ["pgbench", "ip"],
            "nginx": ["nginx", "wrk", "ip"], "net": ["nginx", "wrk", "iperf3", "ip"], "cpu-io": ["bc", "fio", "gcc", "make"], "vmm": ["qemu-system-x86_64"],
            "template": ["runc"], "fs": ["bindfs"], "sizing": ["gcc"], "datapath": ["cc", "ip"], "exits": ["cc", "ip"],
            "density": ["runc"], "pod": ["runc", "cp"]}
    missing = sorted({t for s in suites for t in need.get(s, []) if not shutil.which(t)})
    if missing:
        sys.exit(f"bench/run.py: missing {' '.join(missing)}: run scripts/setup.sh --bench")


def setup_kvrun(ctx, a):
    """Probe kvrun (one real `kvrun run` to the guest's first instruction)
    and decide whether guest workloads run under it here."""
    if "kvrun" not in ctx.rt:
        return
    parts = []
    if not os.path.exists(ctx.kvrun_bin):
        parts.append(f"{ctx.kvrun_bin} not built")
    else:
        r = suite_start.probe_kvrun(ctx)
        if r:
            parts.append(r)
    if parts:
        ctx.kvrun_reason_start = "not available: " + parts[0]
    if ctx.host["emulating"] and not ctx.force_emulated:
        parts.append(EMULATED)
    ctx.kvrun_workload_reason = ("not available: " + "; ".join(parts)) if parts else None
    log(f"kvrun: start {'ok' if not ctx.kvrun_reason_start else ctx.kvrun_reason_start}; workloads "
        f"{workloads_line(ctx)}")


def workloads_line(ctx):
    """What kvrun runs of the guest workloads here, in words."""
    if ctx.kvrun_workload_reason:
        return ctx.kvrun_workload_reason
    if ctx.host["emulating"]:
        return (f"forced on an emulating host, labelled '{emulated.LABEL}': only "
                f"{', '.join(emulated.FORCED)}")
    return "run"


def run_suites(ctx, suites):
    timings = {}
    for s in suites:
        t0 = time.monotonic()
        try:
            if s == "start":
                suite_start.run(ctx)
            elif s == "memory":
                if "pg" not in suites:
                    suite_servers.run_pg(ctx, True, False)
                if "nginx" not in suites:
                    suite_servers.run_nginx(ctx, True, False)
            elif s == "pg":
                suite_servers.run_pg(ctx, "memory" in suites, True)
            elif s == "nginx":
                # With net in the run, wrk runs in net's sessions (one
                # container serves iperf3 and nginx).
                if "memory" in suites or "net" not in suites:
                    suite_servers.run_nginx(ctx, "memory" in suites, "net" not in suites)
            elif s == "net":
                suite_net.run(ctx)
            elif s == "cpu-io":
                suite_cpuio.run(ctx)
            elif s == "vmm":
                suite_vmm.run(ctx)
            elif s == "template":
                suite_template.run(ctx)
            elif s == "fs":
                suite_fs.run(ctx)
            elif s == "sizing":
                suite_sizing.run(ctx)
            elif s == "datapath":
                suite_datapath.run(ctx)
            elif s == "exits":
                # With datapath (and density) in the run, their boots
                # give these figures.
                if "datapath" not in suites:
                    suite_datapath.run_exits(ctx)
                if "density" not in suites:
                    suite_density.run_exits(ctx)
            elif s == "density":
                suite_density.run(ctx)
            elif s == "pod":
                suite_pod.run(ctx)
        except Exception as e:  # one broken suite must not lose the others
            traceback.print_exc()
            ctx.results.notes.append(f"suite {s} failed: {e}")
        except KeyboardInterrupt as e:  # SIGINT/SIGTERM: keep what was measured
            ctx.results.notes.append(f"interrupted ({e}) during suite {s}; the suites after it did not run")
            timings[s] = round(time.monotonic() - t0, 1)
            log(f"{s}: interrupted")
            break
        timings[s] = round(time.monotonic() - t0, 1)
        log(f"{s}: {timings[s]} s")
    return timings


def remove_leftovers(ctx):
    """Containers, namespaces and links an interrupted run left behind."""
    for r in ctx.rt.values():
        p = subprocess.run(r.argv("list", "-q"), capture_output=True, text=True, env=r.env)
        for cid in p.stdout.split() if p.returncode == 0 else []:
            log(f"removing leftover {r.name} container {cid}")
            r.remove(cid)
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for name in [line.split()[0] for line in ns.splitlines() if line.startswith(suite_servers.NS_PREFIX)]:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    for line in links.splitlines():
        name = line.split(": ")[1].split("@")[0]
        if name.startswith("kvbench"):
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def on_term(signo, frame):
    raise KeyboardInterrupt(f"signal {signo}")


def remove_cgroup_parents():
    """The empty kvbench/ cgroups the runtimes created under ours."""
    own = own_cgroup().lstrip("/")
    for ctrl in os.listdir("/sys/fs/cgroup"):
        d = os.path.join("/sys/fs/cgroup", ctrl, own, "kvbench")
        if os.path.isdir(d):
            for sub in os.listdir(d):
                if os.path.isdir(os.path.join(d, sub)):
                    try:
                        os.rmdir(os.path.join(d, sub))
                    except OSError:
                        pass
            try:
                os.rmdir(d)
            except OSError:
                pass


def parse_args(argv=None):
    """The command line; ap.error()s (exit 2) on an unknown suite."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=",".join(SUITES),
                    help=f"comma-separated: {','.join(SUITES + NAMED_SUITES)} (default: all but {','.join(NAMED_SUITES)})")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (at least 3)")
    ap.add_argument("--quick", action="store_true",
                    help="shorter client loops (pgbench 5 s, wrk 3 s, iperf3 3 s, fio 3 s)")
    ap.add_argument("--force-emulated", action="store_true",
                    help="where the guest kernel is emulated, run kvrun's small set of guest workloads anyway "
                         "(start of /bin/true, bc, a small tar and rm, net): a Linux boot of minutes each")
    ap.add_argument("--runtimes", default="kvrun,runc,crun")
    ap.add_argument("--density-counts",
                    help=f"idle containers per set in the density suite, comma-separated (default "
                         f"{','.join(map(str, suite_density.COUNTS))}, 1,3 with --quick); the first set's first "
                         f"container gives the start and exec exits")
    ap.add_argument("--sizing-mib", type=int,
                    help=f"MiB memhog writes in the sizing suite (default {suite_sizing.ALLOC_MIB}, "
                         f"{suite_sizing.EMULATED_ALLOC_MIB} where the guest kernel is emulated)")
    ap.add_argument("--kvrun", help="kvrun binary (default BUILD/runtime/kvrun)")
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--out", help="results directory (default bench/results/<UTC date>, or a "
                                  "<time> directory below it when that already holds results)")
    a = ap.parse_args(argv)
    a.suites = [s for s in a.suite.split(",") if s]
    bad = [s for s in a.suites if s not in SUITES + NAMED_SUITES]
    if bad:
        ap.error(f"unknown suite {', '.join(bad)}")
    if a.sizing_mib is not None and a.sizing_mib < 4:
        ap.error("--sizing-mib: at least 4")
    if a.density_counts is not None:
        try:
            a.density_counts = [int(x) for x in a.density_counts.split(",") if x]
        except ValueError:
            ap.error("--density-counts: comma-separated numbers")
        if not a.density_counts or min(a.density_counts) < 1:
            ap.error("--density-counts: at least one count, each at least 1")
    a.runtime_names = [r for r in a.runtimes.split(",") if r]
    bad = [r for r in a.runtime_names if r not in ("kvrun", "runc", "crun")]
    if bad:
        ap.error(f"unknown runtime {', '.join(bad)}")
    return a


def main():
    a = parse_args()
    suites = a.suites
    if os.geteuid() != 0:
        sys.exit("bench/run.py: needs root (runc, crun, network namespaces)")
    check_tools(suites)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not a.out:
        # A second run on the same day goes beside the first, not over it.
        a.out = os.path.join(src, "bench", "results", time.strftime("%Y-%m-%d", time.gmtime()))
        if os.path.exists(os.path.join(a.out, "results.json")):
            a.out = os.path.join(a.out, time.strftime("%H%M%S", time.gmtime()))
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)

    ctx = Context(a)
    os.makedirs(ctx.work, exist_ok=True)
    started, load0, t0 = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), loadavg(), time.monotonic()
    log(f"host kind {ctx.host['kind']}; load {load0}; results in {a.out}")
    ctx.shim = build_shim(ctx)
    kv_env = {"KVRUN_CACHE_DIR": os.path.join(ctx.cache, "kvrun")}
    if "KVRUN_KERNEL" not in os.environ and os.path.exists(os.path.join(ctx.kernel_dir, "vmlinux")):
        kv_env["KVRUN_KERNEL"] = os.path.join(ctx.kernel_dir, "vmlinux")
    if ctx.host["emulating"] and ctx.force_emulated and "KVRUN_BOOT_TIMEOUT" not in os.environ:
        # kvrun waits 600 s for its guest by default; an emulated boot on
        # a loaded host takes longer.
        kv_env["KVRUN_BOOT_TIMEOUT"] = str(ctx.boot_timeout("kvrun") - 100)
    ctx.rt = make_runtimes(a.runtime_names, ctx.work, ctx.kvrun_bin, kv_env)
    signal.signal(signal.SIGTERM, on_term)  # so that every session's cleanup runs
    remove_leftovers(ctx)
    setup_kvrun(ctx, a)
    timings = run_suites(ctx, suites)
    remove_cgroup_parents()
    if ctx.host["emulating"]:
        # Forced guest workloads on an emulating host measure the emulator.
        emulated.label_metrics(ctx.results.metrics)

    kv_vcpus = 1 if ctx.host["emulating"] else math.ceil(ctx.limits.cpus)
    res = {
        "started": started, "command": " ".join(shlex.quote(x) for x in ["bench/run.py"] + sys.argv[1:]),
        "wall_s": time.monotonic() - t0, "loadavg_start": load0, "loadavg_end": loadavg(),
        "host": host_info(), "suites": suites, "suite_seconds": timings,
        "config": {
            "runs": ctx.runs, "quick": ctx.quick, "force_emulated": ctx.force_emulated,
            "limits": ctx.limits.describe(), "cgroup_layout": cgroup_layout(),
            "runc_crun_cpus": f"all {os.cpu_count()} host CPUs, CFS quota {ctx.limits.cpus} CPUs",
            "kvrun_vm": {"vcpus": kv_vcpus, "memory_mib": ctx.limits.memory_mib,
                         "rule": "vCPUs = ceil(quota/period), 1 on an emulating host; guest RAM = memory limit"},
            "pgbench": {"scale": ctx.pg_scale, "duration_s": ctx.duration, "tests": {
                k: " ".join(v[0]) for k, v in suite_servers.PGBENCH.items()}},
            "wrk": {"threads": 2, "connections": 8, "duration_s": ctx.wrk_duration},
            "iperf3": {"duration_s": ctx.iperf_duration, "omit_s": 1, "streams": 1, "protocol": "tcp"},
            "net_setup": "container netns (eth0 10.213.N.2/24) -- veth -- peer netns (peer0 10.213.N.1/24); "
                         "clients in the peer netns",
            "kvrun_forced_emulated": emulated.FORCED if ctx.host["emulating"] and ctx.force_emulated else [],
            "fio": {"bs": "4k", "size": "256M", "direct": 1, "ioengine": "psync", "runtime_s": ctx.fio_duration},
            "template": {"sizes_mib": suite_template.SIZES, "create_mib": suite_template.CREATE_MIB,
                         "runs": suite_template.counts(ctx.quick, ctx.host["emulating"]),
                         "restore": "monitor's --log record, file opened to vCPU threads started"},
            "fs": {"file_mib": suite_fs.FILE_MIB, "rand_reads": suite_fs.RAND_READS, "files": suite_fs.NFILES,
                   "bindfs_options": suite_fs.BINDFS_OPTS, "kvrun_fs_host_args": " ".join(suite_fs.KVRUN_ARGS),
                   "servers": {n: " ".join(a) for n, a in suite_fs.SERVERS.items()}},
            "sizing": suite_sizing.config(ctx),
            "density": {"counts": ctx.density_counts or ([1, 3] if ctx.quick else suite_density.COUNTS),
                        "cpu_window_s": suite_density.CPU_WINDOW_S, "settle_s": ctx.settle},
            "pod": suite_pod.config(ctx),
            "start_runs_per_block": ctx.start_runs, "settle_s": ctx.settle, "nice": os.nice(0),
        },
        "invocations": {n: r.invocation() for n, r in ctx.rt.items()},
        "kvrun": {"binary": ctx.kvrun_bin, "start": ctx.kvrun_reason_start or "ok",
                  "workloads": workloads_line(ctx), "env": kv_env},
        "metrics": ctx.results.finish(), "notes": ctx.results.notes,
    }
    write_json(os.path.join(a.out, "results.json"), res)
    try:
        res["plots"] = report.write_plots(res, a.out)
    except (RuntimeError, OSError) as e:
        res["notes"].append(f"plots not made: {e}")
        res["plots"] = []
    report.write_markdown(res, os.path.join(a.out, "results.md"))
    write_json(os.path.join(a.out, "results.json"), res)
    log(f"done in {res['wall_s']:.0f} s: {a.out}/results.md")
    print(open(os.path.join(a.out, "results.md")).read())


if __name__ == "__main__":
    main()
