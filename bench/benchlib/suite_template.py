# SPDX-License-Identifier: Apache-2.0
"""template: containers started from a VM template (a snapshot of a guest
booted until guest-init waits), side by side with a cold boot and runc.

- `kvrun template build` per guest size (64 MiB, 256 MiB, 1 GiB), once,
  into a template directory of the run's own ($KVRUN_TEMPLATE_DIR), which
  is removed afterwards.
- Restore time per size: the monitor's own record (`VM: template
  restored: restore_us=...` in `--log`, runtime/sandbox/sandbox-snapshot.c), from
  the opening of the snapshot file to the vCPU threads started: host-side
  work only (RAM mapped from the file, vCPU and device state loaded). Taken
  from `kvrun create`s that are killed once the record is written, so the
  guest's own work (under emulation: tens of seconds) is not waited for.
- `create` until it returns (then `start` and `delete -f`), p50 and p95:
  kvrun from the 256 MiB template, kvrun with templates off
  ($KVRUN_TEMPLATES=0: a cold boot) and runc, runs alternating.
- Host side of create, per rootfs (busybox, postgres): from the command's
  start (kvrun's main()) to the VM restored from the template and running,
  the monitor's own record (`VM: running: host_us=... disk_us=...`, taken
  like the restore records), with the root disk cache (a hit: the first
  create of each rootfs builds its image and is not counted) and without
  it ($KVRUN_ROOTFS_CACHE=0: mke2fs copies the rootfs at every create),
  side by side with runc's whole create of the same bundle. Real on every
  host: no guest work is in it.
- Host memory: PSS (and RSS) of the monitor with 1 and with 3 running
  containers restored from one template, against runc's containers:
  guest RAM is a private mapping of the one file, so the clones share the
  pages none of them wrote.

On a host whose guest kernel is emulated, restore time is still the host's
work and is taken as everywhere; create and memory of kvrun need
--force-emulated (each create is the guest's work under emulation, a cold
boot minutes) and carry the emulated label, as do the build times."""
import os
import re
import shutil
import subprocess
import tempfile
import time

from . import emulated, rootfs
from .runtimes import Limits, Runtime, write_bundle
from .suite_start import rotate
from .util import descendants, log, percentile, pss_kib

S = "template"
SIZES = [64, 256, 1024]  # MiB of guest RAM, one template each
CREATE_MIB = 256  # the size of the create and memory comparisons
COLD = "kvrun (cold boot)"
NOCACHE = "kvrun (no root disk cache)"
TAGS = {"kvrun": "tpl", COLD: "cold", "runc": "runc", NOCACHE: "nocache"}  # in container ids and log names
HOST_ROOTFS = ["busybox", "postgres"]
RESTORE_RE = re.compile(r"VM: (template|snapshot) restored: ((?:[a-z_]+=\d+ ?)+)")
RUNNING_RE = re.compile(r"VM: running: host_us=(\d+) disk_us=(\d+)")
BUILD_RE = re.compile(r"^(\S+\.snap) \((\d+) vCPU, (\d+) MiB, built in ([0-9.]+) s\)$", re.M)
LOG_MSG_RE = re.compile(r'msg="((?:[^"\\]|\\.)*)"|"msg":"((?:[^"\\]|\\.)*)"')


def parse_restore(text):
    """Every restore record in a kvrun --log (text or JSON format), in
    order: dicts of the record's fields (integers: restore_us, open_us,
    create_us, load_us, start_us, mem_mib, vcpus...) plus "kind"
    (template or snapshot)."""
    out = []
    for m in RESTORE_RE.finditer(text):
        rec = {"kind": m.group(1)}
        for kv in m.group(2).split():
            k, v = kv.split("=", 1)
            rec[k] = int(v)
        out.append(rec)
    return out


def parse_running(text):
    """(host_us, disk_us) of the last `VM: running` record in a kvrun --log,
    or None."""
    recs = RUNNING_RE.findall(text)
    return (int(recs[-1][0]), int(recs[-1][1])) if recs else None


