# SPDX-License-Identifier: Apache-2.0
"""fs: kvrun's virtio-fs file server against bindfs, both serving the same
kind of host directory to the host kernel's FUSE client (/dev/fuse), so
that the server itself is what differs. kvrun's server runs in
tests/fs/kvrun-fs-host (the device's code, 4 worker threads); bindfs is
Debian's (libfuse 3, its multi-threaded loop).

Both mounts: allow_other, default_permissions, entry and attribute
timeouts 1 s, no negative entries, no writeback cache, the page cache
dropped at each open (neither keeps it), nosuid and nodev. Per run, each
file server gets a fresh directory on the same host file system, in
alternating order, and runs in this order:

- seq_write: a 256 MiB file written in 1 MiB writes (then closed);
- seq_read: that file read back in 1 MiB reads (a fresh open: the FUSE
  client's page cache is invalidated, the host's is warm);
- rand_read: 20000 reads of 4 KiB at random 4 KiB-aligned offsets of it
  (POSIX_FADV_RANDOM: no readahead);
- create, stat, unlink: 10,000 empty files made (open O_CREAT|O_EXCL,
  close), then stat'ed, then unlinked, 1.5 s apart so that the client's
  cached entries and attributes have expired (every stat reaches the
  server).

Besides each rate, the file server's own CPU time (user + system, from
/proc/PID/stat, clock-tick resolution) per operation of the step."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .util import log

S = "fs"
FILE_MIB = 256
RAND_READS = 20000
NFILES = 10000
STEPS = {
    "seq_write": ("MiB/s", "sequential write, 1 MiB writes (256 MiB)", FILE_MIB),
    "seq_read": ("MiB/s", "sequential read, 1 MiB reads (256 MiB)", FILE_MIB),
    "rand_read": ("IOPS", "random read, 4 KiB (20000 reads)", RAND_READS),
    "create": ("files/s", "create 10,000 empty files", NFILES),
    "stat": ("files/s", "stat 10,000 files", NFILES),
    "unlink": ("files/s", "unlink 10,000 files", NFILES),
}
# Throughput (higher is better), then the file server's own CPU time per
# operation (lower is better): user and system time of its process, which
# a busy shared host disturbs less than wall-clock rates.
FIGURES = {k: (unit, "higher", title) for k, (unit, title, _) in STEPS.items()}
FIGURES.update({f"{k}_cpu": ("us CPU/op", "lower", f"server CPU per op: {title} (lower is better)")
                for k, (_, title, _) in STEPS.items()})
BINDFS_OPTS = "allow_other,default_permissions,attr_timeout=1,entry_timeout=1,negative_timeout=0"
KVRUN_ARGS = ["--threads", "4", "--entry-timeout", "1", "--attr-timeout", "1", "--negative-timeout", "0"]

# The work, in a child process (so the harness's own state plays no part).
WORKLOAD = r"""
import os, random, sys, time
mnt, what = sys.argv[1], sys.argv[2]
MiB = 1 << 20
path = os.path.join(mnt, "big")
def out(v):
    print(v, flush=True)
if what == "seq_write":
    buf = os.urandom(MiB)
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(int(sys.argv[3])):
        os.write(fd, buf)
    os.close(fd)
    out(int(sys.argv[3]) / (time.monotonic() - t0))
elif what == "seq_read":
    n = 0
    t0 = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    while True:
        b = os.read(fd, MiB)
        if not b:
            break
        n += len(b)
    os.close(fd)
    out(n / MiB / (time.monotonic() - t0))
elif what == "rand_read":
    count = int(sys.argv[3])
    pages = os.path.getsize(path) // 4096
    rng = random.Random(7)
    offs = [rng.randrange(pages) * 4096 for _ in range(count)]
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    t0 = time.monotonic()
    for o in offs:
        os.pread(fd, 4096, o)
    out(count / (time.monotonic() - t0))
    os.close(fd)
