#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OCI spec applied in a real guest, three VMs side by side, each
restored from the slow suite's VM template (guestlib.suite_template(); each
container's --log says so):

A. A busybox container that runs `sleep` on a read-only root whose rootfs
   has no /proc, /sys, /dev, /tmp, /etc nor its cwd (the root disk gets
   the mount points, as runc creates them before making the root
   read-only). Its spec sets args, env, cwd, user and groups, umask,
   rlimits, hostname, tmpfs mounts with options, a file bind mount,
   maskedPaths, readonlyPaths, capabilities and a seccomp rule. Then one
   `exec --process` per check, each judged by its exit status and output:
   the container process's own settings (through /proc/1), the exec'd
   process's, read-only root, mounts, masks, a capability dropped, the
   seccomp rule, exit codes 0/1/42/137, a missing binary (runc's status and
   message), stdout and stderr apart, and 100 MB through stdin and stdout.
B. `kvrun run` in the foreground of a read-only rootfs of dynamically
   linked host programs (bash, cat, sha256sum and their libraries, found
   with ldd) without any mount point: the mounts work, stdin reaches cat.
C. `kvrun run` of a binary the rootfs lacks: create fails, with runc's
   status and message, and leaves nothing behind.

KVRUN_TEST_RUNTIME=runc runs the same checks with runc on the host (no
VM), to check the expectations against the reference runtime (runc 1.1
sets an exec'd process's rlimits from outside, which can race with it).
KVRUN_TEST_PIPE_MB sets the size piped through exec (default 100; 16 where
the guest kernel runs emulated, whose every vsock packet costs emulated
kernel code: the full 100 MB runs on hardware KVM).
Skips without a guest kernel, /dev/kvm, root, mke2fs or busybox.
"""
import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading

import bundlelib
import guestlib
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RUNTIME = os.environ.get("KVRUN_TEST_RUNTIME") or KVRUN
IS_KVRUN = os.path.basename(RUNTIME) == "kvrun"
PIPE_MB = int(os.environ.get("KVRUN_TEST_PIPE_MB", "16" if IS_KVRUN and guestlib.host_kind() == "pvm" else "100"))
RUN_PIPE_MB = 8
# create waits up to $KVRUN_BOOT_TIMEOUT for the boot, then for START.
RUN_TIMEOUT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 600
APPLETS = ["sh", "sleep", "cat", "echo", "printf", "pwd", "id", "hostname", "grep", "tr", "readlink", "touch",
           "chown", "mkdir", "ls", "ping", "sha256sum", "head", "wc", "cut", "stat"]
# Capability numbers (linux/capability.h), for CapEff masks.
CAP = {"CAP_CHOWN": 0, "CAP_KILL": 5, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_RAW": 13, "CAP_AUDIT_WRITE": 29}
BASE_CAPS = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
CALLER_UMASK = os.umask(0o022)
os.umask(CALLER_UMASK)
SECCOMP_ERRNO = 121  # EREMOTEIO: a message no other cause would give
RESOLV = "nameserver 192.0.2.53\n"


def caps(names):
    return {k: list(names) for k in ("bounding", "effective", "permitted")}


def cap_mask(names):
    return f"{sum(1 << CAP[n] for n in names):016x}"


def rt(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([RUNTIME, "--root", root] + list(args), **kw)


def spec_a(spec, resolv):
    p = spec["process"]
    p["args"] = ["/bin/sleep", "1000000"]
    p["env"] = ["PATH=/bin", "FOO=init env"]
    p["cwd"] = "/work"
    p["user"] = {"uid": 1000, "gid": 1000, "additionalGids": [1001, 1002], "umask": 0o027}
    p["rlimits"] = [{"type": "RLIMIT_NOFILE", "soft": 1000, "hard": 1500}]
    p["capabilities"] = caps(BASE_CAPS)
    spec["hostname"] = "kvrun-spec"
    spec["root"]["readonly"] = True
    spec["mounts"] += [
        {"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "nodev", "noexec", "mode=1777", "size=4m", "uid=1000", "gid=1001"]},
        {"destination": "/rwro", "type": "tmpfs", "source": "tmpfs", "options": ["mode=755"]},
        {"destination": "/etc/resolv.conf", "type": "bind", "source": resolv, "options": ["rbind", "ro"]},
    ]
    lx = spec["linux"]
    lx["maskedPaths"] += ["/data/secret.txt", "/data/private"]
    lx["readonlyPaths"] += ["/rwro"]
    lx["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                     "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                                   "errnoRet": SECCOMP_ERRNO}]}


def process(args, **kw):
    """An exec'd process: uid 1000 with the container's groups, umask and
    capabilities unless kw says otherwise."""
    p = {"terminal": False, "args": args, "env": ["PATH=/bin", "FOO=bar baz"], "cwd": "/work",
         "user": {"uid": 1000, "gid": 1000, "additionalGids": [1001, 1002], "umask": 0o027},
         "capabilities": caps(BASE_CAPS), "noNewPrivileges": True}
    p.update(kw)
    return p


def sh(script, **kw):
    return process(["/bin/sh", "-c", script], **kw)


ROOT_USER = {"uid": 0, "gid": 0}
PING = "ping -c 1 -W 10 127.0.0.1 >/dev/null 2>&1 && echo ping-ok || echo ping-failed"


def checks_a():
    """(name, process, stdin, expected status, expected stdout or a
    predicate on (stdout, stderr))."""
    init_status = "grep -E '^(Uid|Gid|Groups|Umask|CapEff|CapBnd):' /proc/1/status | tr -s '\\t ' ' '"
    nofile = "grep 'Max open files' /proc/1/limits | tr -s ' '"
    return [
        ("container process: args", sh("tr '\\0' '|' < /proc/1/cmdline"), None, 0, "/bin/sleep|1000000|"),
        ("container process: env", sh("tr '\\0' '\\n' < /proc/1/environ | grep ^FOO="), None, 0, "FOO=init env\n"),
        ("container process: cwd created on a read-only root", sh("readlink /proc/1/cwd"), None, 0, "/work\n"),
        ("container process: uid, gid, groups, umask, capabilities", sh(init_status), None, 0,
         "Umask: 0027\nUid: 1000 1000 1000 1000\nGid: 1000 1000 1000 1000\nGroups: 1001 1002 \n"
         f"CapEff: {cap_mask([])}\nCapBnd: {cap_mask(BASE_CAPS)}\n"),
        ("container process: rlimits", sh(nofile), None, 0, "Max open files 1000 1500 files \n"),
        ("exec: args", process(["/bin/printf", "%s|", "one", "two words", ""]), None, 0, "one|two words||"),
        ("exec: env", sh('echo "$FOO"'), None, 0, "bar baz\n"),
        ("exec: cwd", sh("pwd", cwd="/scratch"), None, 0, "/scratch\n"),
        ("exec: uid, gid, additional groups", sh("id -u; id -g; id -G"), None, 0, "1000\n1000\n1000 1001 1002\n"),
        # runc 1.1 leaves an exec'd process with its own umask; the spec
        # (process.user.umask) and kvrun give it process.json's.
        ("exec: umask", sh("umask"), None, 0, "0027\n" if IS_KVRUN else f"{CALLER_UMASK:04o}\n"),
        ("exec: rlimits", sh("ulimit -Sn; ulimit -Hn", rlimits=[{"type": "RLIMIT_NOFILE", "soft": 512,
                                                                "hard": 777}]), None, 0, "512\n777\n"),
        ("hostname", sh("hostname"), None, 0, "kvrun-spec\n"),
        ("read-only root: a write is refused", sh("touch /newfile", user=ROOT_USER), None, 1,
         lambda out, err: "Read-only file system" in err),
        ("tmpfs mount: writable", sh("echo hi > /scratch/f && cat /scratch/f"), None, 0, "hi\n"),
        ("tmpfs mount: its options", sh("grep ' /scratch ' /proc/mounts"), None, 0,
         lambda out, err: out.startswith("tmpfs /scratch tmpfs ")
         and all(o in out.split()[3].split(",") for o in ("rw", "nosuid", "nodev", "noexec", "size=4096k",
                                                          "uid=1000", "gid=1001"))),
        ("tmpfs mount: its mode and owner", sh("stat -c '%a %u %g' /scratch"), None, 0, "1777 1000 1001\n"),
        ("proc mount", sh("grep '^proc /proc proc ' /proc/mounts >/dev/null && cat /proc/self/comm"), None, 0,
         "cat\n"),
        ("file bind mount on a missing /etc of a read-only root", sh("cat /etc/resolv.conf"), None, 0, RESOLV),
        ("maskedPaths: a masked file reads empty", sh("cat /data/secret.txt"), None, 0, ""),
        ("maskedPaths: a masked directory is empty", sh("ls -A /data/private"), None, 0, ""),
        ("maskedPaths: the default /proc/kcore", sh("head -c 16 /proc/kcore | wc -c"), None, 0, "0\n"),
        ("readonlyPaths: a read-only tmpfs", sh("touch /rwro/f", user=ROOT_USER), None, 1,
         lambda out, err: "Read-only file system" in err),
        ("readonlyPaths: /proc/sys", sh("echo x > /proc/sys/kernel/hostname", user=ROOT_USER), None, 1,
         lambda out, err: "Read-only file system" in err),
        ("capabilities: CapEff of root without CAP_CHOWN and CAP_NET_RAW",
         sh("grep ^CapEff: /proc/self/status", user=ROOT_USER), None, 0, f"CapEff:\t{cap_mask(BASE_CAPS)}\n"),
        ("capabilities: chown refused without CAP_CHOWN",
         sh("touch /scratch/c1 && chown 5:5 /scratch/c1", user=ROOT_USER), None, 1,
         lambda out, err: "Operation not permitted" in err),
        ("capabilities: chown allowed with CAP_CHOWN",
         sh("touch /scratch/c2 && chown 5:5 /scratch/c2 && ls -n /scratch/c2 | tr -s ' ' | cut -d' ' -f3,4",
            user=ROOT_USER, capabilities=caps(BASE_CAPS + ["CAP_CHOWN"])), None, 0, "5 5\n"),
        ("capabilities: ping fails without CAP_NET_RAW", sh(PING, user=ROOT_USER), None, 0, "ping-failed\n"),
        ("capabilities: ping works with CAP_NET_RAW",
         sh(PING, user=ROOT_USER, capabilities=caps(BASE_CAPS + ["CAP_NET_RAW"])), None, 0, "ping-ok\n"),
        ("seccomp: mkdir denied with the rule's errno", sh("mkdir /scratch/d"), None, 1,
         lambda out, err: "Remote I/O error" in err),
        ("seccomp: other calls allowed", sh("touch /scratch/t && echo ok"), None, 0, "ok\n"),
        ("exit code 0", sh("exit 0"), None, 0, ""),
        ("exit code 1", sh("exit 1"), None, 1, ""),
        ("exit code 42", sh("exit 42"), None, 42, ""),
        ("killed by SIGKILL: 137", sh("kill -9 $$"), None, 137, ""),
        ("stdout and stderr apart", sh("echo out; echo err >&2; echo out2"), None, 0,
         lambda out, err: out == "out\nout2\n" and err == "err\n"),
        ("stdin relayed", sh("cat"), b"line one\nline two\n", 0, "line one\nline two\n"),
    ]


def missing_binary_checks():
    """runc exec's status and message for a binary that is not there."""
    return [
        ("missing binary by path", process(["/nope"]), 255,
         'exec failed: unable to start container process: exec: "/nope": stat /nope: no such file or directory'),
        ("missing binary in $PATH", process(["nope"]), 255,
         'exec failed: unable to start container process: exec: "nope": executable file not found in $PATH'),
    ]


