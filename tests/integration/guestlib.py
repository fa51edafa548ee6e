# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the tests that boot guests with `kvrun boot`.

- kvm_problem(): why /dev/kvm cannot be used, or None.
- host_kind(): "native" (hardware KVM, vmx/svm), "pvm" (nested kvm_pvm host
  whose guest CPL0 code is emulated) or "unknown".
- find_kernel(): the Linux vmlinux to boot, and what was tried.
- write_initramfs(): a newc cpio with busybox-static and a given /init,
  written directly (no cpio tool, no root needed for /dev/console).
- boot(): runs `kvrun boot`, returns a Result with output, status, time.
- parse_tap(): the guest's TAP lines from its console output.
- suite_template(): the slow suite's one VM template, built once.
- check_template_use(): a TAP line saying a container's VM came from it.
"""
import fcntl
import json
import os
import re
import struct
import subprocess
import tempfile
import time

# Exit statuses of `kvrun boot` for each way a VM can end (`kvrun boot
# --help`): 0 power-off, the test device's exit code, 120 reboot, 121 triple
# fault, 122 crash, 124 timeout, 125 kvrun error, 128+N signal N.
EXIT_STATUS = {
    "guest-exit-0": 0,
    "guest-exit": lambda code: code & 0xff,
    "poweroff": 0,
    "reboot": 120,
    "triple-fault": 121,
    "crash": 122,
    "timeout": 124,
    "error": 125,
    "signal": lambda sig: 128 + sig,
}

# The kernel command line the guest kernel needs on a kvm_pvm host, where
# the guest sees the host's CPUID and the CPL0 emulator lacks some
# instructions (see shared/guest-kernel/BUILD.md).
# What kvrun's runtime puts on an emulating host's guest command line and
# guest-init passes on to container processes (runtime/sandbox/vm-config.c):
# the guest's glibc without AVX, whose registers that host's guest kernel
# does not keep across task switches (docs/runtime.md).
EMULATING_HOST_TUNABLES = ("GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX,-AVX2,-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,"
                           "-AVX512CD,-AVX_Fast_Unaligned_Load,-FMA,-FMA4")
PVM_CMDLINE = (
    "console=ttyS0 reboot=k panic=-1 quiet noxsave nofsgsbase nopcid "
    "clearcpuid=smap,smep,popcnt,rdrand,rdseed,rdpid,erms,fsrm,clflushopt,clwb,"
    "umip,invpcid,movbe,aes,pclmulqdq,sha_ni,f16c,bmi1,cx16,bmi2,adx "
    "rcupdate.rcu_cpu_stall_suppress=1 nowatchdog pvmhost=1 " + EMULATING_HOST_TUNABLES
)
NATIVE_CMDLINE = "console=ttyS0 reboot=k panic=-1 quiet"


def kvrun():
    return os.environ.get("KVRUN", "kvrun")


def kvm_problem():
    if not os.path.exists("/dev/kvm"):
        return "/dev/kvm does not exist"
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"cannot open /dev/kvm: {e.strerror}"
    os.close(fd)
    return None


def test_guest_tmp(t, guest, prefix, root_why):
    """The start of a test running the freestanding test guest as its
    containers' VMs: skips without /dev/kvm or root (root_why says what
    for), fails without the guest ELF; a temporary directory of its own."""
    problem = kvm_problem()
    if problem:
        t.skip_all(f"needs /dev/kvm: {problem}")
    if os.geteuid() != 0:
        t.skip_all(f"needs root ({root_why})")
    if not os.path.isfile(guest):
        t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={guest!r})")
        t.done()
    return tempfile.mkdtemp(prefix=prefix)


def run_kvrun(root, log, args, env, timeout):
    """kvrun --root ROOT --log LOG --debug ARGS, its output through files
    (a monitor keeps a pipe open); a timeout is status None."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.run([kvrun(), "--root", root, "--log", log, "--debug"] + list(args), stdout=out,
                               stderr=err, env=env, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, None, "", f"(timed out after {timeout} s)")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())


