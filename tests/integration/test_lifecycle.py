#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lifecycle verbs without a guest (seconds): runc's errors for a container
in the wrong state (fake state directories: a stopped container whose
process is gone, a running one whose "monitor" is a sleep of ours), host
hooks and cgroup placement up to the moment the VM would boot (a bogus
kernel makes the monitor fail right after them), and the pty master that
`exec --tty --console-socket` sends with SCM_RIGHTS, received here as
containerd's shim receives it. The jails (docs/security.md): of a real
monitor whose test guest spins where a kernel would boot, and of an exec
proxy served by a fake monitor (a signal forwarded from inside it).

Needs root (cgroups, state under a private --root); skips otherwise."""
import array
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
import threading
import time

import guestlib
from bundlelib import processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
CG = "/sys/fs/cgroup"
TIOCGPTN = 0x80045430  # not in Python's termios


def kvrun(root, *args, env=None, timeout=60, **kw):
    return subprocess.run([KVRUN, "--root", root] + list(args), capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=timeout, **kw)


def make_bundle(tmp, name, mutate=None):
    b = os.path.join(tmp, name)
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    if mutate:
        mutate(spec)
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def fake_container(root, cid, bundle, status, pid, extra=None):
    """A state directory as kvrun writes it (runtime/store/state.c)."""
    d = os.path.join(root, cid)
    os.makedirs(d, mode=0o700)
    priv = {"pid-start-time": start_time(pid) if pid > 0 and os.path.exists(f"/proc/{pid}") else "1"}
    priv.update(extra or {})
    st = {"ociVersion": "1.2.0", "id": cid, "pid": pid, "status": status, "bundle": bundle,
          "rootfs": os.path.join(bundle, "rootfs"), "created": "2026-01-01T00:00:00Z", "owner": "",
          "annotations": {}, "kvrun": priv}
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump(st, f)
    open(os.path.join(d, "lock"), "w").close()
    return d


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def cgroup_dirs(path):
    """Every hierarchy's directory for path that exists."""
    found = []
    for h in os.listdir(CG):
        d = os.path.join(CG, h) + path
        if not os.path.islink(os.path.join(CG, h)) and os.path.isdir(d):
            found.append(d)
    if os.path.exists(os.path.join(CG, "cgroup.controllers")) and os.path.isdir(CG + path):
        found.append(CG + path)
    return found


