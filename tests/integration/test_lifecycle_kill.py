#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Containers whose processes die at any step leave nothing behind, and the
lifecycle's edges hold, on VMs that boot the freestanding test guest as the
container's kernel in scenario fake-init (tests/guest/fake-init.c: enough
of guest-init for create, start, exec and signals, in well under a second).

- A create in progress (fake-init holds START unanswered): `state` and
  `list` answer at once ("creating", the monitor's pid), `delete` fails at
  once, a writer (`update`) gives up after $KVRUN_LOCK_TIMEOUT saying a
  create holds the lock, `kill TERM` is refused, `kill 9` ends the create
  and nothing is left.
- The creator killed while its VM boots, in a network namespace with a
  veth and a cgroupsPath: the monitor notices at once and removes the VM,
  its guard gives the namespace back (the veth's address, default route,
  no TAP, no qdisc, no alias), the cgroup and the state go, no process is
  left; the same with the creator and the monitor killed together.
- Two containers in one namespace: the second is refused naming the
  namespace, the first keeps its network, after its delete the namespace
  has its address and default route back.
- Exec stdio: fake-init races each exec's stdout port with a stream that
  does not open with the exec's token ("HIJACK"): the output is the
  process's; the ports are random (from 2^31 up, two execs differ); a
  second control stream from the guest is refused.
- kill -9 of the CLI and of the monitor at every step of create, start,
  exec and delete ($KVRUN_STOP_AT stops the process at a named point,
  common/stop-point.h), then `delete --force`: a census (censuslib.py)
  finds nothing left: processes, state, cache files, TAPs, qdiscs,
  addresses and routes of the namespace, cgroups, mounts, our fds.

Needs /dev/kvm and root; the namespace parts need ip and tc (skipped
loudly without them)."""
import json
import os
import signal
import shutil
import subprocess
import tempfile
import time

import guestlib
import netlib
from bundlelib import processes_mentioning, wait_for
from censuslib import Census, cgroup_dirs
from netlib import sh
from taplib import Tap

KVRUN = guestlib.kvrun()
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
TAG = f"kk{os.getpid()}"
CGROUP = f"/kvt-kill-{os.getpid()}"

CREATE_STEPS = [("create:claimed", False), ("create:net", False), ("create:forked", True), ("monitor:guard", True),
                ("monitor:setup", True), ("monitor:vm", True), ("monitor:ready", True), ("create:ready", True)]
START_STEPS = [("start:locked", True), ("monitor:start", True), ("start:done", True)]
EXEC_STEPS = [("exec:listening", True), ("monitor:exec", True), ("exec:started", True), ("exec:streams", True)]
DELETE_STEPS = [("delete:locked", True), ("delete:killed", False), ("teardown:cgroup", False),
                ("teardown:net", False)]

t = Tap()
tmp = guestlib.test_guest_tmp(t, GUEST, "kvrun-test-kill-", "state, cgroups, network namespaces")
root, cache = os.path.join(tmp, "root"), os.path.join(tmp, "cache")
log = os.path.join(tmp, "kvrun.log")


def make_bundle(name, netns=None, cgroup=None):
    b = os.path.join(tmp, name)
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    # The test guest finds its devices on the command line, and has no modules.
    spec.setdefault("annotations", {}).update({"io.kvrun.kernel.acpi": "off", "io.kvrun.kernel.modules": "none"})
    if netns:
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"] + \
            [{"type": "network", "path": f"/run/netns/{netns}"}]
    if cgroup:
        spec["linux"]["cgroupsPath"] = cgroup
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    return b


def environment(extra):
    cfg = os.path.join(tmp, f"config-{extra.replace(' ', '_').replace('=', '-')}.json")
    with open(cfg, "w") as f:
        json.dump({"cmdline_extra": "test=fake-init " + extra}, f)
    return dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=cfg, KVRUN_TEMPLATES="0", KVRUN_CACHE_DIR=cache,
                KVRUN_CONSOLE=os.path.join(tmp, "console.log"))


def kvrun(env, *args, timeout=60):
    """Output through files, not pipes: a create's stdio becomes its
    container's and stays open as long as the container."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.run([KVRUN, "--root", root, "--log", log] + list(args), stdout=out, stderr=err, env=env,
                               stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, None, "", f"(timed out after {timeout} s)")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())