def host_kind():
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.split(":", 1)[1].split())
    except OSError:
        flags = set()
    if flags & {"vmx", "svm"} or any(
        os.path.exists(f"/sys/module/{m}") for m in ("kvm_intel", "kvm_amd")
    ):
        return "native"
    if os.path.exists("/sys/module/kvm_pvm") or os.path.exists("/dev/kvm"):
        return "pvm"
    return "unknown"


def linux_cmdline(kind):
    return PVM_CMDLINE if kind == "pvm" else NATIVE_CMDLINE


def _main_checkout(root):
    """For a git worktree, the directory of its main checkout, else None."""
    try:
        with open(os.path.join(root, ".git")) as f:
            line = f.read().strip()
    except OSError:
        return None  # a plain checkout (.git is a directory) or no git
    if not line.startswith("gitdir:"):
        return None
    gitdir = line.split(":", 1)[1].strip()
    # <main>/.git/worktrees/<name>
    return os.path.dirname(os.path.dirname(os.path.dirname(gitdir)))


def find_kernel():
    """Returns (path or None, [places tried]): $KVRUN_TEST_KERNEL, else
    shared/guest-kernel/vmlinux beside the source tree (or beside the main
    checkout when the source tree is a git worktree)."""
    env = os.environ.get("KVRUN_TEST_KERNEL")
    if env:
        return (env if os.path.isfile(env) else None), [f"$KVRUN_TEST_KERNEL={env}"]
    return shared_file("guest-kernel", "vmlinux")


