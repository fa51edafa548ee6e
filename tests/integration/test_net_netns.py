#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The host side of container networking (runtime/host/netns.c) on namespaces
this test builds itself: a "container" namespace holding veths whose peers
sit in a "peer" namespace, with addresses from 10.199.0.0/16 and fd99::/16
that exist only inside them. Checks the guest config, the TAPs and tc
redirects, frames both ways between the peer and the TAP fd, teardown
(also after a crash), and the spec rules."""
import json
import os
import tempfile

import netlib
from netlib import sh
from taplib import Tap

ETH_BCAST = "ff" * 6


def make_pair(cns, pns, dev, peer, v4, v6, gw4, mtu=1500):
    sh("ip", "-n", cns, "link", "add", dev, "mtu", str(mtu), "type", "veth", "peer", "name", peer, "netns", pns,
       "mtu", str(mtu))
    sh("ip", "-n", cns, "addr", "add", v4, "dev", dev)
    if v6:
        sh("ip", "-n", cns, "addr", "add", v6, "dev", dev, "nodad")
    sh("ip", "-n", cns, "link", "set", dev, "up")
    sh("ip", "-n", pns, "link", "set", peer, "up")
    if gw4:
        sh("ip", "-n", cns, "route", "add", "default", "via", gw4, "dev", dev)


def ip_addrs(ns, dev):
    out = sh("ip", "-n", ns, "-o", "addr", "show", "dev", dev).stdout
    return sorted(w.split()[3] for w in out.splitlines() if " scope global" in w)


def our_links(ns):
    return [ln for ln in sh("ip", "-n", ns, "-o", "link").stdout.splitlines() if ": kvt" in ln]


def exchange(t, s, idx, cns, pns, peer, mac):
    """A broadcast from the peer reaches the TAP fd; a frame written to the
    TAP fd reaches the peer."""
    pmac = netlib.link_mac(pns, peer).replace(":", "")
    arp = ETH_BCAST + pmac + "0806" + "0001080006040001" + pmac + "0ac70001" + "00" * 6 + "0ac70002"
    s.p.stdin.write(f"recv {idx} 5000 0806\n")
    s.p.stdin.flush()
    # The helper is now waiting on the TAP fd; the peer sends.
    t.eq(netlib.peer_send(pns, peer, arp), "sent", f"peer {peer} sent an ARP request")
    got = s.p.stdout.readline().strip()
    t.ok(got.startswith("frame ") and got[6:].startswith(arp), f"the ARP request arrived on TAP fd {idx}", got)

    frame = pmac + mac.replace(":", "") + "88b5" + "6b7672756e2d6e6574" * 8
    listener = netlib.peer_listen(pns, peer, "88b5", 5)
    t.eq(s.cmd(f"send {idx} {frame}"), "sent", f"frame written to TAP fd {idx}")
    out = listener.stdout.read().strip()
    listener.wait()
    t.ok(out.startswith("frame " + frame), f"the frame arrived at {peer} unchanged", out)


def test_one_interface(t):
    cns, pns = netlib.netns("c1"), netlib.netns("p1")
    make_pair(cns, pns, "eth0", "peer0", "10.199.1.2/24", "fd99:1::2/64", "10.199.1.1")
    sh("ip", "-n", cns, "-6", "route", "add", "default", "via", "fd99:1::1", "dev", "eth0")
    mac = netlib.link_mac(cns, "eth0")
    s = netlib.Setup(cns, "ctr-one")
    if not t.ok(s.ready, "setup on one interface", s.error()):
        return
    ifs = s.ifaces()
    t.eq(len(ifs), 1, "one interface for the guest")
    name, tap, gmac, mtu, nfds = ifs[0]
    t.eq((name, gmac, mtu, nfds), ("eth0", mac, "1500", "1"), "name, MAC of the veth, MTU, one queue")
    t.eq(sorted(s.addrs("eth0")), ["10.199.1.2/24", "fd99:1::2/64"], "IPv4 and IPv6 addresses for the guest")
    routes = s.routes("eth0")
    t.ok(["0.0.0.0/0", "10.199.1.1", "0"] in routes, "IPv4 default gateway for the guest", routes)
    t.ok(any(r[0] == "::/0" and r[1] == "fd99:1::1" for r in routes), "IPv6 default gateway for the guest", routes)
    t.eq(ip_addrs(cns, "eth0"), [], "addresses moved off the veth")
    t.ok("default" not in sh("ip", "-n", cns, "route").stdout, "no IPv4 default route left on the host side")
    tl = sh("ip", "-n", cns, "-o", "link", "show", "dev", tap).stdout
    t.ok(",UP" in tl and "mtu 1500" in tl, f"TAP {tap} exists, up, mtu 1500", tl)
    f1 = sh("tc", "-n", cns, "filter", "show", "dev", "eth0", "ingress").stdout
    f2 = sh("tc", "-n", cns, "filter", "show", "dev", tap, "ingress").stdout
    t.ok(f"Egress Redirect to device {tap}" in f1 and "u32" in f1, "eth0 ingress redirected to the TAP", f1)
    t.ok("Egress Redirect to device eth0" in f2, "TAP ingress redirected to eth0", f2)
    exchange(t, s, 0, cns, pns, "peer0", mac)
    t.eq(s.quit(), 0, "helper exits")
    r = netlib.teardown(cns, "ctr-one")
    t.eq(r.returncode, 0, "teardown succeeds " + r.stderr)
    t.eq(our_links(cns), [], "no TAP left")
    t.ok("ingress" not in sh("tc", "-n", cns, "qdisc", "show", "dev", "eth0").stdout, "ingress qdisc removed")
    t.eq(ip_addrs(cns, "eth0"), ["10.199.1.2/24", "fd99:1::2/64"], "addresses restored")
    t.ok("default via 10.199.1.1" in sh("ip", "-n", cns, "route").stdout, "IPv4 default route restored")
    t.ok("default via fd99:1::1" in sh("ip", "-n", cns, "-6", "route").stdout, "IPv6 default route restored")
    t.ok("alias" not in sh("ip", "-n", cns, "-d", "link", "show", "dev", "eth0").stdout, "alias cleared")
    t.eq(netlib.teardown(cns, "ctr-one").returncode, 0, "teardown again is a no-op")


def test_two_interfaces(t):
    cns, pns = netlib.netns("c2"), netlib.netns("p2")
    make_pair(cns, pns, "eth0", "peer0", "10.199.2.2/24", None, "10.199.2.1")
    make_pair(cns, pns, "eth1", "peer1", "10.199.3.2/24", "fd99:3::2/64", None, mtu=9000)
    s = netlib.Setup(cns, "ctr-two", pairs=2)
    if not t.ok(s.ready, "setup on two interfaces, two queue pairs", s.error()):
        return
    ifs = {i[0]: i for i in s.ifaces()}
    t.eq(sorted(ifs), ["eth0", "eth1"], "both interfaces for the guest")
    t.eq(ifs.get("eth1", [None] * 5)[3], "9000", "eth1 MTU 9000")
    t.eq(ifs.get("eth0", [None] * 5)[4], "2", "two TAP queues (IFF_MULTI_QUEUE)")
    t.eq(s.addrs("eth1"), ["10.199.3.2/24", "fd99:3::2/64"], "eth1 addresses")
    for name, i in ifs.items():
        tl = sh("ip", "-n", cns, "-o", "link", "show", "dev", i[1]).stdout
        t.ok(f"mtu {i[3]}" in tl, f"TAP of {name} has mtu {i[3]}", tl)
        f = sh("tc", "-n", cns, "filter", "show", "dev", name, "ingress").stdout
        t.ok(f"Egress Redirect to device {i[1]}" in f, f"{name} redirected to its TAP")
    for k, name in enumerate(n[0] for n in s.ifaces()):
        exchange(t, s, k, cns, pns, "peer" + name[-1], netlib.link_mac(cns, name))
    s.quit()
    t.eq(netlib.teardown(cns, "ctr-two").returncode, 0, "teardown")
    t.eq(our_links(cns), [], "no TAP left")
    t.eq(ip_addrs(cns, "eth1"), ["10.199.3.2/24", "fd99:3::2/64"], "eth1 addresses restored")
    t.eq(ip_addrs(cns, "eth0"), ["10.199.2.2/24"], "eth0 address restored")


def test_crash_and_empty(t):
    cns, pns = netlib.netns("c3"), netlib.netns("p3")
    make_pair(cns, pns, "eth0", "peer0", "10.199.4.2/24", None, "10.199.4.1")
    s = netlib.Setup(cns, "ctr-crash")
    t.ok(s.ready, "setup", s.error())
    s.kill()
    t.eq(our_links(cns), [], "the TAP goes with the killed monitor")
    t.ok("ingress" in sh("tc", "-n", cns, "qdisc", "show", "dev", "eth0").stdout, "the veth's qdisc is left over")
    s = netlib.Setup(cns, "ctr-crash")
    t.ok(s.ready and len(s.ifaces()) == 1 and s.addrs("eth0") == ["10.199.4.2/24"],
         "setup again after a crash finds the recorded addresses", s.lines)
    s.kill()
    r = netlib.teardown(cns, "ctr-crash")
    t.eq(r.returncode, 0, "teardown after a crash " + r.stderr)
    t.eq(ip_addrs(cns, "eth0"), ["10.199.4.2/24"], "addresses restored after a crash")
    t.ok("ingress" not in sh("tc", "-n", cns, "qdisc", "show", "dev", "eth0").stdout, "qdisc removed")

    empty = netlib.netns("e")
    s = netlib.Setup(empty, "ctr-empty")
    t.ok(s.ready and s.ifaces() == [], "a namespace with only lo: loopback only", s.lines)
    s.quit()
    r = netlib.teardown("kvnt-gone-%d" % os.getpid(), "x")
    t.eq(r.returncode, 0, "teardown of a vanished namespace is not an error")


def routes4(ns):
    return sorted(ln.strip() for ln in sh("ip", "-n", ns, "route").stdout.splitlines() if ln.strip())


def test_shared_namespace(t):
    """Two containers in one network namespace (a pod's, before pods are
    one VM): the second is refused before it changes anything, and neither
    its failure nor its teardown undoes what the first did; after both are
    gone the namespace has its address and default route back."""
    cns, pns = netlib.netns("c5"), netlib.netns("p5")
    make_pair(cns, pns, "eth0", "peer0", "10.199.5.2/24", None, "10.199.5.1")
    before_routes = routes4(cns)
    a = netlib.Setup(cns, "ctr-first")
    if not t.ok(a.ready and len(a.ifaces()) == 1, "the first container serves eth0", a.error()):
        return
    tap_a = a.ifaces()[0][1]
    t.eq(a.addrs("eth0"), ["10.199.5.2/24"], "the first container got eth0's address")
    b = netlib.Setup(cns, "ctr-second")
    err = b.error()
    t.ok(not b.ready, "the second container in the same namespace is refused", b.lines)
    t.ok("already served by another kvrun container" in err and tap_a in err,
         "the error says the namespace is served, naming the first's TAP", err)
    t.eq([ln.split(":")[1].strip().split("@")[0] for ln in our_links(cns)], [tap_a],
         "the first's TAP is the only TAP: the second took none, not even the first's")
    f = sh("tc", "-n", cns, "filter", "show", "dev", "eth0", "ingress").stdout
    t.ok(f"Egress Redirect to device {tap_a}" in f, "eth0 still redirects to the first's TAP", f)
    alias = sh("ip", "-n", cns, "-d", "link", "show", "dev", "eth0").stdout
    t.ok("10.199.5.2/24" in alias, "eth0 still holds the first's record of its address", alias)
    t.eq(netlib.teardown(cns, "ctr-second").returncode, 0, "teardown of the second succeeds")
    t.eq(len(our_links(cns)), 1, "and leaves the first's TAP")
    t.ok("10.199.5.2/24" in sh("ip", "-n", cns, "-d", "link", "show", "dev", "eth0").stdout,
         "and the first's record")
    a.quit()
    t.eq(netlib.teardown(cns, "ctr-first").returncode, 0, "teardown of the first")
    t.eq(ip_addrs(cns, "eth0"), ["10.199.5.2/24"], "the namespace has its address back")
    t.eq(routes4(cns), before_routes, "and its default route")
    t.eq(our_links(cns), [], "no TAP left")
    # A record left by a first container that crashed (its TAP gone) is
    # still that container's to give back: refused too.
    a = netlib.Setup(cns, "ctr-first")
    a.kill()
    b = netlib.Setup(cns, "ctr-second")
    t.ok(not b.ready and "has its addresses held by" in b.error(),
         "a namespace whose interface holds a crashed container's record is refused")
    t.eq(netlib.teardown(cns, "ctr-first").returncode, 0, "the crashed one's teardown")
    t.eq(ip_addrs(cns, "eth0"), ["10.199.5.2/24"], "gives the address back")
    b = netlib.Setup(cns, "ctr-second")
    t.ok(b.ready and b.addrs("eth0") == ["10.199.5.2/24"], "then the namespace can be served again", b.lines)
    b.quit()
    netlib.teardown(cns, "ctr-second")


def test_spec(t):
    with tempfile.TemporaryDirectory() as d:
        def run(namespaces):
            cfg = {"ociVersion": "1.2.0", "root": {"path": "rootfs"}, "process": {"args": ["sh"], "cwd": "/"},
                   "linux": {"namespaces": namespaces}}
            p = os.path.join(d, "config.json")
            with open(p, "w") as f:
                json.dump(cfg, f)
            return netlib.sh(netlib.HELPER, "spec", p, check=False)

        r = run([{"type": "pid"}, {"type": "mount"}])
        t.ok(r.returncode != 0 and "host networking" in r.stderr, "host network refused with a clear error",
             r.stderr)
        r = run([{"type": "network"}])
        t.eq(r.stdout.strip(), "new", "a new network namespace: loopback only")
        r = run([{"type": "network", "path": "/run/netns/x"}])
        t.eq(r.stdout.strip(), "/run/netns/x", "the namespace path is used")


def main():
    t = Tap()
    reason = netlib.skip_reason()
    if reason:
        t.skip_all(reason)
    test_one_interface(t)
    test_two_interfaces(t)
    test_crash_and_empty(t)
    test_shared_namespace(t)
    test_spec(t)
    t.done()


main()
