#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Churn without leaks, on Linux guests restored from a VM template with
one network device (the slow suite's, guestlib.suite_template(nics=1),
shared with the engines tests: one cold boot per build tree):

- sequential cycles: create, start, exec, delete --force of a container
  in a network namespace with a veth;
- parallel batches: cycles at once, each in its own namespace;
- after each batch a census (censuslib.py) must equal the one taken
  before: no process naming the containers, nothing under --root, no new
  file in the cache, no TAP, ingress qdisc or alias in the namespaces and
  their addresses and default routes back, no cgroup, no mount, none of
  our fds; and a long-lived container that gets one exec per batch keeps
  as many fds open in its monitor;
- kill -9 with a Linux guest: the creator while the VM restores, the
  monitor before it reports, the exec's CLI while its process runs, the
  delete's CLI in the middle of the teardown; then delete --force, and
  the census again;
- inside the guest, socket(AF_VSOCK) fails with EPERM for the container's
  processes, and works with the annotation io.kvrun.vsock=allow (a small
  static program built here with cc; skipped without one).

It runs in the slow suite, in CI, on a host where the guest's own work is
emulated; its default size fits CI's budget there: 2 sequential cycles and
one parallel batch of 3 (about 2 minutes, and some 100 s more to build the
one-NIC template when it is the first to need it: docs/testing.md). $KVRUN_CHURN_CYCLES,
$KVRUN_CHURN_BATCHES and $KVRUN_CHURN_WIDTH (2 at least) set it (the full
size, on a host with hardware KVM: KVRUN_CHURN_CYCLES=1000
KVRUN_CHURN_BATCHES=100 KVRUN_CHURN_WIDTH=10, census every
$KVRUN_CHURN_EVERY cycles, 50 by default). Times per cycle and per part are
TAP diagnostics. A failed cycle prints the end of its guest's console.

Skips without a guest kernel, /dev/kvm, root, mke2fs, busybox, ip or tc."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import guestlib
import netlib
from bundlelib import processes_mentioning, wait_for
from censuslib import Census, cgroup_dirs
from netlib import sh
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
CYCLES = int(os.environ.get("KVRUN_CHURN_CYCLES", "2"))
BATCHES = int(os.environ.get("KVRUN_CHURN_BATCHES", "1"))
EVERY = int(os.environ.get("KVRUN_CHURN_EVERY", "50"))
WIDTH = int(os.environ.get("KVRUN_CHURN_WIDTH", "3"))
TAG = f"ch{os.getpid()}"
CGROUP = f"/kvt-churn-{os.getpid()}"
BOOT_WAIT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300")) + 300

VSOCK_PROBE = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
int main(void)
{
	int fd = socket(40 /* AF_VSOCK */, SOCK_STREAM, 0);
	printf("vsock:%s\n", fd >= 0 ? "open" : strerror(errno));
	return 0;
}
"""

t = Tap()
if WIDTH < 2:
    t.ok(False, f"KVRUN_CHURN_WIDTH={WIDTH}: at least 2 (the kill -9 sample takes the second batch's bundle)")
    t.done()
kernel, tried = guestlib.find_kernel()
if not kernel:
    t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
if os.geteuid() != 0:
    t.skip_all("needs root (the rootfs keeps root-owned files, cgroups, network namespaces)")
if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
    t.skip_all("mke2fs (e2fsprogs) missing")
if not os.path.exists(BUSYBOX):
    t.skip_all("busybox-static missing")
why = netlib.skip_reason()
if why:
    t.skip_all(why)

tmp = tempfile.mkdtemp(prefix="kvrun-test-churn-")
root, cache = (os.path.join(tmp, d) for d in ("root", "cache"))
log = os.path.join(tmp, "kvrun.log")
ENV = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=cache,
           KVRUN_CONFIG=os.path.join(tmp, "none.json"))
ENV.pop("KVRUN_TEMPLATES", None)
probe = None
if shutil.which("cc"):
    with open(os.path.join(tmp, "probe.c"), "w") as f:
        f.write(VSOCK_PROBE)
    if subprocess.run(["cc", "-static", "-O2", "-o", os.path.join(tmp, "vsock-probe"), os.path.join(tmp, "probe.c")],
                      capture_output=True).returncode == 0:
        probe = os.path.join(tmp, "vsock-probe")


def kvrun(*args, env=ENV, timeout=BOOT_WAIT):
    """Output through files: a create's stdio stays open as long as its
    container."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.run([KVRUN, "--root", root, "--log", log] + list(args), stdout=out, stderr=err,
                               env=env, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, None, "", f"(timed out after {timeout} s)")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(args, p.returncode, out.read(), err.read())


