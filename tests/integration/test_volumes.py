#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bind mounts shared with Linux guests through virtio-fs, three VMs from
the slow suite's VM template (guestlib.suite_template()):

A. A detached busybox container with a writable volume (/data), a
   read-only one (/ro), a file bind of /dev/termination-log (the kubelet's
   file: its directory holds a file the container must not see) and a
   read-only /etc/hosts. One `exec` per check: the container writes to the
   volume and the host reads it; the host writes (a new file, then an
   existing one rewritten) and the container reads it; the read-only
   volume refuses a write and stays as it was; the termination log written
   in the container is in the host's file; the mounts are virtiofs with
   their options. `kvrun checkpoint` of it is refused, and it goes on.
B. A second detached container with the same volume at /shared: it reads
   A's write, and A reads B's. B keeps its shares' locks in the guest
   (io.kvrun.fs.locks=guest), A on the host (the default): a lock B holds
   on the volume blocks B's other processes (the guest kernel's lock
   code) and neither the host nor A; one A holds blocks A's other
   processes and the host, and not B. POSIX and flock locks, taken by a
   small static helper (kvlock) in both containers; skipped, saying so,
   without a C compiler that links statically.
C. `kvrun run` of a container whose root filesystem is shared
   (io.kvrun.rootfs=virtiofs): what it writes and removes is in the
   bundle's rootfs directory, as a diff of the directory before and after
   shows (what `docker diff` looks at); a read-only root refuses writes.

Then everything is deleted: nothing left under --root, no process, the
volumes' directories hold what the containers wrote.
Skips without a guest kernel, /dev/kvm, root, mke2fs or busybox.
"""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import bundlelib
import guestlib
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RUN_TIMEOUT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 600
APPLETS = ["sh", "cat", "echo", "ls", "touch", "rm", "mkdir", "grep", "cut", "tr", "sleep", "stat", "sort",
           "sync"]
# Takes or tries a POSIX (fcntl) and a flock lock on a file.
KVLOCK_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int fd = argc > 2 ? open(argv[2], O_RDWR | O_CREAT, 0644) : -1;
	int posix, fl_busy;

	if (fd < 0)
		return 2;
	if (!strcmp(argv[1], "hold")) {
		if (fcntl(fd, F_SETLK, &fl) < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			return 1;
		sleep(argc > 3 ? atoi(argv[3]) : 60);
		return 0;
	}
	posix = fcntl(fd, F_SETLK, &fl) < 0;
	fl_busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
	printf("posix=%s flock=%s\n", posix ? "busy" : "free", fl_busy ? "busy" : "free");
	return 0;
}
"""
# The guest caches entries and attributes for 1 s (docs/virtio-fs.md).
CACHE_S = 1.5
# Container ids of this run: a container's default cgroup is named after
# its id, and other tests (test_container_spec.py's ctr-a), or this one run
# elsewhere at the same time, must not share it.
RUN_ID = f"vol{os.getpid()}"


def rt(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([KVRUN, "--root", root] + list(args), **kw)


class Results:
    def __init__(self):
        self.items = []

    def ok(self, cond, what, diag=None):
        self.items.append((bool(cond), what, diag))
        return bool(cond)

    def eq(self, got, want, what, diag=""):
        return self.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}\n{diag}")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return f"<{e.strerror}>"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def bind(dest, source, *opts):
    return {"destination": dest, "type": "bind", "source": source, "options": ["rbind"] + list(opts)}