def shared_file(*names):
    """Returns (path or None, [places tried]) of shared/<names...> beside
    the source tree (or beside the main checkout when the source tree is a
    git worktree): the guest kernel, prebuilt tools."""
    tried = []
    root = os.environ.get("KVRUN_SOURCE_ROOT",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    roots = [root]
    main = _main_checkout(root)
    if main:
        roots.append(main)
    for r in roots:
        path = os.path.normpath(os.path.join(r, "..", "shared", *names))
        tried.append(path)
        if os.path.isfile(path):
            return path, tried
    return None, tried


def _cpio_entry(out, ino, name, mode, data=b"", rdev=(0, 0)):
    name_b = name.encode() + b"\0"
    hdr = "070701" + "".join(f"{v:08x}" for v in (
        ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0))
    out.write(hdr.encode() + name_b)
    out.write(b"\0" * ((4 - (110 + len(name_b)) % 4) % 4))
    out.write(data)
    out.write(b"\0" * ((4 - len(data) % 4) % 4))


def busybox_path():
    """A static busybox: $KVRUN_TEST_BUSYBOX, else Debian's busybox-static."""
    return os.environ.get("KVRUN_TEST_BUSYBOX", "/bin/busybox")


def write_initramfs(path, init_script, busybox=None):
    """An uncompressed newc cpio: /bin/busybox, /bin/sh, /init (the given
    shell script), /proc, /sys, /dev/console. Uncompressed, because gunzip
    in the guest kernel is slow where CPL0 code is emulated."""
    with open(busybox or busybox_path(), "rb") as f:
        bb = f.read()
    with open(path, "wb") as out:
        ino = 1
        for name, mode, data, rdev in (
            ("bin", 0o040755, b"", (0, 0)),
            ("proc", 0o040755, b"", (0, 0)),
            ("sys", 0o040755, b"", (0, 0)),
            ("dev", 0o040755, b"", (0, 0)),
            ("dev/console", 0o020600, b"", (5, 1)),
            ("bin/busybox", 0o100755, bb, (0, 0)),
            ("bin/sh", 0o120777, b"busybox", (0, 0)),
            ("init", 0o100755, init_script.encode(), (0, 0)),
        ):
            _cpio_entry(out, ino, name, mode, data, rdev)
            ino += 1
        _cpio_entry(out, 0, "TRAILER!!!", 0)


def elf_load_midpoint(data):
    """File offset halfway into the first PT_LOAD segment of an ELF64
    image: a copy cut there has intact headers but a short segment."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_filesz:
            return p_offset + p_filesz // 2
    raise ValueError("no PT_LOAD segment")


class Result:
    def __init__(self, args, rc, out, err, elapsed, timed_out):
        self.args = args
        self.rc = rc
        self.out = out
        self.err = err
        self.elapsed = elapsed
        self.timed_out = timed_out

    def describe(self):
        tail = lambda s: "\n".join(s.splitlines()[-15:])
        return (f"command: {' '.join(self.args)}\nexit status: {self.rc}"
                f"{' (killed: test timeout)' if self.timed_out else ''}\n"
                f"stdout (tail):\n{tail(self.out)}\nstderr (tail):\n{tail(self.err)}")


def boot(args, timeout=60, stop_signal=None, stop_after=None, wait_for=None, marks=()):
    """Runs `kvrun boot ARGS`. With stop_signal, sends it after stop_after
    seconds, or once wait_for (a string) appeared on stdout or stderr.
    The process is killed (and the result marked timed_out) after
    timeout seconds. Result.seen maps each string in marks to the seconds
    after the start when it first appeared in the output."""
    argv = [kvrun(), "boot"] + list(args)
    start = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    os.set_blocking(p.stdout.fileno(), False)
    os.set_blocking(p.stderr.fileno(), False)
    out, err = b"", b""
    sent = False
    timed_out = False
    seen = {}
    while True:
        for stream in (p.stdout, p.stderr):
            chunk = stream.read()
            if chunk:
                if stream is p.stdout:
                    out += chunk
                else:
                    err += chunk
        now = time.monotonic() - start
        for m in marks:
            if m not in seen and (m.encode() in out or m.encode() in err):
                seen[m] = now
        if p.poll() is not None:
            break
        if stop_signal and not sent:
            due = stop_after is not None and now >= stop_after
            seen = wait_for is not None and (wait_for.encode() in out or wait_for.encode() in err)
            if due or seen:
                p.send_signal(stop_signal)
                sent = True
        if now > timeout:
            p.kill()
            timed_out = True
            p.wait()
            break
        time.sleep(0.02)
    for stream in (p.stdout, p.stderr):
        os.set_blocking(stream.fileno(), True)
        rest = stream.read()
        if stream is p.stdout:
            out += rest
        else:
            err += rest
    elapsed = time.monotonic() - start
    r = Result(argv, p.returncode, out.decode(errors="replace"),
               err.decode(errors="replace"), elapsed, timed_out)
    r.seen = seen
    return r


def timings_of(r):
    """The JSON object `kvrun boot --timings` printed on stderr, or None."""
    for line in reversed(r.err.splitlines()):
        line = line.strip()
        if line.startswith("{") and "total_us" in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


TAP_RE = re.compile(r"^(not )?ok (\d+) - (.*)$")
PLAN_RE = re.compile(r"^1\.\.(\d+)")


def parse_tap(text):
    """Returns (results, plan): results is a list of (passed, description)
    in order, plan the declared count or None."""
    results, plan = [], None
    for line in text.splitlines():
        line = line.strip("\r")
        m = TAP_RE.match(line)
        if m:
            results.append((m.group(1) is None, m.group(3)))
            continue
        m = PLAN_RE.match(line)
        if m:
            plan = int(m.group(1))
    return results, plan


def kvrun_pids():
    """Pids of running processes whose executable is the kvrun under test."""
    exe = os.path.realpath(kvrun())
    pids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.path.realpath(f"/proc/{d}/exe") == exe:
                    pids.add(int(d))
            except OSError:
                pass
    return pids


def blk_pattern(seed, sector):
    """The bytes of one 512-byte sector of the test guest's virtio-blk image,
    as tests/guest/virtio.c computes them."""
    return bytes((seed + sector * 131 + i * 7 + (i >> 8) * 13) & 0xff for i in range(512))


def write_blk_image(path, seed, sectors):
    """An image of `sectors` sectors that the test guest's virtio-blk test
    (blk_seed=seed) expects."""
    with open(path, "wb") as f:
        for s in range(sectors):
            f.write(blk_pattern(seed, s))


# ---- the slow suite's VM template -------------------------------------------
#
# Every container of the slow suite's tests has the VM of kvrun's default
# plan (no network interface, no memory limit, no CPU quota; the test's
# kernel and the initramfs kvrun makes from its own guest-init), so one
# template serves them all and each test pays for its own work instead of a
# kernel boot per container. It lives in the build tree, is built by
# whichever test needs it first (the others wait on its lock), and is built
# again when the kvrun binary, its guest-init or the kernel changed.

# Environment that shapes the default plan besides the kernel: a change
# means another template.
_PLAN_ENV = ("KVRUN_INIT", "KVRUN_EMULATING_HOST")


def plan_env():
    """Those of them set here: what a wrapper that an engine runs (without
    the test's environment) must pass on for its containers to match the
    suite template."""
    return {k: os.environ[k] for k in _PLAN_ENV if k in os.environ}


class SuiteTemplate:
    """env: what to add to kvrun's environment (KVRUN_TEMPLATE_DIR, or
    KVRUN_TEMPLATES=0 after a failed build); ok: a template is there;
    dir, snap: its directory and snapshot file; built: this call built it;
    seconds: how long the build took."""

    def __init__(self, dir_, env, ok, snap=None, built=False, seconds=0.0):
        self.dir, self.env, self.ok, self.snap, self.built, self.seconds = dir_, env, ok, snap, built, seconds


def _kvrun_under_test():
    """The binary the container tests run (their default: the build tree)."""
    return os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))


def emulating_host():
    """Whether this host's KVM emulates guest kernel code (nested kvm_pvm:
    no vmx/svm in /proc/cpuinfo), as kvrun's vm_host_is_emulating() judges
    it; $KVRUN_EMULATING_HOST=0/1 overrides."""
    env = os.environ.get("KVRUN_EMULATING_HOST")
    if env in ("0", "1"):
        return env == "1"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return False
    return os.path.isdir("/sys/module/kvm_pvm") or ("hypervisor" in flags and "vmx" not in flags and "svm" not in flags)


# On emulating hosts a short-lived process in the guest now and then dies of
# a NULL read at its first thread-local access (docs/runtime.md, "Kernel,
# initramfs and VM size"): a check that failed that way there is a TODO.
GUEST_SEGV_GAP = "a guest process died of SIGSEGV on this emulating host (docs/runtime.md, emulating hosts)"


def guest_segv(status, stderr):
    """Whether a container command's failure is that host fault: status 139
    or the shell's "Segmentation fault", on an emulating host."""
    return emulating_host() and (status == 139 or "Segmentation fault" in stderr)


