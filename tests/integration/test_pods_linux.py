#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A pod in one Linux guest: the sandbox container (containerd's CRI
annotations) from the slow suite's VM template, then two app containers
created inside its VM (docs/runtime.md, "Pods"), as containerd's CRI makes
them: its annotations, the sandbox's network, IPC and UTS namespaces by
path, each app container's own busybox root directory.

- A runs busybox httpd on 127.0.0.1:8080 with a page of its own; B runs
  sleep, with the sandbox's hostname in its spec (as CRI-O makes app
  containers). Both bind one host directory (the pod's emptyDir): what A
  writes there B reads, and so does the host. An exec in B fetches http://127.0.0.1:8080/ with wget and gets
  A's page: localhost is the pod's.
- B sees the sandbox's hostname and IPC namespace, but its own mount
  namespace (A's page is not in B's root) and PID namespace (B's own
  sleep is pid 1 there).
- Each has its own host process (the pid in its state), no second VM.
- A writes into /dev/shm, B and the sandbox read it: the sandbox's shm
  directory (a host tmpfs bound at /dev/shm in all three, as containerd
  does) is one tmpfs of the pod in the guest.
- pause of B (its guest cgroup frozen): A still serves, exec in B is
  refused; resume; B's cpu limits updated into its guest cgroup (cpu.max,
  cpu.weight, cpuset.cpus read in B), CPUs the VM lacks refused; an OOM
  kill in B (dd's 64 MiB buffer under a 32 MiB limit) is B's oom event
  in `kvrun events`.
- kill (SIGKILL: its sleep is pid 1 of its namespace) of B stops B alone; A still serves; delete of each.
- Then $KVRUN_TEST_POD_ROW (3 by default) more app containers one after
  another, each with its root and a volume of its own (2 of the VM's 8
  shared directory slots): each copies a file of its root into its
  volume, is killed and deleted. With A's and B's 4 slots, 3 take 10 over
  the VM's life, so the third gets slots only if the ended containers'
  were freed as the guest unmounted them (guest-init at the member's end,
  DESTROY from Linux's driver when the tag's last mount goes); the sandbox's monitor has as many descriptors at the end as
  before them, and its log tells of each release.
- Then the sandbox's delete; nothing left.

Skips without a guest kernel, /dev/kvm, root, mke2fs or busybox."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import bundlelib
import guestlib
from taplib import Tap

# App containers in a row after A and B: 3 need slots A's, B's or their
# own predecessors' freed (4 + 3 x 2 > 8); CI keeps the default.
ROW = max(3, int(os.environ.get("KVRUN_TEST_POD_ROW", "3")))

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RUN_TIMEOUT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 600
APPLETS = ["sh", "cat", "echo", "ls", "sleep", "httpd", "wget", "hostname", "readlink", "ps", "mkdir", "test", "grep", "sync",
           "dd"]
RUN_ID = f"pod{os.getpid()}"
PAGE = "hello from app A\n"


def rt(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 600)
    return subprocess.run([KVRUN, "--root", root] + list(args), **kw)


def to_file(root, log, env, args, tmp, name, timeout=RUN_TIMEOUT):
    """A verb whose stdio the container may keep: output through a file."""
    out = os.path.join(tmp, f"{name}.out")
    with open(out, "wb") as so:
        p = rt(root, "--log", log, "--debug", *args, stdin=subprocess.DEVNULL, stdout=so, stderr=so,
               capture_output=False, env=env, timeout=timeout)
    with open(out, "rb") as f:
        p.stderr = f.read().decode(errors="replace")
    return p


def bind(dest, source):
    return {"destination": dest, "type": "bind", "source": source, "options": ["rbind", "rw"]}


def bundle(tmp, name, args, annotations, namespaces=None, hostname=None, files=None, mounts=()):
    b = os.path.join(tmp, name)
    rootfs = os.path.join(b, "rootfs")
    bundlelib.busybox_rootfs(rootfs, APPLETS, dirs=["www", "etc"])
    for rel, text in (files or {}).items():
        with open(os.path.join(rootfs, rel), "w") as f:
            f.write(text)

    def mutate(spec):
        spec["process"]["args"] = args
        spec["process"]["env"] = ["PATH=/bin"]
        spec["annotations"] = dict(spec.get("annotations", {}), **annotations)
        spec["mounts"] += list(mounts)
        if hostname:
            spec["hostname"] = hostname
        else:
            spec.pop("hostname", None)
        for typ, path in (namespaces or {}).items():
            spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != typ] + \
                [{"type": typ, "path": path}]

    bundlelib.write_spec(KVRUN, b, mutate)
    return b