class Ctr:
    """A detached container and its exec'd checks."""

    def __init__(self, tmp, env, name, mounts, annotations=None, kvlock=None):
        self.tmp, self.env, self.name = tmp, env, name
        self.id = f"{RUN_ID}-{name}"
        self.root = os.path.join(tmp, "root")
        self.bundle = os.path.join(tmp, name)
        self.log = os.path.join(tmp, f"{name}-log.txt")
        self.n = 0
        bundlelib.busybox_rootfs(os.path.join(self.bundle, "rootfs"), APPLETS)
        if kvlock:
            shutil.copy(kvlock, os.path.join(self.bundle, "rootfs", "bin", "kvlock"))

        def mutate(spec):
            spec["process"]["args"] = ["/bin/sleep", "1000000"]
            spec["process"]["env"] = ["PATH=/bin"]
            spec["mounts"] += mounts
            spec.setdefault("annotations", {}).update(annotations or {})

        bundlelib.write_spec(KVRUN, self.bundle, mutate)

    def start(self):
        """run --detach; its output in a file, not pipes: the container
        keeps the stdio it is given (as under runc), so a pipe would not
        end with run. The returned process's stderr holds that output."""
        out = os.path.join(self.tmp, f"{self.name}-run.out")
        with open(out, "wb") as so:
            p = rt(self.root, "--log", self.log, "--debug", "run", "--detach", "--bundle", self.bundle, self.id,
                   stdin=subprocess.DEVNULL, stdout=so, stderr=so, capture_output=False,
                   env=dict(self.env, KVRUN_CONSOLE=self.log + ".console"), timeout=RUN_TIMEOUT)
        with open(out, "rb") as f:
            p.stderr = f.read()
        return p

    def sh(self, script, detach=False):
        """The script's status, stdout and stderr; detached: exec -d, its
        output discarded (status, "", kvrun's stderr)."""
        self.n += 1
        path = os.path.join(self.tmp, f"{self.name}-process-{self.n}.json")
        with open(path, "w") as f:
            json.dump({"terminal": False, "args": ["/bin/sh", "-c", script], "env": ["PATH=/bin"], "cwd": "/",
                       "user": {"uid": 0, "gid": 0}}, f)
        if detach:
            err = os.path.join(self.tmp, f"{self.name}-process-{self.n}.err")
            with open(err, "w") as ef:
                p = rt(self.root, "exec", "--detach", "--process", path, self.id, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=ef, capture_output=False)
            return p.returncode, "", read(err)
        p = rt(self.root, "exec", "--process", path, self.id, stdin=subprocess.DEVNULL, text=True)
        return p.returncode, p.stdout, p.stderr


def vm_a(tmp, env, res, vol, ro, termdir, hosts, started, kvlock):
    a = Ctr(tmp, env, "ctr-a", [bind("/data", vol), bind("/ro", ro, "ro", "nosuid", "nodev", "noexec"),
                                bind("/dev/termination-log", os.path.join(termdir, "termination-log")),
                                bind("/etc/hosts", hosts, "ro")], kvlock=kvlock)
    p = a.start()
    started["a"] = a
    if not res.ok(p.returncode == 0, "A: run --detach with a volume, a read-only volume and two file binds",
                  p.stderr.decode(errors="replace")[-3000:]):
        return None
    rc, out, err = a.sh("echo written-in-a > /data/from-a && sync && echo done")
    res.eq((rc, out), (0, "done\n"), "A: the container writes to the volume", err)
    res.eq(read(os.path.join(vol, "from-a")), "written-in-a\n", "A: the host reads the container's write")
    write(os.path.join(vol, "from-host"), "written-on-host\n")
    rc, out, err = a.sh("cat /data/from-host")
    res.eq((rc, out), (0, "written-on-host\n"), "A: the container reads a file the host made while it runs", err)
    write(os.path.join(vol, "from-host"), "rewritten-on-host\n")
    time.sleep(CACHE_S)
    rc, out, err = a.sh("cat /data/from-host")
    res.eq((rc, out), (0, "rewritten-on-host\n"), "A: ... and the host's rewrite of it (after the 1 s cache)", err)
    rc, out, err = a.sh("cat /ro/given; touch /ro/new")
    res.ok(rc != 0 and out == "given\n" and "Read-only file system" in err,
           "A: the read-only volume reads, and refuses a write", f"status {rc}, {out!r}, {err!r}")
    res.eq(sorted(os.listdir(ro)), ["given"], "A: the read-only volume is as it was")
    rc, out, err = a.sh("echo 'container failed: reason' > /dev/termination-log && echo done")
    res.eq((rc, out), (0, "done\n"), "A: the container writes its termination log", err)
    res.eq(read(os.path.join(termdir, "termination-log")), "container failed: reason\n",
           "A: the termination log's write reaches the host file (the kubelet's)")
    res.eq(read(os.path.join(termdir, "other")), "not for the container\n", "A: the file beside it is untouched")
    rc, out, err = a.sh("cat /etc/hosts; echo x >> /etc/hosts")
    res.ok(out == "127.0.0.1 volumes-test\n" and "Read-only file system" in err,
           "A: the read-only /etc/hosts reads, and refuses a write", f"status {rc}, {out!r}, {err!r}")
    rc, out, err = a.sh("grep -E ' /(data|ro|dev/termination-log|etc/hosts) ' /proc/mounts | cut -d' ' -f2-4 | sort")
    lines = dict((ln.split()[0], ln.split()[1:]) for ln in out.splitlines() if len(ln.split()) == 3)
    ro_opts = lines.get("/ro", ["", ""])[1].split(",")
    res.ok(all(lines.get(m, [""])[0] == "virtiofs" for m in ("/data", "/ro", "/dev/termination-log", "/etc/hosts"))
           and all(o in ro_opts for o in ("ro", "nosuid", "nodev", "noexec"))
           and lines["/data"][1].split(",")[0] == "rw",
           "A: the binds are virtiofs mounts with their options", out + err)
    return a