def suite_template_dir():
    root = os.environ.get("KVRUN_BUILD_ROOT")
    if not root:  # run by hand: the build tree holding $KVRUN (BUILD/runtime/kvrun)
        root = os.path.dirname(os.path.dirname(_kvrun_under_test()))
    return os.path.join(root, "tests", "templates")


def _file_id(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _stamp(kernel):
    """What the template was built from, as far as the tests can see it;
    kvrun's own key (docs/snapshot.md) is the final word: a template that
    does not match is simply not used, which check_template_use() reports."""
    exe = _kvrun_under_test()
    init = os.environ.get("KVRUN_INIT") or os.path.join(os.path.dirname(os.path.dirname(exe)), "guest-init",
                                                        "kvrun-init")
    return {"kvrun": _file_id(exe), "init": _file_id(init), "kernel": _file_id(kernel),
            "env": {k: os.environ.get(k) for k in _PLAN_ENV}}


def _listed_ids(env, nics=None):
    """The templates `kvrun template list` shows; with nics, only those
    with that many network devices (its NICS column)."""
    p = subprocess.run([_kvrun_under_test(), "template", "list"], capture_output=True, text=True, env=env, timeout=60)
    rows = [line.split() for line in p.stdout.splitlines()[1:] if line.split()]
    return [r[0] for r in rows if nics is None or (len(r) > 3 and r[3] == str(nics))]


def _tail(text, n=25):
    return "\n".join(text.splitlines()[-n:])


def suite_template(t, kernel, nics=0):
    """Makes sure the suite template for kernel exists and returns a
    SuiteTemplate. Serialized with flock on the template directory's
    lock file, so concurrently running tests build it once. A failed build
    is a failed TAP line on t; the test then goes on with cold boots
    (env turns templates off). nics: the template for containers with that
    many network interfaces (an engine's network namespace has one), kept
    beside the others with a stamp of its own."""
    d = suite_template_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    kernel = os.path.abspath(kernel)
    # The plan of the tests' own containers: their kernel, no config file.
    env = dict(os.environ, KVRUN_TEMPLATE_DIR=d, KVRUN_KERNEL=kernel, KVRUN_CACHE_DIR=os.path.join(d, "cache"),
               KVRUN_CONFIG=os.path.join(d, "no-config.json"))
    env.pop("KVRUN_TEMPLATES", None)
    stamp_path = os.path.join(d, "stamp.json" if nics == 0 else f"stamp-nics{nics}.json")
    what = "the slow suite's VM template" + (f" with {nics} network devices" if nics else "")
    want = _stamp(kernel)
    with open(os.path.join(d, ".lock"), "w") as lock:
        t0 = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = time.monotonic() - t0
        try:
            with open(stamp_path) as f:
                have = json.load(f)
        except (OSError, ValueError):
            have = {}
        ids = _listed_ids(env, nics)
        snap = os.path.join(d, f"{have.get('id')}.snap")
        if have.get("stamp") == want and have.get("id") in ids and os.path.exists(snap):
            t.diag(f"{what} {have['id']} in {d} is current (built {have.get('built')}"
                   f"{f', waited {waited:.0f} s for its lock' if waited >= 1 else ''})")
            return SuiteTemplate(d, {"KVRUN_TEMPLATE_DIR": d}, True, snap)
        # Stale or missing: nothing old is kept (a stale one would never
        # match); the variants with another NIC count have stamps of their own.
        if os.path.exists(stamp_path):
            os.unlink(stamp_path)
        for old in ids:
            subprocess.run([_kvrun_under_test(), "template", "rm", old], capture_output=True, env=env, timeout=60)
        log, console = os.path.join(d, "build-log.txt"), os.path.join(d, "build-console.log")
        timeout = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 300
        t0 = time.monotonic()
        try:
            p = subprocess.run([_kvrun_under_test(), "--log", log, "--debug", "template", "build", "--console", console]
                               + (["--nics", str(nics)] if nics else []),
                               capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = None, "", f"timed out after {timeout} s: {e}"
        took = time.monotonic() - t0
        snap = out.strip().split(" (")[0] if rc == 0 else ""
        sid = os.path.basename(snap)[:-len(".snap")] if snap.endswith(".snap") else ""
        ids = _listed_ids(env, nics) if rc == 0 else []
        good = rc == 0 and os.path.exists(snap) and sid in ids
        diag = (f"exit status {rc}; output: {out.strip()}\ntemplate list: {ids}\nstderr:\n{_tail(err)}\n"
                f"--- {log}\n{_tail(open(log, errors='replace').read()) if os.path.exists(log) else ''}\n"
                f"--- {console}\n"
                f"{_tail(open(console, errors='replace').read()) if os.path.exists(console) else ''}")
        if not t.ok(good, f"{what} is built (kvrun template build)", diag):
            t.diag("going on with cold boots")
            return SuiteTemplate(d, {"KVRUN_TEMPLATES": "0"}, False, seconds=took)
        with open(stamp_path + ".tmp", "w") as f:
            json.dump({"stamp": want, "id": sid, "built": time.strftime("%Y-%m-%d %H:%M:%S")}, f)
        os.rename(stamp_path + ".tmp", stamp_path)
        t.diag(f"{what} {sid} built in {took:.0f} s: {out.strip()}")
        return SuiteTemplate(d, {"KVRUN_TEMPLATE_DIR": d}, True, snap, True, took)


def maps_file(pid, path):
    """Whether process pid has path (its device and inode) mapped."""
    try:
        st = os.stat(path)
        with open(f"/proc/{pid}/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if len(fields) >= 5 and fields[4] == str(st.st_ino):
            major, minor = (int(x, 16) for x in fields[3].split(":"))
            if os.makedev(major, minor) == st.st_dev:
                return True
    return False


def check_template_use(t, what, log=None, pid=None, template_dir=None):
    """One TAP line: the VM of container `what` was restored from the
    suite template. Judged by kvrun's --log text (log: "VM: restoring
    template", info level) or, for a running container, by its monitor
    (pid) having a template's snapshot mapped as guest RAM. A template that
    matched but that this host's KVM refused (docs/snapshot.md: now and then
    an MSR on nested hosts; kvrun then cold-boots) is a TODO line, as in
    test_template. t: a Tap."""
    diag = t.diag
    if log is not None:
        restoring = "VM: restoring template" in log
        refused = "cold boot instead" in log
        line = next((ln for ln in reversed(log.splitlines()) if "VM: " in ln and ("template" in ln or "cold boot" in ln)),
                    "")
        diag(f"{what}: {'restored from the template' if restoring and not refused else 'cold boot'}: {line.strip()}")
        if refused:
            diag(next((ln for ln in log.splitlines() if "cold boot instead" in ln), ""))
        ok = t.ok(restoring, f"{what}: its VM starts from the suite template", _tail(log, 15))
        if restoring:
            t.todo(not refused, f"{what}: restored, no cold boot",
                   "now and then this nested host's KVM refuses a restored MSR (0x4b564d02); kvrun then cold-boots")
        return ok
    d = template_dir or os.environ.get("KVRUN_TEMPLATE_DIR") or suite_template_dir()
    snaps = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".snap")] if os.path.isdir(d) else []
    mapped = [s for s in snaps if maps_file(pid, s)]
    diag(f"{what}: monitor {pid} {'has ' + mapped[0] + ' mapped: restored' if mapped else 'maps no template: cold boot'}")
    return t.ok(bool(mapped), f"{what}: its VM was restored from the suite template", f"templates in {d}: {snaps}")


def _proc_status(path):
    fields = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
    except OSError:
        pass
    return fields


# A file server's capabilities (JAIL_FS_CAPS in runtime/host/jail.h):
# CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID, SETGID, SETFCAP.
FS_CAPS = "%016x" % sum(1 << c for c in (0, 1, 2, 3, 4, 6, 31))
NO_CAPS = "0" * 16
# How the threads that serve a shared directory are named (virtio/fs/fs.h,
# virtio/fs/fuse-server.h): they alone keep FS_CAPS.
FS_THREAD_PREFIX = "fs-"


def jail_thread_problems(pid):
    """Each thread of a jailed process whose /proc status is not as the jail
    leaves it: Seccomp 2, NoNewPrivs 1, and no capability, effective or
    permitted, but on a file server's threads (named FS_THREAD_PREFIX...),
    which have exactly FS_CAPS. (problems, {tid: status})."""
    problems, tasks = [], {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError as e:
        return [f"/proc/{pid}/task: {e}"], tasks
    for tid in tids:
        st = tasks[tid] = _proc_status(f"/proc/{pid}/task/{tid}/status")
        caps = FS_CAPS if st.get("Name", "").startswith(FS_THREAD_PREFIX) else NO_CAPS
        got = (st.get("Seccomp"), st.get("NoNewPrivs"), st.get("CapEff"), st.get("CapPrm"))
        if got != ("2", "1", caps, caps):
            problems.append(f"thread {tid} ({st.get('Name')}): Seccomp, NoNewPrivs, CapEff, CapPrm = {got}, "
                            f"not {('2', '1', caps, caps)}")
    return problems, tasks


def jail_problems(pid):
    """What /proc says is missing of the jail (runtime/host/jail.h) of a
    running monitor or exec proxy: every thread with Seccomp 2, NoNewPrivs 1
    and no capability (a file server's threads: its own and no other,
    jail_thread_problems()), uids that are not 0, a root that is not the
    host's. An empty list when all is there."""
    problems, _ = jail_thread_problems(pid)
    uids = _proc_status(f"/proc/{pid}/status").get("Uid", "").split()
    if not uids or "0" in uids:
        problems.append(f"uids {uids}")
    try:
        r, h = os.stat(f"/proc/{pid}/root/"), os.stat("/")
        if (r.st_dev, r.st_ino) == (h.st_dev, h.st_ino):
            problems.append("its root is the host's")
    except OSError as e:
        problems.append(f"its root: {e}")
    return problems
