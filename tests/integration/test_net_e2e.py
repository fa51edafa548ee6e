#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Networking of a container VM end to end.

Fast part (`test_net_e2e.py fast`, suite 'integration', root): create is
refused cleanly, leaving nothing behind (no state directory, no TAP, no tc
qdisc, the interface's addresses and routes where they were):
  - for host networking (config.json without a network namespace entry),
  - for a network namespace path that does not exist,
  - for a failure after the namespace was set up (a guest kernel that is
    not a kernel, so the VM cannot boot).

Slow part (`test_net_e2e.py slow`, suite 'slow', ONE Linux boot): the test
builds its own namespaces with `ip netns add`, a container namespace and a
peer namespace joined by a veth pair with addresses from a private range
(10.213.77.0/24, fd00:6b76:77::/64), inside those namespaces only; no host
interface is touched and no traffic leaves them. A busybox container runs
in the container namespace; its process configures nothing itself. In the
guest: `ip addr`/`ip route` show what the namespace held (address, route,
MTU 1400, MAC); lo is up; resolv.conf, hosts and hostname bind mounts
arrive; TCP both ways with known payloads (busybox nc: a server in the
guest reached from the peer, the guest connecting to a server in the peer);
UDP (a DNS query to the nameserver of resolv.conf, which the peer answers);
ICMPv6 to the peer; a second interface (eth1, its own veth pair, MTU 9000)
with its address and MTU, and an 8000-byte ping over it. Then the monitor is killed with SIGKILL (a crash) and
`kvrun delete` gives the namespace back as it was: same addresses and
routes on the veth, no TAP, no ingress qdisc.

Throughput and latency are for native KVM hosts only (bench/ measures them
with iperf3 and nginx); here guest kernel code is emulated, so nothing is
timed and only correctness is checked.
"""
import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import guestlib
import netlib
from bundlelib import keep_or_remove
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "ip", "nc", "md5sum", "seq", "sleep", "ping", "ping6", "nslookup", "hostname"]

NET4, NET6 = "10.213.77", "fd00:6b76:77"
CTR_ADDR, PEER_ADDR = f"{NET4}.2", f"{NET4}.1"
CTR_ADDR6, PEER_ADDR6 = f"{NET6}::2", f"{NET6}::1"
MTU = 1400
# A second interface with jumbo frames: its own /24, MTU 9000.
NET4B = "10.213.78"
CTR_ADDR_B, PEER_ADDR_B = f"{NET4B}.2", f"{NET4B}.1"
MTU_B = 9000
PAYLOAD_IN = b"".join(b"peer-to-guest %d\n" % i for i in range(20000))
DNS_NAME = "probe.kvrun.test"
DNS_ANSWER = "10.213.77.99"

GUEST_SCRIPT = r"""
echo "== addr"; ip addr
echo "== route"; ip route
echo "== route6"; ip -6 route
echo "== mtu $(cat /sys/class/net/eth0/mtu)"
echo "== mtu1 $(cat /sys/class/net/eth1/mtu)"
echo "== hostname $(hostname)"
echo "== resolv"; cat /etc/resolv.conf
echo "== hosts"; cat /etc/hosts
echo "== end"
ping -c 1 -W 30 peerhost >/dev/null 2>&1 && echo "PING4 ok" || echo "PING4 fail"
ping6 -c 1 -W 30 PEER6 >/dev/null 2>&1 && echo "PING6 ok" || echo "PING6 fail"
ping -c 1 -W 30 -s 8000 PEERB >/dev/null 2>&1 && echo "JUMBO ok" || echo "JUMBO fail"
nc -l -p 5001 </dev/null >/dev/shm/in &
echo "LISTENING"
wait $!
echo "TCPIN $(md5sum </dev/shm/in)"
seq 1 30000 | nc PEER4 5002 >/dev/null
echo "TCPOUT rc=$?"
nslookup NAME 2>&1 | sed 's/^/DNS /'
echo "DONE"
exec sleep 100000
"""

# Servers in the peer namespace (run with `ip netns exec`): one TCP
# connection read to its end (its md5 printed), one DNS query answered with
# an A record.
PEER_SERVERS = r"""
import hashlib, socket, struct, sys, threading
addr, answer = sys.argv[1], sys.argv[2]
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 5002)); s.listen(1); s.settimeout(1500)
    c, _ = s.accept(); c.settimeout(600); h = hashlib.md5(); n = 0
    while True:
        b = c.recv(65536)
        if not b: break
        h.update(b); n += len(b)
    c.close(); print("tcp", n, h.hexdigest(), flush=True)
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((addr, 53)); s.settimeout(1500)
    while True:
        q, src = s.recvfrom(4096)
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode()); i += 1 + q[i]
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        end = i + 5
        if qtype == 1:
            rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(answer)
            s.sendto(q[:2] + b"\x81\x80" + q[4:6] + b"\x00\x01\x00\x00\x00\x00" + q[12:end] + rr, src)
            print("dns", ".".join(labels), flush=True)
            return
        s.sendto(q[:2] + b"\x81\x80" + q[4:6] + b"\x00\x00\x00\x00\x00\x00" + q[12:end], src)
