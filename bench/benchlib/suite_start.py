# SPDX-License-Identifier: Apache-2.0
"""start: `run` of /bin/true (p50/p95), 16 containers at once, the CLI's
own cost, and kvrun's host-side start cost (command to first KVM_RUN)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from . import rootfs
from .runtimes import write_bundle
from .util import descendants, log, percentile

S = "start"


def rotate(names, i):
    return names[i % len(names):] + names[:i % len(names)]


def kvrun_to_first_run(ctx, bundle, cid, timeout=120):
    """Seconds from exec of `kvrun run` to the monitor's first KVM_RUN
    (bundle checks, root disk image, VM setup: all host-side), then the
    VM is killed. Raises RuntimeError with kvrun's message when it fails
    before reaching the guest."""
    kv = ctx.rt["kvrun"]
    with tempfile.TemporaryDirectory() as d:
        # The shim writes to stderr (VMM_BENCH_OUT=-): the jailed monitor's
        # vCPU thread may open no file (bench/vmm-setup-shim.c).
        env = dict(kv.env, LD_PRELOAD=ctx.shim, VMM_BENCH_OUT="-")
        errf = open(os.path.join(d, "err"), "w+")
        env["VMM_BENCH_T0_NS"] = str(time.monotonic_ns())
        p = subprocess.Popen(kv.argv("run", "-b", bundle, cid), env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=errf)
        deadline = time.monotonic() + timeout

        def first_run():
            errf.seek(0)
            m = re.search(r"^vmm-bench-first-run-ns (\d+)$", errf.read(), re.M)
            return int(m.group(1)) if m else None
        try:
            while (ns := first_run()) is None:
                if p.poll() is not None or time.monotonic() > deadline:
                    errf.seek(0)
                    msg = errf.read().strip().splitlines()
                    msg = msg[-1] if msg else f"exit status {p.returncode}, no KVM_RUN"
                    m = re.search(r'msg="((?:[^"\\]|\\.)*)"', msg)  # logrus text line
                    raise RuntimeError(m.group(1) if m else msg)
                time.sleep(0.002)
            return ns / 1e9
        finally:
            for pid in reversed(descendants(p.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
            kv.remove(cid)


def probe_kvrun(ctx):
    """Whether kvrun can start a container at all here (None) or why not."""
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    b = write_bundle(os.path.join(ctx.work, "b-probe"), root, ["/bin/true"], ctx.limits)
    try:
        t = kvrun_to_first_run(ctx, b, f"probe-{os.getpid()}")
        ctx.kvrun_first_run = [t]
        return None
    except RuntimeError as e:
        return f"`kvrun run` fails with this build: {e}"


def run(ctx):
    R = ctx.results
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    b_true = write_bundle(os.path.join(ctx.work, "b-true"), root, ["/bin/true"], ctx.limits)
    b_sleep = [write_bundle(os.path.join(ctx.work, f"b-sleep{k}"), root, ["/bin/sleep", "600"], ctx.limits)
               for k in range(16)]
    names = ctx.runtimes_for([f"{S}/true_p50"])
    n = ctx.start_runs
    meta = dict(unit="ms", better="lower")
    log(f"start: {ctx.runs} blocks of {n} x run /bin/true for {', '.join(names)}")
    # Each block of n runs gives one p50 and one p95; the figure is the
    # median over blocks, the spread their range. A kvrun run with an
    # emulated guest kernel is a Linux boot of minutes: its blocks are of
    # one run (p50 = p95 = that run).
    for blk in range(ctx.runs):
        lat = {rt: [] for rt in names}
        for i in range(n):
            for rt in rotate(names, i + blk):
                if i > 0 and ctx.kvrun_emulated(rt):
                    continue
                ctx.guarded(rt, [f"{S}/true_p50", f"{S}/true_p95"], true_once, ctx, rt, b_true,
                            f"true-{blk}-{i}", lat[rt])
        for rt, xs in lat.items():
            if not xs:
                continue
            R.add(S, "true_p50", rt, percentile(xs, 50), title="run /bin/true, p50", **meta)
            R.add(S, "true_p95", rt, percentile(xs, 95), title="run /bin/true, p95", **meta)

    log("start: 16 containers at once")
    for i in range(ctx.runs):
        for rt in rotate(ctx.runtimes_for([f"{S}/parallel16"]), i):
            R.add(S, "parallel16", rt, start16(ctx, rt, b_sleep, i) * 1000,
                  title="16 at once, until all running", **meta)

    pause_resume(ctx, b_sleep[0], ctx.runtimes_for([f"{S}/pause", f"{S}/resume"]))
    restore(ctx, b_sleep[1], ctx.runtimes_for([f"{S}/restore"]))

    # The CLI itself: `state` of an id that does not exist (exec, parse, lookup).
    cli = ["kvrun", "runc", "crun"]
    for i in range(ctx.start_runs):
        for rt in rotate([c for c in cli if c in ctx.rt], i):
            t0 = time.monotonic()
            subprocess.run(ctx.rt[rt].argv("state", "no-such-id"), capture_output=True, env=ctx.rt[rt].env)
            R.add(S, "cli_state", rt, (time.monotonic() - t0) * 1000,
                  title="CLI round trip (state of a missing id)", **meta)
    if "crun" in ctx.rt and ctx.rt["crun"].prefix:
        for i in range(ctx.start_runs):
            t0 = time.monotonic()
            subprocess.run(ctx.rt["crun"].prefix + ["true"], capture_output=True)
            R.add(S, "crun_wrapper", "crun", (time.monotonic() - t0) * 1000,
                  title="crun's mount-namespace wrapper alone (included in crun's figures)", **meta)

    # kvrun: host-side cost up to the guest's first instruction, for
    # rootfs trees of 2, 22 and 120 MB (the root disk image grows with them).
    reason = ctx.kvrun_reason_start
    if "kvrun" in ctx.rt:
        for m in ("true_p50", "true_p95", "parallel16"):
            if ctx.kvrun_reason(f"{S}/{m}"):
                R.na(S, m, "kvrun", ctx.kvrun_reason(f"{S}/{m}"), **meta)
    for name in ("busybox", "nginx", "postgres"):
        metric = "kvrun_host_start" + ("" if name == "busybox" else f"_{name}")
        title = (f"kvrun run, {name} rootfs ({rootfs.du_bytes(rootfs.ensure(ctx.cache, name, ctx.src)) / 1e6:.0f} MB): "
                 "exec to first KVM_RUN (host side: bundle, root disk image, VM setup)")
        if reason:
            R.na(S, metric, "kvrun", reason, title=title, **meta)
            continue
        b = write_bundle(os.path.join(ctx.work, f"b-first-{name}"), rootfs.ensure(ctx.cache, name, ctx.src),
                         ["/bin/true"], ctx.limits)
        samples = list(getattr(ctx, "kvrun_first_run", [])) if name == "busybox" else []
        while len(samples) < ctx.runs:
            samples.append(kvrun_to_first_run(ctx, b, f"first-{name}-{len(samples)}"))
        for smp in samples:
            R.add(S, metric, "kvrun", smp * 1000, title=title, **meta)


def true_once(ctx, rt, bundle, cid, lat):
    """One foreground `run` of /bin/true; its wall time goes to lat (ms)."""
    try:
        t, r = ctx.rt[rt].run(bundle, cid, timeout=ctx.boot_timeout(rt) + 600)
        if r.returncode != 0:
            raise RuntimeError(f"{rt} run /bin/true: {r.stderr.strip()[-400:]}")
    except BaseException:
        ctx.rt[rt].remove(cid)
        raise
    lat.append(t * 1000)


def start16(ctx, rt, bundles, i):
    """Seconds until 16 concurrent `run -d` of sleep have all returned.
    Their stderr goes to files: a detached container inherits it, so a pipe
    would stay open as long as the container lives."""
    r = ctx.rt[rt]
    ids = [f"par-{i}-{k}" for k in range(16)]
    errs = [tempfile.TemporaryFile() for _ in ids]
    t0 = time.monotonic()
    procs = [r.popen_run(b, cid, detach=True, stdout=subprocess.DEVNULL, stderr=e)
             for b, cid, e in zip(bundles, ids, errs)]
    for p in procs:
        p.wait(timeout=900)
    t = time.monotonic() - t0
    for cid in ids:
        r.remove(cid)
    bad = [e for p, e in zip(procs, errs) if p.returncode != 0]
    if bad:
        bad[0].seek(0)
        raise RuntimeError(f"{rt}: {len(bad)} of 16 failed: {bad[0].read().decode(errors='replace')[-300:]}")
    return t


def pause_resume(ctx, bundle, names):
    """Latency of `pause` (freeze) and `resume` (wake) of a running container."""
    meta = dict(unit="ms", better="lower")
    for i in range(ctx.runs):
        for rt in rotate(names, i):
            r, cid = ctx.rt[rt], f"pause-{i}"
            r.run_detached(bundle, cid, os.path.join(ctx.work, f"{cid}.log"))
            try:
                for op in ("pause", "resume"):
                    t0 = time.monotonic()
                    p = subprocess.run(r.argv(op, cid), capture_output=True, text=True, env=r.env)
                    t = (time.monotonic() - t0) * 1000
                    title = f"{op} of a running container ({'freeze' if op == 'pause' else 'wake'})"
                    if p.returncode != 0:
                        ctx.results.na(S, op, rt, f"not available: `{rt} {op}` fails: {p.stderr.strip()[-200:]}",
                                       title=title, **meta)
                        break
                    ctx.results.add(S, op, rt, t, title=title, **meta)
            finally:
                r.remove(cid)
    if "kvrun" in ctx.rt and "kvrun" not in names:
        for op in ("pause", "resume"):
            ctx.results.na(S, op, "kvrun", ctx.kvrun_reason(f"{S}/{op}"), **meta)


def restore(ctx, bundle, names):
    """Restore latency: checkpoint a running container (not timed), then
    time `restore -d` of it. Where checkpointing fails, the figure is not
    available with the runtime's (or CRIU's) own message."""
    meta = dict(unit="ms", better="lower", title="restore -d from a checkpoint")
    for i in range(ctx.runs):
        for rt in rotate(names, i):
            m = ctx.results.metrics.get(f"{S}/restore", {}).get("runtimes", {}).get(rt, {})
            if "not_available" in m:
                continue
            r, cid = ctx.rt[rt], f"ckpt-{i}"
            img = os.path.join(ctx.work, f"ckpt-{rt}")
            shutil.rmtree(img, ignore_errors=True)
            r.run_detached(bundle, cid, os.path.join(ctx.work, f"{cid}.log"))
            try:
                p = subprocess.run(r.argv("checkpoint", "--image-path", img, cid), capture_output=True, text=True,
                                   env=r.env, timeout=120)
                if p.returncode != 0:
                    ctx.results.na(S, "restore", rt, f"not available: `{rt} checkpoint` fails here: "
                                   f"{criu_error(img) or p.stderr.strip()[-200:]}", **meta)
                    continue
                r.remove(cid)
                t0 = time.monotonic()
                p = subprocess.run(r.argv("restore", "-d", "--image-path", img, "-b", bundle, cid),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, env=r.env, timeout=120)
                if p.returncode != 0:
                    ctx.results.na(S, "restore", rt, f"not available: `{rt} restore` fails here: "
                                   f"{criu_error(img) or p.stderr.strip()[-200:]}", **meta)
                    continue
                ctx.results.add(S, "restore", rt, (time.monotonic() - t0) * 1000, **meta)
            finally:
                r.remove(cid)
                shutil.rmtree(img, ignore_errors=True)
    if "kvrun" in ctx.rt and "kvrun" not in names:
        ctx.results.na(S, "restore", "kvrun", ctx.kvrun_reason(f"{S}/restore"), **meta)


def criu_error(img):
    """The first error CRIU logged in img (dump.log or restore.log)."""
    for log_name in ("dump.log", "restore.log"):
        try:
            with open(os.path.join(img, log_name)) as f:
                errs = [line.split(": ", 1)[-1].strip() for line in f if "Error (" in line]
        except OSError:
            continue
        # Skip CRIU's generic "exited, status=1" lines for the telling one.
        telling = [e for e in errs if not e.startswith("exited, status")]
        if telling or errs:
            return "criu: " + (telling or errs)[0]
    return None
