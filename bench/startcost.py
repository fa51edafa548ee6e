#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a container start from a template goes: KVM exits, emulated
instructions and userspace exits per step of guest-init's work.

Builds one template (the exits suite's: `kvrun template build --memory
256`) into a directory of its own, then per run: create (restoring it)
and start of the density suite's busybox `sleep` bundle, `kvrun events
--stats` (the start's figure as the exits suite takes it), `exec
/bin/true` with `events --stats` around it, delete. With a kvrun built
with `-Dphase_marks=true` the monitor's --log has one line per step
guest-init reached (`VM: mark N: ...`, docs/benchmarks.md "Where a start
goes"); the script prints the differences between consecutive marks,
with the mean over the runs. Without marks it prints the totals only
(any build: the before/after of a change).

Run it under the guest lock (it boots a Linux guest for the template):

    flock /tmp/kvrun-guest.lock bench/startcost.py --kvrun BUILD/runtime/kvrun --runs 3

Needs root. Writes the runs as JSON with --json."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import rootfs  # noqa: E402
from benchlib.runtimes import Limits, write_bundle  # noqa: E402

# What each mark means (the numbers guest-init writes; docs/benchmarks.md).
MARKS = {
    1: "boot", 2: "control stream broke: reconnecting", 3: "connected", 4: "HELLO answered",
    10: "START received", 11: "clock and seed set", 12: "root disk and shares mounted", 13: "network set",
    14: "cgroup written", 15: "stdio streams connected", 16: "clone returned (PID 1)",
    17: "child: first step", 18: "child: placed by PID 1", 50: "child: / bound, private",
    51: "child: spec mounts and /dev", 52: "child: pivoted", 53: "child: names and sysctl",
    54: "child: masked and read-only paths", 19: "child: root set up, hooks run", 20: "child: stdio set",
    21: "child: process prepared (caps, seccomp, lookup)", 22: "PID 1: READY from child", 23: "READY sent",
    30: "GO received", 31: "child: GO read", 32: "child: execve next", 33: "PID 1: exec seen",
    34: "STARTED sent", 40: "EXEC received", 5: "cgroup values written", 6: "device filter loaded",
    7: "root disk has media", 24: "child: before /dev nodes", 25: "child: /dev nodes made",
    26: "child: rlimits, scheduler", 27: "child: cwd, bounding set", 28: "child: user and groups",
    29: "child: capability sets", 35: "child: executable looked up",
    **{55 + i: f"child: mount {i} done" for i in range(8)}, 63: "child: a further mount done",
}
MARK_RE = re.compile(r"VM: mark (\d+): t_us=(\d+) exits=(\d+) insn_emulation=(\d+) user_exits=(\d+)")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kvrun(a, env, *args, check=True, timeout=900):
    """kvrun with its output in a file, not a pipe: create's monitor keeps
    the stdout and stderr it was given, so a pipe would never end."""
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.run([a.kvrun, "--root", a.state] + list(args), env=env, stdout=out, stderr=out,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        out.seek(0)
        p.stdout = out.read()
    if check and p.returncode != 0:
        raise RuntimeError(f"kvrun {' '.join(args)}: {p.stdout.strip()[-800:]}")
    return p


def stats(a, env, cid):
    d = json.loads(kvrun(a, env, "events", "--stats", cid).stdout.strip().splitlines()[-1])["data"]["kvrun_vm"]
    own = d.get("kvrun", {})
    return {"exits": d.get("kvm_vcpu", {}).get("exits", 0),
            "insns": d.get("kvm_vcpu", {}).get("insn_emulation", 0),
            "user_exits": sum(own.get(f"exit_{k}", 0) for k in ("io", "mmio", "other"))}


def marks(logf):
    out = []
    for line in open(logf, errors="replace"):
        m = MARK_RE.search(line)
        if m:
            n, t, e, i, u = map(int, m.groups())
            out.append({"mark": n, "t_us": t, "exits": e, "insns": i, "user_exits": u})
    return out


def one_run(a, env, bundle, k):
    cid = f"sc-{os.getpid()}-{k}"
    logf = os.path.join(a.logs, f"{cid}.log")
    console = os.path.join(a.logs, f"{cid}.console")
    t0 = time.monotonic()
    try:
        kvrun(a, dict(env, KVRUN_CONSOLE=console), "--log", logf, "--log-format", "json", "create", "-b", bundle,
              cid)
        t1 = time.monotonic()
        if "VM: template restored" not in open(logf, errors="replace").read():
            raise RuntimeError(f"{cid} was not restored from the template: {logf}")
        kvrun(a, env, "--log", logf, "--log-format", "json", "start", cid, timeout=300)
        t2 = time.monotonic()
        start = stats(a, env, cid)
        t3 = time.monotonic()
        kvrun(a, env, "exec", cid, "/bin/true")
        t4 = time.monotonic()
        after = stats(a, env, cid)
        # The stats read before the exec is the start's (nothing runs in
        # between but the idle guest).
        exec_ = {k: after[k] - start[k] for k in after}
        return {"start": start, "exec": exec_, "create_s": t1 - t0, "start_s": t2 - t1, "exec_s": t4 - t3,
                "marks": marks(logf), "log": logf, "load": os.getloadavg()[0]}
    finally:
        kvrun(a, env, "delete", "-f", cid, check=False)


def mark_table(runs):
    """Per step (consecutive marks, by their numbers): mean differences."""
    steps = {}
    order = []
    for r in runs:
        ms = r["marks"]
        for prev, cur in zip(ms, ms[1:]):
            key = (prev["mark"], cur["mark"])
            if key not in steps:
                steps[key] = []
                order.append(key)
            steps[key].append({k: cur[k] - prev[k] for k in ("t_us", "exits", "insns", "user_exits")})
    rows = []
    for key in order:
        v = steps[key]
        rows.append((key, len(v), *(statistics.mean(x[k] for x in v) for k in ("t_us", "exits", "insns",
                                                                                 "user_exits"))))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--kvrun", default=os.path.join(src, "build", "runtime", "kvrun"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", help="write the runs here")
    ap.add_argument("--template-dir", help="keep the template here and use the one there (it must match the "
                    "build: a create that does not restore it fails the run)")
    ap.add_argument("--cache", default=os.path.join(src, "bench", ".cache"))
    ap.add_argument("--kernel", default=os.path.join(src, "..", "shared", "guest-kernel", "vmlinux"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/startcost.py: needs root")
    a.kvrun = os.path.abspath(a.kvrun)
    os.makedirs(a.cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix="startcost-", dir=a.cache)
    a.state, a.logs, tdir = (os.path.join(work, d) for d in ("state", "logs", "templates"))
    tdir = os.path.abspath(a.template_dir) if a.template_dir else tdir
    for d in (a.state, a.logs, tdir):
        os.makedirs(d, exist_ok=True)
    env = dict(os.environ, KVRUN_TEMPLATE_DIR=tdir, KVRUN_CACHE_DIR=os.path.join(a.cache, "kvrun"),
               KVRUN_BOOT_TIMEOUT="1500")
    if "KVRUN_KERNEL" not in os.environ and os.path.exists(a.kernel):
        env["KVRUN_KERNEL"] = os.path.abspath(a.kernel)
    root = rootfs.ensure(a.cache, "busybox", src)
    bundle = write_bundle(os.path.join(work, "bundle"), root, ["/bin/sleep", "100000"],
                          Limits(cpus=1, memory_mib=256))
    runs = []
    try:
        if not (a.template_dir and any(f.endswith(".snap") for f in os.listdir(tdir))):
            log(f"template build (load {os.getloadavg()[0]:.2f})")
            t0 = time.monotonic()
            p = subprocess.run([a.kvrun, "template", "build", "--memory", "256"], env=env, capture_output=True,
                               text=True, stdin=subprocess.DEVNULL, timeout=1800)
            if p.returncode != 0:
                raise RuntimeError(f"template build: {(p.stderr or p.stdout).strip()[-800:]}")
            log(f"template built in {time.monotonic() - t0:.0f} s")
        for k in range(a.runs):
            r = one_run(a, env, bundle, k)
            runs.append(r)
            log(f"run {k}: start {r['start']['exits']} exits, {r['start']['insns']} insns, "
                f"{r['start']['user_exits']} user exits; exec {r['exec']['exits']} exits, {r['exec']['insns']} "
                f"insns, {r['exec']['user_exits']} user exits; create {r['create_s']:.1f} s, start "
                f"{r['start_s']:.1f} s, exec {r['exec_s']:.1f} s; load {r['load']:.2f}")
    finally:
        if not a.template_dir:
            subprocess.run([a.kvrun, "template", "rm"] + sorted({f.split(".")[0] for f in os.listdir(tdir)}),
                           env=env, capture_output=True)
            shutil.rmtree(tdir, ignore_errors=True)
        shutil.rmtree(a.state, ignore_errors=True)
    if not runs:
        return 1
    for what in ("start", "exec"):
        for k in ("exits", "insns", "user_exits"):
            v = [r[what][k] for r in runs]
            print(f"{what} {k}: mean {statistics.mean(v):.0f} (min {min(v)}, max {max(v)}) of {len(v)}")
    rows = mark_table(runs)
    if rows:
        print(f"{'from -> to':>10} {'n':>2} {'ms':>9} {'exits':>8} {'insns':>10} {'uexits':>6}  step")
        for (p, c), n, t, e, i, u in rows:
            print(f"{p:>4} -> {c:<3} {n:>2} {t / 1000:9.1f} {e:8.0f} {i:10.0f} {u:6.1f}  {MARKS.get(c, '?')}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    log(f"logs in {a.logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
