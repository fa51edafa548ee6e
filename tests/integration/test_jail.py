#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The monitor's sandbox (runtime/host/jail.c) around a running VM, with the
freestanding test guest: `kvrun boot --jail` drops capabilities before the
VM's threads start and loads the seccomp allowlist once the vCPUs run, as
a container's monitor does after create. The virtio-blk scenario (disk
reads, writes, flush), the virtio-balloon scenario (memory given back with
madvise) and the virtio-vsock scenario (guest connects to a host unix
socket; the host connects to the guest) must pass under it, and
/proc/<pid>/status of the running VM shows Seccomp: 2, NoNewPrivs: 1 and
no effective capability. Needs /dev/kvm; skips loudly without it."""
import os
import socket
import subprocess
import tempfile
import threading
import time

import guestlib
from taplib import Tap

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
if not os.path.isfile(GUEST):
    t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={GUEST!r})")
    t.done()

VM_TIMEOUT_S = 60
SECTORS = 2048
SEED = 91


def boot_args(test, extra, devices):
    return ["--kernel", GUEST, "--test-device", "--console", "--memory", "128M", "--jail",
            "--cmdline", f"test={test} {extra}", "--timeout", str(VM_TIMEOUT_S)] + devices


def check_run(name, rc, out):
    results, plan = guestlib.parse_tap(out)
    for ok, desc in results:
        t.ok(ok, f"{name}: guest: {desc}", out[-2000:])
    t.ok(plan is not None and plan == len(results) and plan > 0, f"{name}: the guest's plan matches", out[-2000:])
    t.eq(rc, 0, f"{name}: kvrun boot --jail exits 0")


def status_of(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.strip()
    except OSError:
        pass
    return fields


with tempfile.TemporaryDirectory() as tmp:
    img = os.path.join(tmp, "disk.img")
    guestlib.write_blk_image(img, SEED, SECTORS)
    r = guestlib.boot(boot_args("virtio-blk", f"blk_seed={SEED} blk_sectors={SECTORS} blk_id=kvrun-disk0",
                                ["--disk", img]), timeout=VM_TIMEOUT_S + 30)
    check_run("blk", r.rc, r.out + "\n" + r.err)
    with open(img, "rb") as f:
        data = f.read(1024)
    t.ok(data[512:] == bytes((0xa5 ^ i ^ SEED) & 0xff for i in range(512)), "blk: the write reached the image")

    r = guestlib.boot(boot_args("virtio-balloon", "balloon_fill=32M", ["--balloon"]), timeout=VM_TIMEOUT_S + 30)
    check_run("balloon", r.rc, r.out + "\n" + r.err)

    uds = os.path.join(tmp, "v.sock")
    PORT, LISTEN = 5000, 6000
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(f"{uds}_{PORT}")
    srv.listen(1)
    srv.settimeout(VM_TIMEOUT_S)
    echoed = []

    def echo():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        with c:
            while True:
                b = c.recv(4096)
                if not b:
                    return
                echoed.append(b)
                c.sendall(b)

    threading.Thread(target=echo, daemon=True).start()
    argv = [guestlib.kvrun(), "boot"] + boot_args(
        "virtio-vsock", f"vsock_seed={SEED} vsock_port={PORT} vsock_listen={LISTEN}", ["--vsock", uds])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out = [b""]

    def drain():
        for chunk in iter(lambda: p.stdout.read1(4096), b""):
            out[0] += chunk

    th = threading.Thread(target=drain, daemon=True)
    th.start()
    marker = f"# vsock: listening on port {LISTEN}".encode()
    deadline = time.monotonic() + VM_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and marker not in out[0]:
        time.sleep(0.02)
    st = status_of(p.pid)
    t.eq(st.get("Seccomp"), "2", "running VM: Seccomp 2 (filter mode)")
    t.eq(st.get("NoNewPrivs"), "1", "running VM: NoNewPrivs 1")
    t.eq(st.get("CapEff"), "0000000000000000", "running VM: no effective capability")
    reply = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.settimeout(VM_TIMEOUT_S)
            c.connect(uds)
            c.sendall(f"CONNECT {LISTEN}\n".encode())
            line = b""
            while not line.endswith(b"\n") and len(line) < 64:
                b = c.recv(1)
                if not b:
                    break
                line += b
            c.sendall(f"from-host-{SEED}".encode())
            want = f"from-guest-{SEED}".encode()
            while len(reply) < len(want):
                b = c.recv(4096)
                if not b:
                    break
                reply += b
    except OSError as e:
        t.diag(f"host connect: {e}")
    try:
        p.wait(timeout=VM_TIMEOUT_S + 10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    th.join(5)
    srv.close()
    check_run("vsock", p.returncode, out[0].decode(errors="replace"))
    t.eq(b"".join(echoed), f"echo-me-{SEED}".encode(), "vsock: the guest's connect reached the host socket")
    t.eq(reply, f"from-guest-{SEED}".encode(), "vsock: the host's connect reached the guest")
t.done()
