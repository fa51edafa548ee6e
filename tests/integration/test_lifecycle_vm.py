#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The runc lifecycle around one container in a real microVM (restored from
the slow suite's VM template, guestlib.suite_template(); create's --log
says so):

create with host hooks and a cgroupsPath, start, exec without a terminal
(stdout, stderr, stdin, exit code), exec --tty --detach through a console
socket (we receive the pty master as containerd's shim does: type a
command, read its output, resize, ^C a sleep, exit code), ps --format json
(the monitor's and the exec proxy's host pids), a detached exec proxy
killed by SIGTERM dying the same way, pause/resume (the container's
counter stops while paused), events --stats, update --pids-limit, kill,
delete: nothing left (no process, no cgroup, no file), poststop ran; then
a create killed while its guest builds the container: the monitor ends
the VM and removes everything.

Left to hosts with hardware KVM, where a boot takes well under a second:
many containers in parallel, exec storms, timings. Skips without a guest
kernel, /dev/kvm, root, mke2fs or busybox."""
import array
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import termios
import time

import guestlib
from bundlelib import processes_mentioning, wait_for
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "sleep", "ps", "stty", "seq", "true", "kill"]
CID = "ctr-life"
CGPATH = "/kvrun-test-lifecycle/" + CID


def find_kernel():
    k = os.environ.get("KVRUN_KERNEL")
    if k:
        return k, [f"$KVRUN_KERNEL={k}"]
    return guestlib.find_kernel()


def hook(script):
    return {"path": "/bin/sh", "args": ["sh", "-c", script]}


def make_bundle(tmp, out):
    b = os.path.join(tmp, "bundle")
    rootfs = os.path.join(b, "rootfs")
    for d in ["bin", "proc", "sys", "dev", "tmp", "etc"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/sh", "-c", "echo up; i=0; while true; do i=$((i+1)); echo $i; sleep 1; done"]
    spec["linux"]["cgroupsPath"] = CGPATH
    spec["hooks"] = {
        "createRuntime": [hook(f"cat > {out}/createRuntime")],
        "poststart": [hook(f"cat > {out}/poststart")],
        "poststop": [hook(f"cat > {out}/poststop")],
    }
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def kv(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    return subprocess.run([KVRUN, "--root", root] + list(args), **kw)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def reap(pid, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        w, st = os.waitpid(pid, os.WNOHANG)
        if w == pid:
            return st
        time.sleep(0.2)
    return None


def cgroup_dirs(path):
    return [os.path.join("/sys/fs/cgroup", h) + path for h in os.listdir("/sys/fs/cgroup")
            if os.path.isdir(os.path.join("/sys/fs/cgroup", h) + path)]


def pty_read_until(fd, want, timeout=60):
    buf = b""
    end = time.time() + timeout
    while time.time() < end and want.encode() not in buf:
        try:
            buf += os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.1)
        except OSError:
            break
    return buf.decode(errors="replace")


def exec_plain(t, root):
    p = kv(root, "exec", CID, "sh", "-c", "echo out-$((6*7)); echo err >&2; cat; exit 7", input="from-stdin\n")
    if guestlib.guest_segv(p.returncode, p.stderr):
        for cond, what in ((p.returncode == 7, "exec: exit code passed through"),
                           (p.stdout == "out-42\nfrom-stdin\n", "exec: stdout, and stdin relayed to EOF"),
                           (p.stderr == "err\n", "exec: stderr apart")):
            t.todo(cond, what, guestlib.GUEST_SEGV_GAP, f"status {p.returncode}, stderr {p.stderr!r}")
    else:
        t.eq(p.returncode, 7, "exec: exit code passed through")
        t.eq(p.stdout, "out-42\nfrom-stdin\n", "exec: stdout, and stdin relayed to EOF")
        t.eq(p.stderr, "err\n", "exec: stderr apart")
    p = kv(root, "exec", CID, "/nope")
    t.ok(p.returncode != 0 and "/nope" in p.stderr, "exec of a missing binary: an error naming it", p.stderr)


def exec_tty(t, root, tmp):
    """exec --tty --detach --console-socket, as containerd's shim runs it."""
    sock_path = os.path.join(tmp, "pty.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    proc = os.path.join(tmp, "process.json")
    with open(proc, "w") as f:
        json.dump({"terminal": True, "args": ["/bin/sh"], "cwd": "/", "env": ["PATH=/bin", "TERM=xterm"],
                   "user": {"uid": 0, "gid": 0}}, f)
    pid_file = os.path.join(tmp, "exec-tty.pid")
    p = kv(root, "exec", "--process", proc, "--console-socket", sock_path, "--detach", "--pid-file", pid_file, CID)
    if not t.ok(p.returncode == 0, "exec --tty --detach --console-socket: succeeds", p.stderr):
        return
    srv.settimeout(30)
    conn, _ = srv.accept()
    fds = array.array("i")
    _, anc, _, _ = conn.recvmsg(256, socket.CMSG_SPACE(fds.itemsize))
    fds.frombytes(anc[0][2][:fds.itemsize])
    master = fds[0]
    conn.close()
    srv.close()
    os.set_blocking(master, False)
    proxy = int(read(pid_file))
    ps = kv(root, "ps", "--format", "json", CID)
    pids = json.loads(ps.stdout) if ps.returncode == 0 else []
    t.ok(proxy in pids and len(pids) >= 2, "ps --format json: the monitor and the exec proxy's host pids", ps.stdout)
    os.write(master, b"echo hi-$((1+2))\n")
    t.ok("hi-3" in pty_read_until(master, "hi-3"), "tty exec: typed command runs, output comes back")
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    got = ""
    end = time.time() + 30
    while "33 101" not in got and time.time() < end:
        os.write(master, b"stty size\n")
        got += pty_read_until(master, "33 101", timeout=3)
    t.ok("33 101" in got, "tty exec: a resize of the host pty reaches the guest's", got[-200:])
    os.write(master, b"echo sleeping-$((3+4)); sleep 1000\n")
    pty_read_until(master, "sleeping-7", timeout=120)
    # The sleep may not run yet when ^C comes (a loaded emulating host):
    # ^C again until the shell answers (^C also flushes typed input).
    got = ""
    end = time.time() + 240
    while "after-4" not in got and time.time() < end:
        time.sleep(2)
        os.write(master, b"\x03")
        time.sleep(1)
        os.write(master, b"echo after-$((2+2))\n")
        got += pty_read_until(master, "after-4", timeout=20)
    t.ok("after-4" in got, "tty exec: ^C interrupts the foreground job, shell lives", got[-300:])
    os.write(master, b"exit 3\n")
    st = reap(proxy)
    t.ok(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 3, "tty exec: the proxy exits 3 like the shell",
         str(st))
    os.close(master)


def exec_signal(t, root, tmp):
    pid_file = os.path.join(tmp, "exec-sleep.pid")
    # Without a terminal the process keeps exec's stdio (as under runc):
    # files, not pipes whose EOF would come only when it ends.
    err_path = os.path.join(tmp, "exec-sleep.err")
    with open(os.devnull, "rb") as dn, open(err_path, "wb") as err:
        p = kv(root, "exec", "--detach", "--pid-file", pid_file, CID, "sleep", "1000", stdin=dn, stdout=err,
               stderr=err, capture_output=False)
    if not t.ok(p.returncode == 0, "exec --detach: succeeds", read(err_path)):
        return
    proxy = int(read(pid_file))
    os.kill(proxy, signal.SIGTERM)
    st = reap(proxy)
    t.ok(st is not None and os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM,
         "exec proxy: SIGTERM forwarded, the proxy dies by it like the process", str(st))


def pause_resume(t, root, out_path):
    p = kv(root, "pause", CID)
    t.ok(p.returncode == 0, "pause", p.stderr)
    t.eq(json.loads(kv(root, "state", CID).stdout)["status"], "paused", "state: paused")
    time.sleep(1)
    before = read(out_path)
    time.sleep(4)
    t.eq(read(out_path), before, "paused: the counter does not advance")
    p = kv(root, "exec", CID, "true")
    t.ok(p.returncode != 0 and "paused" in p.stderr, "exec into a paused container: refused", p.stderr)
    p = kv(root, "resume", CID)
    t.ok(p.returncode == 0, "resume", p.stderr)
    t.eq(json.loads(kv(root, "state", CID).stdout)["status"], "running", "state: running again")
    t.ok(wait_for(lambda: read(out_path) != before, 60), "resumed: the counter advances again")


def events_update(t, root):
    p = kv(root, "events", "--stats", CID)
    lines = p.stdout.splitlines()
    ev = json.loads(lines[0]) if p.returncode == 0 and len(lines) == 1 else {}
    data = ev.get("data", {})
    t.ok(ev.get("type") == "stats" and ev.get("id") == CID, "events --stats: one stats event", p.stdout + p.stderr)
    t.ok(data.get("memory", {}).get("usage", {}).get("usage", 0) > 0, "events --stats: memory usage")
    t.ok(data.get("pids", {}).get("current", 0) >= 2, "events --stats: pids (sh and sleep at least)")
    vm = data.get("kvrun_vm", {})
    t.ok(vm.get("kvm_vcpu", {}).get("exits", 0) > 0 and vm.get("kvrun", {}).get("doorbell_signals", 0) > 0,
         "events --stats: kvrun_vm has the VM's exits and doorbells so far", json.dumps(vm)[:600])
    p = kv(root, "update", "--pids-limit", "5", CID)
    t.ok(p.returncode == 0, "update --pids-limit", p.stderr)
    # No cgroup namespace: the container's cgroup is named in /proc/self/cgroup.
    p = kv(root, "exec", CID, "sh", "-c", "read l < /proc/self/cgroup; cat /sys/fs/cgroup${l#0::}/pids.max")
    t.eq(p.stdout.strip(), "5", "update: pids.max in the container's cgroup")
    p = kv(root, "update", "--cpuset-cpus", "0", CID)
    t.ok(p.returncode != 0 and "cpuset" in p.stderr, "update of what cannot change at run time: names it", p.stderr)


def creator_gone(t, tmp, b):
    """`create` killed while its monitor is still building the container
    (an engine's timeout, a ^C): the monitor finds nobody to report to,
    ends the VM and removes the container; nothing is left, no process
    hangs on output that will never come."""
    root, cid = os.path.join(tmp, "root-gone"), "ctr-gone"
    logf = os.path.join(tmp, "gone-log.txt")
    with open(os.path.join(tmp, "gone-out.txt"), "wb") as so:
        p = subprocess.Popen([KVRUN, "--root", root, "--log", logf, "--log-format", "json", "create", "--bundle", b,
                              cid], stdin=subprocess.DEVNULL, stdout=so, stderr=so)
    wait_for(lambda: "VM: running" in read(logf) or p.poll() is not None, 600)
    if p.poll() is not None:
        t.skip("create killed while the guest builds the container",
               f"create ended first (status {p.returncode}): the guest was too quick to catch")
        kv(root, "delete", "-f", cid)
        return
    p.kill()
    p.wait()
    # This test is the monitors' subreaper: reap the orphan as it ends.
    def gone():
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        return not processes_mentioning(root)
    ended = wait_for(gone, 600)
    t.ok(ended, "create killed while the guest builds the container: its monitor ends",
         read(logf)[-2000:] + "\n" + repr(processes_mentioning(root)))
    t.ok("went away" in read(logf), "the monitor says why it removed the container",
         read(logf)[-1500:])
    t.eq(sorted(os.listdir(root)) if os.path.isdir(root) else [], [], "create killed: nothing left under --root")
    if not ended:
        for pid in processes_mentioning(root):
            os.kill(pid, signal.SIGKILL)


def main():
    t = Tap()
    kernel, tried = find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        t.skip_all("no usable /dev/kvm")
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as the shim
    tmp = tempfile.mkdtemp(prefix="kvrun-lifevm-")
    out = os.path.join(tmp, "hooks")
    os.mkdir(out)
    env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "none.json"), KVRUN_CONSOLE=os.path.join(tmp, "console.log"))
    # A loaded emulating host can take over ten minutes to boot a guest.
    env.setdefault("KVRUN_BOOT_TIMEOUT", "1200")
    env.update(guestlib.suite_template(t, kernel).env)
    os.environ.update(env)
    b = make_bundle(tmp, out)
    root = os.path.join(tmp, "root")
    pid_file = os.path.join(tmp, "init.pid")
    out_path = os.path.join(tmp, "init.out")
    with open(out_path, "wb") as so:
        p = kv(root, "--debug", "--log", os.path.join(tmp, "log.txt"), "create", "--bundle", b, "--pid-file",
               pid_file, CID, stdin=subprocess.DEVNULL, stdout=so, stderr=so, capture_output=False, timeout=1300)
    if not t.ok(p.returncode == 0, "create (starts the VM)", read(out_path)[-2000:] + read(os.path.join(tmp, "log.txt"))[-3000:]):
        t.done()
        return
    guestlib.check_template_use(t, CID, log=read(os.path.join(tmp, "log.txt")))
    mpid = int(read(pid_file))
    st = json.loads(read(os.path.join(out, "createRuntime")) or "{}")
    t.ok(st.get("status") == "creating" and st.get("pid") == mpid, "createRuntime hook: state with the monitor's pid")
    cg = read(f"/proc/{mpid}/cgroup")
    t.ok(f":memory:{CGPATH}\n" in cg, "the monitor is in cgroupsPath", cg)
    p = kv(root, "start", CID)
    t.ok(p.returncode == 0, "start", p.stderr)
    t.eq(json.loads(read(os.path.join(out, "poststart")) or "{}").get("status"), "running", "poststart hook ran")
    t.ok(wait_for(lambda: "up" in read(out_path)), "the container's process runs")
    p = kv(root, "start", CID)
    t.ok(p.returncode != 0 and "cannot start an already running container" in p.stderr, "start again: runc's error")
    p = kv(root, "delete", CID)
    t.ok(p.returncode != 0 and "not stopped" in p.stderr, "delete of a running container: refused", p.stderr)
    for name, f in (("exec", lambda: exec_plain(t, root)), ("exec tty", lambda: exec_tty(t, root, tmp)),
                    ("exec signal", lambda: exec_signal(t, root, tmp)),
                    ("pause", lambda: pause_resume(t, root, out_path)), ("events", lambda: events_update(t, root))):
        try:
            f()
        except Exception as e:  # one broken part must not hide the rest
            t.ok(False, f"{name}: raised {e!r}")
    p = kv(root, "kill", CID, "9")
    t.ok(p.returncode == 0, "kill 9", p.stderr)
    st = reap(mpid)
    t.ok(st is not None and os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9, "the monitor dies by SIGKILL like the process")
    p = kv(root, "exec", CID, "true")
    t.ok(p.returncode != 0 and "cannot exec in a stopped container" in p.stderr, "exec into the stopped container")
    p = kv(root, "delete", CID)
    t.ok(p.returncode == 0, "delete", p.stderr)
    t.eq(json.loads(read(os.path.join(out, "poststop")) or "{}").get("status"), "stopped", "poststop hook ran")
    t.eq(os.listdir(root), [], "delete: nothing left under --root")
    t.eq(cgroup_dirs(CGPATH), [], "delete: the cgroup is gone")
    t.eq(processes_mentioning(root), [], "delete: no process left")
    creator_gone(t, tmp, b)
    t.eq(cgroup_dirs(CGPATH), [], "no cgroup left")
    for d in cgroup_dirs("/kvrun-test-lifecycle"):
        os.rmdir(d)
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
