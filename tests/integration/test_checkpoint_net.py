#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun restore` of a checkpoint into a network namespace with another
number of interfaces than the checkpoint's VM has network devices, without
a Linux guest (seconds): the checkpoint's vm.snap is a snapshot of the
freestanding test guest (`kvrun boot --snapshot-on-port`), which has no
network device; the restore bundle names a namespace (the test's own, `ip
netns add`) with one veth. The restore goes as far as the monitor making
the VM's devices from the snapshot, where the counts are compared: it is
refused with a message naming both counts, and nothing is left: no
container state, no TAP in the namespace (whose veth has its address
back), no process. The successful restore of a container with a network
interface boots Linux: tests/integration/test_template.py.

Needs root, /dev/kvm, ip/tc and the test guest; skips otherwise."""
import os
import shutil
import subprocess
import tempfile
import time

import guestlib
import netlib
from bundlelib import processes_mentioning, write_spec
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
ADDR = "10.213.82.2/24"


def make_image(t, tmp):
    """A checkpoint directory whose VM is the test guest's (1 vCPU, 256 MiB:
    the plan of the bundle below, whose limits ask for that shape)."""
    img = os.path.join(tmp, "image")
    os.makedirs(img)
    r = guestlib.boot(["--kernel", GUEST, "--test-device", "--console", "--cpus", "1", "--memory", "256M",
                       "--cmdline", "test=snapshot mem_expect=256M snap_fill=8M", "--timeout", "120",
                       "--snapshot-on-port", os.path.join(img, "vm.snap"), "--snapshot-stop"], timeout=180)
    if not t.ok(r.rc == 0 and os.path.isfile(os.path.join(img, "vm.snap")), "a snapshot of the test guest",
                r.describe()):
        return None
    with open(os.path.join(img, "rootfs.img"), "wb") as f:
        f.truncate(1 << 20)
    for name in ("config.json", "kvrun-checkpoint"):
        with open(os.path.join(img, name), "w") as f:
            f.write("{}\n")
    return img


def make_bundle(tmp, netns):
    b = os.path.join(tmp, "bundle")
    os.makedirs(os.path.join(b, "rootfs", "bin"))

    def mutate(spec):
        spec["process"]["args"] = ["/bin/sh"]
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"] + \
            [{"type": "network", "path": f"/run/netns/{netns}"}]
        # The checkpoint's shape on any host (without limits the plan's
        # default is 2 GiB and, on native KVM, 2 vCPUs).
        spec["linux"].setdefault("resources", {}).update(
            {"memory": {"limit": 256 << 20}, "cpu": {"quota": 100000, "period": 100000}})

    write_spec(KVRUN, b, mutate)
    return b


def addrs(ns):
    out = netlib.sh("ip", "-n", ns, "-o", "-4", "addr", "show", "dev", "eth0").stdout
    return [line.split()[3] for line in out.splitlines()]


def main():
    t = Tap()
    why = netlib.skip_reason() or guestlib.kvm_problem()
    if why:
        t.skip_all(why)
    if not GUEST or not os.path.exists(GUEST):
        t.skip_all("the test guest is not built ($KVRUN_TEST_GUEST)")
    tmp = tempfile.mkdtemp(prefix="kvrun-ckptnet-")
    bogus_kernel = os.path.join(tmp, "not-a-kernel")
    with open(bogus_kernel, "wb") as f:  # never booted: the VM comes from the snapshot
        f.write(b"\x7fELF this is not a kernel" + b"\0" * 4096)
    env = dict(os.environ, KVRUN_KERNEL=bogus_kernel, KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "no-config.json"), KVRUN_TEMPLATES="0")
    try:
        img = make_image(t, tmp)
        if not img:
            return
        ns, peer = netlib.netns("ckc"), netlib.netns("ckp")
        netlib.sh("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", peer)
        netlib.sh("ip", "-n", ns, "addr", "add", ADDR, "dev", "eth0")
        netlib.sh("ip", "-n", ns, "link", "set", "eth0", "up")
        b = make_bundle(tmp, ns)
        root = os.path.join(tmp, "root")
        cid = f"ckptnet-{os.getpid()}"
        p = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "log.txt"), "--debug", "restore",
                            "--image-path", img, "--bundle", b, "--detach", cid], capture_output=True, text=True,
                           env=env, timeout=300, stdin=subprocess.DEVNULL)
        t.ok(p.returncode != 0, "restore into a namespace with one interface fails", p.stdout + p.stderr)
        want = "the checkpoint has 0 network interface(s), the container's network namespace has 1"
        if not t.ok(want in p.stderr, "the error names both counts", p.stderr):
            with open(os.path.join(tmp, "log.txt"), errors="replace") as f:
                t.diag(f.read()[-3000:])
        t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "no container state left")
        links = netlib.sh("ip", "-n", ns, "-o", "link", "show").stdout
        t.ok("kvt" not in links, "no TAP left in the namespace", links)
        t.eq(addrs(ns), [ADDR], "the veth has its address back")
        end = time.time() + 30
        while processes_mentioning(cid) and time.time() < end:
            time.sleep(0.5)
        t.eq(processes_mentioning(cid), [], "no process left")
        t.eq(subprocess.run([KVRUN, "--root", root, "state", cid], capture_output=True, env=env).returncode != 0,
             True, "kvrun state: no such container")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        t.done()


if __name__ == "__main__":
    main()
