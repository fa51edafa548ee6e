#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The config.json fields and create flags that guest-init applies, in real
guests: three VMs side by side, each restored from the slow suite's VM
template (guestlib.suite_template(); each container's --log says so).

A. `run --detach --preserve-fds 2 --pidfd-socket S` of a container with
   linux.devices (/dev/fuse with its mode and owner, /dev/kmsg),
   linux.resources.devices as podman writes them for --device /dev/fuse
   (deny all, allow the device; runc's defaults after them), a pids limit,
   a unified value and a hugetlb limit (in the container's own cgroup, seen
   through its cgroup namespace), personality LINUX32, a scheduler and an
   I/O priority. Checked by execs: the nodes, what the device filter allows
   and refuses, the cgroup files, uname -m, /proc/1/stat, ionice; fd 3 (a
   host file) read by the container, fd 4 (a host file) written by it; the
   pidfd received on the socket (payload "standard") is the monitor's, the
   pid `state` reports.
B. `run` of a container in a user namespace (0 -> 100000, 65536 ids) whose
   rootfs is owned by the mapped ids, as runc expects it: the maps, root
   inside, the files root's, /dev/null usable, a tmpfs writable, sysfs.
C. `run` with a linux.devices entry the VM's kernel does not have
   (/dev/kvm): create fails naming it, nothing left behind.

KVRUN_TEST_RUNTIME=runc runs A and B with runc on the host, to check the
expectations against the reference runtime (the checks that are about the
VM, its cgroup v2 and C, are kvrun's only; the TAP lines say so).
Skips without a guest kernel, /dev/kvm, root, mke2fs or busybox.
"""
import array
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import bundlelib
import guestlib
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RUNTIME = os.environ.get("KVRUN_TEST_RUNTIME") or KVRUN
IS_KVRUN = os.path.basename(RUNTIME) == "kvrun"
RUN_TIMEOUT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 600
APPLETS = ["sh", "sleep", "cat", "echo", "id", "stat", "uname", "ionice", "cut", "head", "touch", "ls", "hostname",
           "mknod", "grep", "wc"]
FD3_DATA = "preserved-data-for-fd-3\n"


class Results:
    def __init__(self):
        self.items = []

    def ok(self, cond, what, diag=None):
        self.items.append((bool(cond), what, diag))
        return bool(cond)

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}")


def rt(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([RUNTIME, "--root", root] + list(args), **kw)


def exec_sh(root, cid, script, timeout=600):
    # mknod needs CAP_MKNOD; /dev/fuse (0600) is its owner's.
    flags = ["--cap", "CAP_MKNOD"] if "mknod" in script else ["--user", "1:2"] if "/dev/fuse &&" in script else []
    p = rt(root, "exec", *flags, cid, "/bin/sh", "-c", script, stdin=subprocess.DEVNULL, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def spec_a(spec):
    p = spec["process"]
    p["args"] = ["/bin/sh", "-c", "cat <&3 > /tmp/fd3; echo written-by-the-container >&4; exec sleep 1000000"]
    p["scheduler"] = {"policy": "SCHED_BATCH", "nice": 3}
    p["ioPriority"] = {"class": "IOPRIO_CLASS_IDLE", "priority": 0}
    spec["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]})
    lx = spec["linux"]
    lx["namespaces"].append({"type": "cgroup"})
    lx["personality"] = {"domain": "LINUX32"}
    lx["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229, "fileMode": 0o20600, "uid": 1,
                      "gid": 2},
                     {"path": "/dev/kmsg", "type": "c", "major": 1, "minor": 11, "fileMode": 0o644}]
    lx["resources"] = {"devices": [{"allow": False, "access": "rwm"},
                                   {"allow": True, "type": "c", "major": 10, "minor": 229, "access": "rwm"}],
                       "pids": {"limit": 64}}
    if IS_KVRUN:  # runc: no unified on a cgroup v1 host, no hugetlb hierarchy here
        lx["resources"]["unified"] = {"memory.high": "200000000"}
        lx["resources"]["hugepageLimits"] = [{"pageSize": "2MB", "limit": 0}]


def checks_a():
    """(name, script, expected stdout, kvrun only)"""
    return [
        ("linux.devices: /dev/fuse with its mode and owner", "stat -c '%A %t:%T %u:%g' /dev/fuse",
         "crw------- a:e5 1:2\n", False),
        ("linux.devices: /dev/kmsg", "stat -c '%A %t:%T' /dev/kmsg", "crw-r--r-- 1:b\n", False),
        ("device rules: the allowed device opens (for its owner)", "head -c 0 /dev/fuse && echo opened", "opened\n",
         False),
        ("device rules: a device made but not allowed does not", "head -c 1 /dev/kmsg 2>&1 | grep -c 'not permitted'",
         "1\n", False),
        ("device rules: runc's defaults (null, zero)", "echo x > /dev/null && head -c 3 /dev/zero | wc -c", "3\n",
         False),
        ("device rules: mknod of anything (with CAP_MKNOD), its use only if allowed",
         "mknod /tmp/mem c 1 1 && head -c 1 /tmp/mem 2>&1 | grep -c 'not permitted'", "1\n", False),
        ("pids limit in the container's cgroup at create", "cat /sys/fs/cgroup/pids.max", "64\n", True),
        ("unified value in the container's cgroup", "cat /sys/fs/cgroup/memory.high", "199999488\n", True),
        ("hugetlb limit in the container's cgroup", "cat /sys/fs/cgroup/hugetlb.2MB.max", "0\n", True),
        ("cgroup namespace: the container's cgroup is its root", "cat /proc/self/cgroup", "0::/\n", True),
        # runc applies these from 1.2 on (1.1 ignores them).
        ("personality LINUX32", "uname -m", "i686\n", True),
        ("scheduler: SCHED_BATCH, nice 3", "cut -d' ' -f19,41 /proc/1/stat", "3 3\n", True),
        ("I/O priority: idle", "ionice -p 1", "idle\n", True),
        ("--preserve-fds: fd 3 read by the container", "cat /tmp/fd3", FD3_DATA, False),
    ]


def recv_pidfd(srv, res):
    """The one message --pidfd-socket gets: (payload, pid of the fd)."""
    try:
        conn, _ = srv.accept()
    except OSError as e:
        res.ok(False, f"--pidfd-socket: nothing connected ({e})")
        return None, None
    fds = array.array("i")
    msg, anc, _, _ = conn.recvmsg(64, socket.CMSG_SPACE(4 * fds.itemsize))
    conn.close()
    for level, ctype, data in anc:
        if level == socket.SOL_SOCKET and ctype == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    pid = None
    if len(fds) == 1:
        with open(f"/proc/self/fdinfo/{fds[0]}") as f:
            pid = next((int(line.split()[1]) for line in f if line.startswith("Pid:")), None)
        os.close(fds[0])
    res.ok(len(fds) == 1, "--pidfd-socket: one fd in one message", f"{len(anc)} control messages, {len(fds)} fds")
    return msg.decode(errors="replace"), pid


def vm_a(tmp, env, res):
    b = os.path.join(tmp, "a")
    bundlelib.busybox_rootfs(os.path.join(b, "rootfs"), APPLETS)
    bundlelib.write_spec(KVRUN, b, spec_a)
    root = os.path.join(tmp, "root-a")
    fd3, fd4 = os.path.join(tmp, "fd3"), os.path.join(tmp, "fd4")
    with open(fd3, "w") as f:
        f.write(FD3_DATA)
    sock_path = os.path.join(tmp, "pidfd.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    srv.settimeout(RUN_TIMEOUT)
    got = {}
    # runc has --pidfd-socket from 1.2 on.
    pidfd = IS_KVRUN or "pidfd-socket" in subprocess.run([RUNTIME, "create", "--help"], capture_output=True,
                                                          text=True).stdout
    th = threading.Thread(target=lambda: got.update(zip(("msg", "pid"), recv_pidfd(srv, res))), daemon=True)
    if pidfd:
        th.start()
    log = os.path.join(tmp, "a-log.txt")
    cmd = (f"exec '{RUNTIME}' --root '{root}' --log '{log}' --debug run --detach --preserve-fds 2 "
           + (f"--pidfd-socket '{sock_path}' " if pidfd else "") + f"--bundle '{b}' ctr-a 3<'{fd3}' 4>'{fd4}'")
    # Detached, the container keeps run's stdio: a file, not a pipe to wait on.
    out_path = os.path.join(tmp, "a.out")
    with open(out_path, "wb") as so:
        p = subprocess.run(["sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=env,
                           timeout=RUN_TIMEOUT)
    if pidfd:
        th.join(30 if p.returncode == 0 else 0)
    srv.close()
    with open(out_path, errors="replace") as f:
        if not res.ok(p.returncode == 0, "A: run --detach --preserve-fds 2" + (" --pidfd-socket" if pidfd else ""),
                      f.read()[-3000:]):
            return
    state = json.loads(rt(root, "state", "ctr-a").stdout or b"{}")
    if pidfd:
        res.eq((got.get("msg"), got.get("pid")), ("standard", state.get("pid")),
               "A: --pidfd-socket: payload \"standard\", the pid is the container's (state's pid)")
    for name, script, want, kvrun_only in checks_a():
        if kvrun_only and not IS_KVRUN:
            continue
        status, out, err = exec_sh(root, "ctr-a", script)
        res.ok(status == 0 and out == want, f"A: {name}",
               f"status {status}\nstdout: {out!r}\nwant:   {want!r}\nstderr: {err[-800:]!r}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and os.path.getsize(fd4) == 0:
        time.sleep(0.5)
    with open(fd4) as f:
        res.eq(f.read(), "written-by-the-container\n", "A: --preserve-fds: fd 4 written by the container")
    p = rt(root, "delete", "--force", "ctr-a", timeout=120)
    res.ok(p.returncode == 0, "A: delete --force", p.stderr)
    res.eq(os.listdir(root) if os.path.isdir(root) else [], [], "A: nothing left under --root")


SCRIPT_B = """
echo map=$(cat /proc/self/uid_map)
echo gmap=$(cat /proc/self/gid_map)
echo id=$(id -u):$(id -g)
echo owner=$(stat -c %u:%g /bin/busybox)
echo x > /dev/null && echo null=ok
touch /tmp/x && echo tmp=ok
ls /sys/class > /dev/null && echo sys=ok
echo host=$(hostname)
"""


def vm_b(tmp, env, res):
    b = os.path.join(tmp, "b")
    rootfs = os.path.join(b, "rootfs")
    bundlelib.busybox_rootfs(rootfs, APPLETS, dirs=["tmp", "proc", "sys", "dev"])

    def mutate(spec):
        spec["process"]["args"] = ["/bin/sh", "-c", SCRIPT_B]
        spec["hostname"] = "userns"
        spec["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]})
        lx = spec["linux"]
        lx["namespaces"].append({"type": "user"})
        lx["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
        lx["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]

    bundlelib.write_spec(KVRUN, b, mutate)
    # runc expects the rootfs owned by the mapped ids already.
    subprocess.run(["chown", "-hR", "100000:100000", rootfs], check=True)
    root = os.path.join(tmp, "root-b")
    p = rt(root, "--log", os.path.join(tmp, "b-log.txt"), "--debug", "run", "--bundle", b, "ctr-b",
           stdin=subprocess.DEVNULL, env=env, timeout=RUN_TIMEOUT)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    want = ("map= 0 100000 65536\ngmap= 0 100000 65536\nid=0:0\nowner=0:0\nnull=ok\ntmp=ok\nsys=ok\nhost=userns\n")
    res.ok(p.returncode == 0 and out == want, "B: a user namespace over a mapped rootfs",
           f"status {p.returncode}\nstdout: {out!r}\nwant:   {want!r}\nstderr: {err[-2000:]}")
    res.eq(os.listdir(root) if os.path.isdir(root) else [], [], "B: nothing left under --root")


def vm_c(tmp, env, res):
    b = os.path.join(tmp, "c")
    bundlelib.busybox_rootfs(os.path.join(b, "rootfs"), ["sh"])

    def mutate(spec):
        spec["process"]["args"] = ["/bin/sh", "-c", "echo ran"]
        spec["linux"]["devices"] = [{"path": "/dev/kvm", "type": "c", "major": 10, "minor": 232}]

    bundlelib.write_spec(KVRUN, b, mutate)
    root = os.path.join(tmp, "root-c")
    p = rt(root, "--log", os.path.join(tmp, "c-log.txt"), "--debug", "run", "--bundle", b, "ctr-c",
           stdin=subprocess.DEVNULL, env=env, timeout=RUN_TIMEOUT)
    err = p.stderr.decode(errors="replace")
    res.ok(p.returncode != 0 and "linux.devices[0] (/dev/kvm, c 10:232): the VM's kernel has no such device" in err
           and b"ran" not in p.stdout, "C: a device the VM's kernel lacks is refused by name", err[-2000:])
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
        t.skip_all("needs root (device nodes, id mappings)")
    if not os.path.exists(bundlelib.BUSYBOX):
        t.skip_all("busybox-static missing")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as a shim
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    tmp = tempfile.mkdtemp(prefix="kvrun-fields-vm-")
    os.chmod(tmp, 0o755)  # a user namespace's root passes (runc binds the rootfs in place)
    env = dict(os.environ, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    parts = [(vm_a, "a"), (vm_b, "b")] + ([(vm_c, "c")] if IS_KVRUN else [])
    if IS_KVRUN:
        env["KVRUN_KERNEL"] = os.path.abspath(kernel)
        env.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
        env.update(guestlib.suite_template(t, kernel).env)
    else:
        t.diag("runc on the host: the checks about the VM (its cgroup v2, C) are kvrun's only")
    results = {k: Results() for _, k in parts}

    def guarded(f, key):
        try:
            f(tmp, dict(env, KVRUN_CONSOLE=os.path.join(tmp, f"{key}-console.log")), results[key])
        except Exception as e:  # one broken part must not hide the others
            results[key].ok(False, f"{key.upper()}: raised {e!r}")

    threads = [threading.Thread(target=guarded, args=p) for p in parts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    left = bundlelib.processes_mentioning(tmp)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for _, key in parts:
        root = os.path.join(tmp, f"root-{key}")
        if os.path.isdir(root):
            for cid in os.listdir(root):
                rt(root, "delete", "--force", cid, timeout=120)
        if IS_KVRUN:
            path = os.path.join(tmp, f"{key}-log.txt")
            guestlib.check_template_use(t, f"ctr-{key}", log=open(path, errors="replace").read()
                                        if os.path.exists(path) else "")
        for cond, what, diag in results[key].items:
            t.ok(cond, what, diag)
    t.ok(not left, "no process left at the end", f"killed: {left}")
    bundlelib.keep_or_remove(t, tmp, tuple(f"{k}-{n}" for _, k in parts for n in ("log.txt", "console.log")), 40)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