def vm_b(tmp, env, res, vol, started, kvlock):
    b = Ctr(tmp, env, "ctr-b", [bind("/shared", vol)], {"io.kvrun.fs.locks": "guest"}, kvlock)
    p = b.start()
    started["b"] = b
    res.ok(p.returncode == 0, "B: run --detach with the same volume", p.stderr.decode(errors="replace")[-3000:])
    return b if p.returncode == 0 else None


def two_containers(res, a, b, vol):
    rc, out, err = b.sh("cat /shared/from-a")
    res.eq((rc, out), (0, "written-in-a\n"), "A and B: B reads what A wrote in the shared volume", err)
    rc, out, err = b.sh("echo written-in-b > /shared/from-b && sync && echo done")
    res.eq((rc, out), (0, "done\n"), "A and B: B writes to it", err)
    rc, out, err = a.sh("cat /data/from-b")
    res.eq((rc, out), (0, "written-in-b\n"), "A and B: A reads B's write", err)
    res.eq(read(os.path.join(vol, "from-b")), "written-in-b\n", "A and B: so does the host")


def build_kvlock(tmp):
    """The helper, linked statically (the containers have no libc), or
    None and why not."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler"
    src, out = os.path.join(tmp, "kvlock.c"), os.path.join(tmp, "kvlock")
    write(src, KVLOCK_C)
    p = subprocess.run([cc, "-static", "-O2", "-o", out, src], capture_output=True, text=True)
    return (out, None) if p.returncode == 0 else (None, f"cc -static failed: {p.stderr.strip()[-300:]}")


def host_try(path):
    """What kvlock try says, from a host process."""
    fd = os.open(path, os.O_RDWR)
    try:
        got = []
        for take in (lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
                     lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)):
            try:
                take()
                got.append("free")
            except OSError:
                got.append("busy")
        return f"posix={got[0]} flock={got[1]}"
    finally:
        os.close(fd)


def held(ctr, path):
    """Start a holder of path's locks in ctr (exec -d); True once another
    process of ctr finds them busy."""
    rc, _, err = ctr.sh(f"kvlock hold {path} 300", detach=True)
    if rc != 0:
        return False, err
    for _ in range(40):
        rc, out, err = ctr.sh(f"kvlock try {path}")
        if out.strip() == "posix=busy flock=busy":
            return True, out
        time.sleep(0.5)
    return False, out + err


BUSY, FREE = "posix=busy flock=busy", "posix=free flock=free"


def lock_modes(res, a, b, vol):
    """B keeps its locks in the guest, A on the host."""
    for c, mode in ((a, "host"), (b, "guest")):
        log = read(c.log)
        res.ok(f"locks on the {mode}" in log and f"locks on the {'guest' if mode == 'host' else 'host'}" not in log,
               f"{c.name[-1].upper()}: its monitor serves its shares with {mode} locks",
               "\n".join(ln for ln in log.splitlines() if "shared directory" in ln))
    ok, diag = held(b, "/shared/lk-b")
    res.ok(ok, "B (guest locks): a lock one of its processes holds blocks another (the guest kernel's)", diag)
    res.eq(host_try(os.path.join(vol, "lk-b")), FREE, "B (guest locks): the host does not see B's lock")
    rc, out, err = a.sh("kvlock try /data/lk-b")
    res.eq(out.strip(), FREE, "B (guest locks): A, another VM on the volume, does not see it", err)
    ok, diag = held(a, "/data/lk-a")
    res.ok(ok, "A (host locks): a lock one of its processes holds blocks another", diag)
    res.eq(host_try(os.path.join(vol, "lk-a")), BUSY, "A (host locks): the host sees A's lock")
    rc, out, err = b.sh("kvlock try /shared/lk-a")
    res.eq(out.strip(), FREE, "A (host locks): B, whose locks are its own, does not see it", err)


def checkpoint_refused(res, a, tmp):
    image = os.path.join(tmp, "ckpt")
    p = rt(a.root, "checkpoint", "--leave-running", "--image-path", image, a.id, text=True)
    res.ok(p.returncode != 0 and "shares" in p.stderr and "cannot be checkpointed" in p.stderr,
           "A: checkpoint of a VM with shared directories is refused, with the reason", p.stderr[-1000:])
    res.ok(not os.path.exists(image) or os.listdir(image) == [], "A: the refused checkpoint left no image",
           str(os.listdir(image)) if os.path.exists(image) else "")
    rc, out, err = a.sh("cat /data/from-a")
    res.eq((rc, out), (0, "written-in-a\n"), "A: after the refusal the container goes on", err)


def snapshot_tree(root):
    """path -> (type, content (bytes: binaries among them) or link target)
    of everything under root."""
    tree = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                tree[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                tree[rel] = ("dir", "")
            else:
                with open(p, "rb") as f:
                    tree[rel] = ("file", f.read())
    return tree


SCRIPT_C = ("echo created > /new-file && mkdir -p /new-dir/sub && echo deep > /new-dir/sub/f && "
            "rm /bin/sort && echo changed > /etc/motd && echo ok")


def vm_c(tmp, env, res, readonly):
    key = "c-ro" if readonly else "c"
    b = os.path.join(tmp, f"ctr-{key}")
    rootfs = os.path.join(b, "rootfs")
    bundlelib.busybox_rootfs(rootfs, APPLETS, dirs=["etc"])
    write(os.path.join(rootfs, "etc", "motd"), "original\n")

    def mutate(spec):
        spec["process"]["args"] = ["/bin/sh", "-c", "touch /x 2>&1; echo status=$?" if readonly else SCRIPT_C]
        spec["process"]["env"] = ["PATH=/bin"]
        spec["root"]["readonly"] = readonly
        spec.setdefault("annotations", {})["io.kvrun.rootfs"] = "virtiofs"

    bundlelib.write_spec(KVRUN, b, mutate)
    before = snapshot_tree(rootfs)
    log = os.path.join(tmp, f"ctr-{key}-log.txt")
    p = rt(os.path.join(tmp, "root"), "--log", log, "--debug", "run", "--bundle", b, f"{RUN_ID}-ctr-{key}",
           stdin=subprocess.DEVNULL, env=dict(env, KVRUN_CONSOLE=log + ".console"), timeout=RUN_TIMEOUT, text=True)
    after = snapshot_tree(rootfs)
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    if readonly:
        res.ok(p.returncode == 0 and "Read-only file system" in p.stdout and "status=1" in p.stdout,
               "C (read-only shared root): a write is refused", p.stdout + p.stderr[-2000:])
        # Mount points guest-init made (/proc, /dev, /sys...) are directories.
        res.ok(not removed and not changed and all(after[k][0] == "dir" for k in added),
               "C (read-only shared root): nothing written but mount points", f"{added} {removed} {changed}")
        return log
    res.eq((p.returncode, p.stdout), (0, "ok\n"), "C: run of a container with a shared root", p.stderr[-2000:])
    want_added = {"new-file", "new-dir", "new-dir/sub", "new-dir/sub/f"}
    res.ok(want_added <= set(added) and after["new-file"] == ("file", b"created\n")
           and after["new-dir/sub/f"] == ("file", b"deep\n"), "C: its new files are in the bundle's rootfs directory",
           f"added: {added}")
    res.eq(removed, ["bin/sort"], "C: the file it removed is gone from the directory")
    res.eq(changed, ["etc/motd"], "C: the file it changed is changed in the directory")
    res.eq(after.get("etc/motd"), ("file", b"changed\n"), "C: with the container's content")
    return log


def main():
    t = Tap()
    kernel = os.environ.get("KVRUN_KERNEL")
    tried = [f"$KVRUN_KERNEL={kernel}"] if kernel else []
    if not kernel:
        kernel, tried = guestlib.find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        t.skip_all("no usable /dev/kvm")
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(bundlelib.BUSYBOX):
        t.skip_all("busybox-static missing")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    tmp = tempfile.mkdtemp(prefix="kvrun-volumes-")
    env = dict(os.environ, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_CONFIG=os.path.join(tmp, "none.json"),
               KVRUN_KERNEL=os.path.abspath(kernel))
    env.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
    env.update(guestlib.suite_template(t, kernel).env)
    vol, ro, termdir = (os.path.join(tmp, d) for d in ("vol", "ro-vol", "pod"))
    for d in (vol, ro, termdir):
        os.makedirs(d)
    write(os.path.join(ro, "given"), "given\n")
    write(os.path.join(termdir, "termination-log"), "")
    write(os.path.join(termdir, "other"), "not for the container\n")
    hosts = os.path.join(tmp, "hosts")
    write(hosts, "127.0.0.1 volumes-test\n")
    res = {k: Results() for k in ("a", "b", "ab", "lk", "c", "cro")}
    started, got = {}, {}
    kvlock, no_kvlock = build_kvlock(tmp)

    def guarded(key, f, *args):
        try:
            got[key] = f(*args)
        except Exception as e:  # one broken part must not hide the others
            res[key].ok(False, f"{key}: raised {e!r}")

    # A and C at once (two boots side by side), then B.
    th = [threading.Thread(target=guarded,
                           args=("a", vm_a, tmp, env, res["a"], vol, ro, termdir, hosts, started, kvlock)),
          threading.Thread(target=guarded, args=("c", vm_c, tmp, env, res["c"], False))]
    for x in th:
        x.start()
    for x in th:
        x.join()
    guarded("b", vm_b, tmp, env, res["b"], vol, started, kvlock)
    if got.get("a") and got.get("b"):
        guarded("ab", two_containers, res["ab"], got["a"], got["b"], vol)
        if kvlock:
            guarded("lk", lock_modes, res["lk"], got["a"], got["b"], vol)
    if got.get("a"):
        guarded("ab", checkpoint_refused, res["ab"], got["a"], tmp)
    guarded("cro", vm_c, tmp, env, res["cro"], True)
    root = os.path.join(tmp, "root")
    for cid in (os.listdir(root) if os.path.isdir(root) else []):
        rt(root, "delete", "--force", cid, timeout=120)
    left = bundlelib.processes_mentioning(tmp)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for name, key in (("ctr-a", "a"), ("ctr-b", "b"), ("ctr-c", "c"), ("ctr-c-ro", "cro")):
        path = os.path.join(tmp, f"{name}-log.txt")
        guestlib.check_template_use(t, name, log=read(path) if os.path.exists(path) else "")
    for key in ("a", "b", "ab", "lk", "c", "cro"):
        for cond, what, diag in res[key].items:
            t.ok(cond, what, diag)
    if no_kvlock:
        t.skip("locks kept in the guest (B) and on the host (A)", f"no static kvlock helper: {no_kvlock}")
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under --root")
    t.eq(left, [], "no process left")
    want = ["from-a", "from-b", "from-host"] if got.get("b") else ["from-a", "from-host"]
    want += ["lk-a", "lk-b"] if got.get("b") and kvlock else []
    t.eq(sorted(os.listdir(vol)), sorted(want), "the volume holds what was written to it, and nothing else")
    bundlelib.keep_or_remove(t, tmp, ("ctr-a-log.txt", "ctr-a-log.txt.console", "ctr-b-log.txt", "ctr-c-log.txt",
                                      "ctr-c-log.txt.console", "ctr-c-ro-log.txt"), 40)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
