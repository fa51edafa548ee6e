#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Containers in real microVMs: a busybox bundle run with kvrun's guest
kernel and guest-init. Three VMs side by side, each restored from the slow
suite's VM template (guestlib.suite_template(), built once: a Linux guest
takes about two minutes to boot where guest kernel code is emulated); each
container's --log says it was restored:

1. `kvrun run` in the foreground: args, env, cwd, uid/gid, hostname;
   stdout and stderr kept apart; 200 kB of output without loss; stdin
   relayed, and its EOF; the exit status (42) passed through.
2. create / state / start / kill 9 / delete, with --pid-file, a read-only
   root, the running monitor's jail in /proc (guestlib.jail_problems()),
   the monitor reaped by us as a subreaper (as containerd's shim does)
   dying by SIGKILL like the container process.
3. run --detach, then delete --force of the running container: nothing
   left under --root, no process left.

Everything here runs on any KVM host; on native KVM it takes seconds, and
only there would a timing assert make sense (there are none). Skips when
the guest kernel, /dev/kvm, busybox or mke2fs is missing.
"""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import guestlib
from bundlelib import keep_or_remove, processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "id", "hostname", "pwd", "env", "seq", "wc", "touch", "sleep", "md5sum"]

SCRIPT = r"""
echo "args:$*"
echo "env:$FOO"
echo "cwd:$(pwd)"
echo "id:$(id -u):$(id -g):$(id -G)"
echo "hostname:$(hostname)"
echo "to-stderr" >&2
read line
echo "stdin:$line"
echo "rest:$(cat | wc -c)"
seq 1 40000 | md5sum >&2
seq 1 40000
exit 42
"""


def find_kernel():
    """$KVRUN_KERNEL, else what the other Linux-guest tests boot
    ($KVRUN_TEST_KERNEL, else shared/guest-kernel/vmlinux beside the tree)."""
    k = os.environ.get("KVRUN_KERNEL")
    if k:
        return k, [f"$KVRUN_KERNEL={k}"]
    return guestlib.find_kernel()


def make_bundle(tmp, name, args, mutate=None):
    b = os.path.join(tmp, name)
    rootfs = os.path.join(b, "rootfs")
    for d in ["bin", "proc", "sys", "dev", "tmp", "etc", "work"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = args
    spec["hostname"] = "kvrun-" + name
    if mutate:
        mutate(spec)
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return b


def run_foreground(t, tmp, env, out):
    """Boot 1: `kvrun run` with piped stdio."""
    def mutate(spec):
        spec["process"]["env"].append("FOO=bar baz")
        spec["process"]["cwd"] = "/work"
        spec["process"]["user"] = {"uid": 1000, "gid": 1000, "additionalGids": [1001]}

    b = make_bundle(tmp, "run", ["/bin/sh", "-c", SCRIPT, "sh", "one", "two words"], mutate)
    root = os.path.join(tmp, "root-run")
    stdin = b"first line\n" + b"x" * 5000 + b"\n"
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "run-console.log"))
    p = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "run-log.txt"), "--debug", "run",
                        "--bundle", b, "ctr-run"], input=stdin, capture_output=True, env=e, timeout=1500)
    out["run"] = (p, root)


def run_lifecycle(t, tmp, env, out):
    """Boot 2: create/state/start/kill/delete on a read-only root."""
    def mutate(spec):
        spec["root"]["readonly"] = True

    script = "touch /rofile 2>/dev/null && echo rw || echo ro; echo started; exec sleep 100000"
    b = make_bundle(tmp, "life", ["/bin/sh", "-c", script], mutate)
    root = os.path.join(tmp, "root-life")
    log = {}
    pid_file = os.path.join(tmp, "life.pid")
    stdout_path = os.path.join(tmp, "life.out")
    stderr_path = os.path.join(tmp, "life.err")
    # The container keeps create's stdio (as under runc): files, not pipes
    # we would wait on for an EOF that comes only when the container ends.
    with open(stdout_path, "wb") as so, open(stderr_path, "wb") as se:
        e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "life-console.log"))
        p = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "life-log.txt"), "--debug", "create",
                            "--bundle", b, "--pid-file", pid_file, "ctr-life"],
                           stdin=subprocess.DEVNULL, stdout=so, stderr=se, env=e, timeout=1500)
    with open(stderr_path, "rb") as f:
        p.stderr = f.read()
    log["create"] = p
    if p.returncode != 0:
        out["life"] = (log, root, None, stdout_path)
        return
    log["state1"] = subprocess.run([KVRUN, "--root", root, "state", "ctr-life"], capture_output=True, text=True)
    log["start"] = subprocess.run([KVRUN, "--root", root, "start", "ctr-life"], capture_output=True, text=True,
                                  timeout=300)
    deadline = time.time() + 120
    while time.time() < deadline:
        with open(stdout_path) as f:
            if "started" in f.read():
                break
        time.sleep(1)
    log["state2"] = subprocess.run([KVRUN, "--root", root, "state", "ctr-life"], capture_output=True, text=True)
    with open(pid_file) as f:
        mpid = int(f.read())
    log["jail"] = guestlib.jail_problems(mpid)
    log["kill"] = subprocess.run([KVRUN, "--root", root, "kill", "ctr-life", "9"], capture_output=True, text=True,
                                 timeout=120)
    # We are a subreaper: the monitor, orphaned by create, is ours to reap.
    status = None
    deadline = time.time() + 120
    while time.time() < deadline:
        w, st = os.waitpid(mpid, os.WNOHANG)
        if w == mpid:
            status = st
            break
        time.sleep(0.5)
    log["state3"] = subprocess.run([KVRUN, "--root", root, "state", "ctr-life"], capture_output=True, text=True)
    log["delete"] = subprocess.run([KVRUN, "--root", root, "delete", "ctr-life"], capture_output=True, text=True)
    log["mpid"] = mpid
    out["life"] = (log, root, status, stdout_path)


def run_detached(t, tmp, env, out):
    """Boot 3: `run --detach`, then `delete --force` of the running container."""
    b = make_bundle(tmp, "det", ["/bin/sh", "-c", "echo up; exec sleep 100000"])
    root = os.path.join(tmp, "root-det")
    log = {}
    out_path = os.path.join(tmp, "det.out")
    with open(out_path, "wb") as so:
        e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "det-console.log"))
        log["run"] = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "det-log.txt"), "--debug",
                                     "run", "--detach", "--bundle", b, "ctr-det"],
                                    stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=e, timeout=1500)
    if log["run"].returncode == 0:
        log["state"] = subprocess.run([KVRUN, "--root", root, "state", "ctr-det"], capture_output=True, text=True)
        log["delete"] = subprocess.run([KVRUN, "--root", root, "delete", "--force", "ctr-det"],
                                       capture_output=True, text=True, timeout=120)
    out["det"] = (log, root, out_path)


def check_det(t, res):
    log, root, out_path = res
    with open(out_path, errors="replace") as f:
        output = f.read()
    if not t.ok(log["run"].returncode == 0, "run --detach: succeeds", output[-3000:]):
        return
    st = json.loads(log["state"].stdout)
    t.eq(st["status"], "running", "run --detach: running")
    t.eq(log["delete"].returncode, 0, "delete --force of a running container")
    t.eq(os.listdir(root), [], "delete --force: nothing left under --root")
    t.eq(processes_mentioning(root), [], "delete --force: no process left")


def check_run(t, res):
    p, root = res
    stdout = p.stdout.decode(errors="replace")
    stderr = p.stderr.decode(errors="replace")
    t.ok(p.returncode == 42, "run: exit status of the container process",
         f"got {p.returncode}\nstderr: {stderr[-3000:]}")
    lines = stdout.split("\n") + [""] * 8
    t.eq(lines[0], "args:one two words", "run: args")
    t.eq(lines[1], "env:bar baz", "run: env")
    t.eq(lines[2], "cwd:/work", "run: cwd")
    t.eq(lines[3], "id:1000:1000:1000 1001", "run: uid, gid, groups")
    t.eq(lines[4], "hostname:kvrun-run", "run: hostname")
    t.eq(lines[5], "stdin:first line", "run: stdin relayed")
    t.eq(lines[6], "rest:5001", "run: the rest of stdin up to its EOF")
    seq = "".join(f"{i}\n" for i in range(1, 40001))
    t.ok("\n".join(lines[7:]).rstrip("\n") + "\n" == seq, "run: 40000 lines on stdout without loss",
         f"got {len(stdout)} bytes of stdout")
    t.ok("to-stderr" not in stdout, "run: stderr not mixed into stdout")
    want_sum = subprocess.run(["md5sum"], input=seq.encode(), capture_output=True).stdout.split()[0].decode()
    t.ok(stderr.startswith("to-stderr\n" + want_sum), "run: stderr apart, in order", stderr[-2000:])
    t.ok(not os.path.exists(os.path.join(root, "ctr-run")), "run: container removed after it exited")


def check_life(t, res):
    log, root, status, stdout_path = res
    c = log["create"]
    if not t.ok(c.returncode == 0, "create: succeeds", c.stderr.decode(errors="replace")[-3000:]):
        return
    s1 = json.loads(log["state1"].stdout)
    t.eq(s1["status"], "created", "state after create")
    t.eq(s1["pid"], log["mpid"], "state pid is the --pid-file pid (the monitor)")
    t.eq(log["start"].returncode, 0, "start succeeds")
    t.eq(json.loads(log["state2"].stdout)["status"], "running", "state after start")
    t.ok(not log["jail"], "the running monitor is jailed (every thread Seccomp 2, NoNewPrivs 1, no capability; "
         "not uid 0; its own root)", "\n".join(log["jail"]))
    with open(stdout_path) as f:
        t.eq(f.read(), "ro\nstarted\n", "read-only root; output through create's stdout")
    t.eq(log["kill"].returncode, 0, "kill 9 succeeds")
    t.ok(status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL,
         "the monitor dies by SIGKILL like the container process", f"wait status {status}")
    t.eq(json.loads(log["state3"].stdout)["status"], "stopped", "state after the process died")
    t.eq(log["delete"].returncode, 0, "delete succeeds")
    t.eq(os.listdir(root), [], "nothing left under --root after delete")


def main():
    t = Tap()
    kernel, tried = find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        t.skip_all("no usable /dev/kvm")
    if os.geteuid() != 0:
        t.skip_all("needs root (the rootfs keeps root-owned files)")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    # PR_SET_CHILD_SUBREAPER, as containerd's shim
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    tmp = tempfile.mkdtemp(prefix="kvrun-run-")
    env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    env.update(guestlib.suite_template(t, kernel).env)
    out = {}
    threads = [threading.Thread(target=f, args=(t, tmp, env, out)) for f in (run_foreground, run_lifecycle, run_detached)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for name in ("run", "life", "det"):
        path = os.path.join(tmp, f"{name}-log.txt")
        guestlib.check_template_use(t, f"ctr-{name}", log=open(path, errors="replace").read()
                                    if os.path.exists(path) else "")
    if "run" in out:
        check_run(t, out["run"])
    else:
        t.ok(False, "run: finished")
    if "life" in out:
        check_life(t, out["life"])
    else:
        t.ok(False, "lifecycle: finished")
    if "det" in out:
        check_det(t, out["det"])
    else:
        t.ok(False, "run --detach: finished")
    keep_or_remove(t, tmp, ("run-log.txt", "run-console.log", "life-log.txt", "life-console.log", "det-log.txt",
                            "det-console.log"), 40)
    t.done()


if __name__ == "__main__":
    main()
