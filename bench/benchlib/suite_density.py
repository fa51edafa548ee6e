# SPDX-License-Identifier: Apache-2.0
"""density: idle containers restored from one VM template, and exits: what
a container start and an exec cost in exits and emulated instructions.

- One template (`kvrun template build`, the default VM of kvrun's plan),
  in a template directory of the run's own, removed afterwards.
- For 1, 10 and 30 containers (busybox `sleep`; 1 and 3 with --quick,
  or bench/run.py's --density-counts), created and started from
  the template and left idle: the host PSS of each container (its
  monitor, the guest RAM it touched included) after settling, and the CPU
  its VM takes while idle (the monitor's user + system time over a
  window, per container, in % of one CPU: the guest's timer under
  emulation here), beside runc's containers (PSS only: runc leaves the
  process alone, which sleeps).
- Each container is created and started at niceness 19 and set back to 0
  (every thread of it) once started, runc's alike. Where the guest kernel
  is emulated, a start is seconds of CPU, and the idle VMs it would take
  the cores from fall into a state they do not leave: a guest that gets
  less CPU than its timer tick's emulated work takes never gets back to
  idle, its tick keeps running, and with about 25 of them the 2 cores of
  the development host were all busy with ticks (every vCPU runnable,
  the next create timing out after 10 minutes). Niced, a start takes the
  CPU the idle VMs leave; the figures are of the idle containers either
  way.
- Per container start (create restoring the template, then start) and per
  exec (`exec /bin/true`): the VM's exits, emulated instructions and
  kvrun's userspace exits, doorbells and interrupts, from `kvrun events
  --stats` (kvrun_vm: the counters since the VM was made; an exec is the
  difference around it), from the first container of the first count.
- Each kvrun container's guest console goes to a file beside its --log
  (the guest writes to its serial port either way), so that a container
  whose create fails says why; the failure's note quotes its end.

Every kvrun figure here involves the guest kernel: on an emulating host it
is labelled as such. The guest RAM of each VM is the template's file
mapped privately: what no clone wrote is shared."""
import json
import os
import subprocess
import time

from . import rootfs
from .runtimes import Limits, Runtime, write_bundle
from .suite_template import Env, build, create_once_keep, kvrun_error, parse_restore, remove_templates
from .util import descendants, log, proc_dir, pss_kib

S = "density"
SE = "exits"
COUNTS = [1, 10, 30]
CPU_WINDOW_S = 10


def cpu_ticks(pids):
    """utime + stime of pids, in clock ticks."""
    t = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            fields = s[s.rindex(")") + 2:].split()
            t += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            pass
    return t


def vm_stats(rt, cid):
    """kvrun events --stats' kvrun_vm of a running container."""
    r = subprocess.run(rt.argv("events", "--stats", cid), capture_output=True, text=True, env=rt.env, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"kvrun events --stats {cid}: {kvrun_error(r.stderr)}")
    data = json.loads(r.stdout.strip().splitlines()[-1])["data"]
    if "kvrun_vm" not in data:
        raise RuntimeError("kvrun events --stats has no kvrun_vm")
    return data["kvrun_vm"]


def flat(st):
    out = {f"kvm.{k}": v for k, v in st.get("kvm_vcpu", {}).items()}
    out.update({f"kvrun.{k}": v for k, v in st.get("kvrun", {}).items()})
    return out


FIGS = [("KVM exits", "kvm.exits", "exits"), ("emulated instructions", "kvm.insn_emulation", "insns"),
        ("userspace exits", None, "exits"), ("doorbells", "kvrun.doorbell_signals", "kicks"),
        ("interrupts", "kvrun.irq_raised", "irqs")]


def add_exits(ctx, subject, d):
    for what, key, unit in FIGS:
        v = d.get(key, 0) if key else sum(d.get(f"kvrun.exit_{k}", 0) for k in ("io", "mmio", "other"))
        ctx.results.add(SE, f"{subject}: {what}", "kvrun", v, unit=unit, better="lower", title=f"{subject}: {what}")


def start_exec_exits(ctx, rt, cid):
    """After start: the counters so far (a start); then around an exec."""
    start = flat(vm_stats(rt, cid))
    add_exits(ctx, "container start (template restore to started)", start)
    before = flat(vm_stats(rt, cid))
    r = subprocess.run(rt.argv("exec", cid, "/bin/true"), capture_output=True, text=True, env=rt.env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"kvrun exec {cid}: {kvrun_error(r.stderr)}")
    after = flat(vm_stats(rt, cid))
    add_exits(ctx, "exec /bin/true", {k: after.get(k, 0) - before.get(k, 0) for k in after})


def console_tail(path, size=600):
    """The end of a guest console file, on one line ("" when none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return " | ".join(x.strip() for x in text.splitlines() if x.strip())


START_NICENESS = 19


def unnice(pids):
    """Every thread of pids back to niceness 0."""
    for pid in pids:
        for tid in proc_dir(pid, "task"):
            try:
                os.setpriority(os.PRIO_PROCESS, int(tid), 0)
            except OSError:
                pass


def create_kvrun(ctx, env, rt, bundle, cid):
    """One kvrun container created from the template and started, its
    guest console kept beside its --log."""
    logf = env.log_path(f"density-{cid}")
    console = logf[:-len(".log")] + ".console"
    crt = Runtime(rt.name, rt.binary, rt.state_root, env=dict(rt.env, KVRUN_CONSOLE=console))
    try:
        create_once_keep(ctx, crt, bundle, cid, logf, niceness=START_NICENESS)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{e}; guest console {console}: {console_tail(console) or '(empty)'}") from e
    if not parse_restore(open(logf, errors="replace").read()):
        raise RuntimeError(f"{cid} was not restored from the template")


def partial(rt, started, n):
    """What the containers started before a set failed take, in words
    ("" for none): the set's figure is not available, this goes into
    the failure's note."""
    try:
        pids = [p for cid in started for p in descendants(rt.init_pid(cid))]
    except (RuntimeError, OSError, ValueError):
        return ""
    if not started:
        return ""
    pss, rss = pss_kib(pids)
    return (f" (the {len(started)} of {n} started before it, idle: host PSS {pss / len(started) / 1024:.2f} MiB, "
            f"RSS {rss / len(started) / 1024:.1f} MiB per container)")


