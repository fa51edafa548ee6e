# SPDX-License-Identifier: Apache-2.0
"""Servers: PostgreSQL (idle memory, pgbench) and nginx (idle memory of 10,
wrk). Every server runs in a network namespace the harness creates, whose
only link is a veth pair to the host (10.213.N.2 inside, 10.213.N.1 on the
host, no route beyond): the clients on the host reach it over that link,
the same way for every runtime (a kvrun guest takes over the namespace's
eth0 and its address). Every client loop is bounded in time (-T/-d) and
by a hard timeout."""
import os
import re
import shutil
import subprocess
import time

from . import rootfs
from .runtimes import write_bundle
from .suite_start import rotate
from .util import descendants, log, percentile, pss_kib, sh

PG_BIN = rootfs.PG_BIN
NS_PREFIX = "kvbench-"


class Netns:
    """A network namespace with lo and eth0 (a veth to the host) up."""

    def __init__(self, idx):
        self.idx = idx
        self.name = f"{NS_PREFIX}{idx}"
        self.host_if = f"kvbench{idx}"
        self.addr = f"10.213.{idx}.2"

    def __enter__(self):
        self.__exit__()
        sh(["ip", "netns", "add", self.name])
        sh(["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", "eth0", "netns", self.name])
        sh(["ip", "addr", "add", f"10.213.{self.idx}.1/24", "dev", self.host_if])
        sh(["ip", "link", "set", self.host_if, "up"])
        sh(["ip", "-n", self.name, "addr", "add", f"{self.addr}/24", "dev", "eth0"])
        sh(["ip", "-n", self.name, "link", "set", "eth0", "up"])
        sh(["ip", "-n", self.name, "link", "set", "lo", "up"])
        return self

    def __exit__(self, *exc):
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def wait_tcp(addr, port, timeout=120, probe=None):
    """Wait until something accepts on addr:port."""
    probe = probe or ["bash", "-c", f"exec 3<>/dev/tcp/{addr}/{port}"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {addr}:{port} after {timeout}s")


def container_pss(rt, cid):
    """(PSS, RSS) KiB of the container's processes: its init and every
    descendant. For kvrun that is the monitor, whose mappings include the
    guest RAM it has touched."""
    pids = descendants(rt.init_pid(cid))
    return pss_kib(pids) + (len(pids),)


# ---- PostgreSQL ----

def pg_session(ctx, rtname, i, do_mem, do_bench):
    rt = ctx.rt[rtname]
    root = rootfs.ensure(ctx.cache, "postgres", ctx.src)
    data = f"{root}/var/lib/postgresql/data"
    shutil.rmtree(data, ignore_errors=True)
    sh(["cp", "-a", f"{root}/var/lib/postgresql/template", data])
    cid = f"pg-{rtname}-{i}"
    with Netns(100 + i) as ns:
        b = write_bundle(os.path.join(ctx.work, f"b-pg-{rtname}"), root,
                         [f"{PG_BIN}/postgres", "-D", "/var/lib/postgresql/data"], ctx.limits,
                         netns=ns.name, uid=999, gid=999)
        rt.run_detached(b, cid, os.path.join(ctx.work, f"{cid}.log"))
        try:
            wait_tcp(ns.addr, 5432, probe=[f"{PG_BIN}/pg_isready", "-q", "-h", ns.addr, "-p", "5432"])
            if do_mem:
                time.sleep(ctx.settle)
                pss, rss, nproc = container_pss(rt, cid)
                ctx.results.add("memory", "pg_idle_pss", rtname, pss / 1024, unit="MiB", better="lower",
                                title="one idle PostgreSQL, PSS")
            if do_bench:
                pgbench(ctx, rtname, ns, i)
        finally:
            rt.remove(cid)
            shutil.rmtree(data, ignore_errors=True)


def pgbench_run(ctx, ns, logdir, args):
    """One pgbench run; returns (tps, p99 latency ms) from its per-transaction log."""
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    cmd = ["pgbench", "-h", ns.addr, "-U", "postgres", "-n", "-T", str(ctx.duration), "-l",
                 "--log-prefix", f"{logdir}/tx"] + args + ["postgres"]
    r = sh(cmd, timeout=ctx.duration + 120)
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", r.stdout)
    lat = []
    for fn in os.listdir(logdir):
        with open(os.path.join(logdir, fn)) as f:
            lat.extend(int(line.split()[2]) for line in f if line.strip())
    return float(m.group(1)), percentile(lat, 99) / 1000


PGBENCH = {
    # name: (args, title)
    "tpcb": (["-c", "4", "-j", "2"], "pgbench tpcb-like, 4 clients"),
    "select": (["-S", "-c", "4", "-j", "2"], "pgbench select-only, 4 clients"),
    "tpcb1": (["-c", "1"], "pgbench tpcb-like, 1 client (commit latency)"),
}


def pgbench(ctx, rtname, ns, i):
    sh(["pgbench", "-h", ns.addr, "-U", "postgres", "-i", "-q", "-s", str(ctx.pg_scale), "postgres"], timeout=600)
    for name, (args, title) in PGBENCH.items():
        tps, p99 = pgbench_run(ctx, ns, os.path.join(ctx.work, "pglog"), args)
        ctx.results.add("pg", f"{name}_tps", rtname, tps, unit="tx/s", better="higher", title=f"{title}: TPS")
        ctx.results.add("pg", f"{name}_p99", rtname, p99, unit="ms", better="lower", title=f"{title}: p99")


def run_pg(ctx, do_mem, do_bench):
    names = ctx.workload_runtimes()
    log(f"pg: scale {ctx.pg_scale}, {ctx.duration}s per test, {', '.join(names)}")
    for i in range(ctx.runs):
        for rtname in rotate(names, i):
            pg_session(ctx, rtname, i, do_mem, do_bench)
    ctx.na_kvrun_for(["memory/pg_idle_pss"] if do_mem else [], "MiB", "lower")
    if do_bench:
        ctx.na_kvrun_for([f"pg/{n}_{k}" for n in PGBENCH for k in ("tps", "p99")], None, None)


# ---- nginx ----

WRK_RE = re.compile(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", re.M)


def wrk(ctx, ns, path):
    r = sh(["wrk", "-t2", "-c8", f"-d{ctx.wrk_duration}s", "--timeout", "5s", "--latency",
            f"http://{ns.addr}:8080/{path}"], timeout=ctx.wrk_duration + 60)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", r.stdout).group(1))
    m = WRK_RE.search(r.stdout)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    return rps, p99


def nginx_session(ctx, rtname, i, do_mem, do_bench):
    rt = ctx.rt[rtname]
    root = rootfs.ensure(ctx.cache, "nginx", ctx.src)
    count = 10 if do_mem else 1
    started = []
    nss = [Netns(k) for k in range(count)]
    try:
        for k, ns in enumerate(nss):
            ns.__enter__()
            b = write_bundle(os.path.join(ctx.work, f"b-ng-{rtname}-{k}"), root, ["/usr/sbin/nginx"],
                             ctx.limits, netns=ns.name)
            cid = f"ng-{rtname}-{i}-{k}"
            rt.run_detached(b, cid, os.path.join(ctx.work, f"{cid}.log"))
            started.append(cid)
        for ns in nss:
            wait_tcp(ns.addr, 8080)
        if do_mem:
            time.sleep(ctx.settle)
            pss = sum(container_pss(rt, cid)[0] for cid in started)
            ctx.results.add("memory", "nginx10_pss", rtname, pss / 1024, unit="MiB", better="lower",
                            title="10 idle nginx, PSS total")
        if do_bench:
            for f in rootfs.NGINX_FILES:
                rps, p99 = wrk(ctx, nss[0], f)
                ctx.results.add("nginx", f"{f}_rps", rtname, rps, unit="req/s", better="higher",
                                title=f"nginx {f} file: requests/s")
                ctx.results.add("nginx", f"{f}_p99", rtname, p99, unit="ms", better="lower",
                                title=f"nginx {f} file: p99")
    finally:
        for cid in started:
            rt.remove(cid)
        for ns in nss:
            ns.__exit__()


def run_nginx(ctx, do_mem, do_bench):
    names = ctx.workload_runtimes()
    log(f"nginx: wrk -t2 -c8 {ctx.wrk_duration}s per file, {', '.join(names)}")
    for i in range(ctx.runs):
        for rtname in rotate(names, i):
            nginx_session(ctx, rtname, i, do_mem, do_bench)
    ctx.na_kvrun_for(["memory/nginx10_pss"] if do_mem else [], "MiB", "lower")
    if do_bench:
        ctx.na_kvrun_for([f"nginx/{f}_{k}" for f in rootfs.NGINX_FILES for k in ("rps", "p99")], None, None)
