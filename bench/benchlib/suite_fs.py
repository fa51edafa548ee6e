# SPDX-License-Identifier: Apache-2.0
"""fs: kvrun's virtio-fs file server against bindfs, both serving the same
kind of directory to the host kernel's FUSE client (/dev/fuse), so that
the server itself is what differs. kvrun's server runs in
tests/fs/kvrun-fs-host (the device's code, 4 worker threads) twice: with
its default lock mode (--locks host: POSIX and flock locks taken on the
host files) as "kvrun", and with --locks guest (locks left to the FUSE
client, no lock forwarding offered) as "kvrun (guest locks)". bindfs is
Debian's (1.14.7 on libfuse 2.9), twice too: as it comes (one thread,
POSIX locks left to the FUSE client, so that the host's other users of
the directory never see them) and with --enable-lock-forwarding (which
needs its --multithreaded): locks taken on the host files, as kvrun's
server does by default. A server that takes POSIX locks must release a
process's locks when it closes any descriptor of the file, which the
client says with a FLUSH request at every close(): kvrun's server with
host locks and forwarding bindfs get one, plain bindfs answers the first
with ENOSYS and gets none after, and kvrun's server with guest locks
opens every file with FOPEN_NOFLUSH and gets none at all. Like for like:
kvrun (guest locks) against bindfs, kvrun against bindfs (lock
forwarding).

The shared directories live on a file system of the suite's own, an ext4
image (journal and all, as mke2fs makes it) on a loop device, not on the
host's: there, making a file costs what the host file system does around
it, which need not be the same for the two servers. ext4 without a
journal (this development host's root) skips every inode freed in the
last 30 to 35 s when it allocates one, looking each up, so a create after
10,000 unlinks (the previous session's, or a neighbour's build) cost
600-900 us of the server's CPU and one after none 50.
KVRUN_BENCH_FS_DIR names a directory to hold them instead.

The servers and the work run on one CPU (the first the harness may use):
a FUSE request and its answer between two CPUs of a small VM each wake a
halted vCPU, and whether the client and the server shared one changed
from session to session (4 KiB random reads at 25,000/s or 95,000/s for
the same server, create 3,400/s or 13,200/s), which the medians of a few
runs could not average out. On one CPU every request is a plain switch
between the two and the rates say what each server costs.
KVRUN_BENCH_FS_CPU=none lets the scheduler place them instead.

All mounts: allow_other, default_permissions, entry and attribute
timeouts 1 s, no negative entries, no writeback cache, the page cache
dropped at each open (none keeps it), nosuid and nodev. bindfs also gets
big_writes: without it libfuse 2 takes writes 4 KiB at a time (16,384
requests for 64 MiB; 512 of 128 KiB with it, 9.5x the rate), and
kvrun's server the same 128 KiB (libfuse 2's most; reads come in 128 KiB
requests anyway, the client's readahead): through /dev/fuse every byte
written is copied twice (into the server's buffer, then into the page
cache), and with 1 MiB requests on this development VM a session's
writes ran either at 1000-1190 MiB/s or at 380-430 MiB/s with 4x the CPU
per MiB in the copy into the page cache, with 128 KiB at 890-1160 MiB/s
each time. Per run, each
file server gets a fresh directory, in rotating order, and runs in this
order:

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
BINDFS_OPTS = "allow_other,default_permissions,attr_timeout=1,entry_timeout=1,negative_timeout=0,big_writes"
BINDFS_LOCKS = "bindfs (lock forwarding)"
KVRUN_GUEST = "kvrun (guest locks)"
# The servers: kvrun-fs-host's options besides KVRUN_ARGS, or bindfs's
# besides BINDFS_OPTS; and the name of their directories.
SERVERS = {"kvrun": ["--locks", "host"], KVRUN_GUEST: ["--locks", "guest"], "bindfs": [],
           BINDFS_LOCKS: ["--enable-lock-forwarding", "--multithreaded"]}
TAGS = {"kvrun": "kvrun", KVRUN_GUEST: "kvrun-guest", "bindfs": "bindfs", BINDFS_LOCKS: "bindfs-locks"}
# The shares' ext4 image: sparse, room for the 256 MiB file and the
# 10,000 inodes.
IMAGE_BYTES = 2 << 30
KVRUN_ARGS = ["--threads", "4", "--max-write", "131072", "--entry-timeout", "1", "--attr-timeout", "1",
              "--negative-timeout", "0"]

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
    image = not os.environ.get("KVRUN_BENCH_FS_DIR")
    if image and not (shutil.which("mkfs.ext4") and os.path.exists("/dev/loop-control")):
        return "no mkfs.ext4 or no loop devices for the shares' image (KVRUN_BENCH_FS_DIR: a directory instead)"
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


def fs_cpu():
    """The CPU the servers and the work run on, or None (not pinned)."""
    v = os.environ.get("KVRUN_BENCH_FS_CPU")
    if v == "none":
        return None
    return int(v) if v else min(os.sched_getaffinity(0))


def pinned(argv):
    """argv run on fs_cpu() (its threads and children too)."""
    cpu = fs_cpu()
    return argv if cpu is None else ["taskset", "-c", str(cpu)] + argv


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
        if not self.name.startswith("kvrun"):
            subprocess.run(pinned(["bindfs"] + SERVERS[self.name] + ["-o", BINDFS_OPTS, self.share, self.mnt]),
                           check=True, capture_output=True)
        else:
            argv = [fs_host(self.ctx)] + KVRUN_ARGS + SERVERS[self.name] + [self.share, self.mnt]
            self.proc = subprocess.Popen(pinned(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
    r = subprocess.run(pinned([sys.executable, "-c", WORKLOAD, mnt, what] + [str(a) for a in args]),
                       capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"{what} on {mnt}: {r.stderr.strip()[-400:]}")
    return float(r.stdout.strip())


def session(ctx, name, base):
    tag = TAGS[name]
    share, mnt = os.path.join(base, f"{tag}-share"), os.path.join(base, f"{tag}-mnt")
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


def shares_dir(ctx):
    """A directory for the shares, and the ext4 image mounted on it (to
    unmount and remove at the end) or None."""
    where = os.environ.get("KVRUN_BENCH_FS_DIR")
    base = tempfile.mkdtemp(prefix="kvbench-fs-", dir=where or ctx.work)
    if where:
        return base, None
    img = base + ".ext4"
    with open(img, "wb") as f:
        f.truncate(IMAGE_BYTES)
    # Inode tables and journal written now: no lazy initialisation in the
    # background while the servers are measured.
    for cmd in (["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", img],
                ["mount", "-o", "loop", img, base]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            os.unlink(img)
            os.rmdir(base)
            raise RuntimeError(f"{' '.join(cmd[:2])}: {r.stderr.strip()}")
    return base, img


def run(ctx):
    why = problem(ctx)
    names = list(SERVERS)
    if why:
        for k, (unit, better, title) in FIGURES.items():
            for n in names:
                ctx.results.na(S, k, n, f"not available: {why}", unit=unit, better=better, title=title)
        return
    base, img = shares_dir(ctx)
    cpu = fs_cpu()
    log(f"fs: the shares in {base}" + (f" (ext4 on a loop device, {img})" if img else "") +
        (f", servers and work on CPU {cpu}" if cpu is not None else ", not pinned"))
    try:
        for i in range(ctx.runs):
            order = names[i % len(names):] + names[:i % len(names)]
            for name in order:
                res = session(ctx, name, base)
                log(f"fs run {i + 1}/{ctx.runs} {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in res.items()))
                for k, v in res.items():
                    unit, better, title = FIGURES[k]
                    ctx.results.add(S, k, name, v, unit=unit, better=better, title=title)
    finally:
        if img:
            umount(base)
            os.unlink(img)
        shutil.rmtree(base, ignore_errors=True)
