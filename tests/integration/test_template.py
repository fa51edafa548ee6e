#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Containers started from a VM template, and checkpoint/restore (one Linux
boot for the whole file):

`kvrun template build` boots a VM until guest-init waits for START and
saves it; five `kvrun run`s then restore it (the --log line says so) and
run five different processes, each checked for its own output, hostname
and exit status; one has a read-only root, which the container sees as
such; each gets its own random seed (urandom differs) and the host's
wall-clock time. `template list` shows the template. A truncated and a
corrupted template are refused with a clear message and leave no
container behind; `template rm` removes it.

Checkpoint/restore (its container also starts from the template): a
process keeps a counter in a shell variable and prints it every second;
`checkpoint` saves and stops the container, `delete` removes it, `restore
--detach` brings it back from the image and the counter goes on from
where it was (not from 1); a corrupted image is refused and leaves
nothing.

The checkpoint matrix: checkpoint and restore across every combination of
how the VM started (template, cold boot), its root (read-only, writable)
and its network (one veth, none). The two above are the template's
writable ones; a read-only root from each template follows each (a
template's disk offered no VIRTIO_BLK_F_RO, and such a checkpoint could not
be restored); the four cold boots start at the beginning, beside the
template's build, so their boots overlap it, and are checkpointed at the
end (where guest kernel code is emulated only the writable one with a NIC,
unless KVRUN_TEMPLATE_MATRIX=full). Each restored container goes on
counting, a read-only root stays read-only (an exec's touch fails), a
restored NIC answers its peer's ping, and after its delete its namespace
has its address back.

A template with one network device (`template build --nics 1`, a second
boot): a container whose network namespace has a veth (the namespaces are
the test's own, `ip netns add`, private addresses 10.213.78.0/24; nothing
leaves them) is restored from it (the --log line names that template and
the TAP attached to its device); in the guest eth0 has the veth's MAC (not
the template's), its address and MTU; the peer namespace pings the guest
and sends it a payload over TCP, which arrives intact; after kill and
delete the namespace has its addresses back. Then checkpoint/restore with
a network interface: a container from that template in a namespace with a
veth counts, reports eth0 (MAC, MTU, address) every second and serves TCP;
the peer pings it and sends a payload; `checkpoint`, `delete`, then
`restore` under a new name into a fresh namespace whose veth has another
MAC, MTU and address: the counter goes on, eth0 has the new MAC, MTU and
address (not the old one), the new peer pings it and its TCP payload
arrives; after delete no TAP is left. A restore of that checkpoint into a
namespace with two interfaces is refused naming both counts and leaves no
state, TAP or process. `test_template.py net` runs this part alone.

Times are printed as diagnostics (create from the template vs the build,
which is a cold boot); nothing asserts on them. Skips without a guest
kernel, /dev/kvm, root, mke2fs or busybox."""
import json
import os
import shutil
import hashlib
import subprocess
import sys
import tempfile
import threading
import time

import guestlib
import netlib
from bundlelib import keep_or_remove, processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "hostname", "touch", "od", "head", "date", "seq", "sleep", "tr", "ip", "nc",
           "md5sum"]
N = 5
# Where guest kernel code is emulated a Linux boot costs minutes of both
# cores: of the matrix's four cold boots only the writable root with a NIC
# runs there unless $KVRUN_TEMPLATE_MATRIX=full (the fast suite's
# checkpoint-matrix runs all eight cells on the fake guest-init).
FULL_MATRIX = os.environ.get("KVRUN_TEMPLATE_MATRIX") == "full" or not guestlib.emulating_host()


def find_kernel():
    k = os.environ.get("KVRUN_KERNEL")
    if k:
        return k, [f"$KVRUN_KERNEL={k}"]
    return guestlib.find_kernel()


def make_bundle(tmp, name, args, readonly=False, netns=None):
    b = os.path.join(tmp, name)
    rootfs = os.path.join(b, "rootfs")
    for d in ["bin", "proc", "sys", "dev", "tmp", "etc"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = args
    spec["hostname"] = "tpl-" + name
    spec["root"]["readonly"] = readonly
    if netns:
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"] + \
            [{"type": "network", "path": netns}]
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return b


def kvrun(env, *args, timeout=1500, **kw):
    return subprocess.run([KVRUN, *args], capture_output=True, text=True, env=env, timeout=timeout, **kw)


SCRIPT = r"""
echo "instance:$1 square:$(($1 * $1))"
echo "hostname:$(hostname)"
touch /written 2>/dev/null && echo "root:rw" || echo "root:ro"
echo "random:$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "time:$(date +%s)"
exit $(($1 + 10))
"""


def run_one(t, tmp, env, i):
    b = make_bundle(tmp, f"c{i}", ["/bin/sh", "-c", SCRIPT, "sh", str(i)], readonly=(i == 2))
    root = os.path.join(tmp, "root")
    log = os.path.join(tmp, f"c{i}-log.txt")
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, f"c{i}-console.log"))
    t0 = time.monotonic()
    p = kvrun(e, "--root", root, "--log", log, "--debug", "run", "--bundle", b, f"tpl-{i}",
              stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    with open(log, errors="replace") as f:
        logtext = f.read()
    return p, logtext, took


def check_instances(t, tmp, env):
    randoms, times = set(), []
    for i in range(N):
        p, logtext, took = run_one(t, tmp, env, i)
        t.diag(f"container {i}: run took {took:.1f} s")
        lines = dict(l.split(":", 1) for l in p.stdout.splitlines() if ":" in l)
        if not t.eq(p.returncode, i + 10, f"container {i}: its own exit status"):
            t.diag(p.stderr[-2000:])
        refused = "cold boot instead" in logtext
        if refused:
            t.diag("template refused by KVM, cold boot: " +
                   next((l for l in logtext.splitlines() if "could not be restored" in l), ""))
        t.ok("VM: restoring template" in logtext, f"container {i}: the matching template is used (log)", logtext[-1500:])
        t.todo(not refused, f"container {i}: restored from it, no cold boot",
               "now and then this nested host's KVM refuses a restored MSR (0x4b564d02); kvrun then cold-boots")
        t.eq(lines.get("instance"), f"{i} square:{i * i}", f"container {i}: its own process and output")
        t.eq(lines.get("hostname"), f"tpl-c{i}", f"container {i}: its own hostname")
        t.eq(lines.get("root"), "ro" if i == 2 else "rw", f"container {i}: root {'read-only' if i == 2 else 'writable'}")
        randoms.add(lines.get("random"))
        if lines.get("time", "").isdigit():
            times.append(abs(int(lines["time"]) - time.time()))
    t.eq(len(randoms), N, "each container's urandom differs (its own seed)")
    t.ok(times and max(times) < 600, "the guests' clocks follow the host's", times)
    root = os.path.join(tmp, "root")
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under --root after the runs")


def check_refused(t, tmp, env, tpl_dir, snap, how):
    b = make_bundle(tmp, f"bad-{how}", ["/bin/true"])
    root = os.path.join(tmp, f"root-{how}")
    p = kvrun(env, "--root", root, "run", "--bundle", b, f"bad-{how}", stdin=subprocess.DEVNULL, timeout=300)
    t.ok(p.returncode != 0, f"{how} template: run fails")
    msg = "truncated" if how == "truncated" else "checksum"
    t.ok("template" in p.stderr and msg in p.stderr, f"{how} template: the error says so", p.stderr)
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], f"{how} template: no container left")


COUNTER = "i=0; while true; do i=$((i + 1)); echo count:$i; sleep 1; done"


def counts(path):
    with open(path, errors="replace") as f:
        return [int(l[6:]) for l in f.read().splitlines() if l.startswith("count:") and l[6:].isdigit()]


def wait_counts(path, n, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        c = counts(path)
        if len(c) >= n:
            return c
        time.sleep(1)
    return counts(path)


def state(env, root, cid):
    p = kvrun(env, "--root", root, "state", cid, timeout=60)
    try:
        return json.loads(p.stdout)["status"]
    except ValueError:
        return None


def roundtrip(t, tmp, env, name, b, cid, out1, ro, pns=None, addr=None, cns=None):
    """checkpoint, delete, restore --detach and checks of a container that
    runs COUNTER (its output in out1)."""
    root = os.path.join(tmp, "root-matrix")
    img = os.path.join(tmp, f"img-{cid}")
    out2 = out1 + ".restored"
    log = os.path.join(tmp, "matrix-log.txt")
    before = wait_counts(out1, 3)
    if not t.ok(len(before) >= 3, f"{name}: the counter counts", before):
        kvrun(env, "--root", root, "delete", "--force", cid, timeout=120)
        return
    # What the namespace had before the container (veth_pair's /24): kvrun
    # holds the address while the VM runs and gives it back at delete.
    addrs = [f"{addr}/24"] if cns else None
    p = kvrun(env, "--root", root, "--log", log, "--debug", "checkpoint", "--image-path", img, cid, timeout=600)
    t.ok(p.returncode == 0, f"{name}: checkpoint", p.stderr[-1500:])
    last = max(counts(out1) or [0])
    t.eq(kvrun(env, "--root", root, "delete", "--force", cid, timeout=120).returncode, 0, f"{name}: delete")
    with open(out2, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", log, "--debug", "restore", "--image-path", img,
                            "--bundle", b, "--detach", cid], stdin=subprocess.DEVNULL, stdout=so, stderr=so,
                           env=env, timeout=1500)
    try:
        if not t.ok(p.returncode == 0, f"{name}: restore", open(out2, errors="replace").read()[-1500:]):
            return
        after = wait_counts(out2, 2)
        t.ok(len(after) >= 2 and last <= after[0] <= last + 2 and after == sorted(after),
             f"{name}: the counter goes on from {last}", after)
        touch = kvrun(env, "--root", root, "exec", cid, "touch", "/written", timeout=600)
        t.eq(touch.returncode != 0, ro, f"{name}: the root is {'still read-only' if ro else 'writable'}")
        if pns:
            ping = subprocess.run(["ip", "netns", "exec", pns, BUSYBOX, "ping", "-c", "3", "-W", "30", addr],
                                  capture_output=True, text=True, timeout=300)
            t.ok(ping.returncode == 0, f"{name}: the peer pings the restored guest", ping.stdout + ping.stderr)
    finally:
        d = kvrun(env, "--root", root, "delete", "--force", cid, timeout=120)
        shutil.rmtree(img, ignore_errors=True)
    t.eq(d.returncode, 0, f"{name}: delete of the restored container")
    if cns:
        t.eq(eth0_addrs(cns), addrs, f"{name}: the namespace has its address back")


def matrix_container(t, tmp, env, boot, ro, nic, tag):
    """A container running COUNTER for one cell of the matrix: (name,
    bundle, id, output path, ro, peer namespace, address, namespace)."""
    name = f"matrix: {boot}, {'read-only' if ro else 'writable'} root, {'one NIC' if nic else 'no NIC'}"
    cns = pns = addr = None
    if nic:
        cns, pns = veth_pair(f"m{tag}", f"10.213.{100 + tag}", 1400)
        addr = f"10.213.{100 + tag}.2"
    b = make_bundle(tmp, f"matrix{tag}", ["/bin/sh", "-c", COUNTER], readonly=ro,
                    netns=f"/run/netns/{cns}" if cns else None)
    cid, out = f"matrix{tag}", os.path.join(tmp, f"matrix{tag}.out")
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, f"matrix{tag}-console.log"))
    with open(out, "wb") as so:
        p = subprocess.run([KVRUN, "--root", os.path.join(tmp, "root-matrix"), "--log",
                            os.path.join(tmp, "matrix-log.txt"), "--debug", "run", "--detach", "--bundle", b, cid],
                           stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=e, timeout=1500)
    return (name, b, cid, out, ro, pns, addr, cns) if p.returncode == 0 else (name, None, cid, out, ro, pns, addr,
                                                                               cns)


def matrix_cell(t, tmp, env, cell):
    name, b, cid, out, ro, pns, addr, cns = cell
    if not t.ok(b is not None, f"{name}: the container runs", open(out, errors="replace").read()[-1500:]):
        return
    roundtrip(t, tmp, env, name, b, cid, out, ro, pns, addr, cns)


def start_cold_boots(t, tmp, env):
    """The matrix's four cold boots, started now (their boots overlap the
    template's build); each thread's result is read at the end."""
    cold = dict(env, KVRUN_TEMPLATES="0")
    cells = [None] * 4
    why = netlib.skip_reason()

    def boot(k, ro, nic):
        cells[k] = matrix_container(t, tmp, cold, "cold boot", ro, nic, 10 + k)
    threads = []
    for k, (ro, nic) in enumerate([(True, False), (False, False), (True, True), (False, True)]):
        if nic and why:
            continue
        if k != 3 and not FULL_MATRIX:
            continue
        th = threading.Thread(target=boot, args=(k, ro, nic))
        th.start()
        threads.append(th)
    return threads, cells, cold


def finish_cold_boots(t, tmp, threads, cells, cold):
    for th in threads:
        th.join()
    for cell in cells:
        if cell:
            matrix_cell(t, tmp, cold, cell)


def check_checkpoint(t, tmp, env):
    b = make_bundle(tmp, "ckpt", ["/bin/sh", "-c", COUNTER])
    root = os.path.join(tmp, "root-ckpt")
    img = os.path.join(tmp, "image")
    out1, out2 = os.path.join(tmp, "ckpt-1.out"), os.path.join(tmp, "ckpt-2.out")
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "ckpt-console.log"))
    with open(out1, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "ckpt-log.txt"), "--debug", "run",
                            "--detach", "--bundle", b, "ckpt"], stdin=subprocess.DEVNULL, stdout=so, stderr=so,
                           env=e, timeout=1500)
    if not t.ok(p.returncode == 0, "checkpoint: the container runs"):
        return
    before = wait_counts(out1, 3)
    t.ok(len(before) >= 3, "checkpoint: the counter counts", before)
    t0 = time.monotonic()
    p = kvrun(e, "--root", root, "--log", os.path.join(tmp, "ckpt-log.txt"), "--debug", "checkpoint",
              "--image-path", img, "ckpt", timeout=600)
    t.diag(f"checkpoint took {time.monotonic() - t0:.1f} s")
    t.ok(p.returncode == 0, "checkpoint succeeds", p.stderr)
    t.eq(state(env, root, "ckpt"), "stopped", "checkpoint: the container stopped")
    last = max(counts(out1) or [0])
    t.eq(kvrun(env, "--root", root, "delete", "ckpt", timeout=120).returncode, 0, "checkpoint: delete")
    t.ok(all(os.path.exists(os.path.join(img, f)) for f in ("vm.snap", "rootfs.img", "config.json")),
         "checkpoint: the image holds the VM, the disk and the configuration", os.listdir(img))
    t0 = time.monotonic()
    with open(out2, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, "restore-log.txt"), "--debug",
                            "restore", "--image-path", img, "--bundle", b, "--detach", "ckpt"],
                           stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=e, timeout=1500)
    t.diag(f"restore took {time.monotonic() - t0:.1f} s")
    if not t.ok(p.returncode == 0, "restore --detach succeeds"):
        return
    t.eq(state(env, root, "ckpt"), "running", "restore: the container runs")
    after = wait_counts(out2, 2)
    t.ok(len(after) >= 2 and after[0] >= last and after[0] <= last + 2 and after == sorted(after),
         f"restore: the counter goes on from {last}", after)
    kvrun(env, "--root", root, "kill", "ckpt", "9", timeout=120)
    deadline = time.time() + 120
    while time.time() < deadline and state(env, root, "ckpt") != "stopped":
        time.sleep(0.5)
    t.eq(kvrun(env, "--root", root, "delete", "ckpt", timeout=120).returncode, 0, "restore: delete")
    snap = os.path.join(img, "vm.snap")
    with open(snap, "r+b") as f:  # inside the first section (irqchip)
        f.seek(4200)
        x = f.read(1)
        f.seek(4200)
        f.write(bytes([x[0] ^ 0xff]))
    p = kvrun(env, "--root", root, "restore", "--image-path", img, "--bundle", b, "--detach", "ckpt",
              stdin=subprocess.DEVNULL, timeout=600)
    t.ok(p.returncode != 0 and "checksum" in p.stderr, "a corrupted image is refused, saying why", p.stderr)
    t.eq(os.listdir(root), [], "a refused restore leaves nothing")


NET4 = "10.213.78"
CTR_ADDR, PEER_ADDR = f"{NET4}.2", f"{NET4}.1"
NET_MTU = 1400
NET_PAYLOAD = b"".join(b"peer-to-restored-guest %d\n" % i for i in range(5000))
NET_SCRIPT = r"""
echo "== mac $(cat /sys/class/net/eth0/address)"
echo "== mtu $(cat /sys/class/net/eth0/mtu)"
echo "== addr"; ip addr show eth0
echo "== route"; ip route
echo "== end"
nc -l -p 5001 </dev/null >/tmp/in &
echo "LISTENING"
wait $!
echo "TCPIN $(md5sum </tmp/in)"
exec sleep 100000
"""


def wait_text(path, marker, seconds):
    end = time.time() + seconds
    text = ""
    while time.time() < end:
        with open(path, errors="replace") as f:
            text = f.read()
        if marker in text:
            break
        time.sleep(2)
    return text


def eth0_addrs(ns):
    out = netlib.sh("ip", "-n", ns, "-o", "addr", "show", "dev", "eth0").stdout
    return sorted(line.split()[3] for line in out.splitlines() if " inet" in line and "fe80" not in line)


def check_net_template(t, tmp, env, tpl_dir):
    """A template with one network device, and a container in a namespace
    with a veth restored from it."""
    why = netlib.skip_reason()
    if why:
        t.diag(f"skipping the network template: {why}")
        return
    before = set(os.listdir(tpl_dir)) if os.path.isdir(tpl_dir) else set()
    t0 = time.monotonic()
    p = kvrun(env, "--log", os.path.join(tmp, "build-net-log.txt"), "--debug", "template", "build", "--nics", "1",
              "--console", os.path.join(tmp, "build-net-console.log"))
    t.diag(f"template build with one network device: {time.monotonic() - t0:.1f} s")
    if not t.ok(p.returncode == 0, "template build --nics 1", p.stderr[-2000:]):
        return
    new = [f for f in set(os.listdir(tpl_dir)) - before if f.endswith(".snap")]
    if not t.eq(len(new), 1, "one more template file"):
        return
    tpl_id = new[0][:16]
    lst = kvrun(env, "template", "list").stdout
    t.ok(any(l.startswith(tpl_id) and l.split()[3] == "1" for l in lst.splitlines()),
         "template list shows one network device", lst)

    cns, pns = netlib.netns("tplctr"), netlib.netns("tplpeer")
    netlib.sh("ip", "-n", cns, "link", "add", "eth0", "mtu", str(NET_MTU), "type", "veth", "peer", "name", "peer0",
              "netns", pns, "mtu", str(NET_MTU))
    for ns, dev, a in ((cns, "eth0", CTR_ADDR), (pns, "peer0", PEER_ADDR)):
        netlib.sh("ip", "-n", ns, "link", "set", "lo", "up")
        netlib.sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", dev)
        netlib.sh("ip", "-n", ns, "link", "set", dev, "up")
    netlib.sh("ip", "-n", cns, "route", "add", "default", "via", PEER_ADDR)
    mac = netlib.link_mac(cns, "eth0")
    addrs_before = eth0_addrs(cns)
    b = make_bundle(tmp, "net", ["/bin/sh", "-c", NET_SCRIPT], netns=f"/run/netns/{cns}")
    root = os.path.join(tmp, "root-net")
    out_path, log_path = os.path.join(tmp, "net-out.txt"), os.path.join(tmp, "net-log.txt")
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "net-console.log"))
    t0 = time.monotonic()
    with open(out_path, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", log_path, "--debug", "run", "--detach", "--bundle", b,
                            "tpl-net"], stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=e, timeout=1500)
    t.diag(f"run --detach from the template: {time.monotonic() - t0:.1f} s")
    try:
        if not t.ok(p.returncode == 0, "net: run --detach in a namespace with a veth"):
            return
        with open(log_path, errors="replace") as f:
            log = f.read()
        refused = "cold boot instead" in log
        t.ok(f"VM: restoring template {os.path.join(tpl_dir, new[0])}" in log,
             "net: the template with one network device is used (log)", log[-1500:])
        t.todo(not refused, "net: restored from it, no cold boot",
               "now and then this nested host's KVM refuses a restored MSR (0x4b564d02); kvrun then cold-boots")
        t.ok(refused or "attached to the template's device 0" in log, "net: the TAP is attached to its device (log)",
             log[-1500:])
        text = wait_text(out_path, "LISTENING", 900)
        t.eq(text.split("== mac ", 1)[-1].split("\n", 1)[0], mac, "net: eth0 has the veth's MAC, not the template's")
        t.ok(f"== mtu {NET_MTU}\n" in text, f"net: MTU {NET_MTU}", text[:600])
        t.ok(f"inet {CTR_ADDR}/24" in text, "net: the address arrived", text[:1200])
        t.ok(f"default via {PEER_ADDR}" in text, "net: the default route arrived", text[:1200])
        ping = subprocess.run(["ip", "netns", "exec", pns, BUSYBOX, "ping", "-c", "3", "-W", "30", CTR_ADDR],
                              capture_output=True, text=True, timeout=300)
        t.ok(ping.returncode == 0, "net: the peer pings the restored guest", ping.stdout + ping.stderr)
        client = subprocess.run(["ip", "netns", "exec", pns, sys.executable, "-c",
                                 netlib.PEER_TCP_CLIENT, CTR_ADDR],
                                input=NET_PAYLOAD, capture_output=True, timeout=900)
        t.ok(client.returncode == 0, "net: peer -> guest TCP connection",
             client.stdout.decode() + client.stderr.decode())
        text = wait_text(out_path, "TCPIN", 600)
        t.ok(f"TCPIN {hashlib.md5(NET_PAYLOAD).hexdigest()}" in text, "net: the payload arrived intact",
             [x for x in text.splitlines() if x.startswith("TCPIN")])
    finally:
        kvrun(env, "--root", root, "kill", "tpl-net", "9", timeout=120)
        deadline = time.time() + 120
        while time.time() < deadline and state(env, root, "tpl-net") not in ("stopped", None):
            time.sleep(0.5)
        d = kvrun(env, "--root", root, "delete", "--force", "tpl-net", timeout=120)
    t.ok(d.returncode == 0, "net: delete", d.stderr)
    t.eq(eth0_addrs(cns), addrs_before, "net: the namespace has its addresses back")
    links = netlib.sh("ip", "-n", cns, "-o", "link", "show").stdout
    t.ok("kvt" not in links, "net: no TAP left", links)
    check_net_checkpoint(t, tmp, env)
    matrix_cell(t, tmp, env, matrix_container(t, tmp, env, "template", True, True, 2))
    rm = kvrun(env, "template", "rm", tpl_id)
    t.ok(rm.returncode == 0, "net: template rm", rm.stderr)


CK_NET1, CK_NET2 = "10.213.80", "10.213.81"
CK_MAC2 = "02:6b:74:65:73:02"
CK_MTU1, CK_MTU2 = 1400, 1300
# The counter, a TCP server that serves again and again, and each second
# what eth0 is in the guest (MAC, MTU, IPv4 addresses).
CK_NET_SCRIPT = r"""
(while true; do nc -l -p 5001 </dev/null >/tmp/in; echo "TCPIN $(md5sum </tmp/in)"; done) &
i=0
while true; do
  i=$((i + 1)); echo count:$i
  echo "net:$(cat /sys/class/net/eth0/address) mtu:$(cat /sys/class/net/eth0/mtu) $(ip -4 addr show dev eth0 | tr '\n' ' ')"
  sleep 1
done
"""


def veth_pair(tag, net, mtu, mac=None, extra=0):
    """A container namespace whose eth0 is a veth to a peer namespace
    (NET.2 and NET.1, default route via the peer); extra more veths."""
    cns, pns = netlib.netns(f"{tag}c"), netlib.netns(f"{tag}p")
    netlib.sh("ip", "-n", cns, "link", "add", "eth0", "mtu", str(mtu), *(["address", mac] if mac else []), "type",
              "veth", "peer", "name", "peer0", "netns", pns, "mtu", str(mtu))
    for ns, dev, a in ((cns, "eth0", f"{net}.2"), (pns, "peer0", f"{net}.1")):
        netlib.sh("ip", "-n", ns, "link", "set", "lo", "up")
        netlib.sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", dev)
        netlib.sh("ip", "-n", ns, "link", "set", dev, "up")
    netlib.sh("ip", "-n", cns, "route", "add", "default", "via", f"{net}.1")
    for i in range(extra):
        netlib.sh("ip", "-n", cns, "link", "add", f"eth{i + 1}", "type", "veth", "peer", "name", f"peer{i + 1}",
                  "netns", pns)
        netlib.sh("ip", "-n", cns, "addr", "add", f"10.213.{90 + i}.2/24", "dev", f"eth{i + 1}")
        netlib.sh("ip", "-n", cns, "link", "set", f"eth{i + 1}", "up")
    return cns, pns


def last_net(path):
    with open(path, errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.startswith("net:")]
    return lines[-1] if lines else ""


def peer_reaches(t, pns, addr, what, out_path, n_tcpin):
    ping = subprocess.run(["ip", "netns", "exec", pns, BUSYBOX, "ping", "-c", "3", "-W", "30", addr],
                          capture_output=True, text=True, timeout=300)
    t.ok(ping.returncode == 0, f"{what}: the peer pings the guest", ping.stdout + ping.stderr)
    client = subprocess.run(["ip", "netns", "exec", pns, sys.executable, "-c", netlib.PEER_TCP_CLIENT, addr],
                            input=NET_PAYLOAD, capture_output=True, timeout=900)
    t.ok(client.returncode == 0, f"{what}: peer -> guest TCP connection",
         client.stdout.decode() + client.stderr.decode())
    end, got = time.time() + 600, []
    while time.time() < end:
        with open(out_path, errors="replace") as f:
            got = [x for x in f.read().splitlines() if x.startswith("TCPIN")]
        if len(got) >= n_tcpin:
            break
        time.sleep(2)
    t.ok(len(got) >= n_tcpin and got[n_tcpin - 1].startswith(f"TCPIN {hashlib.md5(NET_PAYLOAD).hexdigest()}"),
         f"{what}: the payload arrived intact", got)


def stop(env, root, cid):
    kvrun(env, "--root", root, "kill", cid, "9", timeout=120)
    deadline = time.time() + 120
    while time.time() < deadline and state(env, root, cid) not in ("stopped", None):
        time.sleep(0.5)
    return kvrun(env, "--root", root, "delete", "--force", cid, timeout=120)


def check_net_checkpoint(t, tmp, env):
    """Checkpoint of a container with a network interface (from the NIC
    template), restored under another name into a new namespace whose veth
    has another MAC, MTU and address; then a restore into a namespace with
    two interfaces, refused."""
    cns1, pns1 = veth_pair("ck1", CK_NET1, CK_MTU1)
    b1 = make_bundle(tmp, "cknet1", ["/bin/sh", "-c", CK_NET_SCRIPT], netns=f"/run/netns/{cns1}")
    root = os.path.join(tmp, "root-cknet")
    img = os.path.join(tmp, "image-net")
    out1, out2 = os.path.join(tmp, "cknet-1.out"), os.path.join(tmp, "cknet-2.out")
    log = os.path.join(tmp, "cknet-log.txt")
    e = dict(env, KVRUN_CONSOLE=os.path.join(tmp, "cknet-console.log"))
    mac1 = netlib.link_mac(cns1, "eth0")
    with open(out1, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", log, "--debug", "run", "--detach", "--bundle", b1,
                            "cknet"], stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=e, timeout=1500)
    if not t.ok(p.returncode == 0, "net checkpoint: the container runs in a namespace with a veth"):
        return
    before = wait_counts(out1, 3)
    t.ok(len(before) >= 3, "net checkpoint: the counter counts", before)
    t.ok(f"net:{mac1} mtu:{CK_MTU1} " in last_net(out1) and f"inet {CK_NET1}.2/24" in last_net(out1),
         "net checkpoint: eth0 has the veth's MAC, MTU and address", last_net(out1))
    peer_reaches(t, pns1, f"{CK_NET1}.2", "before the checkpoint", out1, 1)
    p = kvrun(e, "--root", root, "--log", log, "--debug", "checkpoint", "--image-path", img, "cknet", timeout=600)
    if not t.ok(p.returncode == 0, "net checkpoint: checkpoint succeeds", p.stderr):
        stop(env, root, "cknet")
        return
    t.eq(state(env, root, "cknet"), "stopped", "net checkpoint: the container stopped")
    last = max(counts(out1) or [0])
    t.eq(kvrun(env, "--root", root, "delete", "cknet", timeout=120).returncode, 0, "net checkpoint: delete")

    cns2, pns2 = veth_pair("ck2", CK_NET2, CK_MTU2, mac=CK_MAC2)
    b2 = make_bundle(tmp, "cknet2", ["/bin/sh", "-c", CK_NET_SCRIPT], netns=f"/run/netns/{cns2}")
    t0 = time.monotonic()
    with open(out2, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", log, "--debug", "restore", "--image-path", img,
                            "--bundle", b2, "--detach", "cknet-new"], stdin=subprocess.DEVNULL, stdout=so,
                           stderr=so, env=e, timeout=1500)
    t.diag(f"restore into the new namespace: {time.monotonic() - t0:.1f} s")
    try:
        if not t.ok(p.returncode == 0, "net restore: restore --detach into another namespace succeeds",
                    open(out2, errors="replace").read()[-2000:]):
            return
        t.eq(state(env, root, "cknet-new"), "running", "net restore: the container runs")
        after = wait_counts(out2, 3)
        t.ok(len(after) >= 2 and last <= after[0] <= last + 2 and after == sorted(after),
             f"net restore: the counter goes on from {last}", after)
        net = last_net(out2)
        t.ok(net.startswith(f"net:{CK_MAC2} "), "net restore: eth0 has the new veth's MAC", net)
        t.ok(f" mtu:{CK_MTU2} " in net, f"net restore: eth0 has the new MTU {CK_MTU2}", net)
        t.ok(f"inet {CK_NET2}.2/24" in net and f"{CK_NET1}." not in net,
             "net restore: eth0 has the new address, not the old one", net)
        peer_reaches(t, pns2, f"{CK_NET2}.2", "after the restore", out2, 1)
    finally:
        d = stop(env, root, "cknet-new")
    t.ok(d.returncode == 0, "net restore: delete", d.stderr)
    links = netlib.sh("ip", "-n", cns2, "-o", "link", "show").stdout
    t.ok("kvt" not in links, "net restore: no TAP left", links)
    t.eq(eth0_addrs(cns2), [f"{CK_NET2}.2/24"], "net restore: the namespace has its address back")

    cns3, _ = veth_pair("ck3", CK_NET2, CK_MTU2, extra=1)
    b3 = make_bundle(tmp, "cknet3", ["/bin/sh", "-c", CK_NET_SCRIPT], netns=f"/run/netns/{cns3}")
    p = kvrun(e, "--root", root, "--log", log, "--debug", "restore", "--image-path", img, "--bundle", b3, "--detach",
              "cknet-two", stdin=subprocess.DEVNULL, timeout=600)
    t.ok(p.returncode != 0 and
         "the checkpoint has 1 network interface(s), the container's network namespace has 2" in p.stderr,
         "net restore into two interfaces: refused, naming both counts", p.stderr)
    t.eq(os.listdir(root), [], "net restore into two interfaces: no state left")
    links = netlib.sh("ip", "-n", cns3, "-o", "link", "show").stdout
    t.ok("kvt" not in links, "net restore into two interfaces: no TAP left", links)
    t.eq(processes_mentioning("cknet-two"), [], "net restore into two interfaces: no process left")
    t.eq(eth0_addrs(cns3), [f"{CK_NET2}.2/24"], "net restore into two interfaces: addresses left as they were")


def main():
    t = Tap()
    kernel, tried = find_kernel()
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        t.skip_all("no usable /dev/kvm")
    if os.geteuid() != 0:
        t.skip_all("needs root (the rootfs keeps root-owned files)")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    tmp = tempfile.mkdtemp(prefix="kvrun-tpl-")
    tpl_dir = os.path.join(tmp, "templates")
    env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "none.json"), KVRUN_TEMPLATE_DIR=tpl_dir)
    if sys.argv[1:] == ["net"]:
        check_net_template(t, tmp, env, tpl_dir)
        finish(t, tmp)
        return
    threads, cells, cold = start_cold_boots(t, tmp, env)
    t0 = time.monotonic()
    p = kvrun(env, "--log", os.path.join(tmp, "build-log.txt"), "--debug", "template", "build",
              "--console", os.path.join(tmp, "build-console.log"))
    t.diag(f"template build (a cold boot to guest-init ready): {time.monotonic() - t0:.1f} s")
    if t.ok(p.returncode == 0, "template build", p.stderr[-2000:]):
        snaps = [f for f in os.listdir(tpl_dir) if f.endswith(".snap")]
        t.eq(len(snaps), 1, "one template file")
        lst = kvrun(env, "template", "list")
        t.ok(snaps and snaps[0][:16] in lst.stdout, "template list shows it", lst.stdout)
        check_instances(t, tmp, env)
        snap = os.path.join(tpl_dir, snaps[0])
        saved = os.path.join(tmp, "saved.snap")
        shutil.copy(snap, saved)
        os.truncate(snap, os.path.getsize(snap) - 4096)
        check_refused(t, tmp, env, tpl_dir, snap, "truncated")
        shutil.copy(saved, snap)
        with open(snap, "r+b") as f:
            f.seek(5000)
            b = f.read(1)
            f.seek(5000)
            f.write(bytes([b[0] ^ 0xff]))
        check_refused(t, tmp, env, tpl_dir, snap, "corrupted")
        shutil.copy(saved, snap)
        check_checkpoint(t, tmp, env)
        matrix_cell(t, tmp, env, matrix_container(t, tmp, env, "template", True, False, 1))
        rm = kvrun(env, "template", "rm", snaps[0][:16])
        t.ok(rm.returncode == 0 and not os.listdir(tpl_dir), "template rm removes it", rm.stderr)
        check_net_template(t, tmp, env, tpl_dir)
    finish_cold_boots(t, tmp, threads, cells, cold)
    finish(t, tmp)


def finish(t, tmp):
    keep_or_remove(t, tmp, sorted(n for n in os.listdir(tmp) if n.endswith((".txt", ".log"))), 30)
    t.done()


if __name__ == "__main__":
    main()
