# SPDX-License-Identifier: Apache-2.0
"""sizing: what a container's guest RAM costs the host when the config.json
sets no limit (kvrun's default guest: 2 GiB where the guest kernel runs
natively, docs/runtime.md), against the 256 MiB guest that was the default
before, and runc's container, side by side; and whether memory a container
frees goes back to the host.

One container per runtime and run, no CPU quota or memory limit, templates
off (a cold boot, so guest RAM is the VM's own anonymous memory), from the
memhog rootfs (busybox and tests/integration/memhog.c):

  echo ready; sleep IDLE_S; echo go; exec memhog MIB HOLD_S AFTER_S

MIB is 1024 (1 GiB), EMULATED_ALLOC_MIB (128) where the host emulates guest
kernel code, or bench/run.py's --sizing-mib; runc's container writes the
same. The figures' titles say what was written.

- idle PSS and RSS (smaps_rollup, summed over the container's processes:
  for kvrun the monitor, whose mappings hold the guest RAM it touched),
  SETTLE_S after "ready": "kvrun" (2 GiB guest: the config file's
  "memory": "2G", since an emulating host's default without a limit is
  256 MiB), "kvrun (256 MiB)" (the config file's "memory": "256M", whose
  container only idles), runc.
- then memhog writes MIB: RSS when it says "allocated" (and the time it
  took, inside the container); how long its munmap took (seen from
  outside: the "allocated" line to the "freed" line, less HOLD_S; 0.1 s
  polls); and once it freed it ("freed"), how long
  until the RSS is back within the slack (64 MiB, a quarter of MIB when
  that is less) of the idle RSS: for kvrun,
  the guest's free page reporting (2 s after a free, in passes) and the
  balloon's madvise; for runc, munmap. RSS after that.

Under an emulated guest kernel every kvrun figure is a Linux boot and the
guest's own work (page faults, the reporting) runs emulated: kvrun takes one
run there (with --force-emulated) and its figures carry the label. A guest
page fault costs milliseconds there (1 GiB written took over 25 minutes),
hence the smaller MIB."""
import os
import re
import time

from . import emulated, rootfs
from .runtimes import Limits, Runtime, write_bundle
from .suite_start import rotate
from .util import descendants, log, pss_kib

S = "sizing"
SMALL = "kvrun (256 MiB)"
ALLOC_MIB = 1024
# What memhog writes where the host emulates guest kernel code.
EMULATED_ALLOC_MIB = 128
IDLE_S, SETTLE_S, HOLD_S, AFTER_S = 45, 25, 5, 150
RETURN_SLACK_MIB = 64
RETURN_TIMEOUT_S = 120
ALLOC_RE = re.compile(r"allocated (\d+) MiB in ([0-9.]+) s")

# Titles; {amount} is what memhog writes, {slack} the return's slack.
TITLES = {
    "idle_pss": ("host memory of an idle container, no limit: PSS", "MiB"),
    "idle_rss": ("host memory of an idle container, no limit: RSS", "MiB"),
    "alloc_s": ("{amount} written by a process in the container (timed inside it)", "s"),
    "alloc_rss": ("RSS with the {amount} written", "MiB"),
    "free_s": ("{amount} unmapped by the process (seen from outside, less the %d s hold)" % HOLD_S, "s"),
    "return_s": ("{amount} freed: until the RSS is back within {slack} MiB", "s"),
    "freed_rss": ("RSS once the {amount} went back", "MiB"),
}


def amount(mib):
    """mib in words: "1 GiB", "128 MiB"."""
    return f"{mib >> 10} GiB" if mib % 1024 == 0 else f"{mib} MiB"


