#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""guest-init's network configuration (guest-init/netcfg.c) run on the host
inside a throwaway namespace: a veth stands in for the guest's virtio-net
device, found by its MAC; `ip addr` and `ip route` must show the result."""
import os

import netlib
from netlib import sh
from taplib import Tap

MAC = "52:54:00:99:00:01"


def main():
    t = Tap()
    reason = netlib.skip_reason()
    if reason:
        t.skip_all(reason)

    ns = netlib.netns("g")
    sh("ip", "-n", ns, "link", "add", "gv0", "address", MAC, "type", "veth", "peer", "name", "gv1")
    sh("ip", "-n", ns, "link", "set", "gv1", "up")
    r = sh("ip", "netns", "exec", ns, netlib.HELPER, "netcfg", "--name", "eth7", "--mac", MAC, "--mtu", "9000",
           "--addr", "10.199.9.2/24", "--addr", "fd99:9::2/64", "--route", "10.199.8.0/24,10.199.9.254",
           "--route", "0.0.0.0/0,10.199.9.1", "--route", "::/0,fd99:9::1", check=False)
    t.eq(r.returncode, 0, "netcfg applied " + r.stderr)
    link = sh("ip", "-n", ns, "-o", "link", "show", "dev", "eth7", check=False).stdout
    t.ok("eth7" in link, "interface found by MAC and renamed", link)
    t.ok("mtu 9000" in link and ",UP" in link, "mtu 9000 and up", link)
    lo = sh("ip", "-n", ns, "-o", "link", "show", "dev", "lo").stdout
    t.ok(",UP" in lo, "loopback up", lo)
    addrs = sh("ip", "-n", ns, "-o", "addr", "show", "dev", "eth7").stdout
    t.ok("inet 10.199.9.2/24" in addrs, "IPv4 address", addrs)
    t.ok("inet6 fd99:9::2/64" in addrs, "IPv6 address", addrs)
    routes = sh("ip", "-n", ns, "route").stdout
    t.ok("default via 10.199.9.1 dev eth7" in routes, "IPv4 default gateway", routes)
    t.ok("10.199.8.0/24 via 10.199.9.254 dev eth7" in routes, "IPv4 route", routes)
    r6 = sh("ip", "-n", ns, "-6", "route").stdout
    t.ok("default via fd99:9::1 dev eth7" in r6, "IPv6 default gateway", r6)

    r = sh("ip", "netns", "exec", ns, netlib.HELPER, "netcfg", "--mac", "52:54:00:99:00:77", "--addr",
           "10.199.9.3/24", check=False)
    t.ok(r.returncode != 0 and "no interface with MAC" in r.stderr, "an unknown MAC is a clear error", r.stderr)

    ns2 = netlib.netns("lo")
    r = sh("ip", "netns", "exec", ns2, netlib.HELPER, "netcfg", check=False)
    t.eq(r.returncode, 0, "no interfaces: loopback only " + r.stderr)
    t.ok(",UP" in sh("ip", "-n", ns2, "-o", "link", "show", "dev", "lo").stdout, "loopback up")
    t.done()


main()