class Results:
    """TAP lines gathered on a thread, printed in order afterwards."""

    def __init__(self):
        self.items = []

    def ok(self, cond, what, diag=None, gap=None):
        self.items.append((bool(cond), what, diag, gap))
        return bool(cond)

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}")


def run_exec(root, cid, tmp, n, proc, stdin=None, timeout=600):
    path = os.path.join(tmp, f"process-{n}.json")
    with open(path, "w") as f:
        json.dump(proc, f)
    return rt(root, "exec", "--process", path, cid, input=stdin if stdin is not None else b"", timeout=timeout)


def vm_a(tmp, env, res):
    b = os.path.join(tmp, "a")
    rootfs = os.path.join(b, "rootfs")
    bundlelib.busybox_rootfs(rootfs, APPLETS, dirs=["data/private"])
    with open(os.path.join(rootfs, "data", "secret.txt"), "w") as f:
        f.write("SECRET\n")
    with open(os.path.join(rootfs, "data", "private", "file"), "w") as f:
        f.write("private\n")
    resolv = os.path.join(tmp, "resolv.conf")
    with open(resolv, "w") as f:
        f.write(RESOLV)
    bundlelib.write_spec(KVRUN, b, lambda s: spec_a(s, resolv))
    root = os.path.join(tmp, "root-a")
    out_path = os.path.join(tmp, "a.out")
    with open(out_path, "wb") as so:
        p = rt(root, "--log", os.path.join(tmp, "a-log.txt"), "--debug", "run", "--detach", "--bundle", b, "ctr-a",
               stdin=subprocess.DEVNULL, stdout=so, stderr=so, capture_output=False, env=env, timeout=RUN_TIMEOUT)
    with open(out_path, errors="replace") as f:
        if not res.ok(p.returncode == 0, "A: run --detach of a read-only root without mount points", f.read()[-3000:]):
            return
    n = 0
    for name, proc, stdin, status, want in checks_a():
        n += 1
        try:
            p = run_exec(root, "ctr-a", tmp, n, proc, stdin)
        except subprocess.TimeoutExpired:
            res.ok(False, f"A: {name}: timed out")
            continue
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        good = want(out, err) if callable(want) else out == want
        segv = IS_KVRUN and guestlib.guest_segv(p.returncode, err)
        res.ok(p.returncode == status and good, f"A: {name}",
               f"status {p.returncode} (want {status})\nstdout: {out[-1500:]!r}\n"
               f"want: {want if not callable(want) else '(predicate)'!r}\nstderr: {err[-1500:]!r}",
               gap=guestlib.GUEST_SEGV_GAP if segv else None)
    for name, proc, status, want in missing_binary_checks():
        n += 1
        p = run_exec(root, "ctr-a", tmp, n, proc)
        err = p.stderr.decode(errors="replace")
        res.eq((p.returncode, bundlelib.logrus_msg(err)), (status, want), f"A: {name}: runc's status and message")
    # The bulk transfer: checked inside (sha256sum of stdin) and outside
    # (the bytes cat gives back).
    data = os.urandom(1 << 20) * PIPE_MB
    digest = hashlib.sha256(data).hexdigest()
    n += 1
    p = run_exec(root, "ctr-a", tmp, n, sh("sha256sum"), data, timeout=1500)
    res.eq((p.returncode, p.stdout.decode(errors="replace")), (0, f"{digest}  -\n"),
           f"A: {PIPE_MB} MB through stdin: the container's sha256 is the host's")
    n += 1
    p = run_exec(root, "ctr-a", tmp, n, sh("cat"), data, timeout=1500)
    res.ok(p.returncode == 0 and len(p.stdout) == len(data) and hashlib.sha256(p.stdout).hexdigest() == digest,
           f"A: {PIPE_MB} MB through stdin to stdout: same sha256",
           f"status {p.returncode}, {len(p.stdout)} bytes back of {len(data)}, stderr {p.stderr[-500:]!r}")
    p = rt(root, "kill", "ctr-a", "9", timeout=120)
    res.ok(p.returncode == 0, "A: kill 9", p.stderr)
    p = rt(root, "delete", "--force", "ctr-a", timeout=120)
    res.ok(p.returncode == 0, "A: delete --force", p.stderr)
    res.eq(os.listdir(root) if os.path.isdir(root) else [], [], "A: nothing left under --root")
    res.eq(bundlelib.processes_mentioning(root), [], "A: no process left")
    if IS_KVRUN:
        res.eq(sorted(os.listdir(rootfs)), ["bin", "data"], "A: the bundle's rootfs is not touched")