def sh(root, tmp, cid, script, n=[0]):
    n[0] += 1
    path = os.path.join(tmp, f"process-{n[0]}.json")
    with open(path, "w") as f:
        json.dump({"terminal": False, "args": ["/bin/sh", "-c", script], "env": ["PATH=/bin"], "cwd": "/",
                   "user": {"uid": 0, "gid": 0}}, f)
    p = rt(root, "exec", "--process", path, cid, stdin=subprocess.DEVNULL, text=True)
    return p.returncode, p.stdout, p.stderr


def state(root, cid):
    p = rt(root, "state", cid, text=True, timeout=30)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


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
    tmp = tempfile.mkdtemp(prefix="kvrun-pods-linux-")
    root = os.path.join(tmp, "root")
    log = os.path.join(tmp, "kvrun-log.txt")
    env = dict(os.environ, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_CONFIG=os.path.join(tmp, "none.json"),
               KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CONSOLE=log + ".console")
    env.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
    env.update(guestlib.suite_template(t, kernel).env)
    sbx, a, b = f"{RUN_ID}-sbx", f"{RUN_ID}-a", f"{RUN_ID}-b"
    cri = {"io.kubernetes.cri.sandbox-id": sbx}
    try:
        run(t, tmp, root, log, env, sbx, a, b, cri)
    finally:
        for cid in (os.listdir(root) if os.path.isdir(root) else []):
            rt(root, "delete", "--force", cid, timeout=120)
        left = bundlelib.processes_mentioning(tmp)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if os.path.ismount(os.path.join(tmp, "sbx-shm")):
            subprocess.run(["umount", "-l", os.path.join(tmp, "sbx-shm")], capture_output=True)
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under --root")
    t.eq(left, [], "no process left")
    bundlelib.keep_or_remove(t, tmp, ("kvrun-log.txt", "kvrun-log.txt.console"), 60)
    t.done()