def parse_build(stdout):
    """(snapshot path, vCPUs, MiB, seconds) from `kvrun template build`'s
    output line; None when it has none."""
    m = BUILD_RE.search(stdout)
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4))


def kvrun_error(text):
    """kvrun's last error message in a --log or stderr text (logrus text or
    JSON line), or the last line as it is."""
    lines = [x for x in text.strip().splitlines() if x.strip()]
    for line in reversed(lines):
        if "level=error" in line or '"level":"error"' in line:
            m = LOG_MSG_RE.search(line)
            if m:
                return (m.group(1) or m.group(2)).replace('\\"', '"')
    return lines[-1][-400:] if lines else "no message"


def counts(quick, emulating):
    """How many runs each part takes: restore records per size, creates per
    runtime, creates of the cold-booting kvrun. Under emulation a cold boot
    is minutes: one run."""
    restore = 5 if quick else 10
    create = 3 if quick else 10
    cold = 1 if emulating else create
    return {"restore": restore, "create": create, "cold": cold}


def kvrun_reasons(emulating, force, start_reason, build_errors):
    """Why kvrun does not take a figure here: {key or "*": reason}. start_reason
    (kvrun cannot start containers at all) covers everything; a template
    that could not be built covers its size's restore figure (and create
    and memory for CREATE_MIB); without --force-emulated an emulating host
    takes only the host-side figures (build and restore)."""
    if start_reason:
        return {"*": start_reason}
    out = {}
    for mib, err in build_errors.items():
        why = f"not available: `kvrun template build --memory {mib}` failed here: {err}"
        out[f"{S}/build_{mib}"] = out[f"{S}/restore_{mib}"] = why
        if mib == CREATE_MIB:
            for k in ("create_p50", "create_p95", "pss_1", "pss_3", "rss_3"):
                out[f"{S}/{k}"] = why
    why = emulated.reason(f"{S}/create_p50", emulating, force)
    if why:
        for k in ("create_p50", "create_p95", "pss_1", "pss_3", "rss_3"):
            out.setdefault(f"{S}/{k}", why)
    return out


def reason_for(reasons, key):
    return reasons.get("*") or reasons.get(key)


TITLES = {
    "build": "kvrun template build, {mib} MiB guest (a cold boot to guest-init ready, then the save)",
    "restore": "template restore, {mib} MiB guest: file opened to vCPUs started (host side)",
    "host": "create, host side: command start to the VM running from the template ({rootfs}; runc: its whole "
            "create)",
    "disk": "root disk ready for the VM ({rootfs})",
    "create_p50": f"create until it returns, {CREATE_MIB} MiB limit, p50",
    "create_p95": f"create until it returns, {CREATE_MIB} MiB limit, p95",
    "pss_1": "host memory, 1 running container: PSS",
    "pss_3": "host memory, 3 running containers: PSS per container",
    "rss_3": "host memory, 3 running containers: RSS per container (shared pages counted in full)",
}


def meta(name, rootfs_desc=None):
    base = name.split("_")[0] if name.startswith(("build_", "restore_", "host_", "disk_")) else name
    mib = name.split("_")[1] if base in ("build", "restore") else None
    unit = {"build": "s", "restore": "ms", "create_p50": "ms", "create_p95": "ms", "host": "ms",
            "disk": "ms"}.get(base, "MiB")
    return dict(unit=unit, better="lower", title=TITLES[base].format(mib=mib, rootfs=rootfs_desc))


def percentiles(xs):
    """(p50, p95) of xs, nearest rank; (None, None) when empty."""
    return percentile(xs, 50), percentile(xs, 95)


def per_container(kib_values):
    """MiB per container from the KiB figures of several containers."""
    return sum(kib_values) / len(kib_values) / 1024 if kib_values else None


