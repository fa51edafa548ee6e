#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Terminals of containers in real microVMs, driven like a person at a
terminal: tmux runs kvrun, send-keys types, capture-pane reads the screen,
resize-window changes the window's size. Two boots, side by side:

1. `kvrun run` in the foreground with process.terminal true (its own tty,
   made raw): type a command and read its output, `stty size` as the
   window's from the start, resize the window and see `stty size` follow,
   ^C a foreground `sleep` while the shell lives, a
   foreground `kvrun exec -t` in a second window (output, size, exit code),
   the monitor's and the exec proxy's jail (/proc/<pid>: Seccomp 2,
   NoNewPrivs 1 and no capability on every thread, a uid that is not 0, a
   root that is not the host's), an OOM kill in the container through exec reported by
   `kvrun events` as runc's {"type":"oom"}, and `exit 3` ending kvrun with
   status 3 and nothing left.
2. `create --console-socket` then `start`, as containerd's shim does: a
   receiver in tmux gets the pty master (exactly one fd in one SCM_RIGHTS
   message, the pty's name as payload) and bridges it to its own terminal,
   passing window size changes on as the shim does; create's stdout and
   stderr reach EOF when it returns; type, the size from the start (the
   receiver sized the master before start), resize, ^C, `exit 3` seen as the
   monitor's exit status; delete leaves nothing.

Skips without a guest kernel, /dev/kvm, root, mke2fs, busybox or tmux."""
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import guestlib
from bundlelib import processes_mentioning, wait_for
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "dd", "sleep", "stty", "tty", "tr", "true", "yes", "ps"]
RUN_ID, CREATE_ID = "ctr-tty-run", "ctr-tty-create"
TMUX_SOCK = f"kvrun-tty-{os.getpid()}"
BOOT_WAIT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 60
OOM_LIMIT = str(24 << 20)

RECEIVER = r'''
import array, fcntl, json, os, select, signal, socket, struct, sys, termios, tty
sock_path, info_path = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock_path)
srv.listen(1)
conn, _ = srv.accept()
fds = array.array("i")
msg, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(8 * fds.itemsize))
for level, typ, data in anc:
    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
        fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
info = {"ncmsg": len(anc), "nfds": len(fds), "name": msg.decode(errors="replace")}
if fds:
    n = struct.unpack("I", fcntl.ioctl(fds[0], 0x80045430, b"\0" * 4))[0]  # TIOCGPTN: a master
    info["pts"] = f"/dev/pts/{n}"
with open(info_path + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(info_path + ".tmp", info_path)
master = fds[0]
def winch(*_):  # as containerd's shim: the master follows our size
    fcntl.ioctl(master, termios.TIOCSWINSZ, fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))
signal.signal(signal.SIGWINCH, winch)
winch()
tty.setraw(0)
while True:
    r, _, _ = select.select([0, master], [], [])
    if 0 in r:
        os.write(master, os.read(0, 4096))
    if master in r:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        os.write(1, data)
open(info_path + ".eof", "w").close()
'''


def tmux(*args):
    return subprocess.run(["tmux", "-L", TMUX_SOCK] + list(args), capture_output=True, text=True)


def screen(target):
    return tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", target).stdout


def wait_screen(target, pattern, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        s = screen(target)
        if re.search(pattern, s):
            return s
        time.sleep(0.5)
    return None


def type_line(target, text):
    tmux("send-keys", "-t", target, "-l", text)
    tmux("send-keys", "-t", target, "Enter")


def pane_size(target):
    return tmux("display-message", "-p", "-t", target, "#{pane_height} #{pane_width}").stdout.strip()


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


def status_of(pid):
    fields = {}
    for line in read(f"/proc/{pid}/status").splitlines():
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return fields


def reap(pid, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        try:
            w, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if w == pid:
            return st
        time.sleep(0.2)
    return None


def make_bundle(tmp, name):
    b = os.path.join(tmp, name)
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
    spec["process"]["terminal"] = True
    spec["process"]["args"] = ["/bin/sh"]
    spec["process"]["env"] = ["PATH=/bin", "TERM=xterm", "HOME=/"]
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def script(tmp, name, body):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def check_jail(t, pid, who):
    problems = guestlib.jail_problems(pid)
    t.ok(not problems, f"{who}: jailed (every thread Seccomp 2, NoNewPrivs 1, no capability; not uid 0; "
         "its own root)", "\n".join(problems))


def check_resize(t, target, rows, cols, what):
    tmux("resize-window", "-t", target, "-x", str(cols), "-y", str(rows))
    want = pane_size(target)
    # Any answer with the new size will do: on an emulating host a command
    # can take longer than the wait for it, and the answers come late.
    pattern = r"size-\d+-%s" % want.replace(" ", "x")
    got = None
    end = time.time() + 300
    n = 0
    while time.time() < end and not got:
        n += 1
        type_line(target, f"echo size-{n}-$(stty size | tr ' ' x)")
        got = wait_screen(target, pattern, timeout=30)
    t.ok(got and want == f"{rows} {cols}", f"{what}: after a resize to {cols}x{rows}, stty size in the guest "
         f"says {want}", screen(target)[-600:])


def check_size(t, target, what):
    """Before any resize: the size the terminal had when the container
    started (no consoleSize in the spec) is the guest pty's."""
    want = pane_size(target).replace(" ", "x")
    type_line(target, "echo isize-$(stty size | tr ' ' x)")
    t.ok(wait_screen(target, "isize-" + want, timeout=120), f"{what}: stty size in the guest is the terminal's "
         f"({want}) from the start", screen(target)[-600:])


def check_interrupt(t, target, what):
    type_line(target, "sleep 1000; echo not-$((1+1))-interrupted")
    time.sleep(2)
    got = None
    end = time.time() + 240
    n = 0
    # The sleep may not run yet when ^C comes on a loaded emulating host:
    # ^C until the shell answers (^C also drops what was typed).
    while not got and time.time() < end:
        n += 1
        tmux("send-keys", "-t", target, "C-c")
        time.sleep(1)
        type_line(target, f"echo alive-{n}-$((2+3))")
        got = wait_screen(target, f"alive-{n}-5", timeout=15)
    s = screen(target)
    t.ok(got and "not-2-interrupted" not in s, f"{what}: ^C interrupts the foreground sleep, the shell lives",
         s[-600:])


def boot_run(t, tmp, root, bundle):
    """Boot 1: kvrun run in the foreground in tmux window 'run'."""
    run_sh = script(tmp, "run.sh", f"'{KVRUN}' --root '{root}' run --bundle '{bundle}' {RUN_ID}\n"
                                   f"echo $? > '{tmp}/run.status'\nsleep 100000")
    tmux("new-window", "-d", "-t", "main", "-n", "run", run_sh)
    target = "main:run"
    up = wait_for(lambda: re.search("#", screen(target)) or os.path.exists(f"{tmp}/run.status"), BOOT_WAIT, 1)
    up = up and not os.path.exists(f"{tmp}/run.status")
    if not t.ok(up, "run: the container's shell prompts on kvrun's terminal",
                screen(target) + read(f"{tmp}/run.status")):
        return
    type_line(target, "echo hello-$((6*7)); tty")
    s = wait_screen(target, r"hello-42\s+/dev/pts/\d+", timeout=120)
    t.ok(s, "run: a typed command runs, its output is on the screen, stdin is a pty in the guest", screen(target))
    st = json.loads(kv(root, "state", RUN_ID).stdout or "{}")
    mpid = st.get("pid", 0)
    guestlib.check_template_use(t, RUN_ID, pid=mpid)
    t.eq(st.get("status"), "running", "run: state says running")
    check_jail(t, mpid, "run: the monitor")
    check_size(t, target, "run")
    check_resize(t, target, 31, 97, "run")
    check_interrupt(t, target, "run")

    # A foreground exec -t in a second window.
    exec_sh = script(tmp, "exec.sh", f"'{KVRUN}' --root '{root}' exec -t {RUN_ID} sh\n"
                                     f"echo $? > '{tmp}/exec.status'\nsleep 100000")
    tmux("new-window", "-d", "-t", "main", "-n", "exec", exec_sh)
    etarget = "main:exec"
    type_line(etarget, "echo exec-$((5*5))")
    t.ok(wait_screen(etarget, "exec-25", timeout=180), "exec -t: a typed command runs in the container",
         screen(etarget))
    proxies = [p for p in processes_mentioning(root) if b"exec" in open(f"/proc/{p}/cmdline", "rb").read()]
    if t.ok(len(proxies) == 1, "exec -t: one exec proxy (the kvrun exec process)", proxies):
        check_jail(t, proxies[0], "exec -t: the proxy")
    check_resize(t, etarget, 22, 77, "exec -t")
    type_line(etarget, "exit 4")
    t.eq(wait_for(lambda: read(f"{tmp}/exec.status"), 240).strip(), "4", "exec -t: kvrun exec exits 4 like the shell")

    # OOM in the container: a limit, then a memory hog through exec.
    ev_out = open(os.path.join(tmp, "events.out"), "w")
    events = subprocess.Popen([KVRUN, "--root", root, "events", "--interval", "2s", RUN_ID], stdout=ev_out,
                              stderr=subprocess.STDOUT)
    p = kv(root, "update", "--memory", OOM_LIMIT, RUN_ID)
    t.ok(p.returncode == 0, "update --memory: the container's limit in the guest", p.stderr)
    # One 64 MiB buffer filled by the kernel: few guest system calls, so
    # the OOM kill comes soon even where the guest kernel is emulated.
    p = kv(root, "exec", RUN_ID, "dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1", timeout=900)
    t.ok(p.returncode in (-9, 137),
         "exec of a memory hog: OOM-killed, the proxy dies by SIGKILL like it", f"{p.returncode} {p.stderr}")
    oom = wait_for(lambda: any(json.loads(line) == {"type": "oom", "id": RUN_ID}
                               for line in read(ev_out.name).splitlines() if line.startswith("{")), 60)
    t.ok(oom, "events: runc's {\"type\":\"oom\",\"id\":...} for the OOM kill", read(ev_out.name)[-1000:])
    t.ok('"type":"stats"' in read(ev_out.name), "events: stats at each interval as well")
    p = kv(root, "update", "--memory", "-1", RUN_ID)
    t.ok(p.returncode == 0, "update --memory -1: the limit lifted", p.stderr)

    # pause/resume of the sandboxed monitor: what is typed meanwhile runs after.
    p = kv(root, "pause", RUN_ID)
    t.ok(p.returncode == 0 and json.loads(kv(root, "state", RUN_ID).stdout or "{}").get("status") == "paused",
         "pause: the sandboxed monitor stops the vCPUs, state paused", p.stderr)
    type_line(target, "echo paused-$((7*7))")
    p = kv(root, "resume", RUN_ID)
    t.ok(p.returncode == 0, "resume", p.stderr)
    t.ok(wait_screen(target, "paused-49", timeout=120), "resume: what was typed while paused runs",
         screen(target)[-400:])

    type_line(target, "exit 3")
    t.eq(wait_for(lambda: read(f"{tmp}/run.status"), 120).strip(), "3", "run: exit 3 in the shell, kvrun exits 3")
    try:
        events.wait(60)
    except subprocess.TimeoutExpired:
        events.kill()
        events.wait()
    ev_out.close()
    t.eq(events.returncode, 0, "events: ends (0) when the container's process ends")
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "run: nothing left under --root")
    t.eq(processes_mentioning(root), [], "run: no process left")


def start_create(tmp, root, bundle, sock, result):
    pid_file = os.path.join(tmp, "create.pid")
    try:
        # Pipes as the shim's: create must not leave them open behind it.
        result["p"] = kv(root, "create", "--bundle", bundle, "--console-socket", sock, "--pid-file", pid_file,
                         CREATE_ID, stdin=subprocess.DEVNULL, timeout=BOOT_WAIT)
    except subprocess.TimeoutExpired as e:
        result["error"] = f"create did not return (its stdout/stderr still open?): {e}"
    result["pid"] = int(read(pid_file) or 0)


def boot_create(t, tmp, root, bundle, sock, result, creator):
    """Boot 2: create --console-socket, start, a receiver in tmux."""
    target = "main:recv"
    info_path = os.path.join(tmp, "recv.json")
    creator.join(BOOT_WAIT + 60)
    p = result.get("p")
    if not t.ok(p is not None and p.returncode == 0, "create --console-socket: returns 0, its stdout/stderr at EOF",
                result.get("error") or (p and p.stderr)):
        return
    info = json.loads(read(info_path) or "{}")
    t.ok(info.get("ncmsg") == 1 and info.get("nfds") == 1, "console socket: exactly one fd in one SCM_RIGHTS message",
         info)
    t.ok(info.get("pts") and info.get("name") == info.get("pts"),
         "console socket: the fd is a pty master, the payload its pty's name", info)
    mpid = result["pid"]
    guestlib.check_template_use(t, CREATE_ID, pid=mpid)
    check_jail(t, mpid, "create: the monitor")
    p = kv(root, "start", CREATE_ID)
    t.ok(p.returncode == 0, "start", p.stderr)
    type_line(target, "echo boot2-$((3*3))")
    t.ok(wait_screen(target, "boot2-9", timeout=180), "console socket: a typed command's output on the screen",
         screen(target))
    check_size(t, target, "console socket")
    check_resize(t, target, 27, 88, "console socket")
    check_interrupt(t, target, "console socket")
    type_line(target, "exit 3")
    st = reap(mpid, 120)
    t.ok(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 3,
         "console socket: exit 3, the monitor (reaped as the shim would) exits 3", st)
    t.ok(wait_for(lambda: os.path.exists(info_path + ".eof"), 30), "console socket: the receiver sees the pty close")
    p = kv(root, "delete", CREATE_ID)
    t.ok(p.returncode == 0, "delete", p.stderr)
    t.eq(os.listdir(root), [], "delete: nothing left under --root")
    t.eq(processes_mentioning(root), [], "delete: no process left")


def main():
    t = Tap()
    kernel = os.environ.get("KVRUN_KERNEL")
    tried = [f"$KVRUN_KERNEL={kernel}"] if kernel else []
    if not kernel:
        kernel, tried = guestlib.find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if guestlib.kvm_problem():
        t.skip_all(f"needs /dev/kvm: {guestlib.kvm_problem()}")
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    if not shutil.which("tmux"):
        t.skip_all("tmux missing (scripts/setup.sh installs it)")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as the shim
    tmp = tempfile.mkdtemp(prefix="kvrun-ttyvm-")
    os.environ.update(KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
                      KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    os.environ.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
    os.environ.update(guestlib.suite_template(t, kernel).env)
    os.environ.pop("KVRUN_JAIL", None)
    run_root, create_root = os.path.join(tmp, "r1"), os.path.join(tmp, "r2")
    run_bundle, create_bundle = make_bundle(tmp, "b1"), make_bundle(tmp, "b2")
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", "idle", "-x", "120", "-y", "40", "sleep 100000")
    tmux("set-option", "-g", "status", "off")
    sock = os.path.join(tmp, "pty.sock")
    with open(os.path.join(tmp, "receiver.py"), "w") as f:
        f.write(RECEIVER)
    tmux("new-window", "-d", "-t", "main", "-n", "recv",
         f"{sys.executable} '{tmp}/receiver.py' '{sock}' '{tmp}/recv.json'; sleep 100000")
    wait_for(lambda: os.path.exists(sock), 30)
    result = {}
    creator = threading.Thread(target=start_create, args=(tmp, create_root, create_bundle, sock, result))
    creator.start()
    try:
        for name, f in (("run", lambda: boot_run(t, tmp, run_root, run_bundle)),
                        ("create", lambda: boot_create(t, tmp, create_root, create_bundle, sock, result, creator))):
            try:
                f()
            except Exception as e:  # one broken part must not hide the rest
                t.ok(False, f"{name}: raised {e!r}")
    finally:
        for r, cid in ((run_root, RUN_ID), (create_root, CREATE_ID)):
            if os.path.isdir(r) and os.listdir(r):
                kv(r, "delete", "--force", cid)
        tmux("kill-server")
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
