# SPDX-License-Identifier: Apache-2.0
"""net: iperf3 TCP throughput both ways and nginx under wrk (1 KiB,
100 KiB, 10 MiB files), from one container per runtime and run that serves
both (the net rootfs: nginx-light and iperf3). The container sits in its
own network namespace whose eth0 is a veth to a peer namespace; iperf3's
client and wrk run in the peer namespace (suite_servers.Netns), so every
runtime is reached the same way. Under an emulated guest kernel one such
session is one Linux boot for kvrun, which is why both tools share it;
with --force-emulated there, the same session also runs cpu-io's small
steps (bc, the small tar and rm) with `exec`, for every runtime."""
import json
import os
import time

from . import rootfs, suite_cpuio
from .runtimes import write_bundle
from .suite_servers import Netns, wait_tcp, wrk_files
from .suite_start import rotate
from .util import log, sh

S = "net"
DIRECTIONS = {
    # name: (extra iperf3 client arguments, title)
    "iperf3_in": ([], "iperf3 TCP, peer to container"),
    "iperf3_out": (["-R"], "iperf3 TCP, container to peer"),
}
NS_BASE = 200  # 10.213.200+ : apart from the nginx (0-9) and pg (100+) sessions


def parse_iperf3(out):
    """Mbit/s received at the far end, from iperf3 -J's output (either
    direction: with -R the client is the receiver). Raises RuntimeError
    with iperf3's own message on failure."""
    j = json.loads(out)
    if j.get("error"):
        raise RuntimeError(f"iperf3: {j['error']}")
    return j["end"]["sum_received"]["bits_per_second"] / 1e6


def iperf3(ctx, ns, extra, connect_deadline):
    """One iperf3 client run from the peer namespace. The server starts
    beside nginx, so it may be a moment later: refused connections are
    retried until connect_deadline (monotonic seconds)."""
    cmd = ns.client(["iperf3", "-c", ns.addr, "-p", "5201", "-t", str(ctx.iperf_duration), "-O", "1", "-J",
                     "--connect-timeout", "5000"] + extra)
    while True:
        r = sh(cmd, check=False, timeout=ctx.iperf_duration + 180)
        try:
            return parse_iperf3(r.stdout)
        except (RuntimeError, ValueError, KeyError) as e:
            if "unable to connect" not in str(e) or time.monotonic() > connect_deadline:
                raise RuntimeError(f"{' '.join(cmd)}: {e}; {r.stderr.strip()[-300:]}") from None
            time.sleep(1)


def session(ctx, rtname, i):
    rt = ctx.rt[rtname]
    root = rootfs.ensure(ctx.cache, "net", ctx.src)
    cid = f"net-{rtname}-{i}"
    with Netns(NS_BASE + i % 50) as ns:
        b = write_bundle(os.path.join(ctx.work, f"b-net-{rtname}"), root, ["/usr/local/bin/netserve.sh"],
                         ctx.limits, netns=ns.name)
        t0 = time.monotonic()
        rt.run_detached(b, cid, os.path.join(ctx.work, f"{cid}.log"), timeout=ctx.boot_timeout(rtname) + 600)
        try:
            wait_tcp(ns, 8080, timeout=ctx.boot_timeout(rtname))
            log(f"net: {rtname} serving after {time.monotonic() - t0:.0f} s")
            for name, (extra, title) in DIRECTIONS.items():
                mbps = iperf3(ctx, ns, extra, time.monotonic() + 300)
                ctx.results.add(S, name, rtname, mbps, unit="Mbit/s", better="higher", title=title)
            wrk_files(ctx, rtname, ns)
            if ctx.cpuio_in_net:
                ctx.guarded(rtname, [f"{suite_cpuio.S}/{k}" for k in suite_cpuio.SMALL],
                            suite_cpuio.exec_small, ctx, rtname, cid)
        finally:
            rt.remove(cid)


def run(ctx):
    names = ctx.runtimes_for([f"{S}/{d}" for d in DIRECTIONS] + ["nginx/1k_rps"])
    log(f"net: iperf3 {ctx.iperf_duration}s each way, wrk {ctx.wrk_duration}s per file; {', '.join(names)}")
    keys = [f"{S}/{d}" for d in DIRECTIONS] + [f"nginx/{f}_{k}" for f in rootfs.NGINX_FILES for k in ("rps", "p99")]
    for i in range(ctx.runs):
        for rtname in rotate(names, i):
            ctx.guarded(rtname, keys, session, ctx, rtname, i)
    ctx.na_kvrun_for([f"{S}/{d}" for d in DIRECTIONS], "Mbit/s", "higher")
    err = ctx.kvrun_failed.get(keys[0])
    if ctx.cpuio_in_net and "kvrun" in names and err:
        # The small cpu-io steps ride on these sessions: without a kvrun
        # session they were not taken either.
        for k in suite_cpuio.SMALL:
            m = ctx.results.metrics.get(f"{suite_cpuio.S}/{k}", {}).get("runtimes", {}).get("kvrun")
            if not m or not m.get("samples"):
                ctx.results.na(suite_cpuio.S, k, "kvrun", f"not available: kvrun failed here (net session): {err}",
                               unit="s", better="lower", title=suite_cpuio.STEPS[k])
    ctx.na_kvrun_for([f"nginx/{f}_{k}" for f in rootfs.NGINX_FILES for k in ("rps", "p99")], None, None)
