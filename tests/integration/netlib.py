# SPDX-License-Identifier: Apache-2.0
"""Helpers for the network integration tests: private network namespaces
(named after the test's pid, removed at exit), veth pairs with addresses
from private ranges inside them, raw frames sent and caught in a namespace,
and the net-helper program that drives kvrun's netns code."""
import atexit
import os
import shutil
import subprocess
import sys

HELPER = os.environ.get("KVRUN_NET_HELPER", "build/tests/unit/runtime/host/net-helper")
_namespaces = []


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (network namespaces, TAP devices, tc)"
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            return f"'{tool}' (iproute2) is not installed"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing"
    if not os.access(HELPER, os.X_OK):
        return f"net-helper not built at {HELPER}"
    r = subprocess.run(["ip", "netns", "add", f"kvnt-probe-{os.getpid()}"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create network namespaces: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", f"kvnt-probe-{os.getpid()}"], capture_output=True)
    return None


def sh(*argv, check=True):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return r


def netns(tag):
    name = f"kvnt-{tag}-{os.getpid()}"
    sh("ip", "netns", "add", name)
    _namespaces.append(name)
    return name


@atexit.register
def _cleanup():
    for ns in _namespaces:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def link_mac(ns, dev):
    out = sh("ip", "-n", ns, "-o", "link", "show", "dev", dev).stdout
    return out.split("link/ether ")[1].split()[0]


# A peer program run inside a namespace with `ip netns exec`: sends one raw
# frame, or waits for one of an ethertype and prints it in hex.
PEER = r"""
import socket, sys, select, time
mode, dev = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((dev, 0))
if mode == "send":
    s.send(bytes.fromhex(sys.argv[3]))
    print("sent", flush=True)
else:
    etype, end = int(sys.argv[3], 16), time.time() + float(sys.argv[4])
    print("listening", flush=True)
    while time.time() < end:
        if not select.select([s], [], [], max(0, end - time.time()))[0]:
            break
        f, addr = s.recvfrom(65536)
        if addr[2] != socket.PACKET_OUTGOING and len(f) >= 14 and int.from_bytes(f[12:14], "big") == etype:
            print("frame " + f.hex(), flush=True)
            sys.exit(0)
    print("timeout", flush=True)
"""


def peer_send(ns, dev, frame_hex):
    return sh("ip", "netns", "exec", ns, sys.executable, "-c", PEER, "send", dev, frame_hex).stdout.strip()


def peer_listen(ns, dev, etype, seconds):
    """Start a listener; returns the Popen once it is ready."""
    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", PEER, "recv", dev, etype, str(seconds)],
                         stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p


class Setup:
    """net-helper setup, kept running (the TAPs live as long as it does)."""

    def __init__(self, ns, cid, pairs=1):
        self.p = subprocess.Popen([HELPER, "setup", f"/run/netns/{ns}", cid, str(pairs)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.ready = False
        for line in self.p.stdout:
            line = line.strip()
            if line == "ready":
                self.ready = True
                break
            self.lines.append(line)

    def error(self):
        if self.ready:
            return ""
        self.p.wait(timeout=60)
        return self.p.stderr.read()

    def ifaces(self):
        return [line.split()[1:] for line in self.lines if line.startswith("iface ")]

    def addrs(self, name):
        return [line.split()[2] for line in self.lines if line.startswith(f"addr {name} ")]

    def routes(self, name):
        return [line.split()[2:] for line in self.lines if line.startswith(f"route {name} ")]

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def quit(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
        return self.p.wait(timeout=30)

    def kill(self):
        self.p.kill()
        self.p.wait()


def teardown(ns, cid):
    return subprocess.run([HELPER, "teardown", f"/run/netns/{ns}", cid], capture_output=True, text=True, timeout=60)


# In a peer network namespace (python3 -c PEER_TCP_CLIENT ADDR): connect
# to ADDR port 5001, retrying while the guest's server is not listening
# yet, send stdin, read until the guest closes, print "sent N".
PEER_TCP_CLIENT = r"""
import socket, sys, time
data = sys.stdin.buffer.read()
end = time.time() + 600
while True:
    try:
        s = socket.create_connection((sys.argv[1], 5001), timeout=30); break
    except OSError as e:
        if time.time() > end: print("connect failed", e); sys.exit(1)
        time.sleep(1)
s.sendall(data); s.shutdown(socket.SHUT_WR)
while s.recv(65536): pass
print("sent", len(data))
"""