def spawn(env, *args):
    """A kvrun command left running; its output goes to a file (a create's
    stdio becomes the container's)."""
    out = open(os.path.join(tmp, "spawn.out"), "w+")
    p = subprocess.Popen([KVRUN, "--root", root, "--log", log] + list(args), stdout=out, stderr=out, env=env,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    p.out = out
    return p


def output(p):
    p.out.seek(0)
    return p.out.read()


def state(env, cid):
    p = kvrun(env, "state", cid, timeout=20)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def kill(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def gone(cid, timeout=30):
    return wait_for(lambda: not processes_mentioning(cid), timeout=timeout, step=0.1)


def wait_creating(env, cid, timeout=30):
    """The monitor's pid once the state names it (a create in progress)."""
    def pid():
        s = state(env, cid)
        return s and s.get("status") == "creating" and s.get("pid")
    return wait_for(pid, timeout=timeout, step=0.1)


def veth_ns(tag, net):
    cns, pns = netlib.netns(f"{tag}c"), netlib.netns(f"{tag}p")
    sh("ip", "-n", cns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", pns)
    sh("ip", "-n", cns, "addr", "add", f"{net}.2/24", "dev", "eth0")
    sh("ip", "-n", cns, "link", "set", "eth0", "up")
    sh("ip", "-n", pns, "link", "set", "peer0", "up")
    sh("ip", "-n", cns, "route", "add", "default", "via", f"{net}.1")
    return cns


def check_creating():
    env = environment("hold=1")
    b = make_bundle("b-hold")
    cid = f"{TAG}-hold"
    p = spawn(env, "create", "--bundle", b, cid)
    mon = wait_creating(env, cid)
    if not t.ok(mon, "a create held in the guest: the state says creating, with the monitor's pid", output(p)):
        kill(p.pid)
        return
    t0 = time.monotonic()
    st = kvrun(env, "state", cid, timeout=10)
    t.ok(st.returncode == 0 and time.monotonic() - t0 < 3, "state answers at once while create holds the lock",
         st.stderr)
    lst = kvrun(env, "list", "--format", "json", timeout=10)
    t.ok(any(c["id"] == cid and c["status"] == "creating" for c in json.loads(lst.stdout or "[]")),
         "list shows it creating", lst.stdout + lst.stderr)
    t0 = time.monotonic()
    d = kvrun(env, "delete", cid, timeout=10)
    t.ok(d.returncode != 0 and "not stopped: creating" in d.stderr and time.monotonic() - t0 < 3,
         "delete fails at once: not stopped", d.stderr)
    t0 = time.monotonic()
    u = kvrun(dict(env, KVRUN_LOCK_TIMEOUT="2"), "update", "--pids-limit", "10", cid, timeout=20)
    took = time.monotonic() - t0
    t.ok(u.returncode != 0 and "still being created" in u.stderr and 1.5 < took < 10,
         f"a writer gives up after $KVRUN_LOCK_TIMEOUT, saying a create holds the lock ({took:.1f} s)", u.stderr)
    k = kvrun(env, "kill", cid, "TERM", timeout=10)
    t.ok(k.returncode != 0 and "only SIGKILL" in k.stderr, "kill TERM of a creating container is refused", k.stderr)
    k = kvrun(env, "kill", cid, "9", timeout=20)
    t.eq(k.returncode, 0, "kill 9 ends the create")
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    t.ok(rc not in (0, None), "the create fails", output(p))
    t.ok(gone(cid), "no process left")
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "no state left")


def check_abandoned(cns):
    """The creator dies while the guest holds START."""
    env = environment("hold=1")
    cg = f"{CGROUP}/ab"
    b = make_bundle("b-abandon", netns=cns, cgroup=cg)
    census = Census(TAG, root, netns=cns, cgroups=[cg])
    before = census.take()
    for how in ("the creator", "the creator and the monitor"):
        cid = f"{TAG}-ab{len(how)}"
        p = spawn(env, "create", "--bundle", b, cid)
        mon = wait_creating(env, cid)
        taps = census.take().get("taps")
        if not t.ok(mon and taps, f"{how}: the create holds, the namespace has its TAP", output(p)):
            kill(p.pid)
            continue
        t0 = time.monotonic()
        kill(p.pid)
        if "monitor" in how:
            kill(mon)
        p.wait()
        t.ok(gone(cid, timeout=20), f"{how} killed: no process left (monitor, guard)", processes_mentioning(cid))
        t.ok(time.monotonic() - t0 < 15, f"{how} killed: removed at once, not at the boot's timeout")
        after = wait_for(lambda: not Census.diff(before, census.take(), ("fds",)) and census.take(), timeout=10)
        t.eq(Census.diff(before, after or census.take(), ("fds",)), {},
             f"{how} killed: the namespace has its address and route back, no TAP, qdisc, alias, cgroup, state")


def check_two_in_one(cns):
    env = environment("")
    b = make_bundle("b-pod", netns=cns)
    census = Census(TAG, root, netns=cns)
    before = census.take()
    c1, c2 = f"{TAG}-pod1", f"{TAG}-pod2"
    p = kvrun(env, "create", "--bundle", b, c1)
    if not t.ok(p.returncode == 0, "the first container of a namespace is created", p.stderr):
        return
    taps = census.take()["taps"]
    p = kvrun(env, "create", "--bundle", b, c2)
    t.ok(p.returncode != 0 and "already served by another kvrun container" in p.stderr and cns in p.stderr,
         "the second in the same namespace is refused, naming it", p.stderr)
    now = census.take()
    t.eq(now["taps"], taps, "the first's TAP stays, the second took none")
    t.ok(state(env, c2) is None, "nothing of the second is left")
    t.eq(now["addrs"], [a for a in before["addrs"] if "10.199.31.2" not in a],
         "the first still holds eth0's address (moved to its guest)")
    t.eq(kvrun(env, "delete", "--force", c1).returncode, 0, "delete of the first")
    t.eq(Census.diff(before, census.take(), ("fds",)), {},
         "the namespace has its address and default route back, nothing left")


def check_exec_streams():
    env = environment("intrude=1 second_ctl=1")
    b = make_bundle("b-exec")
    cid = f"{TAG}-exec"
    with open(log, "a") as f:
        f.write("--- exec streams\n")
    p = kvrun(env, "create", "--bundle", b, cid)
    if not t.ok(p.returncode == 0 and kvrun(env, "start", cid).returncode == 0, "create and start", p.stderr):
        return
    outs = [kvrun(env, "exec", cid, "echo", "exec", f"output-{i}") for i in range(2)]
    for i, e in enumerate(outs):
        t.eq((e.returncode, e.stdout), (0, f"exec output-{i}\n"),
             f"exec {i}: the process's output, not the stream that raced for its port")
    text = open(log).read().split("--- exec streams\n")[-1]
    ports = [int(l.split("vsock port ")[1].split()[0]) for l in text.splitlines()
             if "did not open with the process's token" in l]
    t.eq(len(ports), 2, "each racing stream was closed with a warning")
    t.ok(len(set(ports)) == 2 and all(p >= 1 << 31 for p in ports), "the ports are random, from 2^31 up", ports)
    console = open(os.path.join(tmp, "console.log")).read()
    lines = [l for l in console.splitlines() if "a second control stream is refused" in l]
    t.ok(lines and all(l.startswith("ok ") for l in lines), "the guest's second control stream was refused",
         console[-1500:])
    kvrun(env, "delete", "--force", cid)


def phase_cmd(phase, cid, b):
    return {"create": ["create", "--bundle", b, cid], "start": ["start", cid], "exec": ["exec", cid, "sleep"],
            "delete": ["delete", "--force", cid]}[phase]


def stopped_process(cid, cli):
    for pid in [cli] + processes_mentioning(cid):
        if proc_state(pid) == "T":
            return pid
    return None


def monitor_of(env, cid, cli):
    s = state(env, cid)
    if s and s.get("pid"):
        return s["pid"]
    kids = [p for p in processes_mentioning(cid) if ppid(p) == cli]
    return kids[0] if kids else None


def kill_case(phase, step, victim, b, census, before):
    cid = f"{TAG}-{step.replace(':', '-')}-{victim}"
    env = dict(environment(""), KVRUN_STOP_AT=step)
    what = f"{step}, kill -9 of the {victim}"
    if phase != "create":
        ok = kvrun(env, "create", "--bundle", b, cid).returncode == 0
        if ok and phase != "start":
            ok = kvrun(env, "start", cid).returncode == 0
        if not t.ok(ok, f"{what}: the container gets there"):
            kvrun(env, "delete", "--force", cid)
            return
    p = spawn(env, *phase_cmd(phase, cid, b))
    stopped = wait_for(lambda: stopped_process(cid, p.pid), timeout=30, step=0.05)
    if not t.ok(stopped, f"{what}: a process stops at {step}", output(p)):
        kill(p.pid)
    else:
        target = p.pid if victim == "cli" else monitor_of(env, cid, p.pid)
        t.ok(target, f"{what}: the {victim} is found")
        if target:
            kill(target)
        for pid in processes_mentioning(cid) + [p.pid]:
            kill(pid, signal.SIGCONT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        kill(p.pid)
        p.wait()
    p.out.close()
    env.pop("KVRUN_STOP_AT")
    d = kvrun(env, "delete", "--force", cid, timeout=90)
    t.ok(d.returncode == 0, f"{what}: delete --force", d.stderr)
    t.ok(gone(cid), f"{what}: no process left", processes_mentioning(cid))
    after = wait_for(lambda: not Census.diff(before, census.take(), ("fds",)) and census.take(), timeout=5)
    t.eq(Census.diff(before, after or census.take()), {}, f"{what}: nothing left")


def check_kill_matrix(cns):
    b = make_bundle("b-kill", netns=cns, cgroup=f"{CGROUP}/k")
    env = environment("")
    census = Census(TAG, root, cache=cache, netns=cns, cgroups=[f"{CGROUP}/k"])
    # The caches (initramfs, root disk) are filled once, before the census.
    kvrun(env, "create", "--bundle", b, f"{TAG}-warm")
    kvrun(env, "delete", "--force", f"{TAG}-warm")
    before = census.take()
    for phase, steps in (("create", CREATE_STEPS), ("start", START_STEPS), ("exec", EXEC_STEPS),
                         ("delete", DELETE_STEPS)):
        for step, has_monitor in steps:
            for victim in ("cli", "monitor") if has_monitor else ("cli",):
                kill_case(phase, step, victim, b, census, before)


try:
    check_creating()
    why = netlib.skip_reason()
    if why:
        t.skip("the network namespace parts", why)
        check_exec_streams()
    else:
        check_abandoned(veth_ns("kab", "10.199.30"))
        check_two_in_one(veth_ns("kpod", "10.199.31"))
        check_exec_streams()
        check_kill_matrix(veth_ns("kkm", "10.199.32"))
finally:
    for pid in processes_mentioning(TAG):
        kill(pid)
    for d in cgroup_dirs(CGROUP):
        for sub in sorted((os.path.join(dp, n) for dp, dns, _ in os.walk(d) for n in dns), reverse=True):
            try:
                os.rmdir(sub)
            except OSError:
                pass
        try:
            os.rmdir(d)
        except OSError:
            pass
if t.failed:
    t.diag(f"kept {tmp}")
    if os.path.exists(log):
        t.diag("".join(open(log, errors="replace").readlines()[-60:]))
else:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