SCRIPT_B = r"""
echo "bash:${BASH_VERSINFO[0]}"
echo "cwd:$PWD"
[ -d /proc/self ] && echo "proc:yes"
[ -c /dev/null ] && echo "dev-null:yes"
[ -d /sys/kernel ] && echo "sys:yes"
read -r ns < /etc/resolv.conf; echo "resolv:$ns"
echo tmp > /tmp/x && echo "tmp:writable"
{ echo > /rootfile; } 2>/dev/null && echo "root:writable" || echo "root:read-only"
echo "to-stderr" >&2
echo "--- data"
exec cat
"""


def vm_b(tmp, env, res):
    b = os.path.join(tmp, "b")
    rootfs = os.path.join(b, "rootfs")
    bundlelib.dynamic_rootfs(rootfs, ["bash", "cat", "sha256sum"])
    resolv = os.path.join(tmp, "resolv-b.conf")
    with open(resolv, "w") as f:
        f.write(RESOLV)

    def mutate(spec):
        spec["process"]["args"] = ["/bin/bash", "-c", SCRIPT_B]
        spec["process"]["cwd"] = "/home/user"
        spec["root"]["readonly"] = True
        spec["hostname"] = "kvrun-bash"
        spec["mounts"] += [
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]},
            {"destination": "/etc/resolv.conf", "type": "bind", "source": resolv, "options": ["rbind", "ro"]},
        ]

    bundlelib.write_spec(KVRUN, b, mutate)
    before = sorted(os.listdir(rootfs))
    root = os.path.join(tmp, "root-b")
    data = os.urandom(1 << 20) * RUN_PIPE_MB
    p = rt(root, "--log", os.path.join(tmp, "b-log.txt"), "--debug", "run", "--bundle", b, "ctr-b", input=data,
           env=env, timeout=RUN_TIMEOUT)
    head, sep, body = p.stdout.partition(b"--- data\n")
    err = p.stderr.decode(errors="replace")
    res.ok(p.returncode == 0, "B: run of bash (dynamically linked) on a read-only root: exit 0",
           f"status {p.returncode}\nstdout: {p.stdout[:2000]!r}\nstderr: {err[-3000:]}")
    want = (f"bash:{subprocess.run(['bash', '-c', 'echo ${BASH_VERSINFO[0]}'], capture_output=True, text=True).stdout}"
            f"cwd:/home/user\nproc:yes\ndev-null:yes\nsys:yes\nresolv:{RESOLV}tmp:writable\nroot:read-only\n")
    res.eq(head.decode(errors="replace"), want, "B: mount points made for /proc /dev /sys /tmp /etc/resolv.conf, cwd")
    res.eq(err, "to-stderr\n", "B: stderr apart")
    res.ok(sep and hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest(),
           f"B: {RUN_PIPE_MB} MB through run's stdin to stdout: same sha256", f"{len(body)} bytes back")
    res.eq(os.listdir(root) if os.path.isdir(root) else [], [], "B: nothing left under --root")
    if IS_KVRUN:
        res.eq(sorted(os.listdir(rootfs)), before, "B: the bundle's rootfs is not touched")


