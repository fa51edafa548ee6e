#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun against runc on the host, without a Linux guest (seconds): the
same thing done with both, and their answers compared.

- kill: each signal spelling (numbers, names with and without SIG, in any
  case, real-time numbers, what runc refuses) on a stopped container and
  on a missing one: the same exit status and message. kvrun's stopped
  container is a state directory whose monitor is gone.
- The cgroup of a container without linux.cgroupsPath and the
  descriptors of the pid that stands for it: runc's container process
  (runc create) and kvrun's monitor, seen from a prestart hook (a bogus
  kernel ends kvrun's create right after the hooks), each given an extra
  descriptor: the same /proc/PID/cgroup (the id aside), the extra
  descriptor in neither. Nothing of kvrun's cgroup is left after the
  failed create. With --systemd-cgroup and no systemd (this host) runc
  fails; kvrun's place is checked alone.
- features: hooks, capabilities and seccomp operators as runc's; the
  rest kvrun lists a part of runc's (what guest-init applies: each item
  is checked in tests/unit/guest-init/test-support.c and test-spec.c);
  the cgroup kinds it lists are the hierarchies the monitor was found in.

Needs root and runc; skips otherwise.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import bundlelib
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RUNC = shutil.which("runc")
CG = "/sys/fs/cgroup"

SIGNALS = ["0", "9", "KILL", "SIGKILL", "kill", "Winch", "sigwinch", "28", "+28", "028", "34", "64", "65", "-1",
           "99999999999999999999", " 28", "0x1c", "SIGRTMIN", "RTMIN+1", "SIGRTMIN+1", "SIGIOT", "CLD",
           "SIGSTKFLT", "PWR", "FOO", "9x", ""]