else:
    count = int(sys.argv[3])
    d = os.path.join(mnt, "meta")
    names = [os.path.join(d, f"f{i:05d}") for i in range(count)]
    if what == "create":
        os.mkdir(d)
        t0 = time.monotonic()
        for p in names:
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    elif what == "stat":
        t0 = time.monotonic()
        for p in names:
            os.stat(p)
    elif what == "unlink":
        t0 = time.monotonic()
        for p in names:
            os.unlink(p)
    out(count / (time.monotonic() - t0))
"""


def fs_host(ctx):
    return os.path.join(ctx.build, "tests", "fs", "kvrun-fs-host")


def problem(ctx):
    """Why the suite cannot run here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist"
    if not shutil.which("bindfs"):
        return "bindfs is not installed (scripts/setup.sh --bench)"
    if not os.path.exists(fs_host(ctx)):
        return f"{fs_host(ctx)} is not built"
    return None


def umount(mnt):
    for _ in range(100):
        r = subprocess.run(["umount", mnt], capture_output=True)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", mnt], capture_output=True)


def cpu_seconds(pid):
    """User and system time of process pid (its ended threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def find_server(mnt):
    """The pid of the process serving mnt (bindfs forks into the background)."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if mnt.encode() in argv and os.path.basename(argv[0]) in (b"bindfs", b"kvrun-fs-host"):
                return int(d)
    raise RuntimeError(f"no file server process for {mnt}")


class Server:
    """One file server mounted over share at mnt."""

    def __init__(self, ctx, name, share, mnt):
        self.ctx, self.name, self.share, self.mnt, self.proc, self.pid = ctx, name, share, mnt, None, None

    def __enter__(self):
        if self.name == "bindfs":
            subprocess.run(["bindfs", "-o", BINDFS_OPTS, self.share, self.mnt], check=True, capture_output=True)
        else:
            self.proc = subprocess.Popen([fs_host(self.ctx)] + KVRUN_ARGS + [self.share, self.mnt],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if self.proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"kvrun-fs-host: {self.proc.stderr.read().strip()}")
        self.pid = find_server(self.mnt)
        return self

    def __exit__(self, *exc):
        umount(self.mnt)
        if self.proc:
            self.proc.wait(30)
        return False


def work(mnt, what, *args):
    r = subprocess.run([sys.executable, "-c", WORKLOAD, mnt, what] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"{what} on {mnt}: {r.stderr.strip()[-400:]}")
    return float(r.stdout.strip())


def session(ctx, name, base):
    share, mnt = os.path.join(base, f"{name}-share"), os.path.join(base, f"{name}-mnt")
    os.mkdir(share)
    os.mkdir(mnt)
    res = {}
    try:
        with Server(ctx, name, share, mnt) as srv:
            for step, (_, _, ops) in STEPS.items():
                if step in ("create", "stat", "unlink"):
                    time.sleep(1.5)
                c0 = cpu_seconds(srv.pid)
                res[step] = work(mnt, step, ops)
                res[f"{step}_cpu"] = (cpu_seconds(srv.pid) - c0) / ops * 1e6
    finally:
        shutil.rmtree(share, ignore_errors=True)
        os.rmdir(mnt)
    return res


def run(ctx):
    why = problem(ctx)
    names = ["kvrun", "bindfs"]
    if why:
        for k, (unit, better, title) in FIGURES.items():
            for n in names:
                ctx.results.na(S, k, n, f"not available: {why}", unit=unit, better=better, title=title)
        return
    base = tempfile.mkdtemp(prefix="kvbench-fs-", dir=ctx.work)
    try:
        for i in range(ctx.runs):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                res = session(ctx, name, base)
                log(f"fs run {i + 1}/{ctx.runs} {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in res.items()))
                for k, v in res.items():
                    unit, better, title = FIGURES[k]
                    ctx.results.add(S, k, name, v, unit=unit, better=better, title=title)
    finally:
        shutil.rmtree(base, ignore_errors=True)