def vm_c(tmp, env, res):
    """run of a binary the rootfs lacks: create fails (runc looks the
    binary up before create returns) with runc's status and message."""
    b = os.path.join(tmp, "c")
    bundlelib.busybox_rootfs(os.path.join(b, "rootfs"), ["sh"])
    bundlelib.write_spec(KVRUN, b, lambda s: s["process"].update(args=["/nope", "x"]))
    root = os.path.join(tmp, "root-c")
    p = rt(root, "--log", os.path.join(tmp, "c-log.txt"), "--debug", "run", "--bundle", b, "ctr-c",
           stdin=subprocess.DEVNULL, env=env, timeout=RUN_TIMEOUT)
    err = p.stderr.decode(errors="replace")
    msg = bundlelib.logrus_msg(err)
    want = 'unable to start container process: exec: "/nope": stat /nope: no such file or directory'
    res.ok(p.returncode == 1 and msg.endswith(want), "C: run of a missing binary: status 1 and runc's message",
           f"status {p.returncode}\nmessage: {msg!r}\nwant it to end with: {want!r}\nstderr: {err[-2000:]}")
    res.eq(p.stdout, b"", "C: nothing on stdout")
    res.eq(os.listdir(root) if os.path.isdir(root) else [], [], "C: nothing left under --root")
    res.eq(bundlelib.processes_mentioning(root), [], "C: no process left")