def run(rt, root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([rt, "--root", root] + list(args), **kw)


def create(rt, root, *args, **kw):
    """create's stdio become the container's (runc) or its monitor's
    (kvrun): files, not pipes that would stay open."""
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.run([rt, "--root", root] + list(args), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                           timeout=120, **kw)
        out.seek(0)
        return subprocess.CompletedProcess(p.args, p.returncode, "", out.read())


def answer(p):
    return p.returncode, bundlelib.logrus_msg(p.stderr) if p.returncode else ""


def make_bundle(tmp, name, mutate):
    b = os.path.join(tmp, name)
    bundlelib.busybox_rootfs(os.path.join(b, "rootfs"), ["sh", "sleep", "true", "cat", "ls", "sed"],
                             dirs=["proc", "sys", "dev", "tmp"])
    bundlelib.write_spec(KVRUN, b, mutate)
    return b


def fake_stopped(root, cid, bundle):
    """kvrun's state directory of a container whose monitor is gone."""
    p = subprocess.Popen(["true"])
    p.wait()
    d = os.path.join(root, cid)
    os.makedirs(d, mode=0o700)
    st = {"ociVersion": "1.2.0", "id": cid, "pid": p.pid, "status": "running", "bundle": bundle,
          "rootfs": os.path.join(bundle, "rootfs"), "created": "2026-01-01T00:00:00Z", "owner": "",
          "annotations": {}, "kvrun": {"pid-start-time": "1"}}
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump(st, f)
    open(os.path.join(d, "lock"), "w").close()


def test_kill(t, tmp):
    b = make_bundle(tmp, "b-kill", lambda s: s["process"].update(args=["true"]))
    rroot, kroot = os.path.join(tmp, "runc-kill"), os.path.join(tmp, "kvrun-kill")
    p = create(RUNC, rroot, "create", "--bundle", b, "stopped")
    if not t.ok(p.returncode == 0, "runc create of a container that exits at once", p.stderr):
        return
    run(RUNC, rroot, "start", "stopped")
    stopped = bundlelib.wait_for(lambda: json.loads(run(RUNC, rroot, "state", "stopped").stdout or "{}")
                                 .get("status") == "stopped", 30, 0.1)
    t.ok(stopped, "runc's container stopped")
    fake_stopped(kroot, "stopped", b)
    for sig in SIGNALS:
        want = answer(run(RUNC, rroot, "kill", "stopped", sig))
        got = answer(run(KVRUN, kroot, "kill", "stopped", sig))
        t.eq(got, want, f"kill of a stopped container with signal {sig!r}: runc's status and message")
    for args in (["--all", "stopped", "9"], ["--all", "stopped", "0"], ["nosuch", "9"], ["nosuch", "FOO"]):
        want = answer(run(RUNC, rroot, "kill", *args))
        got = answer(run(KVRUN, kroot, "kill", *args))
        t.eq(got, want, f"kill {' '.join(args)}: runc's status and message")
    run(RUNC, rroot, "delete", "-f", "stopped")


def hook_recorder(out):
    """A prestart hook that records the cgroup and descriptors of the pid
    in the state it is given (kvrun's monitor)."""
    script = (f"cat > {out}/state; pid=$(sed 's/.*\"pid\":\\([0-9]*\\).*/\\1/' {out}/state); "
              f"cat /proc/$pid/cgroup > {out}/cgroup; ls -l /proc/$pid/fd/ > {out}/fds")
    return {"prestart": [{"path": "/bin/sh", "args": ["sh", "-c", script]}]}


def fd_targets(pid):
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return targets


def normalize(cgroup_text, cid):
    return sorted(line.replace(cid, "ID") for line in cgroup_text.splitlines())


def cgroup_dirs(name):
    found = []
    for h in os.listdir(CG):
        base = os.path.join(CG, h)
        if os.path.isdir(base) and not os.path.islink(base):
            for dirpath, dirnames, _ in os.walk(base):
                if os.path.basename(dirpath) == name:
                    found.append(dirpath)
                if dirpath.count("/") > base.count("/") + 3:
                    dirnames.clear()
    return found


def test_cgroup_and_fds(t, tmp, env):
    """Returns the kvrun monitor's /proc/PID/cgroup lines (or [])."""
    marker = os.path.join(tmp, "extra-descriptor-of-the-caller")
    extra = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
    rid, kid = f"parity-r{os.getpid()}", f"parity-k{os.getpid()}"
    rb = make_bundle(tmp, "b-runc", lambda s: s["process"].update(args=["sleep", "600"]))
    out = os.path.join(tmp, "hook-out")
    os.mkdir(out)

    def kmut(s):
        s["process"]["args"] = ["sleep", "600"]
        s["hooks"] = hook_recorder(out)
    kb = make_bundle(tmp, "b-kvrun", kmut)
    rroot, kroot = os.path.join(tmp, "runc-cg"), os.path.join(tmp, "kvrun-cg")
    p = create(RUNC, rroot, "create", "--bundle", rb, rid, pass_fds=(extra,))
    runc_cg, runc_fds = "", []
    # runc's init closes the caller's descriptors when it execs the
    # process (until then they are only close-on-exec): looked at once it
    # runs.
    if t.ok(p.returncode == 0, "runc create with an extra descriptor", p.stderr):
        run(RUNC, rroot, "start", rid)
        pid = json.loads(run(RUNC, rroot, "state", rid).stdout)["pid"]
        with open(f"/proc/{pid}/cgroup") as f:
            runc_cg = f.read()
        runc_fds = fd_targets(pid)
        run(RUNC, rroot, "delete", "-f", rid)
    p = create(KVRUN, kroot, "create", "--bundle", kb, kid, pass_fds=(extra,), env=env)
    os.close(extra)
    t.ok(p.returncode != 0 and "not-a-kernel" in p.stderr, "kvrun create: hooks ran, then the bogus kernel failed",
         p.stderr)
    kv_cg = open(os.path.join(out, "cgroup")).read() if os.path.exists(os.path.join(out, "cgroup")) else ""
    kv_fds = open(os.path.join(out, "fds")).read() if os.path.exists(os.path.join(out, "fds")) else ""
    t.ok(runc_cg and kv_cg, "both pids' cgroups read", f"runc:\n{runc_cg}\nkvrun:\n{kv_cg}")
    t.eq(normalize(kv_cg, kid), normalize(runc_cg, rid),
         "no cgroupsPath: the monitor's cgroups are runc's container's (<id> below the caller's, per hierarchy)")
    t.ok(runc_fds and marker not in runc_fds, "runc: the caller's extra descriptor is not the container's",
         "\n".join(runc_fds))
    t.ok(kv_fds and marker not in kv_fds, "kvrun: nor the monitor's (only stdio of the caller's)", kv_fds)
    t.eq(cgroup_dirs(kid), [], "kvrun: nothing of the cgroup left after the failed create")
    # --systemd-cgroup without systemd: runc refuses, kvrun uses the same
    # path in cgroupfs.
    os.unlink(os.path.join(out, "cgroup"))
    p = create(RUNC, rroot, "--systemd-cgroup", "create", "--bundle", rb, rid + "s")
    t.diag(f"runc --systemd-cgroup here: {answer(p)}")
    run(RUNC, rroot, "delete", "-f", rid + "s")
    create(KVRUN, kroot, "--systemd-cgroup", "create", "--bundle", kb, kid + "s", env=env)
    sd_cg = open(os.path.join(out, "cgroup")).read() if os.path.exists(os.path.join(out, "cgroup")) else ""
    lines = [ln for ln in sd_cg.splitlines() if ln]
    t.ok(lines and all(ln.endswith(f":/system.slice/kvrun-{kid}s.scope") for ln in lines if "memory" not in ln),
         "--systemd-cgroup, no cgroupsPath: system.slice:kvrun:<id> (runc's system.slice:runc:<id>)", sd_cg)
    t.eq(cgroup_dirs(f"kvrun-{kid}s.scope"), [], "and removed after the failed create")
    return kv_cg.splitlines()


def test_features(t, monitor_cgroup):
    k = json.loads(subprocess.run([KVRUN, "features"], capture_output=True, text=True, check=True).stdout)
    r = json.loads(subprocess.run([RUNC, "features"], capture_output=True, text=True, check=True).stdout)
    kl, rl = k["linux"], r["linux"]
    t.eq(k["hooks"], r["hooks"], "features: runc's hooks")
    t.eq(kl["capabilities"], rl["capabilities"], "features: runc's capabilities")
    t.eq(kl["seccomp"]["operators"], rl["seccomp"]["operators"], "features: runc's seccomp operators")
    for name, mine, theirs in (("mountOptions", k["mountOptions"], r["mountOptions"]),
                               ("namespaces", kl["namespaces"], rl["namespaces"]),
                               ("seccomp actions", kl["seccomp"]["actions"], rl["seccomp"]["actions"])):
        t.ok(mine and set(mine) <= set(theirs), f"features: {name} a part of runc's ({len(mine)} of {len(theirs)})",
             f"not runc's: {sorted(set(mine) - set(theirs))}")
    # Architectures: those of the guest's byte order (a filter takes no
    # other, under runc either), which runc's libseccomp may know fewer of.
    big_endian = {"SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
                  "SCMP_ARCH_S390", "SCMP_ARCH_S390X"}
    t.ok(set(rl["seccomp"]["archs"]) - big_endian <= set(kl["seccomp"]["archs"]) and
         not big_endian & set(kl["seccomp"]["archs"]),
         "features: seccomp archs: runc's of the guest's byte order", json.dumps(kl["seccomp"]["archs"]))
    v1 = any(ln.split(":")[1] for ln in monitor_cgroup if ln.count(":") >= 2)
    v2 = any(ln.startswith("0::") for ln in monitor_cgroup)
    t.eq((kl["cgroup"]["v1"], kl["cgroup"]["v2"]), (v1, v2), "features: cgroup v1 and v2 as the monitor was placed")


def main():
    t = Tap()
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not RUNC:
        t.skip_all("runc is not installed")
    if not os.path.exists(bundlelib.BUSYBOX):
        t.skip_all("busybox-static missing")
    tmp = tempfile.mkdtemp(prefix="kvrun-parity-")
    bogus = os.path.join(tmp, "not-a-kernel")
    with open(bogus, "wb") as f:
        f.write(b"\x7fELF this is not a kernel" + b"\0" * 4096)
    env = dict(os.environ, KVRUN_KERNEL=bogus, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    try:
        test_kill(t, tmp)
        placed = test_cgroup_and_fds(t, tmp, env)
        test_features(t, placed)
    finally:
        for root in ("runc-kill", "runc-cg"):
            d = os.path.join(tmp, root)
            for cid in os.listdir(d) if os.path.isdir(d) else []:
                run(RUNC, d, "delete", "-f", cid)
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
