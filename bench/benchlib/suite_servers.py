# SPDX-License-Identifier: Apache-2.0
"""Servers: PostgreSQL (idle memory, pgbench) and nginx (idle memory of 10,
wrk). Every server runs in a network namespace the harness creates, whose
only link is a veth pair to a peer namespace (10.213.N.2 inside, 10.213.N.1
in the peer, no route beyond): the clients run in the peer namespace and
reach it over that link, the same way for every runtime (a kvrun guest
takes over the namespace's eth0 and its address). Every client loop is
bounded in time (-T/-d) and by a hard timeout."""
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
    """The namespace pair a server runs in: the container's namespace
    (`kvbench-N`, lo and eth0 up, 10.213.N.2/24) and a peer namespace
    (`kvbench-N-peer`, peer0, 10.213.N.1/24) joined by a veth pair. The
    clients run in the peer namespace (`ip netns exec`); the addresses
    exist only inside these two namespaces and nothing is routed beyond
    them, so no host interface is touched."""

    def __init__(self, idx):
        self.idx = idx
        self.name = f"{NS_PREFIX}{idx}"
        self.peer = f"{NS_PREFIX}{idx}-peer"
        self.addr = f"10.213.{idx}.2"
        self.peer_addr = f"10.213.{idx}.1"

    def __enter__(self):
        self.__exit__()
        sh(["ip", "netns", "add", self.name])
        sh(["ip", "netns", "add", self.peer])
        sh(["ip", "-n", self.peer, "link", "add", "peer0", "type", "veth", "peer", "name", "eth0",
            "netns", self.name])
        sh(["ip", "-n", self.peer, "addr", "add", f"{self.peer_addr}/24", "dev", "peer0"])
        sh(["ip", "-n", self.name, "addr", "add", f"{self.addr}/24", "dev", "eth0"])
        for ns, dev in ((self.peer, "peer0"), (self.peer, "lo"), (self.name, "eth0"), (self.name, "lo")):
            sh(["ip", "-n", ns, "link", "set", dev, "up"])
        return self

    def __exit__(self, *exc):
        for ns in (self.name, self.peer):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def client(self, cmd):
        """cmd run in the peer namespace."""
        return ["ip", "netns", "exec", self.peer] + list(cmd)


