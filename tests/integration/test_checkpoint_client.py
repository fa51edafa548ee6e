#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun checkpoint` without a guest (seconds). The container's monitor is
jailed and creates no file, so `checkpoint` makes the image directory and
two empty files in it, and passes them with the request on control.sock
(SCM_RIGHTS); here a fake monitor (a socket of ours in a fake state
directory) takes them as the real one does, writes into them and answers.
Checked: the request and its two descriptors (regular files in the image
directory, empty, open read-write), the image that results (vm.snap,
rootfs.img, config.json, kvrun-checkpoint, nothing else), and that every
failure (an error answer, a monitor that hangs up, a stopped or unknown
container) leaves nothing behind: no directory it created, no file, and an
older checkpoint in the directory untouched."""
import fcntl
import json
import os
import socket
import stat
import subprocess
import tempfile
import threading

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
FILES = ["config.json", "kvrun-checkpoint", "rootfs.img", "vm.snap"]


def kvrun(root, *args, cwd=None):
    return subprocess.run([KVRUN, "--root", root] + list(args), capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120)


def make_bundle(tmp):
    b = os.path.join(tmp, "bundle")
    os.makedirs(os.path.join(b, "rootfs"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    return b


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def fake_container(root, cid, bundle, pid):
    """A state directory as kvrun writes it (runtime/store/state.c)."""
    d = os.path.join(root, cid)
    os.makedirs(d, mode=0o700)
    st = {"ociVersion": "1.2.0", "id": cid, "pid": pid, "status": "running", "bundle": bundle,
          "rootfs": os.path.join(bundle, "rootfs"), "created": "2026-01-01T00:00:00Z", "owner": "",
          "annotations": {}, "kvrun": {"pid-start-time": start_time(pid) if os.path.exists(f"/proc/{pid}") else "1"}}
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump(st, f)
    open(os.path.join(d, "lock"), "w").close()
    return d


class FakeMonitor:
    """Serves one connection on <dir>/control.sock: records the request
    line and the descriptors that came with it, then acts as told."""

    def __init__(self, d, act):
        self.path = os.path.join(d, "control.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)
        self.sock.settimeout(60)
        self.act, self.line, self.fds, self.seen = act, None, [], {}
        self.thread = threading.Thread(target=self.serve)
        self.thread.start()

    def serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            data, fds, _, _ = socket.recv_fds(conn, 4096, 8)
            while not data.endswith(b"\n"):
                more = conn.recv(4096)
                if not more:
                    break
                data += more
            self.line, self.fds = data.decode().rstrip("\n"), fds
            for fd in fds:
                st = os.fstat(fd)
                self.seen[fd] = (stat.S_ISREG(st.st_mode), st.st_size, stat.S_IMODE(st.st_mode),
                                 fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE, os.readlink(f"/proc/self/fd/{fd}"))
            self.act(conn, fds)
            for fd in fds:
                os.close(fd)

    def join(self):
        self.sock.close()
        os.unlink(self.path)
        self.thread.join(60)


def write_both(conn, fds, answer=b"ok\n"):
    if len(fds) == 2:
        os.write(fds[0], b"VM-STATE")
        os.write(fds[1], b"DISK-IMAGE")
    conn.sendall(answer)


def listing(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_request(t, mon, img, leave):
    t.eq(mon.line, f"checkpoint {leave} {os.path.realpath(img)}", f"request line (leave {leave})")
    t.eq(len(mon.fds), 2, "two descriptors come with the request")
    for i, fd in enumerate(mon.fds):
        reg, size, mode, acc, where = mon.seen[fd]
        t.ok(reg and size == 0 and mode == 0o600 and acc == os.O_RDWR,
             f"descriptor {i}: an empty 0600 regular file open read-write", mon.seen[fd])
        t.ok(os.path.dirname(where) == os.path.realpath(img), f"descriptor {i} is a file in the image directory",
             where)


def main():
    t = Tap()
    if os.geteuid() != 0:
        t.skip_all("needs root (a state directory of kvrun's)")
    with tempfile.TemporaryDirectory(prefix="kvrun-ckpt-") as tmp:
        root = os.path.join(tmp, "root")
        b = make_bundle(tmp)
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            run(t, tmp, root, b, sleeper)
        finally:
            sleeper.kill()
            sleeper.wait()
    t.done()


def run(t, tmp, root, b, sleeper):
    d = fake_container(root, "c1", b, sleeper.pid)

    # Success, left running: the files the monitor wrote, named.
    img = os.path.join(tmp, "new", "image")
    mon = FakeMonitor(d, write_both)
    p = kvrun(root, "checkpoint", "--leave-running", "--image-path", img, "c1")
    mon.join()
    t.eq((p.returncode, p.stderr), (0, ""), "checkpoint --leave-running succeeds")
    check_request(t, mon, img, 1)
    t.eq(listing(img), FILES, "the image holds the VM, the disk, the configuration and the mark, nothing else")
    if listing(img) == FILES:
        t.eq(read(os.path.join(img, "vm.snap")), b"VM-STATE", "vm.snap is what the monitor wrote")
        t.eq(read(os.path.join(img, "rootfs.img")), b"DISK-IMAGE", "rootfs.img is what the monitor wrote")
        t.eq(read(os.path.join(img, "config.json")), read(os.path.join(b, "config.json")),
             "config.json is the bundle's")
        t.eq(stat.S_IMODE(os.stat(os.path.join(img, "vm.snap")).st_mode), 0o600, "vm.snap is 0600")

    # Failures leave an older checkpoint in the directory as it was.
    before = {f: read(os.path.join(img, f)) for f in FILES} if listing(img) == FILES else None
    for what, act, want in [
        ("an error answer", lambda c, f: write_both(c, f, b"error disk on fire\n"), "disk on fire"),
        ("a monitor that hangs up", lambda c, f: None, "went away"),
    ]:
        mon = FakeMonitor(d, act)
        p = kvrun(root, "checkpoint", "--leave-running", "--image-path", img, "c1")
        mon.join()
        t.ok(p.returncode != 0 and want in p.stderr, f"{what}: checkpoint fails ({want})", p.stderr)
        t.eq({f: read(os.path.join(img, f)) for f in FILES} if listing(img) == FILES else listing(img), before,
             f"{what}: the older checkpoint is untouched, no file added")

    # Failures leave no directory that checkpoint created.
    deep = os.path.join(tmp, "a", "b", "c")
    mon = FakeMonitor(d, lambda c, f: write_both(c, f, b"error no room\n"))
    p = kvrun(root, "checkpoint", "--image-path", deep + "/", "c1")
    mon.join()
    t.ok(p.returncode != 0 and "no room" in p.stderr, "error answer: checkpoint fails", p.stderr)
    t.ok(len(mon.fds) == 2, "the descriptors were sent")
    t.ok(not os.path.exists(os.path.join(tmp, "a")), "the directories it created are removed")
    kept = os.path.join(tmp, "kept")
    os.mkdir(kept)
    open(os.path.join(kept, "other"), "w").close()
    mon = FakeMonitor(d, lambda c, f: None)
    p = kvrun(root, "checkpoint", "--image-path", kept, "c1")
    mon.join()
    t.ok(p.returncode != 0, "hang-up: checkpoint fails", p.stderr)
    t.eq(listing(kept), ["other"], "an existing directory keeps what it had, and gets nothing")

    # No monitor listening at all.
    p = kvrun(root, "checkpoint", "--image-path", os.path.join(tmp, "nomon"), "c1")
    t.ok(p.returncode != 0 and "connect to the container's monitor" in p.stderr, "no monitor: fails", p.stderr)
    t.ok(not os.path.exists(os.path.join(tmp, "nomon")), "no monitor: nothing created")

    # Success that stops the container: checkpoint waits for the monitor.
    other = subprocess.Popen(["sleep", "600"])
    d2 = fake_container(root, "c2", b, other.pid)
    img2 = os.path.join(tmp, "image2")

    def stop(conn, fds):
        write_both(conn, fds)
        other.kill()

    mon = FakeMonitor(d2, stop)
    p = kvrun(root, "checkpoint", "--image-path", img2, "c2")
    mon.join()
    other.wait()
    t.eq((p.returncode, p.stderr), (0, ""), "checkpoint (stopping) succeeds")
    check_request(t, mon, img2, 0)
    t.eq(listing(img2), FILES, "the stopped container's image is complete")
    t.eq(json.loads(kvrun(root, "state", "c2").stdout or "{}").get("status"), "stopped",
         "the container reads as stopped")

    # runc's errors before anything is created (runc's default ./checkpoint).
    for cid, want in (("c2", "Container cannot be checkpointed in stopped state"),
                      ("nosuch", "container does not exist")):
        p = kvrun(root, "checkpoint", cid, cwd=tmp)
        t.ok(p.returncode != 0 and want in p.stderr, f"checkpoint of {cid}: {want}", p.stderr)
        t.ok(not os.path.exists(os.path.join(tmp, "checkpoint")), f"checkpoint of {cid}: no ./checkpoint made")
    p = kvrun(root, "checkpoint", "--image-path", os.path.join(tmp, "x"), "nosuch")
    t.ok(p.returncode != 0 and not os.path.exists(os.path.join(tmp, "x")), "unknown container: no image path")


main()