def slack_mib(mib):
    """How far above the idle RSS counts as returned: 64 MiB, a quarter of
    what was written when that is less (as test_memory_return.py)."""
    return min(RETURN_SLACK_MIB, mib // 4)


def alloc_mib(ctx):
    """What memhog writes in this run: --sizing-mib, else 1 GiB, or
    EMULATED_ALLOC_MIB where the host emulates guest kernel code."""
    if getattr(ctx, "sizing_mib", None):
        return ctx.sizing_mib
    return EMULATED_ALLOC_MIB if ctx.host["emulating"] else ALLOC_MIB


def meta(name, mib=ALLOC_MIB):
    title, unit = TITLES[name]
    return dict(unit=unit, better="lower", title=title.format(amount=amount(mib), slack=slack_mib(mib)))


def parse_alloc(text):
    """(MiB, seconds) from memhog's "allocated" line in text, or None."""
    m = ALLOC_RE.search(text)
    return (int(m.group(1)), float(m.group(2))) if m else None


def returned_at(samples, base_kib, slack_kib=RETURN_SLACK_MIB << 10):
    """The first (seconds, rss_kib) of samples [(s, rss_kib)...] whose RSS
    is within slack of base, or None."""
    return next(((s, rss) for s, rss in samples if rss <= base_kib + slack_kib), None)


def runs_for(ctx, name):
    """Runs each runtime takes: one kvrun boot per variant under emulation."""
    return 1 if name.startswith("kvrun") and ctx.host["emulating"] else ctx.runs


def wait_line(path, word, timeout, proc_alive=None):
    """Seconds waited until a line of file path starts with word."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            with open(path, errors="replace") as f:
                if any(line.startswith(word) for line in f):
                    return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no '{word}' from the container within {timeout} s: {open(path).read()[-400:]}")


def rss_kib(pid):
    return pss_kib(descendants(pid))[1]


def watch_return(pid, base_kib, slack_kib):
    """Samples of the RSS every 0.1 s from now until it is back within
    slack_kib of base, or RETURN_TIMEOUT_S."""
    t0, samples = time.monotonic(), []
    while time.monotonic() - t0 < RETURN_TIMEOUT_S:
        samples.append((time.monotonic() - t0, rss_kib(pid)))
        if returned_at(samples[-1:], base_kib, slack_kib):
            break
        time.sleep(0.1)
    return samples


def alloc_part(ctx, name, pid, out, base):
    """memhog's part of a session: its allocation, the RSS with it, the
    return after it freed to within the slack of base (the idle RSS: at
    "go" memhog is already writing)."""
    R = ctx.results
    mib = alloc_mib(ctx)
    slack = slack_mib(mib) << 10
    timeout = ctx.boot_timeout(name.split(" ")[0]) if name.startswith("kvrun") else 300
    wait_line(out, "go", IDLE_S + 60)
    wait_line(out, "allocated", timeout)
    t_alloc = time.monotonic()
    R.add(S, "alloc_rss", name, rss_kib(pid) / 1024, **meta("alloc_rss", mib))
    got = parse_alloc(open(out).read())
    if got:
        R.add(S, "alloc_s", name, got[1], **meta("alloc_s", mib))
    # The munmap is guest kernel work too: minutes where it is emulated.
    wait_line(out, "freed", HOLD_S + max(60, timeout))
    R.add(S, "free_s", name, max(0.0, time.monotonic() - t_alloc - HOLD_S), **meta("free_s", mib))
    samples = watch_return(pid, base, slack)
    back = returned_at(samples, base, slack)
    log(f"sizing: {name}: RSS idle {base >> 10} MiB, after the free {samples[0][1] >> 10} MiB, "
        f"{'back in %.1f s' % back[0] if back else 'not back in %d s' % RETURN_TIMEOUT_S}")
    if back:
        R.add(S, "return_s", name, back[0], **meta("return_s", mib))
        R.add(S, "freed_rss", name, back[1] / 1024, **meta("freed_rss", mib))
    else:
        R.na(S, "return_s", name, f"not available: the RSS was not back within {RETURN_TIMEOUT_S} s "
             f"({samples[-1][1] >> 10} MiB, {base >> 10} MiB idle)", **meta("return_s", mib))


def session(ctx, name, rt, bundle, cid, alloc):
    """One container of runtime name: idle figures, then (alloc) memhog's."""
    R = ctx.results
    out = os.path.join(ctx.work, f"sizing-{cid}.out")
    rt.run_detached(bundle, cid, out, timeout=ctx.boot_timeout("kvrun" if name.startswith("kvrun") else name))
    try:
        pid = rt.init_pid(cid)
        wait_line(out, "ready", ctx.boot_timeout("kvrun") if name.startswith("kvrun") else 120)
        time.sleep(SETTLE_S)
        pss, rss = pss_kib(descendants(pid))
        R.add(S, "idle_pss", name, pss / 1024, **meta("idle_pss"))
        R.add(S, "idle_rss", name, rss / 1024, **meta("idle_rss"))
        log(f"sizing: {name}: idle PSS {pss >> 10} MiB, RSS {rss >> 10} MiB")
        if alloc:
            alloc_part(ctx, name, pid, out, rss)
    finally:
        rt.remove(cid)


def small_session(ctx, rt, bundle, cid):
    """The 256 MiB guest's session; a failure makes its figures not
    available with kvrun's error (ctx.guarded() speaks for "kvrun")."""
    try:
        session(ctx, SMALL, rt, bundle, cid, False)
    except (RuntimeError, OSError) as e:
        err = str(e).strip().replace("\n", " ")[-400:]
        ctx.results.notes.append(f"a {SMALL} session failed: {err}")
        for k in ("idle_pss", "idle_rss"):
            if not ctx.results.metrics.get(f"{S}/{k}", {}).get("runtimes", {}).get(SMALL):
                ctx.results.na(S, k, SMALL, f"not available: kvrun failed here: {err}", **meta(k))


def runtimes(ctx):
    """{name: (Runtime, bundle kind)} of the runs: kvrun's two guest sizes
    (each with its own config file, templates off) and runc."""
    out = {}
    if "kvrun" in ctx.rt and not ctx.kvrun_reason(f"{S}/idle_pss"):
        kv = ctx.rt["kvrun"]
        for name, cfg in (("kvrun", '{"memory": "2G"}'), (SMALL, '{"memory": "256M"}')):
            path = os.path.join(ctx.work, f"sizing-{'small' if name == SMALL else 'default'}.json")
            with open(path, "w") as f:
                f.write(cfg + "\n")
            out[name] = (Runtime("kvrun", kv.binary, kv.state_root,
                                 env=dict(kv.env, KVRUN_TEMPLATES="0", KVRUN_CONFIG=path)), name != SMALL)
    if "runc" in ctx.rt:
        out["runc"] = (ctx.rt["runc"], True)
    return out


def run(ctx):
    root = rootfs.ensure(ctx.cache, "memhog", ctx.src)
    none = Limits(cpus=None, memory_mib=None)
    mib = alloc_mib(ctx)
    script = f"echo ready; sleep {IDLE_S}; echo go; exec /usr/local/bin/memhog {mib} {HOLD_S} {AFTER_S}"
    bundles = {True: write_bundle(os.path.join(ctx.work, "b-sizing"), root, ["/bin/sh", "-c", script], none),
               False: write_bundle(os.path.join(ctx.work, "b-sizing-idle"), root,
                                   ["/bin/sh", "-c", "echo ready; exec sleep 3600"], none)}
    ctx.results.notes.append("sizing: its config.json sets no CPU quota and no memory limit (the recipe's "
                             "limits do not apply)")
    if mib != ALLOC_MIB:
        why = ("--sizing-mib" if getattr(ctx, "sizing_mib", None) else
               "the guest kernel is emulated on this host: a guest page fault costs milliseconds")
        ctx.results.notes.append(f"sizing: memhog writes {amount(mib)}, not {amount(ALLOC_MIB)} ({why}); "
                                 f"runc's container the same; the return's slack is {slack_mib(mib)} MiB")
    rts = runtimes(ctx)
    if "kvrun" in ctx.rt and "kvrun" not in rts:
        why = ctx.kvrun_reason(f"{S}/idle_pss")
        for k in TITLES:
            ctx.results.na(S, k, "kvrun", why, **meta(k, mib))
    names = list(rts)
    log(f"sizing: {', '.join(f'{n} x{runs_for(ctx, n)}' for n in names)}")
    for i in range(max(runs_for(ctx, n) for n in names) if names else 0):
        for name in rotate(names, i):
            if i >= runs_for(ctx, name):
                continue
            rt, alloc = rts[name]
            cid = f"sz-{i}-{'small' if name == SMALL else name}"
            if name == SMALL:
                small_session(ctx, rt, bundles[alloc], cid)
            else:
                ctx.guarded(name, [f"{S}/{k}" for k in TITLES], session, ctx, name, rt, bundles[alloc], cid, alloc)


def config(ctx):
    """What the results record of this suite's setup."""
    mib = alloc_mib(ctx)
    return {"alloc_mib": mib, "default_alloc_mib": ALLOC_MIB, "emulated_alloc_mib": EMULATED_ALLOC_MIB,
            "idle_s": IDLE_S, "settle_s": SETTLE_S, "hold_s": HOLD_S, "after_s": AFTER_S,
            "return_slack_mib": slack_mib(mib), "return_timeout_s": RETURN_TIMEOUT_S,
            "kvrun": "no limit, config \"memory\": \"2G\" (the default where the guest kernel runs natively; "
                     "256 MiB where it is emulated) and config \"memory\": \"256M\"; templates off",
            "emulated": emulated.LABEL}