def wait_tcp(ns, port, timeout=120, probe=None):
    """Wait until something in ns accepts on its address, port (probed
    from the peer namespace)."""
    probe = ns.client(probe or ["bash", "-c", f"exec 3<>/dev/tcp/{ns.addr}/{port}"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return
        time.sleep(0.1 if timeout <= 120 else 1)
    raise RuntimeError(f"nothing listening on {ns.addr}:{port} after {timeout}s")


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
        rt.run_detached(b, cid, os.path.join(ctx.work, f"{cid}.log"), timeout=ctx.boot_timeout(rtname) + 600)
        try:
            wait_tcp(ns, 5432, timeout=ctx.boot_timeout(rtname),
                     probe=[f"{PG_BIN}/pg_isready", "-q", "-h", ns.addr, "-p", "5432"])
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
    r = sh(ns.client(cmd), timeout=ctx.duration + 120)
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
    sh(ns.client(["pgbench", "-h", ns.addr, "-U", "postgres", "-i", "-q", "-s", str(ctx.pg_scale), "postgres"]),
       timeout=600)
    for name, (args, title) in PGBENCH.items():
        tps, p99 = pgbench_run(ctx, ns, os.path.join(ctx.work, "pglog"), args)
        ctx.results.add("pg", f"{name}_tps", rtname, tps, unit="tx/s", better="higher", title=f"{title}: TPS")
        ctx.results.add("pg", f"{name}_p99", rtname, p99, unit="ms", better="lower", title=f"{title}: p99")


def run_pg(ctx, do_mem, do_bench):
    names = ctx.runtimes_for((["memory/pg_idle_pss"] if do_mem else []) +
                             ([f"pg/{n}_tps" for n in PGBENCH] if do_bench else []))
    log(f"pg: scale {ctx.pg_scale}, {ctx.duration}s per test, {', '.join(names)}")
    for i in range(ctx.runs):
        for rtname in rotate(names, i):
            pg_session(ctx, rtname, i, do_mem, do_bench)
    ctx.na_kvrun_for(["memory/pg_idle_pss"] if do_mem else [], "MiB", "lower")
    if do_bench:
        ctx.na_kvrun_for([f"pg/{n}_{k}" for n in PGBENCH for k in ("tps", "p99")], None, None)


# ---- nginx ----

WRK_RE = re.compile(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", re.M)
WRK_TIMEOUT_S = 5


def parse_wrk(out):
    """(requests/s, p99 ms or None) from wrk --latency's output; p99 is
    None when no request completed (wrk then prints zeros)."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    n = int(re.search(r"^\s*(\d+) requests in ", out, re.M).group(1))
    m = WRK_RE.search(out)
    if not n or not m:
        return rps, None
    return rps, float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]


def wrk(ctx, ns, path):
    r = sh(ns.client(["wrk", "-t2", "-c8", f"-d{ctx.wrk_duration}s", "--timeout", f"{WRK_TIMEOUT_S}s", "--latency",
                      f"http://{ns.addr}:8080/{path}"]), timeout=ctx.wrk_duration + 60)
    return parse_wrk(r.stdout)


def wrk_files(ctx, rtname, ns):
    """wrk on each of nginx's files; the figures go to the nginx suite."""
    for f in rootfs.NGINX_FILES:
        rps, p99 = wrk(ctx, ns, f)
        meta = dict(unit="ms", better="lower", title=f"nginx {f} file: p99")
        ctx.results.add("nginx", f"{f}_rps", rtname, rps, unit="req/s", better="higher",
                        title=f"nginx {f} file: requests/s")
        if p99 is None:
            ctx.results.na("nginx", f"{f}_p99", rtname, f"not available: no request completed within wrk's "
                           f"{ctx.wrk_duration} s (timeout {WRK_TIMEOUT_S} s per request)", **meta)
        else:
            ctx.results.add("nginx", f"{f}_p99", rtname, p99, **meta)


def nginx_session(ctx, rtname, i, do_mem, do_bench):
    rt = ctx.rt[rtname]
    root = rootfs.ensure(ctx.cache, "nginx", ctx.src)
    if rtname == "kvrun" and ctx.kvrun_reason("memory/nginx10_pss"):
        do_mem = False  # wrk only
    count = 10 if do_mem else 1
    started = []
    nss = [Netns(k) for k in range(count)]
    try:
        for k, ns in enumerate(nss):
            ns.__enter__()
            b = write_bundle(os.path.join(ctx.work, f"b-ng-{rtname}-{k}"), root, ["/usr/sbin/nginx"],
                             ctx.limits, netns=ns.name)
            cid = f"ng-{rtname}-{i}-{k}"
            rt.run_detached(b, cid, os.path.join(ctx.work, f"{cid}.log"), timeout=ctx.boot_timeout(rtname) + 600)
            started.append(cid)
        for ns in nss:
            wait_tcp(ns, 8080, timeout=ctx.boot_timeout(rtname))
        if do_mem:
            time.sleep(ctx.settle)
            pss = sum(container_pss(rt, cid)[0] for cid in started)
            ctx.results.add("memory", "nginx10_pss", rtname, pss / 1024, unit="MiB", better="lower",
                            title="10 idle nginx, PSS total")
        if do_bench:
            wrk_files(ctx, rtname, nss[0])
    finally:
        for cid in started:
            rt.remove(cid)
        for ns in nss:
            ns.__exit__()


def run_nginx(ctx, do_mem, do_bench):
    names = ctx.runtimes_for(["nginx/1k_rps"] if do_bench else ["memory/nginx10_pss"])
    log(f"nginx: wrk -t2 -c8 {ctx.wrk_duration}s per file, {', '.join(names)}")
    for i in range(ctx.runs):
        for rtname in rotate(names, i):
            nginx_session(ctx, rtname, i, do_mem, do_bench)
    ctx.na_kvrun_for(["memory/nginx10_pss"] if do_mem else [], "MiB", "lower")
    if do_bench:
        ctx.na_kvrun_for([f"nginx/{f}_{k}" for f in rootfs.NGINX_FILES for k in ("rps", "p99")], None, None)