def shared_rootfs():
    """One root directory for every bundle: one root disk in the cache,
    made by the first cycle (a census then sees no new cache file)."""
    rootfs = os.path.join(tmp, "rootfs")
    if os.path.isdir(rootfs):
        return rootfs
    for d in ["bin", "proc", "sys", "dev", "tmp"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in ["sh", "echo", "sleep", "true"]:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    if probe:
        shutil.copy(probe, os.path.join(rootfs, "bin", "vsock-probe"))
    return rootfs


def make_bundle(name, netns, args, cgroup=None, annotations=None):
    b = os.path.join(tmp, name)
    os.makedirs(b)
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["root"]["path"] = shared_rootfs()
    spec["process"]["terminal"] = False
    spec["process"]["args"] = args
    spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"] + \
        [{"type": "network", "path": f"/run/netns/{netns}"}]
    if cgroup:
        spec["linux"]["cgroupsPath"] = cgroup
    if annotations:
        spec.setdefault("annotations", {}).update(annotations)
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    return b


def veth_ns(i):
    cns, pns = netlib.netns(f"ch{i}c"), netlib.netns(f"ch{i}p")
    sh("ip", "-n", cns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", pns)
    sh("ip", "-n", cns, "addr", "add", f"10.214.{i}.2/24", "dev", "eth0")
    sh("ip", "-n", cns, "link", "set", "eth0", "up")
    sh("ip", "-n", pns, "link", "set", "peer0", "up")
    sh("ip", "-n", cns, "route", "add", "default", "via", f"10.214.{i}.1")
    return cns


class Multi:
    """One census over several namespaces."""

    def __init__(self, namespaces):
        self.c = [Census(TAG, root, cache=cache, netns=ns, cgroups=[CGROUP]) for ns in namespaces]

    def take(self):
        out = {}
        for i, c in enumerate(self.c):
            snap = c.take()
            snap["cgroup children"] = sorted(os.listdir(d) for d in cgroup_dirs(CGROUP))
            out.update({f"{k}@{i}" if k in ("taps", "aliases", "qdiscs", "addrs", "routes") else k: v
                        for k, v in snap.items()})
        return out


def console_tail(path, n=40):
    try:
        with open(path, errors="replace") as f:
            return "\n".join(f.read().splitlines()[-n:])
    except OSError:
        return "(no console)"


def cycle(b, cid):
    """create, start, exec, delete --force; the first failure's message,
    with the end of the guest's console (kept only while the cycle runs)."""
    console = os.path.join(tmp, f"{cid}.console")
    for what, args in (("create", ("create", "--bundle", b, cid)), ("start", ("start", cid)),
                       ("exec", ("exec", cid, "echo", "churn")), ("delete", ("delete", "--force", cid))):
        p = kvrun(*args, env=dict(ENV, KVRUN_CONSOLE=console)) if what == "create" else kvrun(*args)
        if p.returncode != 0 or (what == "exec" and p.stdout != "churn\n"):
            kvrun("delete", "--force", cid)
            msg = f"{cid}: {what}: rc {p.returncode}: {p.stderr.strip()[-600:]} {p.stdout[-200:]}"
            t.diag(f"{msg}\n--- guest console of {cid}:\n{console_tail(console)}")
            return msg
    if os.path.exists(console):
        os.unlink(console)
    return None


def monitor_fds(cid):
    try:
        with open(os.path.join(root, cid, "state.json")) as f:
            pid = json.load(f)["pid"]
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, KeyError):
        return None


def settle(census, before):
    return wait_for(lambda: not Census.diff(before, census.take()) and census.take(), timeout=20) or census.take()


def churn(census, before, spaces, long_cid):
    fds0 = monitor_fds(long_cid)
    done, failures, t0 = 0, [], time.monotonic()
    for i in range(CYCLES):
        err = cycle(spaces["b"][0], f"{TAG}-s{i}")
        if err:
            failures.append(err)
        done += 1
        if done % EVERY == 0 or done == CYCLES:
            kvrun("exec", long_cid, "true")
            t.eq(Census.diff(before, settle(census, before)), {}, f"after {done} sequential cycles: nothing left")
    took = time.monotonic() - t0
    t.eq(failures, [], f"{CYCLES} sequential cycles (create, start, exec, delete --force) all succeed")
    t.diag(f"sequential: {took / max(CYCLES, 1):.1f} s per cycle")
    for n in range(BATCHES):
        errs = [None] * WIDTH
        t0 = time.monotonic()

        def one(k):
            errs[k] = cycle(spaces["b"][k], f"{TAG}-p{n}-{k}")
        threads = [threading.Thread(target=one, args=(k,)) for k in range(WIDTH)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t.diag(f"parallel batch {n}: {WIDTH} cycles in {time.monotonic() - t0:.1f} s")
        t.eq([e for e in errs if e], [], f"parallel batch {n}: {WIDTH} cycles at once all succeed")
        kvrun("exec", long_cid, "true")
        t.eq(Census.diff(before, settle(census, before)), {}, f"after parallel batch {n}: nothing left")
    t.eq(monitor_fds(long_cid), fds0, "the long-lived container's monitor keeps as many fds after its execs")


def stopped(cid, cli):
    for pid in [cli] + processes_mentioning(cid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    return pid
        except OSError:
            pass
    return None


def kill_sample(census, before, b):
    cases = [("create", "monitor:vm", "cli"), ("create", "monitor:ready", "monitor"),
             ("exec", "exec:streams", "cli"), ("delete", "teardown:cgroup", "cli")]
    for phase, step, victim in cases:
        cid = f"{TAG}-k-{step.replace(':', '-')}"
        env = dict(ENV, KVRUN_STOP_AT=step)
        what = f"Linux guest: kill -9 of the {victim} at {step}"
        if phase != "create" and (kvrun("create", "--bundle", b, cid).returncode != 0 or
                                  kvrun("start", cid).returncode != 0):
            t.ok(False, f"{what}: the container runs")
            continue
        args = {"create": ["create", "--bundle", b, cid], "exec": ["exec", cid, "sleep", "1000"],
                "delete": ["delete", "--force", cid]}[phase]
        out = open(os.path.join(tmp, "kill.out"), "w")
        p = subprocess.Popen([KVRUN, "--root", root, "--log", log] + args, stdout=out, stderr=out, env=env,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        pid = wait_for(lambda: stopped(cid, p.pid), timeout=BOOT_WAIT, step=0.2)
        if t.ok(pid, f"{what}: it stops there"):
            target = p.pid
            if victim == "monitor":
                # The state names it once it runs (before monitor:ready).
                try:
                    with open(os.path.join(root, cid, "state.json")) as f:
                        target = json.load(f)["pid"] or p.pid
                except (OSError, ValueError, KeyError):
                    pass
            os.kill(target, signal.SIGKILL)
            for q in processes_mentioning(cid) + [p.pid]:
                try:
                    os.kill(q, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        try:
            p.wait(timeout=BOOT_WAIT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        out.close()
        t.eq(kvrun("delete", "--force", cid).returncode, 0, f"{what}: delete --force")
        t.eq(Census.diff(before, settle(census, before)), {}, f"{what}: nothing left")


def check_vsock(spaces, long_cid):
    if not probe:
        t.skip("socket(AF_VSOCK) in the guest", "no cc to build the probe with")
        return
    e = kvrun("exec", long_cid, "/bin/vsock-probe")
    t.eq(e.stdout.strip(), "vsock:Operation not permitted", "a container process cannot open an AF_VSOCK socket")
    b = make_bundle("b-vsock", spaces["ns"][WIDTH], ["/bin/sleep", "100000"],
                    annotations={"io.kvrun.vsock": "allow"})
    cid = f"{TAG}-vsock"
    if kvrun("run", "--detach", "--bundle", b, cid).returncode == 0:
        e = kvrun("exec", cid, "/bin/vsock-probe")
        t.eq(e.stdout.strip(), "vsock:open", "with io.kvrun.vsock=allow it can")
    kvrun("delete", "--force", cid)


def timed(what, fn, *args):
    """fn(*args), its time a TAP diagnostic (for sizing the test)."""
    t0 = time.monotonic()
    r = fn(*args)
    t.diag(f"{what}: {time.monotonic() - t0:.0f} s")
    return r


def main():
    template = timed("the suite template", guestlib.suite_template, t, kernel, 1)
    if not template.ok:
        return  # its failed build is a failed line already: cold boots would not fit the time
    ENV.update(template.env)
    spaces = {"ns": [veth_ns(i) for i in range(WIDTH + 2)]}
    spaces["b"] = [make_bundle(f"b{i}", spaces["ns"][i], ["/bin/sleep", "100000"], cgroup=f"{CGROUP}/c{i}")
                   for i in range(WIDTH)]
    long_cid = f"{TAG}-long"
    lb = make_bundle("b-long", spaces["ns"][WIDTH + 1], ["/bin/sleep", "100000"])
    if not t.ok(timed("the long-lived container's run", kvrun, "run", "--detach", "--bundle", lb,
                      long_cid).returncode == 0, "a long-lived container runs"):
        return
    with open(log, errors="replace") as f:
        text = f.read()
    t.ok("VM: restoring template" in text and "cold boot instead" not in text, "its VM came from the template")
    census = Multi(spaces["ns"][:WIDTH])
    # The caches (initramfs, root disks) are filled by a first cycle.
    t.eq(timed("a first cycle", cycle, spaces["b"][0], f"{TAG}-warm"), None, "a first cycle")
    before = census.take()
    timed("the cycles", churn, census, before, spaces, long_cid)
    timed("the kill -9 sample", kill_sample, census, before, spaces["b"][1])
    timed("the AF_VSOCK checks", check_vsock, spaces, long_cid)
    t.eq(kvrun("delete", "--force", long_cid).returncode, 0, "the long-lived container is deleted")


try:
    main()
finally:
    for pid in processes_mentioning(TAG):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for d in cgroup_dirs(CGROUP):
        for sub in sorted((os.path.join(dp, n) for dp, dns, _ in os.walk(d) for n in dns), reverse=True):
            try:
                os.rmdir(sub)
            except OSError:
                pass
        try:
            os.rmdir(d)
        except OSError:
            pass
if t.failed:
    t.diag(f"kept {tmp}")
    if os.path.exists(log):
        t.diag("".join(open(log, errors="replace").readlines()[-60:]))
else:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
