# SPDX-License-Identifier: Apache-2.0
"""Helpers for the tests and tools that run kvrun's virtio-fs server on the
host's /dev/fuse (tests/fs/kvrun-fs-host), bindfs and pjdfstest.

- fuse_problem(): why a FUSE file system cannot be mounted here, or None.
- KvrunMount / BindfsMount: context managers that mount a directory and
  unmount it (and check the server ended) on the way out.
- find_pjdfstest(): the prebuilt pjdfstest directory, and what was tried.
- run_pjdfstest(): run it in a directory, parse prove's summary.
- read_expected() / format_failures(): the committed expected-failure list.
"""
import os
import re
import shutil
import subprocess
import time


def src_root():
    return os.environ.get("KVRUN_SOURCE_ROOT",
                          os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def fs_host_binary():
    """kvrun-fs-host: $KVRUN_FS_HOST, else the build tree's."""
    env = os.environ.get("KVRUN_FS_HOST")
    if env:
        return env
    build = os.environ.get("KVRUN_BUILD_ROOT", os.path.join(src_root(), "build"))
    return os.path.join(build, "tests", "fs", "kvrun-fs-host")


def fuse_problem():
    if os.geteuid() != 0:
        return "needs root (mount(2) of a FUSE file system)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"cannot open /dev/fuse: {e.strerror}"
    os.close(fd)
    return None


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def umount(path):
    """Unmount path (lazily if busy); True once it is no mount point."""
    for _ in range(50):
        if not is_mounted(path):
            return True
        subprocess.run(["umount", path], capture_output=True)
        if is_mounted(path):
            time.sleep(0.1)
    subprocess.run(["umount", "-l", path], capture_output=True)
    return not is_mounted(path)


class KvrunMount:
    """kvrun-fs-host SHARE MNT [args], up once it printed "ready"."""

    def __init__(self, share, mnt, args=(), binary=None):
        self.share, self.mnt, self.args = share, mnt, list(args)
        self.binary = binary or fs_host_binary()
        self.proc = None
        self.rc = None
        self.stderr = ""

    def __enter__(self):
        argv = [self.binary] + self.args + [self.share, self.mnt]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.wait(10)
            raise RuntimeError(f"{' '.join(argv)}: no 'ready' (exit {self.proc.returncode}): "
                               f"{self.proc.stderr.read().strip()}")
        return self

    def pid(self):
        return self.proc.pid

    def stop(self):
        """Unmount; the server must then end by itself. Its exit status."""
        if self.proc is None:
            return self.rc
        umount(self.mnt)
        try:
            self.rc = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.rc = self.proc.wait()
        self.stderr = self.proc.stderr.read()
        self.proc = None
        return self.rc

    def __exit__(self, *exc):
        self.stop()
        return False


class BindfsMount:
    """bindfs SHARE MNT with the options the comparison uses."""

    OPTIONS = ["-o", "allow_other,default_permissions,attr_timeout=1,entry_timeout=1,negative_timeout=0"]

    def __init__(self, share, mnt, extra=()):
        self.share, self.mnt, self.extra = share, mnt, list(extra)

    def __enter__(self):
        subprocess.run(["bindfs"] + self.OPTIONS + self.extra + [self.share, self.mnt], check=True,
                       capture_output=True)
        return self

    def __exit__(self, *exc):
        umount(self.mnt)
        return False


def find_pjdfstest():
    """(directory or None, [places tried]): $KVRUN_PJDFSTEST, else
    shared/tools/pjdfstest beside the source tree or its main checkout."""
    tried = []
    env = os.environ.get("KVRUN_PJDFSTEST")
    if env:
        tried.append(env)
        return (env if os.path.isfile(os.path.join(env, "pjdfstest")) else None), tried
    roots = [src_root()]
    git = os.path.join(src_root(), ".git")
    if os.path.isfile(git):  # a worktree: <main>/.git/worktrees/<name>
        with open(git) as f:
            gitdir = f.read().strip().split(":", 1)[-1].strip()
        roots.append(os.path.dirname(os.path.dirname(os.path.dirname(gitdir))))
    for r in roots:
        d = os.path.normpath(os.path.join(r, "..", "shared", "tools", "pjdfstest"))
        tried.append(d)
        if os.path.isfile(os.path.join(d, "pjdfstest")):
            return d, tried
    return None, tried


_FILE_RE = re.compile(r"^(\S+\.t)\s+\(Wstat: (\d+)(?: \([^)]*\))? Tests: (\d+) Failed: (\d+)\)")
_NUMS_RE = re.compile(r"^\s+(?:Failed tests:)?\s*([\d, -]+)$")
_TOTAL_RE = re.compile(r"^Files=(\d+), Tests=(\d+)")


def _expand(spec):
    out = set()
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def parse_prove(text, tests_dir):
    """prove's summary -> ({file relative to tests_dir: set of failed
    assertion numbers}, {file: abnormal wait status}, total assertions)."""
    failed, wstat, total = {}, {}, None
    current = None
    in_failed = False
    for line in text.splitlines():
        m = _FILE_RE.match(line)
        if m:
            current = os.path.relpath(m.group(1), tests_dir)
            failed.setdefault(current, set())
            if int(m.group(2)):
                wstat[current] = int(m.group(2))
            in_failed = False
            continue
        if current and "Failed tests:" in line:
            in_failed = True
        if current and in_failed:
            m = _NUMS_RE.match(line)
            if m:
                failed[current] |= _expand(m.group(1))
                continue
            in_failed = False
        m = _TOTAL_RE.match(line)
        if m:
            total = int(m.group(2))
    return {f: s for f, s in failed.items() if s}, wstat, total


def run_pjdfstest(cwd, pjd_dir, jobs=2, timeout=1800, only=None):
    """Run the suite (or the files in only, relative to tests/) in cwd.
    Returns (failed, wstat, total, seconds, output)."""
    tests = os.path.join(pjd_dir, "tests")
    targets = [os.path.join(tests, t) for t in only] if only else [tests]
    t0 = time.monotonic()
    p = subprocess.run(["prove", "-r", f"-j{jobs}"] + targets, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    secs = time.monotonic() - t0
    out = p.stdout + p.stderr
    failed, wstat, total = parse_prove(out, tests)
    return failed, wstat, total, secs, out


def format_failures(failed):
    """{file: {numbers}} -> lines "file: 1 2 3" sorted."""
    return [f"{f}: {' '.join(str(n) for n in sorted(nums))}" for f, nums in sorted(failed.items())]


def read_expected(path):
    """The committed list: "file: N N N" lines, # comments."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, nums = line.split(":", 1)
            out[name.strip()] = {int(n) for n in nums.split()}
    return out


def have(tool):
    return shutil.which(tool) is not None