class Env:
    """The suite's kvrun runtimes (templates from the run's own directory,
    and templates off) and their bundles."""

    def __init__(self, ctx):
        kv = ctx.rt["kvrun"]
        self.tdir = tempfile.mkdtemp(prefix="templates-", dir=ctx.cache)
        # The run's own: a record left by an earlier run must never be read.
        os.makedirs(ctx.work, exist_ok=True)
        self.logs = tempfile.mkdtemp(prefix="template-logs-", dir=ctx.work)
        self.kvrun = Runtime("kvrun", kv.binary, kv.state_root, env=dict(kv.env, KVRUN_TEMPLATE_DIR=self.tdir))
        self.cold = Runtime("kvrun", kv.binary, kv.state_root,
                            env=dict(kv.env, KVRUN_TEMPLATE_DIR=self.tdir, KVRUN_TEMPLATES="0"))
        self.nocache = Runtime("kvrun", kv.binary, kv.state_root,
                               env=dict(kv.env, KVRUN_TEMPLATE_DIR=self.tdir, KVRUN_ROOTFS_CACHE="0"))
        self.seq = 0

    def log_path(self, tag):
        self.seq += 1
        return os.path.join(self.logs, f"{self.seq:03d}-{tag}.log")


def bundles(ctx):
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    return {mib: write_bundle(os.path.join(ctx.work, f"b-tpl-{mib}"), root, ["/bin/sleep", "600"],
                              Limits(cpus=ctx.limits.cpus, memory_mib=mib)) for mib in SIZES}