ts = [threading.Thread(target=f) for f in (tcp, dns)]
for t in ts: t.start()
print("ready", flush=True)
for t in ts: t.join()
"""


def sh(*argv, check=True):
    return netlib.sh(*argv, check=check)


def make_bundle(tmp, netns_path, args, files=True):
    b = os.path.join(tmp, "bundle")
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
    spec["hostname"] = "kvrun-net"
    # ping needs a raw socket, which engines grant by default (docker does).
    for k, v in spec["process"].get("capabilities", {}).items():
        if "CAP_NET_RAW" not in v:
            v.append("CAP_NET_RAW")
    nss = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
    if netns_path is not False:
        nss.append({"type": "network", "path": netns_path} if netns_path else {"type": "network"})
    spec["linux"]["namespaces"] = nss
    if files:
        # As engines do: per-container files bind-mounted over /etc. The
        # image has (empty) files there: with a read-only root (the spec's
        # default) a missing mount point cannot be created in the guest.
        for name, text in (("resolv.conf", f"nameserver {PEER_ADDR}\n"),
                           ("hosts", f"127.0.0.1 localhost\n{PEER_ADDR} peerhost\n"),
                           ("hostname", "kvrun-net\n")):
            open(os.path.join(rootfs, "etc", name), "w").close()
            src = os.path.join(tmp, name)
            with open(src, "w") as f:
                f.write(text)
            spec["mounts"].append({"destination": f"/etc/{name}", "type": "bind", "source": src,
                                   "options": ["rbind", "ro"]})
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return b


def ns_snapshot(ns, dev):
    """What must come back after delete: dev's addresses, the routes, the
    links, the qdiscs."""
    addrs = json.loads(sh("ip", "-n", ns, "-j", "addr", "show", "dev", dev).stdout)[0]
    a = sorted((x["family"], x["local"], x["prefixlen"]) for x in addrs.get("addr_info", [])
               if x.get("scope") != "link")
    routes = []
    for fam in ("-4", "-6"):
        for r in json.loads(sh("ip", "-n", ns, "-j", fam, "route", "show").stdout):
            if not r["dst"].startswith("fe80"):
                routes.append((fam, r["dst"], r.get("gateway", ""), r.get("dev", "")))
    links = sorted(x["ifname"] for x in json.loads(sh("ip", "-n", ns, "-j", "link", "show").stdout))
    qdiscs = sh("ip", "netns", "exec", ns, "tc", "qdisc", "show").stdout
    return {"addrs": a, "routes": sorted(routes), "links": links,
            "ingress": [line for line in qdiscs.splitlines() if "ingress" in line]}


def make_namespaces():
    """Container netns with eth0 (10.213.77.2/24, default route) and a peer
    netns with peer0 (10.213.77.1/24), joined by a veth pair; and a second
    pair, eth1 (10.213.78.2/24) and peer1 (10.213.78.1/24), MTU 9000."""
    cns, pns = netlib.netns("ctr"), netlib.netns("peer")
    sh("ip", "-n", cns, "link", "add", "eth0", "mtu", str(MTU), "type", "veth", "peer", "name", "peer0",
       "netns", pns, "mtu", str(MTU))
    for ns, dev, a4, a6 in ((cns, "eth0", CTR_ADDR, CTR_ADDR6), (pns, "peer0", PEER_ADDR, PEER_ADDR6)):
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", f"{a4}/24", "dev", dev)
        sh("ip", "-n", ns, "addr", "add", f"{a6}/64", "dev", dev, "nodad")
        sh("ip", "-n", ns, "link", "set", dev, "up")
    sh("ip", "-n", cns, "route", "add", "default", "via", PEER_ADDR)
    sh("ip", "-n", cns, "link", "add", "eth1", "mtu", str(MTU_B), "type", "veth", "peer", "name", "peer1",
       "netns", pns, "mtu", str(MTU_B))
    for ns, dev, a4 in ((cns, "eth1", CTR_ADDR_B), (pns, "peer1", PEER_ADDR_B)):
        sh("ip", "-n", ns, "addr", "add", f"{a4}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
    return cns, pns


def no_state_left(root, cid):
    return not os.path.exists(os.path.join(root, cid))


def fast(t):
    tmp = tempfile.mkdtemp(prefix="kvrun-nete2e-")
    root = os.path.join(tmp, "root")
    kernel, _ = guestlib.find_kernel()

    def create(b, cid, extra_env=None):
        env = dict(os.environ, KVRUN_CONFIG=os.path.join(tmp, "none.json"), KVRUN_CACHE_DIR=os.path.join(tmp, "c"))
        if kernel:
            env["KVRUN_KERNEL"] = kernel
        env.update(extra_env or {})
        return subprocess.run([KVRUN, "--root", root, "--log", os.path.join(tmp, cid + "-log.txt"), "--debug",
                               "create", "--bundle", b, cid], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=300)

    os.makedirs(os.path.join(tmp, "host"))
    b = make_bundle(os.path.join(tmp, "host"), False, ["/bin/sh"], files=False)
    p = create(b, "hostnet")
    t.ok(p.returncode != 0, "host networking (no network namespace entry): create fails")
    t.ok("host networking" in p.stderr, "host networking: the error says why", p.stderr)
    t.ok(no_state_left(root, "hostnet"), "host networking: no state directory left")

    os.makedirs(os.path.join(tmp, "missing"))
    b = make_bundle(os.path.join(tmp, "missing"), "/run/netns/kvnt-does-not-exist", ["/bin/sh"], files=False)
    p = create(b, "missing")
    t.ok(p.returncode != 0, "missing netns path: create fails")
    t.ok("kvnt-does-not-exist" in p.stderr, "missing netns path: the error names it", p.stderr)
    t.ok(no_state_left(root, "missing"), "missing netns path: no state directory left")

    # A failure after the namespace was served: the VM cannot boot a
    # kernel that is not one. Needs /dev/kvm to get that far.
    if guestlib.kvm_problem():
        t.diag(f"skipping the failure-after-setup case: {guestlib.kvm_problem()}")
        return
    cns, pns = make_namespaces()
    before = ns_snapshot(cns, "eth0")
    os.makedirs(os.path.join(tmp, "bad"))
    b = make_bundle(os.path.join(tmp, "bad"), f"/run/netns/{cns}", ["/bin/sh"], files=False)
    bad_kernel = os.path.join(tmp, "not-a-kernel")
    with open(bad_kernel, "wb") as f:
        f.write(b"\0" * 65536)
    p = create(b, "badboot", {"KVRUN_KERNEL": bad_kernel})
    t.ok(p.returncode != 0, "failure after the network was set up: create fails", p.stderr)
    with open(os.path.join(tmp, "badboot-log.txt"), errors="replace") as f:
        log = f.read()
    t.ok("network: eth0" in log, "failure after setup: the network had been set up (log)", log[-2000:])
    t.ok(no_state_left(root, "badboot"), "failure after setup: no state directory left")
    after = ns_snapshot(cns, "eth0")
    t.eq(after, before, "failure after setup: the namespace is as it was (addresses, routes, no TAP, no qdisc)")
    shutil.rmtree(tmp, ignore_errors=True)


def wait_for(path, marker, seconds):
    end = time.time() + seconds
    while time.time() < end:
        with open(path, errors="replace") as f:
            text = f.read()
        if marker in text:
            return text
        time.sleep(2)
    with open(path, errors="replace") as f:
        return f.read()


def section(text, name):
    out = text.split(f"== {name}\n", 1)[-1] if f"== {name}\n" in text else ""
    return out.split("\n== ", 1)[0]


def slow(t):
    kernel, tried = guestlib.find_kernel()
    if not kernel:
        t.skip_all(f"no guest kernel: tried {', '.join(tried)}")
    if guestlib.kvm_problem():
        t.skip_all(guestlib.kvm_problem())
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # subreaper: the monitor is ours to reap
    tmp = tempfile.mkdtemp(prefix="kvrun-nete2e-")
    root = os.path.join(tmp, "root")
    cns, pns = make_namespaces()
    before = ns_snapshot(cns, "eth0")
    before_b = ns_snapshot(cns, "eth1")
    mac = netlib.link_mac(cns, "eth0")
    script = (GUEST_SCRIPT.replace("PEER6", PEER_ADDR6).replace("PEER4", PEER_ADDR).replace("PEERB", PEER_ADDR_B)
              .replace("NAME", DNS_NAME))
    b = make_bundle(tmp, f"/run/netns/{cns}", ["/bin/sh", "-c", script])
    servers = subprocess.Popen(["ip", "netns", "exec", pns, sys.executable, "-c", PEER_SERVERS, PEER_ADDR,
                                DNS_ANSWER], stdout=subprocess.PIPE, text=True)
    servers.stdout.readline()
    env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
               KVRUN_CONFIG=os.path.join(tmp, "none.json"), KVRUN_CONSOLE=os.path.join(tmp, "console.log"))
    # A loaded emulating host can take more than the monitor's default 600 s.
    env.setdefault("KVRUN_BOOT_TIMEOUT", "1100")
    out_path = os.path.join(tmp, "out.txt")
    log_path = os.path.join(tmp, "log.txt")
    with open(out_path, "wb") as so:
        run = subprocess.run([KVRUN, "--root", root, "--log", log_path, "--debug", "run", "--detach", "--bundle", b,
                              "ctr-net"], stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=env, timeout=1250)
    ok = t.ok(run.returncode == 0, "run --detach in the container netns succeeds")
    if ok:
        with open(log_path, errors="replace") as f:
            log = f.read()
        t.ok("data path" in log and "TAP kvt" in log, "the monitor logs the TAP and which data path it uses",
             log[-2000:])
        text = wait_for(out_path, "LISTENING", 600)
        addr = section(text, "addr")
        t.ok(f"inet {CTR_ADDR}/24" in addr, "guest: IPv4 address arrived", addr)
        t.ok(f"inet6 {CTR_ADDR6}/64" in addr, "guest: IPv6 address arrived", addr)
        t.ok(f"link/ether {mac}" in addr, "guest: the interface has the veth's MAC", addr)
        t.ok("eth0:" in addr and "UP" in addr.split("eth0:")[1].split("\n")[0], "guest: eth0 is up", addr)
        t.ok("lo:" in addr and "UP" in addr.split("lo:")[1].split("\n")[0] and "inet 127.0.0.1/8" in addr,
             "guest: loopback up", addr)
        t.ok(f"default via {PEER_ADDR} dev eth0" in section(text, "route"), "guest: default route arrived",
             section(text, "route"))
        t.ok(f"{NET6}::/64 dev eth0" in section(text, "route6"), "guest: IPv6 prefix route",
             section(text, "route6"))
        t.ok(f"== mtu {MTU}\n" in text, f"guest: MTU {MTU} arrived")
        t.ok(f"inet {CTR_ADDR_B}/24" in addr and "eth1:" in addr, "guest: the second interface and its address",
             addr)
        t.ok(f"== mtu1 {MTU_B}\n" in text, f"guest: the second interface's MTU {MTU_B} arrived")
        t.ok("== hostname kvrun-net\n" in text, "guest: hostname")
        t.eq(section(text, "resolv").strip(), f"nameserver {PEER_ADDR}", "guest: resolv.conf bind mount")
        t.ok(f"{PEER_ADDR} peerhost" in section(text, "hosts"), "guest: hosts bind mount")
        t.ok("PING4 ok" in text, "guest: ping of a name from /etc/hosts reaches the peer")
        t.ok("PING6 ok" in text, "guest: ping6 reaches the peer over IPv6")
        t.ok("JUMBO ok" in text, "guest: an 8000-byte ping over the MTU 9000 interface (one frame each way)")
        client = subprocess.run(["ip", "netns", "exec", pns, sys.executable, "-c",
                                 netlib.PEER_TCP_CLIENT, CTR_ADDR],
                                input=PAYLOAD_IN, capture_output=True, timeout=900)
        t.ok(client.returncode == 0, "peer -> guest: TCP connection to nc in the guest",
             client.stdout.decode() + client.stderr.decode())
        text = wait_for(out_path, "DONE", 600)
        want = hashlib.md5(PAYLOAD_IN).hexdigest()
        t.ok(f"TCPIN {want}" in text, "peer -> guest: the payload arrived intact",
             [x for x in text.splitlines() if x.startswith("TCPIN")])
        t.ok("TCPOUT rc=0" in text, "guest -> peer: nc exits 0")
        servers.wait(timeout=120) if "DONE" in text else None
    if servers.poll() is None:
        servers.kill()
    srv = servers.stdout.read()
    if ok:
        seq = "".join(f"{i}\n" for i in range(1, 30001)).encode()
        t.ok(f"tcp {len(seq)} {hashlib.md5(seq).hexdigest()}" in srv, "guest -> peer: the payload arrived intact",
             srv)
        t.ok(f"dns {DNS_NAME}" in srv, "guest -> peer: UDP (DNS query to the resolv.conf nameserver)", srv)
        after = text.split("TCPOUT", 1)[-1]
        dns_lines = [x for x in text.splitlines() if x.startswith("DNS")]
        if DNS_ANSWER not in after and guestlib.guest_segv(None, after.split("DONE", 1)[0]):
            t.todo(False, "peer -> guest: UDP answer reached nslookup", guestlib.GUEST_SEGV_GAP, dns_lines)
        else:
            t.ok(DNS_ANSWER in after, "peer -> guest: UDP answer reached nslookup", dns_lines)
        # A monitor crash, then delete: the state has what teardown needs.
        st = json.loads(sh(KVRUN, "--root", root, "state", "ctr-net").stdout)
        mpid = st["pid"]
        os.kill(mpid, signal.SIGKILL)
        end = time.time() + 60
        while time.time() < end:
            try:
                if os.waitpid(mpid, os.WNOHANG)[0] == mpid:
                    break
            except ChildProcessError:
                if not os.path.exists(f"/proc/{mpid}"):
                    break
            time.sleep(0.5)
        d = subprocess.run([KVRUN, "--root", root, "delete", "ctr-net"], capture_output=True, text=True,
                           timeout=120)
        t.ok(d.returncode == 0, "delete after the monitor was killed with SIGKILL", d.stderr)
    if os.path.exists(os.path.join(root, "ctr-net")):
        subprocess.run([KVRUN, "--root", root, "delete", "--force", "ctr-net"], capture_output=True, timeout=120)
    t.ok(no_state_left(root, "ctr-net"), "nothing left under --root")
    after = ns_snapshot(cns, "eth0")
    t.eq(after, before, "the container namespace is as it was (addresses, routes, no TAP, no ingress qdisc)")
    t.eq(ns_snapshot(cns, "eth1"), before_b, "the second interface is as it was too")
    keep_or_remove(t, tmp, ("log.txt", "console.log", "out.txt"), 60)


def main():
    t = Tap()
    why = netlib.skip_reason()
    if why:
        t.skip_all(why)
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    part = sys.argv[1] if len(sys.argv) > 1 else "fast"
    if part == "fast":
        fast(t)
    else:
        slow(t)
    t.done()


if __name__ == "__main__":
    main()
