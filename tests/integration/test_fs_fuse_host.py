#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun's virtio-fs server behind the host kernel's FUSE client
(tests/fs/kvrun-fs-host), seen from both sides:

- files, directories, links, renames and xattrs through the mount land in
  the shared directory as asked;
- device nodes and set-user/group-ID files made through the mount are
  plain, permission-less files on the host (their view in the
  user.containers.override_stat xattr);
- POSIX record locks and flock between processes, and a blocked lock
  ended by a signal (the kernel's INTERRUPT); with --locks host (the
  default) they are the host's: a process using the shared directory
  itself sees them, and they see its locks; with --locks guest the FUSE
  client keeps them: enforced between the mount's users, the close() of
  any descriptor dropping the process's POSIX locks, invisible to the
  shared directory's own users and blind to theirs;
- the server's host descriptors stay within --max-inode-fds and
  --max-handles however many files the client looks up and opens: past
  the handle bound opens fail with EMFILE, and the server goes on serving;
- many threads at once; a clean end at the unmount.

Skips loudly without root or /dev/fuse.
"""
import errno
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading

import fslib
from taplib import Tap

t = Tap()
problem = fslib.fuse_problem()
if problem:
    t.skip_all(problem)
binary = fslib.fs_host_binary()
if not os.path.isfile(binary):
    t.ok(False, f"kvrun-fs-host exists ({binary})")
    t.done()

MAX_FDS, MAX_HANDLES = 32, 16
OVERRIDE = "user.containers.override_stat"


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def host_view(share):
    """Set-ID or device files anywhere in the share (must be none)."""
    bad = []
    for root, dirs, files in os.walk(share):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or (
                    stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID)):
                bad.append(p)
    return bad


def basics(mnt, share):
    with open(os.path.join(mnt, "hello"), "w") as f:
        f.write("hello world\n")
    with open(os.path.join(share, "hello")) as f:
        t.eq(f.read(), "hello world\n", "a file written through the mount is in the share")
    os.makedirs(os.path.join(mnt, "a", "b"))
    os.rename(os.path.join(mnt, "hello"), os.path.join(mnt, "a", "b", "moved"))
    t.ok(os.path.isfile(os.path.join(share, "a", "b", "moved")), "mkdir -p and rename")
    os.symlink("b/moved", os.path.join(mnt, "a", "link"))
    t.eq(os.readlink(os.path.join(share, "a", "link")), "b/moved", "symlink")
    os.link(os.path.join(mnt, "a", "b", "moved"), os.path.join(mnt, "hard"))
    t.eq(os.stat(os.path.join(share, "hard")).st_nlink, 2, "hard link")
    os.setxattr(os.path.join(mnt, "hard"), "user.note", b"kvrun")
    t.eq(os.getxattr(os.path.join(share, "hard"), "user.note"), b"kvrun", "xattr")
    t.eq(sorted(os.listdir(mnt)), ["a", "hard"], "readdir of the root")
    os.chown(os.path.join(mnt, "hard"), 1234, 5678)
    st = os.stat(os.path.join(share, "hard"))
    t.ok((st.st_uid, st.st_gid) == (1234, 5678), "chown reaches the host")
    os.truncate(os.path.join(mnt, "hard"), 5)
    t.eq(os.path.getsize(os.path.join(share, "hard")), 5, "truncate")


def overrides(mnt, share):
    os.mknod(os.path.join(mnt, "null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    st = os.stat(os.path.join(mnt, "null"))
    t.ok(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3), "the client sees char device 1,3")
    hst = os.stat(os.path.join(share, "null"))
    t.ok(stat.S_ISREG(hst.st_mode) and stat.S_IMODE(hst.st_mode) == 0 and hst.st_size == 0,
         f"the host has an empty regular file with no permissions ({oct(hst.st_mode)})")
    t.eq(os.getxattr(os.path.join(share, "null"), OVERRIDE), b"0:0:0644:char-1-3", "its override xattr (umask 022)")
    try:
        with open(os.path.join(mnt, "null"), "rb") as f:
            opened = f.read(1)
    except OSError as e:
        opened = e.errno
    t.eq(opened, errno.EACCES, "the mount (nodev) does not open it as a device")
    with open(os.path.join(mnt, "prog"), "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(os.path.join(mnt, "prog"), 0o4755)
    t.eq(stat.S_IMODE(os.stat(os.path.join(mnt, "prog")).st_mode), 0o4755, "chmod 4755 as the client sees it")
    t.eq(stat.S_IMODE(os.stat(os.path.join(share, "prog")).st_mode), 0, "the host file has mode 0")
    fd = os.open(os.path.join(mnt, "sgid"), os.O_CREAT | os.O_WRONLY, 0o2755)
    os.close(fd)
    t.eq(stat.S_IMODE(os.stat(os.path.join(mnt, "sgid")).st_mode), 0o2755, "created 2755")
    t.eq(host_view(share), [], "no set-ID file or device node on the host")
    t.ok(OVERRIDE not in os.listxattr(os.path.join(mnt, "prog")), "the override xattr is not listed to the client")
    os.chmod(os.path.join(mnt, "prog"), 0o755)
    t.eq(stat.S_IMODE(os.stat(os.path.join(share, "prog")).st_mode), 0o755, "chmod 755: a plain 755 file again")


LOCKER = r"""
import fcntl, os, signal, sys
class Alarm(Exception):
    pass