def idle_set(ctx, env, name, rt, bundle, n, exits=False):
    """n containers started and idle: PSS per container, CPU% per VM;
    with exits, the first one's start and an exec in it, counted."""
    ids = [f"dn-{name}-{n}-{k}" for k in range(n)]
    try:
        for k, cid in enumerate(ids):
            t0 = time.monotonic()
            try:
                if name == "kvrun":
                    create_kvrun(ctx, env, rt, bundle, cid)
                    log(f"density: {cid} started in {time.monotonic() - t0:.1f} s")
                else:
                    create_once_keep(ctx, rt, bundle, cid, niceness=START_NICENESS)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                raise RuntimeError(f"{e}{partial(rt, ids[:k], n)}") from e
            unnice(descendants(rt.init_pid(cid)))
            if name == "kvrun" and k == 0 and exits:
                start_exec_exits(ctx, rt, cid)
        time.sleep(ctx.settle)
        pids = [p for cid in ids for p in descendants(rt.init_pid(cid))]
        pss, _ = pss_kib(pids)
        unit = {"unit": "MiB", "better": "lower"}
        ctx.results.add(S, f"pss_{n}", name, pss / n / 1024, title=f"host PSS per idle container, {n} running",
                        **unit)
        if name == "kvrun":
            t0, c0 = time.monotonic(), cpu_ticks(pids)
            time.sleep(CPU_WINDOW_S)
            pct = (cpu_ticks(pids) - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0) * 100 / n
            ctx.results.add(S, f"cpu_{n}", name, pct, unit="%", better="lower",
                            title=f"CPU per idle VM, {n} running (% of one CPU)")
        log(f"density: {name} x{n}: {pss / n / 1024:.1f} MiB PSS each")
    finally:
        for cid in ids:
            rt.remove(cid)


def run(ctx):
    # Guest work: on an emulating host only with --force-emulated, and
    # labelled (bench/run.py labels every such kvrun figure).
    why = ctx.kvrun_reason(f"{S}/pss_1")
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    bundle = write_bundle(os.path.join(ctx.work, "b-density"), root, ["/bin/sleep", "100000"],
                          Limits(cpus=1, memory_mib=256))
    counts = getattr(ctx, "density_counts", None) or ([1, 3] if ctx.quick else COUNTS)
    env = Env(ctx) if "kvrun" in ctx.rt and not why else None
    try:
        if env:
            try:
                build(ctx, env, 256)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                why = f"not available: kvrun template build failed: {e}"
        for n in counts:
            for name in [r for r in ("kvrun", "runc") if r in ctx.rt]:
                if name == "kvrun" and why:
                    ctx.results.na(S, f"pss_{n}", "kvrun", why, unit="MiB", better="lower",
                                   title=f"host PSS per idle container, {n} running")
                    continue
                rt = env.kvrun if name == "kvrun" else ctx.rt[name]
                try:
                    idle_set(ctx, env, name, rt, bundle, n, exits=n == counts[0])
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    ctx.results.notes.append(f"density: {name} x{n}: {e}")
                    log(f"density: {name} x{n} failed: {e}")
                    err = str(e).strip().replace("\n", " ")[-400:]
                    ctx.results.na(S, f"pss_{n}", name, f"not available: {name} failed here: {err}", unit="MiB",
                                   better="lower", title=f"host PSS per idle container, {n} running")
        if counts[-1] == COUNTS[-1]:  # the target is for 30 (not --quick's 3)
            ctx.results.metric(S, f"pss_{counts[-1]}")["target"] = {"max": 10}
    finally:
        if env:
            remove_templates(env)


def run_exits(ctx):
    """The exits suite without density in the run: one container from a
    template of its own for the cost of a start and of an exec."""
    why = ctx.kvrun_reason(f"{SE}/container start")
    subject = "container start (template restore to started)"
    if why or "kvrun" not in ctx.rt:
        for what, _, unit in FIGS:
            ctx.results.na(SE, f"{subject}: {what}", "kvrun", why or "not available: kvrun not in the run",
                           unit=unit, better="lower", title=f"{subject}: {what}")
        return
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    bundle = write_bundle(os.path.join(ctx.work, "b-density"), root, ["/bin/sleep", "100000"],
                          Limits(cpus=1, memory_mib=256))
    env = Env(ctx)
    cid = "dn-exits"
    try:
        build(ctx, env, 256)
        create_once_keep(ctx, env.kvrun, bundle, cid, env.log_path("exits"))
        start_exec_exits(ctx, env.kvrun, cid)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        ctx.results.notes.append(f"exits: container start and exec: {e}")
    finally:
        env.kvrun.remove(cid)
        remove_templates(env)