def run(t, tmp, root, log, env, sbx, a, b, cri):
    # containerd's: the sandbox's shm directory (a tmpfs) bound read-only at
    # the sandbox's /dev/shm and read-write at each app container's.
    shm = os.path.join(tmp, "sbx-shm")
    os.makedirs(shm)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=65536k", "kvt-pod-shm", shm], check=True)
    bs = bundle(tmp, "sbx", ["/bin/sleep", "1000000"], dict(cri, **{"io.kubernetes.cri.container-type": "sandbox"}),
                hostname="web-pod", mounts=[{"destination": "/dev/shm", "type": "bind", "source": shm,
                                             "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]}])
    p = to_file(root, log, env, ["run", "--detach", "--bundle", bs, sbx], tmp, "sbx")
    if not t.ok(p.returncode == 0, "the pod's sandbox runs", p.stderr[-3000:]):
        return
    mon = state(root, sbx).get("pid")
    fds0 = monitor_fds(mon)
    ns = {typ: f"/proc/{mon}/ns/{k}" for typ, k in (("network", "net"), ("ipc", "ipc"), ("uts", "uts"))}
    app = dict(cri, **{"io.kubernetes.cri.container-type": "container"})
    # The pod's emptyDir: one host directory both app containers bind.
    empty = os.path.join(tmp, "empty-dir")
    os.makedirs(empty)
    ba = bundle(tmp, "a", ["/bin/httpd", "-f", "-p", "127.0.0.1:8080", "-h", "/www"], app, ns,
                files={"www/index.html": PAGE}, mounts=[bind("/cache", empty), bind("/dev/shm", shm)])
    # B as CRI-O makes an app container: the pod's hostname in its spec.
    bb = bundle(tmp, "b", ["/bin/sleep", "1000000"], app, ns, hostname="web-pod",
                mounts=[bind("/shared", empty), bind("/dev/shm", shm)])
    for cid, bdl in ((a, ba), (b, bb)):
        p = to_file(root, log, env, ["create", "--bundle", bdl, cid], tmp, f"create-{cid}")
        if not t.ok(p.returncode == 0, f"app container {cid[-1]}: created in the pod's VM", p.stderr[-3000:]):
            return
        s = state(root, cid)
        t.ok(s.get("status") == "created" and s.get("pid", 0) > 0 and s.get("pid") != mon,
             f"app container {cid[-1]}: created, its own host process", json.dumps(s))
        p = rt(root, "start", cid, text=True)
        t.ok(p.returncode == 0 and state(root, cid).get("status") == "running", f"app container {cid[-1]}: started",
             p.stderr)
    t.eq(guestlib.jail_problems(mon), [], "the sandbox's monitor is jailed, with the app containers' shares")
    # httpd may take a moment to listen (the guest's kernel is slow here).
    out = ""
    for _ in range(30):
        rc, out, err = sh(root, tmp, b, "wget -q -O - http://127.0.0.1:8080/")
        if rc == 0:
            break
        time.sleep(2)
    t.eq(out, PAGE, "B fetches A's page from 127.0.0.1: the pod's localhost")
    rc, out, err = sh(root, tmp, a, "echo shm-from-a > /dev/shm/pod-note && echo done")
    t.ok((rc, out) == (0, "done\n"), "A writes into the pod's /dev/shm", f"{rc} {out!r} {err!r}")
    rc, out, err = sh(root, tmp, b, "cat /dev/shm/pod-note")
    t.eq(out, "shm-from-a\n", "B reads it: /dev/shm is the pod's, as under runc")
    rc, out, err = sh(root, tmp, sbx, "cat /dev/shm/pod-note")
    t.eq(out, "shm-from-a\n", "the sandbox's /dev/shm is the same")
    rc, out, err = sh(root, tmp, a, "echo from-a > /cache/note && sync && echo done")
    t.ok((rc, out) == (0, "done\n"), "A writes to the pod's emptyDir", f"{rc} {out!r} {err!r}")
    time.sleep(1.5)  # the guest caches entries for 1 s (docs/virtio-fs.md)
    rc, out, err = sh(root, tmp, b, "cat /shared/note")
    t.ok((rc, out) == (0, "from-a\n"), "B reads it from the same emptyDir", f"{rc} {out!r} {err!r}")
    t.ok(open(os.path.join(empty, "note")).read() == "from-a\n" if os.path.exists(os.path.join(empty, "note"))
         else False, "the host's directory holds it")
    rc, out, err = sh(root, tmp, b, "hostname")
    t.ok((rc, out) == (0, "web-pod\n"), "B has the sandbox's hostname (its UTS namespace)", f"{rc} {out!r} {err!r}")
    script = "for n in ipc mnt pid; do readlink /proc/self/ns/$n; done"
    rc, ns_b, err = sh(root, tmp, b, script)
    rc, ns_s, err2 = sh(root, tmp, sbx, script)
    lb, ls = ns_b.split(), ns_s.split()
    if t.ok(len(lb) == 3 and len(ls) == 3, "namespaces read in B and in the sandbox", ns_b + ns_s + err + err2):
        t.eq(lb[0], ls[0], "B is in the sandbox's IPC namespace")
        t.ok(lb[1] != ls[1], "B has a mount namespace of its own", f"{lb[1]} {ls[1]}")
        t.ok(lb[2] != ls[2], "B has a PID namespace of its own", f"{lb[2]} {ls[2]}")
    rc, out, err = sh(root, tmp, b, "cat /www/index.html 2>&1; ps -o pid,args | grep -w 'sleep 1000000' | "
                                    "grep -v grep")
    t.ok(PAGE not in out and out.split("\n")[-2].split()[0] == "1",
         "B's root is its own (no A's page), and its sleep is pid 1 of its namespace", out + err)
    p = rt(root, "ps", b, text=True)
    t.ok(p.returncode == 0 and "sleep 1000000" in p.stdout and "httpd" not in p.stdout,
         "kvrun ps of B lists B's processes only", p.stdout + p.stderr)
    pause_and_cpu(t, root, tmp, a, b)
    oom_event(t, root, tmp, b)
    # sleep, pid 1 of its namespace, has no handler: only SIGKILL ends it
    # (as under runc).
    p = rt(root, "kill", b, "KILL", text=True)
    ended = p.returncode == 0
    for _ in range(60):
        if state(root, b).get("status") == "stopped":
            break
        time.sleep(1)
    t.ok(ended and state(root, b).get("status") == "stopped", "kill KILL of B stops it", p.stderr)
    rc, out, err = sh(root, tmp, a, "wget -q -O - http://127.0.0.1:8080/")
    t.eq(out, PAGE, "A still serves after B's end")
    t.eq(rt(root, "delete", b).returncode, 0, "delete of B")
    t.eq(rt(root, "delete", "--force", a).returncode, 0, "delete --force of A")
    t.ok(state(root, sbx).get("status") == "running", "the sandbox runs on", json.dumps(state(root, sbx)))
    sequential(t, tmp, root, log, env, mon, app, ns, fds0)
    t.ok(state(root, sbx).get("status") == "running", "the sandbox runs on", json.dumps(state(root, sbx)))
    t.eq(rt(root, "delete", "--force", sbx).returncode, 0, "delete --force of the sandbox")


def pause_and_cpu(t, root, tmp, a, b):
    """B paused (its guest cgroup frozen) while A serves on; resumed; its
    cpu limits in its guest cgroup."""
    p = rt(root, "pause", b, text=True)
    t.ok(p.returncode == 0 and state(root, b).get("status") == "paused", "pause of B: paused",
         p.stderr + json.dumps(state(root, b)))
    rc, out, err = sh(root, tmp, a, "wget -q -O - http://127.0.0.1:8080/")
    t.eq(out, PAGE, "A still serves while B is paused")
    rc, out, err = sh(root, tmp, b, "echo hi")
    t.ok(rc != 0 and "paused" in err, "exec in paused B refused", f"{rc} {out!r} {err!r}")
    p = rt(root, "resume", b, text=True)
    t.ok(p.returncode == 0 and state(root, b).get("status") == "running", "resume of B: running", p.stderr)
    rc, out, err = sh(root, tmp, b, "echo hi")
    t.eq(out, "hi\n", "B runs again after its resume")
    p = rt(root, "update", "--cpu-quota", "20000", "--cpu-period", "100000", "--cpu-share", "512",
           "--cpuset-cpus", "0", b, text=True)
    t.ok(p.returncode == 0, "update of B's cpu limits", p.stderr)
    # Its guest cgroup: /sys/fs/cgroup plus the path /proc/self/cgroup
    # names (B has no cgroup namespace of its own here).
    rc, out, err = sh(root, tmp, b, "cg=$(cat /proc/self/cgroup); cg=/sys/fs/cgroup${cg#0::}; "
                                    "cat $cg/cpu.max $cg/cpu.weight $cg/cpuset.cpus; echo $cg")
    t.ok(out.split("\n")[:3] == ["20000 100000", "20", "0"],
         "B's guest cgroup has cpu.max, cpu.weight (runc's conversion of 512 shares) and cpuset.cpus",
         f"{rc} {out!r} {err!r}")
    p = rt(root, "update", "--cpuset-cpus", "0-63", b, text=True)
    t.ok(p.returncode != 0 and "not in the pod's VM" in p.stderr, "cpus the VM lacks refused", p.stderr)


def oom_event(t, root, tmp, b):
    """An OOM kill in B's guest cgroup (dd with a 64 MiB buffer under a
    32 MiB limit, B's cpu quota lifted first) is B's oom event in
    `kvrun events B`."""
    path = os.path.join(tmp, "events-b.out")
    with open(path, "w") as out:
        ev = subprocess.Popen([KVRUN, "--root", root, "events", "--interval", "1s", b], stdout=out,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        p = rt(root, "update", "--memory", "32m", "--cpu-quota", "-1", b, text=True)
        t.ok(p.returncode == 0, "update of B's memory limit to 32 MiB (and no cpu quota)", p.stderr)
        rc, out, err = sh(root, tmp, b, "dd if=/dev/zero of=/dev/null bs=64M count=1")
        t.ok(rc == 128 + 9 or rc == -9, "a process of B past its limit is killed by the OOM killer",
             f"{rc} {err[-500:]!r}")
        want = '{"type":"oom","id":"%s"}' % b
        for _ in range(30):
            with open(path) as f:
                got = f.read()
            if want in got:
                break
            time.sleep(1)
        t.ok(want in got, "kvrun events of B prints its oom event", got[-1500:])
    finally:
        ev.terminate()
        ev.wait()


def monitor_fds(pid):
    try:
        return sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return []


def sequential(t, tmp, root, log, env, mon, app, ns, fds0):
    """More app containers than the VM has slots, one after another;
    fds0: the monitor's descriptors before any app container."""
    with open(log, errors="replace") as f:
        mark = len(f.read())
    ran = 0
    for i in range(ROW):
        cid = f"{RUN_ID}-seq{i}"
        vol = os.path.join(tmp, f"vol{i}")
        os.makedirs(vol)
        bdl = bundle(tmp, f"seq{i}", ["/bin/sh", "-c", "cat /msg > /vol/copied && sync && exec sleep 1000000"],
                     app, ns, files={"msg": f"root of app container {i}\n"}, mounts=[bind("/vol", vol)])
        p = to_file(root, log, env, ["create", "--bundle", bdl, cid], tmp, f"create-{cid}")
        if not t.ok(p.returncode == 0, f"app container {i} of {ROW} in a row: created", p.stderr[-3000:]):
            break
        p = rt(root, "start", cid, text=True)
        copied = os.path.join(vol, "copied")
        want = f"root of app container {i}\n"
        got = None
        for _ in range(120):
            got = open(copied).read() if os.path.exists(copied) else None
            if p.returncode != 0 or got == want:
                break
            time.sleep(1)
        t.eq(got, want, f"app container {i}: its root's file copied into its own volume")
        good = rt(root, "kill", cid, "KILL").returncode == 0
        for _ in range(60):
            if state(root, cid).get("status") == "stopped":
                break
            time.sleep(1)
        good = good and state(root, cid).get("status") == "stopped" and rt(root, "delete", cid).returncode == 0
        ran += t.ok(good and not state(root, cid), f"app container {i}: killed and deleted")
    t.eq(ran, ROW, f"{ROW} app containers of 2 slots each, one after another, after A and B, in a VM of 8 slots")
    now = None
    for _ in range(60):
        now = monitor_fds(mon)
        if len(now) == len(fds0):
            break
        time.sleep(1)
    t.ok(len(now) == len(fds0), f"the sandbox's monitor has as many descriptors as before the app containers "
         f"({len(now)}, {len(fds0)}): every server closed", "\n".join(sorted(set(now) - set(fds0))))
    with open(log, errors="replace") as f:
        lines = f.read()[mark:]
    released = lines.count("released: its app container ended and the guest unmounted it")
    # Each of the row's 2 slots (A's and B's may be released before the
    # mark or after it).
    t.ok(released >= 2 * ROW, f"the monitor's log tells of each slot's release ({released}, at least {2 * ROW})")


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