def on_alarm(*a):
    raise Alarm()
signal.signal(signal.SIGALRM, on_alarm)
fd = os.open(sys.argv[1], os.O_RDWR)
mode = sys.argv[2]
try:
    if mode == "try-posix":
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    elif mode == "try-flock":
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    elif mode == "wait-posix":
        signal.alarm(1)
        fcntl.lockf(fd, fcntl.LOCK_EX)
    print("locked")
except Alarm:
    print("interrupted")
except OSError as e:
    print(f"errno {e.errno}")
"""


def locker(path, mode):
    r = subprocess.run([sys.executable, "-c", LOCKER, path, mode], capture_output=True, text=True, timeout=20)
    return r.stdout.strip() or r.stderr.strip()


def locks(mnt, share, mode):
    """Locks between processes through the mount, and against the users of
    the shared directory itself, which see them only with host locks."""
    path, host_path = os.path.join(mnt, "lockfile"), os.path.join(share, "lockfile")
    host = mode == "host"
    seen = f"errno {errno.EAGAIN}" if host else "locked"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    t.eq(locker(path, "try-posix"), f"errno {errno.EAGAIN}", f"{mode}: a POSIX lock held here blocks another process")
    t.eq(locker(host_path, "try-posix"), seen,
         f"{mode}: a process on the shared directory itself " + ("sees it" if host else "does not see it"))
    t.eq(locker(path, "wait-posix"), "interrupted", f"{mode}: a waiting lock ends when its process gets a signal")
    # POSIX: closing any descriptor of the file drops the process's locks
    # (FLUSH with host locks, the client's own bookkeeping with guest).
    os.close(os.open(path, os.O_RDONLY))
    t.eq(locker(path, "try-posix"), "locked", f"{mode}: the close of another descriptor dropped the lock")
    fcntl.lockf(fd, fcntl.LOCK_EX)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    t.eq(locker(path, "try-posix"), "locked", f"{mode}: free again after unlocking")
    fcntl.flock(fd, fcntl.LOCK_EX)
    t.eq(locker(path, "try-flock"), f"errno {errno.EWOULDBLOCK}", f"{mode}: flock held here blocks another process")
    t.eq(locker(host_path, "try-flock"), f"errno {errno.EWOULDBLOCK}" if host else "locked",
         f"{mode}: flock " + ("seen" if host else "not seen") + " on the shared directory itself")
    os.close(fd)
    t.eq(locker(path, "try-flock"), "locked", f"{mode}: flock released by the close")
    # The other way: a lock taken on the shared directory itself.
    hfd = os.open(host_path, os.O_RDWR)
    fcntl.lockf(hfd, fcntl.LOCK_EX)
    t.eq(locker(path, "try-posix"), seen,
         f"{mode}: a POSIX lock on the shared directory itself " + ("blocks" if host else "does not block") +
         " a process on the mount")
    os.close(hfd)
    # More processes waiting for one lock than the server has threads: the
    # waits are kept by the server, so each unlock still gets through.
    counter = os.path.join(mnt, "counter")
    with open(counter, "w") as f:
        f.write("0")
    procs = [subprocess.Popen([sys.executable, "-c", CONTENDER, counter], stdout=subprocess.PIPE, text=True)
             for _ in range(10)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=60)[0].strip())
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append("timeout")
    with open(counter) as f:
        final = f.read()
    t.ok(outs == ["ok"] * 10 and final == "100",
         f"{mode}: 10 processes contending for one POSIX lock, 4 server threads: no deadlock ({final}, {outs})")


CONTENDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
for _ in range(10):
    fcntl.lockf(fd, fcntl.LOCK_EX)
    n = int(os.pread(fd, 32, 0))
    time.sleep(0.005)
    os.pwrite(fd, str(n + 1).encode(), 0)
    fcntl.lockf(fd, fcntl.LOCK_UN)
print("ok")
"""


def bounds(mnt, share, pid):
    os.mkdir(os.path.join(share, "many"))
    for i in range(600):
        with open(os.path.join(share, "many", f"f{i}"), "w") as f:
            f.write(str(i))
    before = fd_count(pid)
    sizes = [os.stat(os.path.join(mnt, "many", f"f{i}")).st_size for i in range(600)]
    t.ok(sizes == [len(str(i)) for i in range(600)], "600 files looked up and stat'ed")
    t.ok(fd_count(pid) <= MAX_FDS + MAX_HANDLES + 8,
         f"the server holds {fd_count(pid)} descriptors (bounds {MAX_FDS} + {MAX_HANDLES}; {before} before)")
    opened, errs = [], set()
    for i in range(40):
        try:
            opened.append(os.open(os.path.join(mnt, "many", f"f{i}"), os.O_RDONLY))
        except OSError as e:
            errs.add(e.errno)
    t.eq(len(opened), MAX_HANDLES, f"{MAX_HANDLES} files open at once")
    t.eq(errs, {errno.EMFILE}, "the others: EMFILE")
    t.ok(fd_count(pid) <= MAX_FDS + MAX_HANDLES + 8, f"still bounded: {fd_count(pid)} descriptors")
    data = [os.pread(fd, 8, 0) for fd in opened]
    t.ok(data == [str(i).encode() for i in range(MAX_HANDLES)], "the open files read right")
    for fd in opened:
        os.close(fd)
    again = [os.stat(os.path.join(mnt, "many", f"f{i}")).st_size for i in range(0, 600, 7)]
    t.ok(again == [len(str(i)) for i in range(0, 600, 7)], "the server goes on serving")


