#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Containers created, started and deleted in parallel, nothing leaked.

Ten containers on a host with hardware KVM (vmx/svm in /proc/cpuinfo),
where a boot takes well under a second; three on an emulating host (a
nested kvm_pvm host where a Linux guest needs minutes), which still
races every create, start and delete --force against the others. The TAP
output says which. Each container has its own cgroupsPath; all creates run
at once, then all starts, then all `delete --force` of the running
containers. Afterwards: --root is empty, no process mentions it, no cgroup
is left, no mount under it, no new network interface or named network
namespace on the host, and each monitor died by SIGKILL.

Skips without a guest kernel, /dev/kvm, root, mke2fs or busybox."""
import ctypes
import json
import os
import shutil
import subprocess
import tempfile
import threading

import guestlib
from bundlelib import processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
CGROOT = "/kvrun-test-parallel"
BOOT_WAIT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 120


def kv(root, *args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    return subprocess.run([KVRUN, "--root", root] + list(args), **kw)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def make_bundle(tmp, cid):
    b = os.path.join(tmp, "b-" + cid)
    rootfs = os.path.join(b, "rootfs")
    for d in ["bin", "proc", "sys", "dev", "tmp"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in ["sh", "echo", "sleep"]:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/sh", "-c", f"echo up-{cid}; sleep 1000"]
    spec["linux"]["cgroupsPath"] = f"{CGROOT}/{cid}"
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def parallel(fn, items):
    results = {}

    def one(i):
        try:
            results[i] = fn(i)
        except Exception as e:  # reported by the caller's checks
            results[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in items]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def cgroup_dirs(path):
    return [os.path.join("/sys/fs/cgroup", h) + path for h in os.listdir("/sys/fs/cgroup")
            if os.path.isdir(os.path.join("/sys/fs/cgroup", h) + path)] + \
        ([path] if os.path.isdir("/sys/fs/cgroup" + path) and os.path.exists("/sys/fs/cgroup/cgroup.controllers")
         else [])


def links():
    return set(os.listdir("/sys/class/net"))


def netns_names():
    return set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()


def main():
    t = Tap()
    kernel = os.environ.get("KVRUN_KERNEL")
    tried = [f"$KVRUN_KERNEL={kernel}"] if kernel else []
    if not kernel:
        kernel, tried = guestlib.find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if guestlib.kvm_problem():
        t.skip_all(f"needs /dev/kvm: {guestlib.kvm_problem()}")
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    kind = guestlib.host_kind()
    n = 10 if kind == "native" else 3
    t.diag(f"host kind {kind}: {n} containers in parallel (10 on hardware KVM, 3 where guest kernels are emulated)")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as the shim
    tmp = tempfile.mkdtemp(prefix="kvrun-par-")
    os.environ.update(KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
                      KVRUN_CONFIG=os.path.join(tmp, "none.json"))
    os.environ.setdefault("KVRUN_BOOT_TIMEOUT", "1300")
    os.environ.update(guestlib.suite_template(t, kernel).env)
    root = os.path.join(tmp, "root")
    ids = [f"par-{i}" for i in range(n)]
    bundles = {cid: make_bundle(tmp, cid) for cid in ids}
    links_before, netns_before = links(), netns_names()

    def create(cid):
        with open(os.path.join(tmp, cid + ".out"), "wb") as out:
            return kv(root, "create", "--bundle", bundles[cid], "--pid-file", os.path.join(tmp, cid + ".pid"), cid,
                      stdin=subprocess.DEVNULL, stdout=out, stderr=out, capture_output=False, timeout=BOOT_WAIT)

    res = parallel(create, ids)
    created = [cid for cid in ids if getattr(res[cid], "returncode", 1) == 0]
    t.eq(len(created), n, f"{n} creates in parallel succeed",)
    for cid in ids:
        if cid not in created:
            t.diag(f"{cid}: {res[cid]!r} {read(os.path.join(tmp, cid + '.out'))[-800:]}")
    pids = {cid: int(read(os.path.join(tmp, cid + ".pid")) or 0) for cid in created}
    for cid in created:
        guestlib.check_template_use(t, cid, pid=pids[cid])
    states = {cid: json.loads(kv(root, "state", cid).stdout or "{}") for cid in created}
    t.ok(all(states[c].get("status") == "created" and states[c].get("pid") == pids[c] for c in created),
         "each is created, with its own monitor's pid", states)
    t.eq(len(set(pids.values())), len(created), "every container has its own monitor")
    listed = kv(root, "list", "--format", "json")
    t.eq(sorted(c["id"] for c in json.loads(listed.stdout or "[]")), sorted(created), "list shows all of them")
    res = parallel(lambda cid: kv(root, "start", cid), created)
    t.ok(all(res[c].returncode == 0 for c in created), f"{len(created)} starts in parallel succeed",
         {c: getattr(res[c], "stderr", res[c]) for c in created})
    ran = [c for c in created if f"up-{c}" in read(os.path.join(tmp, c + ".out"))]
    for _ in range(240):
        if len(ran) == len(created):
            break
        threading.Event().wait(1)
        ran = [c for c in created if f"up-{c}" in read(os.path.join(tmp, c + ".out"))]
    t.eq(sorted(ran), sorted(created), "each container's process runs and writes to its own stdout")
    res = parallel(lambda cid: kv(root, "delete", "--force", cid), created)
    t.ok(all(res[c].returncode == 0 for c in created), f"{len(created)} delete --force in parallel succeed",
         {c: getattr(res[c], "stderr", res[c]) for c in created})
    statuses = {}
    for cid, pid in pids.items():
        try:
            _, st = os.waitpid(pid, 0)
            statuses[cid] = os.WTERMSIG(st) if os.WIFSIGNALED(st) else f"exit {os.WEXITSTATUS(st)}"
        except ChildProcessError as e:
            statuses[cid] = str(e)
    t.ok(all(v == 9 for v in statuses.values()), "each monitor died by SIGKILL", statuses)
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under --root")
    t.eq(processes_mentioning(root), [], "no process left")
    t.eq([d for cid in ids for d in cgroup_dirs(f"{CGROOT}/{cid}")], [], "no cgroup left")
    t.eq([line for line in read("/proc/self/mountinfo").splitlines() if tmp in line], [], "no mount left")
    t.eq(sorted(links() - links_before), [], "no network interface left on the host")
    t.eq(sorted(netns_names() - netns_before), [], "no named network namespace left")
    for d in cgroup_dirs(CGROOT):
        try:
            os.rmdir(d)
        except OSError:
            pass
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