def build(ctx, env, mib):
    """`kvrun template build --memory mib` (vCPUs as kvrun's create plans
    them for the bundles: 1 on an emulating host); seconds."""
    args = ["template", "build", "--memory", str(mib)]
    if not ctx.host["emulating"]:
        args += ["--vcpus", str(-(-ctx.limits.cpus // 1))]
    t0 = time.monotonic()
    p = subprocess.run([ctx.kvrun_bin] + args, capture_output=True, text=True, env=env.kvrun.env,
                       timeout=ctx.boot_timeout("kvrun") + 600, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    got = parse_build(p.stdout)
    if p.returncode != 0 or not got:
        raise RuntimeError(kvrun_error(p.stderr or p.stdout))
    log(f"template: {got[0]} ({got[1]} vCPU, {got[2]} MiB) built in {wall:.1f} s")
    return wall


def kill_tree(pid):
    for p in reversed(descendants(pid)):
        try:
            os.kill(p, 9)
        except ProcessLookupError:
            pass


def record_once(env, rt, bundle, cid, find, timeout=300):
    """One `kvrun create` from the template, killed (with its container)
    once the monitor's --log has the record find(text) returns (not None);
    that record."""
    logf = env.log_path(f"record-{cid}")
    errf = open(logf + ".stderr", "w+")
    p = subprocess.Popen(rt.argv("--log", logf, "--log-format", "json", "create", "-b", bundle, cid),
                         env=rt.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf)
    deadline = time.monotonic() + timeout
    try:
        while True:
            text = open(logf, errors="replace").read() if os.path.exists(logf) else ""
            if "VM: cold boot" in text:
                raise RuntimeError(f"no restore: kvrun cold-booted ({kvrun_error(text)})")
            rec = find(text)
            if rec is not None:
                return rec
            if p.poll() is not None or time.monotonic() > deadline:
                errf.seek(0)
                raise RuntimeError(f"no record: {kvrun_error(text + errf.read())}")
            time.sleep(0.005)
    finally:
        kill_tree(p.pid)
        p.wait()
        rt.remove(cid)
        errf.close()


def restore_once(ctx, env, bundle, cid, timeout=300):
    """The restore record of one create from the template (record_once)."""
    return record_once(env, env.kvrun, bundle, cid, lambda text: (parse_restore(text) or [None])[-1], timeout)


def host_side(ctx, env, n, reasons):
    """The host side of create per rootfs of HOST_ROOTFS: kvrun with and
    without the root disk cache (the `VM: running` record) and runc's whole
    create, alternating, n runs each after one uncounted kvrun create that
    puts the image in the cache."""
    R = ctx.results
    rts = {"kvrun": env.kvrun if env else None, NOCACHE: env.nocache if env else None, "runc": ctx.rt.get("runc")}
    why = reason_for(reasons, f"{S}/restore_{CREATE_MIB}")  # the template these creates restore
    names = [k for k, v in rts.items() if v and not (k != "runc" and why)]
    for fs in HOST_ROOTFS:
        try:
            root = rootfs.ensure(ctx.cache, fs, ctx.src)
        except Exception as e:  # a missing package: the rootfs cannot be built here
            R.notes.append(f"template: no {fs} rootfs for the host-side create figures: {e}")
            continue
        size = rootfs.du_bytes(root) or 0
        files = sum(len(d) + len(f) for _, d, f in os.walk(root))
        desc = f"{fs} rootfs, {size / 2**20:.0f} MiB in {files} files"
        b = write_bundle(os.path.join(ctx.work, f"b-host-{fs}"), root, ["/bin/sleep", "600"],
                         Limits(cpus=ctx.limits.cpus, memory_mib=CREATE_MIB))
        if why and "kvrun" in ctx.rt:
            for key in (f"host_{fs}", f"disk_{fs}"):
                R.na(S, key, "kvrun", why, **meta(key, desc))
        if "kvrun" in names:
            try:
                host_us, disk_us = record_once(env, env.kvrun, b, f"th-{fs}-warm", parse_running)
                log(f"template: {fs}: first create (image built into the cache): host {host_us / 1000:.1f} ms, "
                    f"disk {disk_us / 1000:.1f} ms")
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                R.notes.append(f"template: {fs}: the first kvrun create failed: {e}")
        for i in range(n):
            for name in rotate(names, i):
                cid = f"th-{fs}-{i}-{TAGS[name]}"
                if name == "runc":
                    R.add(S, f"host_{fs}", name, create_once(ctx, rts[name], b, cid), **meta(f"host_{fs}", desc))
                    continue
                try:
                    host_us, disk_us = record_once(env, rts[name], b, cid, parse_running)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    R.notes.append(f"template: {fs}: {name} create {i}: {e}")
                    continue
                R.add(S, f"host_{fs}", name, host_us / 1000, **meta(f"host_{fs}", desc))
                R.add(S, f"disk_{fs}", name, disk_us / 1000, **meta(f"disk_{fs}", desc))
        log(f"template: host side of create measured for {desc}")


def create_once(ctx, rt, bundle, cid, logf=None, pss_out=None):
    """`RT create` timed until it returns, then start and delete -f; ms.
    For kvrun, its --log goes to logf. With pss_out, the running
    container's PSS (KiB, after settling) is appended to it before the
    delete."""
    pre = ["--log", logf, "--log-format", "json"] if logf else []
    errf = tempfile.TemporaryFile(mode="w+")
    try:
        t0 = time.monotonic()
        p = subprocess.run(rt.argv(*pre, "create", "-b", bundle, cid), env=rt.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=errf, timeout=ctx.boot_timeout("kvrun") + 600)
        ms = (time.monotonic() - t0) * 1000
        if p.returncode != 0:
            errf.seek(0)
            text = errf.read() + (open(logf, errors="replace").read() if logf and os.path.exists(logf) else "")
            raise RuntimeError(f"{rt.name} create: {kvrun_error(text)}")
        s = subprocess.run(rt.argv("start", cid), capture_output=True, text=True, env=rt.env, timeout=600)
        if s.returncode != 0:
            raise RuntimeError(f"{rt.name} start: {kvrun_error(s.stderr)}")
        if pss_out is not None:
            time.sleep(ctx.settle)
            pss_out.append(pss_kib(descendants(rt.init_pid(cid)))[0])
        return ms
    finally:
        rt.remove(cid)
        errf.close()


def run_creates(ctx, env, names, n, cold_n, cold_pss):
    """Alternating creates; {runtime name: [ms]} and notes on template runs
    that were cold boots (KVM refused the state) or failed. The cold-booted
    containers' PSS (KiB, running, one container) goes to cold_pss."""
    lat = {rt: [] for rt in names}
    failed = {}
    rts = {"runc": ctx.rt.get("runc")}
    if env:
        rts.update({"kvrun": env.kvrun, COLD: env.cold})
    b = os.path.join(ctx.work, f"b-tpl-{CREATE_MIB}")
    for i in range(n):
        for name in rotate(names, i):
            if name in failed or (name == COLD and i >= cold_n):
                continue
            logf = env.log_path(f"create-{i}-{TAGS[name]}") if name != "runc" else None
            try:
                ms = create_once(ctx, rts[name], b, f"tc-{i}-{TAGS[name]}", logf,
                                 cold_pss if name == COLD else None)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                if name == "runc":
                    raise
                failed[name] = str(e).strip().replace("\n", " ")[-400:]
                log(f"template: {name} create failed: {failed[name]}")
                continue
            text = open(logf, errors="replace").read() if logf else ""
            if name == "kvrun" and not parse_restore(text):
                ctx.results.notes.append(f"template: create run {i} of kvrun did not restore the template "
                                         f"(a cold boot, not counted): {kvrun_error(text)}")
                continue
            lat[name].append(ms)
            log(f"template: {name} create {i}: {ms:.0f} ms")
    return lat, failed


def memory(ctx, env, rtname, rt, bundle):
    """PSS of 1, then of each of 3 running containers (KiB lists), and the
    RSS of the 3. A kvrun container that was not restored from the
    template (KVM refused its state: a cold boot) fails the figure."""
    ids = [f"tm-{TAGS[rtname]}-{k}" for k in range(3)]
    pss1, pss3, rss3 = None, [], []
    try:
        for k, cid in enumerate(ids):
            logf = env.log_path(f"memory-{cid}") if rtname != "runc" else None
            create_once_keep(ctx, rt, bundle, cid, logf)
            if logf and not parse_restore(open(logf, errors="replace").read()):
                raise RuntimeError(f"{cid} was not restored from the template: "
                                   f"{kvrun_error(open(logf, errors='replace').read())}")
            if k == 0:
                time.sleep(ctx.settle)
                pss1 = pss_kib(descendants(rt.init_pid(cid)))[0]
        time.sleep(ctx.settle)
        for cid in ids:
            pss, rss = pss_kib(descendants(rt.init_pid(cid)))
            pss3.append(pss)
            rss3.append(rss)
    finally:
        for cid in ids:
            rt.remove(cid)
    return pss1, pss3, rss3


def create_once_keep(ctx, rt, bundle, cid, logf=None, niceness=0):
    """create and start, the container left running; kvrun's --log to logf;
    both commands (and what they leave running) at niceness."""
    out = os.path.join(ctx.work, f"{cid}.out")
    pre = ["--log", logf, "--log-format", "json"] if logf else []
    for op in (["create", "-b", bundle, cid], ["start", cid]):
        with open(out, "a") as f:
            p = subprocess.run(rt.argv(*pre, *op), env=rt.env, stdin=subprocess.DEVNULL, stdout=f,
                               stderr=subprocess.STDOUT, timeout=ctx.boot_timeout("kvrun") + 600,
                               preexec_fn=(lambda: os.nice(niceness)) if niceness else None)
        if p.returncode != 0:
            text = open(out, errors="replace").read() + (open(logf, errors="replace").read() if logf else "")
            raise RuntimeError(f"{rt.name} {op[0]} {cid}: {kvrun_error(text)}")


def remove_templates(env):
    """The run's templates: `kvrun template rm` of each, then the directory."""
    ids = sorted({f.split(".")[0] for f in os.listdir(env.tdir) if f.endswith((".snap", ".key"))})
    if ids:
        subprocess.run([env.kvrun.binary, "template", "rm"] + ids, capture_output=True, env=env.kvrun.env)
    shutil.rmtree(env.tdir, ignore_errors=True)


def run(ctx):
    R = ctx.results
    names = [n for n in ("kvrun", "runc") if n in ctx.rt]
    c = counts(ctx.quick, ctx.host["emulating"])
    bs = bundles(ctx)
    has_kv = "kvrun" in ctx.rt
    env = Env(ctx) if has_kv and not ctx.kvrun_reason_start else None
    build_errors = {}
    try:
        if env:
            for mib in SIZES:
                try:
                    R.add(S, f"build_{mib}", "kvrun", build(ctx, env, mib), **meta(f"build_{mib}"))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    build_errors[mib] = str(e).strip().replace("\n", " ")[-400:]
                    log(f"template: build of {mib} MiB failed: {build_errors[mib]}")
        reasons = kvrun_reasons(ctx.host["emulating"], ctx.force_emulated, ctx.kvrun_reason_start, build_errors)
        if env:
            for mib in SIZES:
                key = f"restore_{mib}"
                if reason_for(reasons, f"{S}/{key}"):
                    continue
                log(f"template: {c['restore']} restores of the {mib} MiB template")
                for i in range(c["restore"]):
                    try:
                        rec = restore_once(ctx, env, bs[mib], f"tr-{mib}-{i}")
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        R.notes.append(f"template: restore {i} of {mib} MiB: {e}")
                        continue
                    R.add(S, key, "kvrun", rec["restore_us"] / 1000, **meta(key))
                    for part in ("open", "create", "load", "start"):
                        R.metric(S, key)["runtimes"]["kvrun"].setdefault(f"{part}_us", []).append(
                            rec.get(f"{part}_us"))
        host_side(ctx, env, c["create"], reasons)
        cr_names = ["runc"] if "runc" in names else []
        if env and not reason_for(reasons, f"{S}/create_p50"):
            cr_names = ["kvrun", COLD] + cr_names
        log(f"template: {c['create']} creates each for {', '.join(cr_names)} ({COLD}: {c['cold']})")
        cold_pss = []
        lat, failed = run_creates(ctx, env, cr_names, c["create"], c["cold"], cold_pss)
        for name, xs in lat.items():
            if failed.get(name) and not xs:
                for k in ("create_p50", "create_p95"):
                    R.na(S, k, name, f"not available: kvrun failed here: {failed[name]}", **meta(k))
                continue
            if failed.get(name):
                R.notes.append(f"template: {name} create failed after {len(xs)} runs: {failed[name]}")
            p50, p95 = percentiles(xs)
            if p50 is None:
                continue
            for k, v in (("create_p50", p50), ("create_p95", p95)):
                R.add(S, k, name, v, **meta(k))
                R.metric(S, k)["runtimes"][name]["runs_ms"] = xs
        for kib in cold_pss:  # after the create figures: the table keeps their order
            R.add(S, "pss_1", COLD, kib / 1024, **meta("pss_1"))
        mem_rts = [("runc", ctx.rt["runc"])] if "runc" in names else []
        if env and not reason_for(reasons, f"{S}/pss_1"):
            mem_rts.insert(0, ("kvrun", env.kvrun))
        for name, rt in mem_rts:
            log(f"template: memory of 1 and 3 {name} containers")
            try:
                pss1, pss3, rss3 = memory(ctx, env, name, rt, bs[CREATE_MIB])
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                if name == "runc":
                    raise
                for k in ("pss_1", "pss_3", "rss_3"):
                    R.na(S, k, name, f"not available: kvrun failed here: {str(e)[-400:]}", **meta(k))
                continue
            R.add(S, "pss_1", name, pss1 / 1024, **meta("pss_1"))
            R.add(S, "pss_3", name, per_container(pss3), **meta("pss_3"))
            R.add(S, "rss_3", name, per_container(rss3), **meta("rss_3"))
        if has_kv:
            for key in [f"build_{m}" for m in SIZES] + [f"restore_{m}" for m in SIZES] + \
                    ["create_p50", "create_p95", "pss_1", "pss_3", "rss_3"]:
                why = reason_for(reasons, f"{S}/{key}")
                if why:
                    R.na(S, key, "kvrun", why, **meta(key))
                    if key.startswith("create_"):
                        R.na(S, key, COLD, why, **meta(key))
    finally:
        if env:
            remove_templates(env)