def parallel(mnt):
    errors = []

    def work(n):
        try:
            d = os.path.join(mnt, f"t{n}")
            os.mkdir(d)
            for i in range(100):
                p = os.path.join(d, f"f{i}")
                with open(p, "wb") as f:
                    f.write(bytes([n]) * (i * 97))
                with open(p, "rb") as f:
                    if f.read() != bytes([n]) * (i * 97):
                        errors.append(f"{p}: wrong data")
                if i % 2:
                    os.unlink(p)
        except OSError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t.eq(errors, [], "8 threads creating, writing, reading and unlinking at once")
    t.eq(sum(len(os.listdir(os.path.join(mnt, f"t{n}"))) for n in range(8)), 400, "what they left")


os.umask(0o022)
with tempfile.TemporaryDirectory(prefix="kvrun-fs-host-") as tmp:
    share, mnt = os.path.join(tmp, "share"), os.path.join(tmp, "mnt")
    os.mkdir(share)
    os.mkdir(mnt)
    m = fslib.KvrunMount(share, mnt, ["--threads", "4", "--max-inode-fds", str(MAX_FDS), "--max-handles",
                                      str(MAX_HANDLES)])
    with m:
        t.ok(fslib.is_mounted(mnt), "mounted")
        for step in (lambda: basics(mnt, share), lambda: overrides(mnt, share), lambda: locks(mnt, share, "host"),
                     lambda: bounds(mnt, share, m.pid()), lambda: parallel(mnt)):
            try:
                step()
            except OSError as e:
                t.ok(False, f"no unexpected error: {e}")
    t.eq(m.rc, 0, "kvrun-fs-host exits 0 once unmounted")
    t.ok(not fslib.is_mounted(mnt), "nothing left mounted")
    t.eq(m.stderr.strip(), "", "kvrun-fs-host printed no error")

    # Locks left to the FUSE client (--locks guest), in a fresh share.
    shutil.rmtree(share)
    os.mkdir(share)
    m = fslib.KvrunMount(share, mnt, ["--threads", "4", "--locks", "guest"])
    with m:
        try:
            locks(mnt, share, "guest")
            before = fd_count(m.pid())
            fds = [os.open(os.path.join(mnt, "lockfile"), os.O_RDWR) for _ in range(4)]
            for i, fd in enumerate(fds):
                fcntl.lockf(fd, fcntl.LOCK_SH, 1, i)
            t.ok(fd_count(m.pid()) <= before + len(fds),
                 f"guest: no lock descriptor in the server ({before} descriptors, {fd_count(m.pid())} with "
                 f"{len(fds)} files open and locked)")
            for fd in fds:
                os.close(fd)
        except OSError as e:
            t.ok(False, f"no unexpected error: {e}")
    t.eq(m.rc, 0, "guest: kvrun-fs-host exits 0 once unmounted")
    t.eq(m.stderr.strip(), "", "guest: kvrun-fs-host printed no error")

    # SIGTERM unmounts and ends it too.
    m = fslib.KvrunMount(share, mnt)
    with m:
        m.proc.send_signal(signal.SIGTERM)
        try:
            m.rc = m.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        t.eq(m.rc, 0, "SIGTERM: unmounted and exited 0")
        t.ok(not fslib.is_mounted(mnt), "SIGTERM: nothing left mounted")
        m.proc = None

    # Bad command lines and a missing directory.
    r = subprocess.run([binary, "--threads", "0", share, mnt], capture_output=True, text=True)
    t.ok(r.returncode == 2 and "Usage" in r.stderr, "a bad option: status 2 with the usage")
    r = subprocess.run([binary, "--locks", "both", share, mnt], capture_output=True, text=True)
    t.ok(r.returncode == 2 and "--locks: expected host or guest, not 'both'" in r.stderr and
         not fslib.is_mounted(mnt),
         f"--locks both: status 2 naming the option ({r.stderr.splitlines()[:1]})")
    r = subprocess.run([binary, os.path.join(tmp, "nope"), mnt], capture_output=True, text=True)
    t.ok(r.returncode == 1 and "nope" in r.stderr and not fslib.is_mounted(mnt),
         f"a missing shared directory: status 1 naming it ({r.stderr.strip()})")
t.done()
