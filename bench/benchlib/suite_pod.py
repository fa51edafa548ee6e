# SPDX-License-Identifier: Apache-2.0
"""pod: a Kubernetes pod of a sandbox container and two app containers,
driven through the runc command line as containerd's CRI plugin drives it
(tests/integration/test_pods_linux.py, docs/runtime.md "Pods"), kvrun and
runc (and crun) side by side.

- The sandbox: busybox `sh -c 'echo ready; exec sleep'` (the pause
  container's stand-in), CRI annotations io.kubernetes.cri.container-type
  = sandbox and io.kubernetes.cri.sandbox-id, the recipe's bundle with 1
  CPU and 256 MiB (kvrun: the VM's size, that of the run's own template).
- Two app containers (A, B), each with its own copy of the busybox root,
  the annotations container-type = container and the sandbox's id, the
  sandbox's network, IPC and UTS namespaces by path
  (/proc/<sandbox pid>/ns/<type>: for kvrun the monitor's), their own
  mount and PID namespaces, no hostname and no limits; each runs
  `sh -c 'echo ready; exec sleep'`, its stdout a file of the harness's.
  Under kvrun they are built inside the sandbox's VM (no VM of their own).

Per run and runtime, two pods:

- The timed pod, straight through: for the sandbox, then A, then B,
  `create`, `start`, until its process's "ready" line is in its file (it
  runs and answers). Figures: each of the three steps, and the whole,
  from the sandbox's `create` to both app containers' "ready".
- The memory pod, built the same way with a pause of SETTLE_S after each
  step: the host PSS (smaps_rollup) of every host process of the pod,
  idle, with 0, 1 and 2 app containers, and per app container added
  ((2 - 0) / 2). kvrun's processes: the sandbox's monitor (its mappings
  hold the guest RAM it touched) and the app containers' member proxies
  (their state's pid), with their descendants, and any other process of
  the kvrun binary (none expected); runc's: each container's process.
- kvrun only: the VMs of the pod (processes of the kvrun binary holding
  a KVM VM, anon_inode:kvm-vm; one expected), counted in both pods with
  both app containers running, and whether the sandbox was restored from
  the template (the monitor's `VM: template restored` record in its
  --log).

kvrun's pods start from a template of the run's own (`kvrun template
build --memory 256`, removed afterwards), as density's containers do. Every
kvrun time and memory figure involves the guest kernel (guest-init builds
the app containers inside the VM): on an emulating host it needs
--force-emulated and carries the label; the VM count and the template's
use are facts, not measurements of the emulator, and are not labelled."""
import json
import os
import shutil
import subprocess
import time

from . import rootfs
from .runtimes import Limits, Runtime, write_bundle
from .suite_density import console_tail
from .suite_start import rotate
from .suite_template import Env, build, kvrun_error, parse_restore, remove_templates
from .util import descendants, log, proc_dir, pss_kib

S = "pod"
SETTLE_S = 10
APPS = ("a", "b")
SANDBOX_LIMITS = Limits(cpus=1, memory_mib=256)
TEMPLATE_MIB = 256
SCRIPT = "echo ready; exec sleep 100000"
CRI_TYPE = "io.kubernetes.cri.container-type"
CRI_SANDBOX = "io.kubernetes.cri.sandbox-id"
JOINED = (("network", "net"), ("ipc", "ipc"), ("uts", "uts"))

TITLES = {
    "sandbox_ms": ("sandbox: create + start until its process answers", "ms"),
    "app_a_ms": ("app container A: create + start until it answers", "ms"),
    "app_b_ms": ("app container B: create + start until it answers", "ms"),
    "total_ms": ("two-container pod: sandbox create to both app containers answering", "ms"),
    "pss_0": ("host PSS of the idle pod, sandbox only", "MiB"),
    "pss_1": ("host PSS of the idle pod, 1 app container", "MiB"),
    "pss_2": ("host PSS of the idle pod, 2 app containers", "MiB"),
    "pss_per_app": ("host PSS per app container added ((2 - 0) / 2)", "MiB"),
    "vms": ("KVM VMs of the pod (kvrun: 1 expected)", "VMs"),
    "from_template": ("sandbox restored from the VM template (1 yes, 0 a cold boot)", "runs"),
}
TIMES = ["sandbox_ms", "app_a_ms", "app_b_ms", "total_ms"]
MEMORY = ["pss_0", "pss_1", "pss_2", "pss_per_app"]
FACTS = ["vms", "from_template"]


def meta(name):
    title, unit = TITLES[name]
    return dict(unit=unit, better="lower" if name != "from_template" else "higher", title=title)


def sandbox_annotations(sbx):
    return {CRI_TYPE: "sandbox", CRI_SANDBOX: sbx}


def app_annotations(sbx):
    return {CRI_TYPE: "container", CRI_SANDBOX: sbx}


def joined_namespaces(namespaces, pid):
    """The recipe's namespaces with network, IPC and UTS replaced by the
    sandbox's (pid: its state's pid), as containerd's CRI writes them."""
    paths = {typ: f"/proc/{pid}/ns/{name}" for typ, name in JOINED}
    return [n for n in namespaces if n["type"] not in paths] + [{"type": t, "path": p} for t, p in paths.items()]