def test_errors(t, tmp):
    root = os.path.join(tmp, "root-err")
    b = make_bundle(tmp, "b-err")
    for verb in (["exec", "nope", "true"], ["pause", "nope"], ["resume", "nope"], ["ps", "nope"],
                 ["events", "--stats", "nope"], ["start", "nope"], ["kill", "nope", "9"]):
        p = kvrun(root, *verb)
        t.ok(p.returncode != 0 and "container does not exist" in p.stderr,
             f"{verb[0]} of an unknown id: container does not exist", p.stderr)
    fake_container(root, "stopped", b, "running", dead_pid())
    cases = [
        (["exec", "stopped", "true"], "cannot exec in a stopped container"),
        (["pause", "stopped"], "container not running"),
        (["start", "stopped"], "cannot start a container that has stopped"),
        (["resume", "stopped"], "container not paused"),
        (["ps", "--format", "json", "stopped"], "container not running"),
    ]
    for args, want in cases:
        p = kvrun(root, *args)
        t.ok(p.returncode != 0 and want in p.stderr, f"{args[0]} of a stopped container: {want}", p.stderr)
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        fake_container(root, "running", b, "running", sleeper.pid)
        p = kvrun(root, "start", "running")
        t.ok(p.returncode != 0 and "cannot start an already running container" in p.stderr,
             "start of a running container: runc's message", p.stderr)
        p = kvrun(root, "delete", "running")
        t.ok(p.returncode != 0 and "cannot delete container running that is not stopped: running" in p.stderr,
             "delete of a running container without --force: runc's message", p.stderr)
        p = kvrun(root, "exec", "--preserve-fds", "2", "running", "true")
        t.ok(p.returncode != 0 and "--preserve-fds is not supported" in p.stderr,
             "exec --preserve-fds: says it is not supported", p.stderr)
        p = kvrun(root, "exec", "--tty", "--detach", "running", "sh")
        t.ok(p.returncode != 0 and "console socket" in p.stderr, "exec -t -d without a console socket: refused",
             p.stderr)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_console_socket(t, tmp):
    """exec --tty --console-socket sends the pty master before it asks the
    monitor for the process; with no monitor listening (a fake running
    container) exec then fails, but the fd has arrived."""
    root = os.path.join(tmp, "root-cons")
    b = make_bundle(tmp, "b-cons")
    sock_path = os.path.join(tmp, "console.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        fake_container(root, "ctr", b, "running", sleeper.pid)
        p = kvrun(root, "exec", "--tty", "--detach", "--console-socket", sock_path, "ctr", "sh")
        srv.settimeout(10)
        conn, _ = srv.accept()
        fds = array.array("i")
        msg, anc, flags, _ = conn.recvmsg(256, socket.CMSG_SPACE(4 * fds.itemsize))
        t.eq(len(anc), 1, "console socket: one control message")
        level, ctype, data = anc[0]
        t.ok(level == socket.SOL_SOCKET and ctype == socket.SCM_RIGHTS, "console socket: SCM_RIGHTS")
        fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
        t.eq(len(fds), 1, "console socket: exactly one fd")
        t.ok(msg.decode().startswith("/dev/pts/"), f"console socket: payload is the pty name ({msg!r})")
        if fds:
            fd = fds[0]
            n = struct.unpack("I", fcntl.ioctl(fd, TIOCGPTN, b"\0" * 4))[0]
            t.eq(f"/dev/pts/{n}", msg.decode(), "console socket: the fd is that pty's master")
            os.close(fd)
        conn.close()
        t.ok(p.returncode != 0, "exec with no monitor behind the fake container fails", p.stderr)
    finally:
        sleeper.kill()
        sleeper.wait()
        srv.close()


def hook(path, script, timeout=None):
    h = {"path": "/bin/sh", "args": ["sh", "-c", script], "env": ["HOOKVAR=set"]}
    if timeout:
        h["timeout"] = timeout
    return h


def exec_ports_token(frame):
    """The stdio ports (tags 21..23) and stream token (tag 24) of the EXEC
    frame's process (common/protocol.h: a 24-byte header, then TLVs of u16
    tag, u32 length and the value)."""
    at = frame.find(struct.pack("<I", 0x5052564B))
    if at < 0:
        raise OSError("no EXEC frame from the proxy")
    length = struct.unpack_from("<I", frame, at + 12)[0]
    body, i, fields = frame[at + 24:at + 24 + length], 0, {}
    while i + 6 <= len(body):
        tag, n = struct.unpack_from("<HI", body, i)
        fields[tag] = body[i + 6:i + 6 + n]
        i += 6 + n
    ports = [struct.unpack("<I", fields[t])[0] for t in (21, 22, 23) if t in fields]
    return [p for p in ports if p], fields.get(24, b"")


def fake_exec_monitor(d, uid, seen):
    """A monitor for one exec: answers it (guest pid 42), connects the
    process's three streams to the proxy's sockets, answers each later
    request, and says "exit 0" when told (seen["exit"], an Event)."""
    path = os.path.join(d, "control.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chown(path, uid, uid)  # as the jailed monitor hands it to its uid
    srv.listen(4)
    srv.settimeout(20)

    def read_line(c):
        line = b""
        while not line.endswith(b"\n"):
            b = c.recv(1)
            if not b:
                break
            line += b
        return line.decode().strip()

    def serve():
        try:
            ctl, _ = srv.accept()
            seen["first"] = read_line(ctl)
            ctl.settimeout(0.5)
            frame = b""
            try:
                while True:  # the EXEC frame
                    b = ctl.recv(4096)
                    if not b:
                        break
                    frame += b
            except socket.timeout:
                pass
            ports, token = exec_ports_token(frame)
            ctl.sendall(b"ok 42\n")
            streams = []
            for port in ports:
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(os.path.join(d, f"vsock_{port}"))
                c.sendall(token)  # as guest-init opens each of the process's streams
                streams.append(c)
            seen["streams"] = True
            while not seen["exit"].is_set():
                try:
                    c, _ = srv.accept()
                except socket.timeout:
                    continue
                seen.setdefault("requests", []).append(read_line(c))
                c.sendall(b"ok\n")
                c.close()
            ctl.sendall(b"exit 0\n")
            ctl.close()
            for c in streams:
                c.close()
        except OSError as e:
            seen["error"] = str(e)
        finally:
            srv.close()

    srv.settimeout(1)
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    return th


def test_exec_jail(t, tmp):
    """An exec proxy jails itself once its streams are connected (a fake
    monitor plays the container's): the container's jail uid, every thread
    under seccomp, its own root; a signal to it still reaches the monitor
    through control.sock from inside the jail; it ends on the EXIT."""
    what = "exec proxy"
    root = os.path.join(tmp, "root-exj")
    b = make_bundle(tmp, "b-exj")
    sleeper = subprocess.Popen(["sleep", "600"])
    uid = 0x71000000 + 77
    d = fake_container(root, "exj", b, "running", sleeper.pid, {"jail-uid": str(uid)})
    os.chmod(d, 0o711)
    seen = {"exit": threading.Event()}
    th = fake_exec_monitor(d, uid, seen)
    pid_file = os.path.join(tmp, "exj.pid")
    try:
        # The detached proxy keeps exec's stdio (the process's): files, not
        # pipes that would stay open until it ends.
        err_path = os.path.join(tmp, "exj.err")
        with open(err_path, "w") as err:
            p = subprocess.run([KVRUN, "--root", root, "exec", "--detach", "--pid-file", pid_file, "exj", "true"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, timeout=60)
        with open(err_path) as f:
            err = f.read()
        t.ok(p.returncode == 0 and seen.get("first") == "exec" and seen.get("streams"),
             f"{what}: exec --detach starts the process through the (fake) monitor", f"{err} {seen}")
        if p.returncode != 0:
            return
        with open(pid_file) as f:
            proxy = int(f.read())
        problems = guestlib.jail_problems(proxy)
        t.ok(not problems, f"{what}: jailed (every thread Seccomp 2, NoNewPrivs 1, no capability; not uid 0; "
             "its own root)", "\n".join(problems))
        with open(f"/proc/{proxy}/status") as f:
            uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
        t.eq(uids, [str(uid)] * 4, f"{what}: runs as the container's jail uid")
        os.kill(proxy, signal.SIGUSR1)
        for _ in range(100):
            if seen.get("requests"):
                break
            time.sleep(0.05)
        t.eq(seen.get("requests"), [f"signal 42 {int(signal.SIGUSR1)}"],
             f"{what}: a signal to it reaches the monitor through control.sock from the jail")
        seen["exit"].set()
        gone = False
        for _ in range(100):
            if not os.path.exists(f"/proc/{proxy}"):
                gone = True
                break
            time.sleep(0.05)
        t.ok(gone, f"{what}: ends on the process's EXIT")
    finally:
        seen["exit"].set()
        th.join(10)
        sleeper.kill()
        sleeper.wait()


def test_hooks_cgroups(t, tmp, env):
    out = os.path.join(tmp, "hook-out")
    os.mkdir(out)
    cgpath = "/kvrun-test-life/c-hooks"
    cases = [
        # name, hooks, cgroupsPath, systemd, expected error words
        ("createRuntime hook fails", {"createRuntime": [hook("x", f"cat > {out}/cr1; echo oops >&2; exit 3")]},
         None, False, ["error running createRuntime hook #0", "exit status 3", "oops"]),
        ("prestart and createRuntime run in order, in the cgroup",
         {"prestart": [hook("x", f"cat > {out}/ps2; echo $HOOKVAR > {out}/env2; "
                                 f"pid=$(sed 's/.*\"pid\":\\([0-9]*\\).*/\\1/' {out}/ps2); "
                                 f"cat /proc/$pid/cgroup > {out}/cg2; "
                                 f"cat {CG}/memory{cgpath}/memory.limit_in_bytes > {out}/mem2 2>/dev/null; "
                                 f"echo prestart >> {out}/order2")],
          "createRuntime": [hook("x", f"echo createRuntime >> {out}/order2")]},
         cgpath, False, ["not-a-kernel"]),
        ("hook timeout", {"createRuntime": [hook("x", "sleep 60", timeout=1)]}, None, False,
         ["error running createRuntime hook #0", "timeout after 1 seconds"]),
        ("systemd cgroup path", {"prestart": [hook("x", f"cat > {out}/ps4; "
                                                        f"pid=$(sed 's/.*\"pid\":\\([0-9]*\\).*/\\1/' {out}/ps4); "
                                                        f"cat /proc/$pid/cgroup > {out}/cg4")]},
         "system.slice:kvrun:life", True, ["not-a-kernel"]),
    ]
    for i, (name, hooks, cg, systemd, words) in enumerate(cases):
        def mutate(spec, hooks=hooks, cg=cg):
            spec["hooks"] = hooks
            if cg:
                spec["linux"]["cgroupsPath"] = cg
                spec["linux"].setdefault("resources", {})["memory"] = {"limit": 128 << 20}
        b = make_bundle(tmp, f"b-hook{i}", mutate)
        root = os.path.join(tmp, f"root-hook{i}")
        glob = ["--systemd-cgroup"] if systemd else []
        p = subprocess.run([KVRUN, "--root", root] + glob + ["create", "--bundle", b, f"h{i}"], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        t.ok(p.returncode != 0 and all(w in p.stderr for w in words), f"{name}: create fails naming {words}",
             p.stderr)
        t.eq(os.listdir(root) if os.path.isdir(root) else [], [], f"{name}: nothing left under --root")
        t.eq(processes_mentioning(root), [], f"{name}: no process left")
    with open(f"{out}/cr1") as f:
        st = json.load(f)
    t.ok(st["id"] == "h0" and st["status"] == "creating" and st["pid"] > 0 and st["bundle"].endswith("b-hook0"),
         "createRuntime hook: the state on stdin (id, creating, monitor pid, bundle)", json.dumps(st))
    with open(f"{out}/order2") as f:
        t.eq(f.read().split(), ["prestart", "createRuntime"], "prestart runs before createRuntime")
    with open(f"{out}/env2") as f:
        t.eq(f.read().strip(), "set", "hooks get the env of the spec")
    with open(f"{out}/cg2") as f:
        lines = f.read().splitlines()
    t.ok(any(l.endswith(":memory:" + cgpath) for l in lines) and any(l.endswith(":pids:" + cgpath) for l in lines)
         and any(l.startswith("0::") and l.endswith(cgpath) for l in lines),
         "the monitor is in cgroupsPath in the v1 hierarchies and cgroup2 (its /proc/pid/cgroup)", "\n".join(lines))
    if os.path.exists(f"{out}/mem2"):
        with open(f"{out}/mem2") as f:
            t.eq(int(f.read()), (128 << 20) + (64 << 20), "host memory limit: the container's plus the monitor's allowance")
    t.eq(cgroup_dirs(cgpath), [], "cgroupsPath removed after the failed create")
    with open(f"{out}/cg4") as f:
        lines = f.read().splitlines()
    t.ok(any(l.endswith(":memory:/system.slice/kvrun-life.scope") for l in lines),
         "systemd form slice:prefix:name: placed in /system.slice/kvrun-life.scope", "\n".join(lines))
    t.eq(cgroup_dirs("/system.slice/kvrun-life.scope"), [], "systemd-form cgroup removed after the failed create")


def test_poststop_delete(t, tmp):
    """delete of a stopped container: its recorded cgroup goes, poststop
    hooks run (a failing one is only a warning)."""
    out = os.path.join(tmp, "poststop-out")
    root = os.path.join(tmp, "root-post")

    def mutate(spec):
        spec["hooks"] = {"poststop": [hook("x", f"cat > {out}"), hook("y", "exit 5")]}
    b = make_bundle(tmp, "b-post", mutate)
    cg = "/kvrun-test-life/c-post"
    for d in (f"{CG}/memory{cg}", f"{CG}/pids{cg}"):
        os.makedirs(d, exist_ok=True)
    fake_container(root, "post", b, "running", dead_pid(), {"cgroup-path": cg})
    p = kvrun(root, "delete", "post")
    t.ok(p.returncode == 0, "delete of a stopped container succeeds despite a failing poststop hook", p.stderr)
    t.ok("poststop hook #1" in p.stderr, "the failing poststop hook is warned about", p.stderr)
    with open(out) as f:
        st = json.load(f)
    t.ok(st["id"] == "post" and st["status"] == "stopped", "poststop hook: state on stdin, status stopped")
    t.eq(cgroup_dirs(cg), [], "delete removes the recorded cgroup")
    t.eq(os.listdir(root), [], "delete: nothing left under --root")


def test_boot_signal(t, tmp):
    """A monitor whose guest never comes up (the freestanding test guest
    spinning where a kernel would boot) is jailed while it waits, without
    the descriptors create was given besides stdio; it ends on SIGTERM:
    create fails naming the signal, the monitor dies by it, nothing is
    left."""
    what = "SIGTERM to a monitor whose guest is still booting"
    guest = os.environ.get("KVRUN_TEST_GUEST", "")
    if not os.path.exists("/dev/kvm") or not os.path.isfile(guest):
        t.skip(what, f"needs /dev/kvm and the test guest (KVRUN_TEST_GUEST={guest!r})")
        return
    root = os.path.join(tmp, "root-bootsig")
    cfg = os.path.join(tmp, "spin-config.json")
    with open(cfg, "w") as f:
        json.dump({"kernel": guest, "cmdline_extra": "test=spin", "templates": False}, f)
    env = dict(os.environ, KVRUN_CONFIG=cfg, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("KVRUN_KERNEL", None)
    b = make_bundle(tmp, "b-bootsig")
    # A descriptor the engine passed to create: the monitor must not keep it.
    extra = os.path.join(tmp, "engine-extra-fd")
    extra_fd = os.open(extra, os.O_WRONLY | os.O_CREAT, 0o600)
    create = subprocess.Popen([KVRUN, "--root", root, "create", "--bundle", b, "bootsig"], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              pass_fds=(extra_fd,))
    os.close(extra_fd)
    monitor = None
    for _ in range(200):
        others = [int(p) for p in processes_mentioning(root) if int(p) != create.pid]
        if others:
            monitor = others[0]
            break
        if create.poll() is not None:
            break
        time.sleep(0.1)
    if not t.ok(monitor, f"{what}: the monitor is up", create.poll()):
        create.kill()
        create.communicate()
        return
    # Its jail is complete before the guest's first instruction.
    problems = ["not looked at"]
    for _ in range(50):
        problems = guestlib.jail_problems(monitor)
        if not problems:
            break
        time.sleep(0.1)
    t.ok(not problems, f"{what}: the monitor is jailed (every thread Seccomp 2, NoNewPrivs 1, no capability; "
         "not uid 0; its own root)", "\n".join(problems))
    try:
        fds = [os.readlink(f"/proc/{monitor}/fd/{fd}") for fd in os.listdir(f"/proc/{monitor}/fd")]
    except OSError as e:
        fds = [str(e)]
    t.ok(extra not in fds, f"{what}: the monitor does not hold the descriptor the engine passed to create",
         "\n".join(fds))
    time.sleep(1)
    os.kill(monitor, signal.SIGTERM)
    try:
        _, err = create.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        create.kill()
        _, err = create.communicate()
    t.ok(create.returncode not in (0, None) and "Terminated" in err,
         f"{what}: create fails, naming the signal", f"{create.returncode} {err}")
    gone = False
    for _ in range(100):
        if not os.path.exists(f"/proc/{monitor}"):
            gone = True
            break
        time.sleep(0.1)
    t.ok(gone, f"{what}: the monitor ends")
    if not gone:
        os.kill(monitor, signal.SIGKILL)
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], f"{what}: nothing left under --root")
    t.eq(processes_mentioning(root), [], f"{what}: no process left")


def test_events_end(t, tmp):
    """`events` ends with 0 when the container's process does, also when the
    monitor's control socket goes before its event subscription closes (a
    stats call between the two fails): a fake monitor plays that order."""
    root = os.path.join(tmp, "root-events")
    b = make_bundle(tmp, "b-events")
    sleeper = subprocess.Popen(["sleep", "600"])
    d = fake_container(root, "ev", b, "running", sleeper.pid)
    path = os.path.join(d, "control.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(30)
    seen = []

    def serve():
        sub = None
        try:
            while True:
                conn, _ = srv.accept()
                line = conn.recv(64).decode().strip()
                seen.append(line)
                if line == "events":
                    conn.sendall(b"ok\n")
                    sub = conn
                    continue
                conn.sendall(b"ok cpu_usage_usec=5 memory_current=4096 pids_current=2\n" if line == "stats"
                             else b"error unexpected\n")
                conn.close()
                if line == "stats":
                    break
        except OSError:
            pass
        # The monitor ends: its socket first, the subscription after.
        srv.close()
        os.unlink(path)
        time.sleep(1.5)
        if sub:
            sub.close()
    th = threading.Thread(target=serve)
    th.start()
    ev = subprocess.Popen([KVRUN, "--root", root, "events", "--interval", "1s", "ev"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = ev.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        ev.kill()
        out, err = ev.communicate()
    th.join(30)
    sleeper.kill()
    sleeper.wait()
    t.eq(seen, ["events", "stats"], "events: subscribes, then asks for stats")
    stats = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    t.ok(len(stats) == 1 and stats[0]["type"] == "stats" and stats[0]["data"]["pids"]["current"] == 2,
         "events: one stats event in runc's format", out)
    t.ok(ev.returncode == 0, "events: exits 0 when the monitor goes away between two intervals",
         f"{ev.returncode} {err}")


def main():
    t = Tap()
    tmp = tempfile.mkdtemp(prefix="kvrun-life-")
    bogus_kernel = os.path.join(tmp, "not-a-kernel")
    with open(bogus_kernel, "wb") as f:
        f.write(b"\x7fELF this is not a kernel" + b"\0" * 4096)
    env = dict(os.environ, KVRUN_KERNEL=bogus_kernel, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "no-config.json"))
    try:
        test_errors(t, tmp)
        test_console_socket(t, tmp)
        test_hooks_cgroups(t, tmp, env)
        test_poststop_delete(t, tmp)
        test_boot_signal(t, tmp)
        test_events_end(t, tmp)
        test_exec_jail(t, tmp)
    finally:
        for d in cgroup_dirs("/kvrun-test-life") + cgroup_dirs("/system.slice"):
            for sub in sorted((os.path.join(d, x) for x in os.listdir(d) if os.path.isdir(os.path.join(d, x))),
                              reverse=True):
                if "kvrun" in sub:
                    try:
                        os.rmdir(sub)
                    except OSError:
                        pass
        for d in cgroup_dirs("/kvrun-test-life"):
            try:
                os.rmdir(d)
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (cgroups)")
        raise SystemExit(0)
    main()