def main():
    t = Tap()
    if IS_KVRUN:
        kernel = os.environ.get("KVRUN_KERNEL")
        tried = [f"$KVRUN_KERNEL={kernel}"] if kernel else []
        if not kernel:
            kernel, tried = guestlib.find_kernel()
        if not kernel or not os.path.exists(kernel):
            t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
        if not os.access("/dev/kvm", os.R_OK | os.W_OK):
            t.skip_all("no usable /dev/kvm")
        if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
            t.skip_all("mke2fs (e2fsprogs) missing")
    if os.geteuid() != 0:
        t.skip_all("needs root (root-owned rootfs, uid switches)")
    if not os.path.exists(bundlelib.BUSYBOX):
        t.skip_all("busybox-static missing")
    for prog in ("bash", "cat", "sha256sum", "ldd"):
        if not shutil.which(prog):
            t.skip_all(f"{prog} missing")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as a shim
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    tmp = tempfile.mkdtemp(prefix="kvrun-spec-")
    env = dict(os.environ, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    if IS_KVRUN:
        env["KVRUN_KERNEL"] = os.path.abspath(kernel)
        env.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
        env.update(guestlib.suite_template(t, kernel).env)
    results = {"a": Results(), "b": Results(), "c": Results()}

    def guarded(f, key):
        try:
            f(tmp, dict(env, KVRUN_CONSOLE=os.path.join(tmp, f"{key}-console.log")), results[key])
        except Exception as e:  # one broken part must not hide the other
            results[key].ok(False, f"{key.upper()}: raised {e!r}")

    threads = [threading.Thread(target=guarded, args=(f, k)) for f, k in ((vm_a, "a"), (vm_b, "b"), (vm_c, "c"))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # After a timeout our monitors may still be booting: they are ours
    # (their command lines name our temporary directory), end them.
    left = bundlelib.processes_mentioning(tmp)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        results["a"].ok(False, f"processes left at the end (killed): {left}")
    for key in ("a", "b", "c"):
        root = os.path.join(tmp, f"root-{key}")
        if os.path.isdir(root):
            for cid in os.listdir(root):
                rt(root, "delete", "--force", cid, timeout=120)
    for key in ("a", "b", "c"):
        if IS_KVRUN:
            path = os.path.join(tmp, f"{key}-log.txt")
            guestlib.check_template_use(t, f"ctr-{key}", log=open(path, errors="replace").read()
                                        if os.path.exists(path) else "")
        for cond, what, diag, gap in results[key].items:
            if gap:
                t.todo(cond, what, gap, diag)
            else:
                t.ok(cond, what, diag)
    bundlelib.keep_or_remove(t, tmp, ("a-log.txt", "a-console.log", "b-log.txt", "b-console.log", "c-log.txt",
                                      "c-console.log"), 40)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