def write_pod_bundle(path, root, sbx, role, sandbox_pid=None):
    """The bundle of the pod's sandbox (role "sandbox") or of an app
    container (role "container", joining sandbox_pid's namespaces): the
    recipe's config.json with the CRI annotations; an app container has no
    hostname (the UTS namespace is the sandbox's) and no limits."""
    if role == "sandbox":
        b = write_bundle(path, root, ["/bin/sh", "-c", SCRIPT], SANDBOX_LIMITS)
    else:
        b = write_bundle(path, root, ["/bin/sh", "-c", SCRIPT], Limits(cpus=None, memory_mib=None))
    cfg_path = os.path.join(b, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    if role == "sandbox":
        cfg["annotations"] = sandbox_annotations(sbx)
    else:
        cfg["annotations"] = app_annotations(sbx)
        cfg.pop("hostname", None)
        cfg["linux"]["namespaces"] = joined_namespaces(cfg["linux"]["namespaces"], sandbox_pid)
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    return b


def has_line(path, word):
    """Whether a line of file path starts with word."""
    try:
        with open(path, errors="replace") as f:
            return any(line.startswith(word) for line in f)
    except OSError:
        return False


def vm_pids(pids):
    """Those of pids that hold a KVM VM (a kvrun monitor each)."""
    found = []
    for pid in pids:
        for fd in proc_dir(pid, "fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:kvm-vm":
                    found.append(pid)
                    break
            except OSError:
                pass
    return found


def binary_pids(binary):
    """Processes running binary."""
    exe = os.path.realpath(binary)
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.path.realpath(f"/proc/{d}/exe") == exe:
                    out.append(int(d))
            except OSError:
                pass
    return out


def per_app(pss0, pss2):
    """Host memory each of the two app containers added (KiB in, MiB out)."""
    return (pss2 - pss0) / 2 / 1024


class Pod:
    """One pod of one runtime: its sandbox and app containers, each step
    create + start until its process says "ready"."""

    def __init__(self, ctx, name, rt, tag, env=None):
        self.ctx, self.name, self.rt, self.env = ctx, name, rt, env
        self.sbx = f"pod-{tag}-sbx"
        self.ids = [self.sbx] + [f"pod-{tag}-{a}" for a in APPS]
        self.dir = os.path.join(ctx.work, f"pod-{tag}")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.made = []
        self.sandbox_log = None
        self.console = None
        if env:
            # The guest's console (it writes to its serial port either
            # way) in a file, quoted when a step fails.
            self.console = os.path.join(self.dir, "sandbox.console")
            self.rt = Runtime(rt.name, rt.binary, rt.state_root, env=dict(rt.env, KVRUN_CONSOLE=self.console))

    def timeout(self):
        return self.ctx.boot_timeout("kvrun") + 600 if self.name == "kvrun" else 120

    def step(self, cid, bundle):
        """create and start cid, then wait for its "ready"; seconds."""
        out = os.path.join(self.dir, f"{cid}.out")
        logf = self.env.log_path(f"pod-{cid}") if self.env else None
        if cid == self.sbx:
            self.sandbox_log = logf
        pre = ["--log", logf, "--log-format", "json"] if logf else []
        t0 = time.monotonic()
        for op in (["create", "-b", bundle, cid], ["start", cid]):
            with open(out, "a") as f:
                p = subprocess.run(self.rt.argv(*pre, *op), env=self.rt.env, stdin=subprocess.DEVNULL, stdout=f,
                                   stderr=subprocess.STDOUT, timeout=self.timeout())
            if op[0] == "create":
                self.made.append(cid)
            if p.returncode != 0:
                text = open(out, errors="replace").read() + (open(logf, errors="replace").read() if logf else "")
                raise RuntimeError(f"{self.name} {op[0]} {cid}: {kvrun_error(text)}{self.console_note()}")
        deadline = time.monotonic() + self.timeout()
        while not has_line(out, "ready"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} {cid}: no 'ready' within {self.timeout()} s: "
                                   f"{open(out, errors='replace').read()[-300:]}{self.console_note()}")
            time.sleep(0.01)
        return time.monotonic() - t0

    def console_note(self):
        if not self.console:
            return ""
        return f"; guest console {self.console}: {console_tail(self.console) or '(empty)'}"

    def sandbox(self, root):
        return self.step(self.sbx, write_pod_bundle(os.path.join(self.dir, "b-sbx"), root, self.sbx, "sandbox"))

    def app(self, k, root):
        cid = self.ids[1 + k]
        b = write_pod_bundle(os.path.join(self.dir, f"b-{APPS[k]}"), root, self.sbx, "container",
                             self.rt.init_pid(self.sbx))
        return self.step(cid, b)

    def pids(self):
        """Every host process of the pod: the containers' pids and their
        descendants, and for kvrun any other process of its binary."""
        out = []
        for cid in self.made:
            out += descendants(self.rt.init_pid(cid))
        if self.name == "kvrun":
            out += binary_pids(self.rt.binary)
        return sorted(set(out))

    def from_template(self):
        text = open(self.sandbox_log, errors="replace").read() if self.sandbox_log else ""
        return 1 if any(r["kind"] == "template" for r in parse_restore(text)) else 0

    def remove(self):
        """App containers first, then the sandbox (as containerd does)."""
        for cid in reversed(self.made):
            self.rt.remove(cid)
        self.made = []


def app_roots(ctx, root):
    """Each app container's own copy of the busybox root."""
    out = []
    for a in APPS:
        d = os.path.join(ctx.work, f"pod-rootfs-{a}")
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run(["cp", "-a", root, d], check=True)
        out.append(d)
    return out


def timed_pod(ctx, name, rt, env, i, root, roots):
    R = ctx.results
    pod = Pod(ctx, name, rt, f"t{i}-{name}", env)
    try:
        t0 = time.monotonic()
        secs = [pod.sandbox(root)] + [pod.app(k, roots[k]) for k in range(len(APPS))]
        total = time.monotonic() - t0
        for key, s in zip(TIMES, secs + [total]):
            R.add(S, key, name, s * 1000, **meta(key))
        log(f"pod: {name} run {i}: " + ", ".join(f"{k} {s:.2f} s" for k, s in zip(TIMES, secs + [total])))
        if name == "kvrun":
            facts(ctx, pod)
    finally:
        pod.remove()


def memory_pod(ctx, name, rt, env, i, root, roots):
    R = ctx.results
    pod = Pod(ctx, name, rt, f"m{i}-{name}", env)
    try:
        pss = []
        for k in range(len(APPS) + 1):
            if k == 0:
                pod.sandbox(root)
            else:
                pod.app(k - 1, roots[k - 1])
            time.sleep(SETTLE_S)
            pss.append(pss_kib(pod.pids())[0])
        for k, kib in enumerate(pss):
            R.add(S, f"pss_{k}", name, kib / 1024, **meta(f"pss_{k}"))
        R.add(S, "pss_per_app", name, per_app(pss[0], pss[-1]), **meta("pss_per_app"))
        log(f"pod: {name} run {i}: PSS " + ", ".join(f"{k} apps {kib / 1024:.1f} MiB" for k, kib in enumerate(pss)))
        if name == "kvrun":
            facts(ctx, pod)
    finally:
        pod.remove()


def facts(ctx, pod):
    """kvrun: the pod's VMs and whether its sandbox came from the template."""
    vms = vm_pids(pod.pids())
    mon = pod.rt.init_pid(pod.sbx)
    ctx.results.add(S, "vms", "kvrun", len(vms), **meta("vms"))
    ctx.results.add(S, "from_template", "kvrun", pod.from_template(), **meta("from_template"))
    if vms != [mon]:
        ctx.results.notes.append(f"pod: {pod.sbx}: the VMs are processes {vms}, not the sandbox's monitor {mon} "
                                 "alone")


def session(ctx, name, rt, env, i, root, roots):
    timed_pod(ctx, name, rt, env, i, root, roots)
    memory_pod(ctx, name, rt, env, i, root, roots)


def kvrun_na(ctx, why):
    for key in TIMES + MEMORY + FACTS:
        ctx.results.na(S, key, "kvrun", why, **meta(key))


def run(ctx):
    names = [r for r in ("kvrun", "runc", "crun") if r in ctx.rt]
    why = ctx.kvrun_reason(f"{S}/total_ms") if "kvrun" in names else None
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    roots = app_roots(ctx, root)
    env = Env(ctx) if "kvrun" in names and not why else None
    try:
        if env:
            try:
                build(ctx, env, TEMPLATE_MIB)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                why = f"not available: kvrun template build failed: {str(e).strip()[-400:]}"
        if why and "kvrun" in names:
            kvrun_na(ctx, why)
            names.remove("kvrun")
        rts = {n: (env.kvrun if n == "kvrun" else ctx.rt[n]) for n in names}
        log(f"pod: {ctx.runs} runs of {', '.join(names)}")
        for i in range(ctx.runs):
            for name in rotate(names, i):
                if name == "kvrun":
                    ctx.guarded(name, [f"{S}/{k}" for k in TIMES + MEMORY + FACTS], session, ctx, name,
                                rts[name], env, i, root, roots)
                else:
                    session(ctx, name, rts[name], None, i, root, roots)
    finally:
        if env:
            remove_templates(env)
        for d in roots:
            shutil.rmtree(d, ignore_errors=True)


def config(ctx):
    """What the results record of this suite's setup."""
    return {"settle_s": SETTLE_S, "template_mib": TEMPLATE_MIB, "sandbox_limits": SANDBOX_LIMITS.describe(),
            "app_limits": "none", "process": f"/bin/sh -c '{SCRIPT}'",
            "annotations": f"{CRI_TYPE} = sandbox | container, {CRI_SANDBOX}",
            "joined_namespaces": [t for t, _ in JOINED]}
