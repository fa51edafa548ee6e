#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun's virtio devices driven by the freestanding test guest (tests/guest
virtio.c) through `kvrun boot --disk ... --vsock ...`.

- virtio-blk: a raw image with a seeded pattern; the guest reads, writes,
  flushes, asks for the id, sends chained and indirect requests and reads
  past the end. The written sector must be in the image file afterwards.
  The same disk read-only refuses the write and stays unchanged.
- virtio-blk-bad: malformed queues put the device in DEVICE_NEEDS_RESET
  and a reset brings it back; kvrun keeps running and ends normally.
- virtio-vsock: the guest connects to a port this test listens on
  (<PATH>_<port>) and gets its data echoed; then this test connects to
  PATH with "CONNECT <port>" and trades data with the guest.

Each run checks every guest TAP line, the plan, the exit status, and that
no kvrun process or socket file is left. Needs /dev/kvm; skips loudly
without it.
"""
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
SEED = 173


def boot_args(test, extra, devices):
    cmdline = f"test={test} {extra}".strip()
    return ["--kernel", GUEST, "--test-device", "--console", "--memory", "128M",
            "--cmdline", cmdline, "--timeout", str(VM_TIMEOUT_S)] + devices


def check_run(name, r, status=0):
    results, plan = guestlib.parse_tap(r.out + "\n" + r.err)
    for ok, desc in results:
        t.ok(ok, f"{name}: guest: {desc}", r.describe())
    t.ok(plan is not None and plan == len(results) and plan > 0,
         f"{name}: guest printed a plan matching its {len(results)} results", r.describe())
    t.ok(r.rc == status, f"{name}: exit status {r.rc} (expected {status})", r.describe())
    return {desc for ok, desc in results if ok}


before = guestlib.kvrun_pids()

with tempfile.TemporaryDirectory() as tmp:
    # --- virtio-blk, writable ---
    img = os.path.join(tmp, "disk.img")
    guestlib.write_blk_image(img, SEED, SECTORS)
    blk_extra = f"blk_seed={SEED} blk_sectors={SECTORS} blk_id=kvrun-disk0"
    r = guestlib.boot(boot_args("virtio-blk", blk_extra, ["--disk", img]), timeout=VM_TIMEOUT_S + 30)
    passed = check_run("blk", r)
    t.ok("blk: sector 1 reads back what was written (status 0)" in passed, "blk: the guest's write passed")
    with open(img, "rb") as f:
        data = f.read()
    written = bytes((0xa5 ^ i ^ SEED) & 0xff for i in range(512))
    t.eq(len(data), SECTORS * 512, "blk: image size unchanged")
    t.ok(data[512:1024] == written, "blk: the written sector landed in the image file")
    t.ok(data[:512] == guestlib.blk_pattern(SEED, 0) and all(
        data[s * 512:(s + 1) * 512] == guestlib.blk_pattern(SEED, s) for s in range(2, SECTORS)),
        "blk: every other sector of the image is untouched")

    # --- virtio-blk, read-only ---
    guestlib.write_blk_image(img, SEED, SECTORS)
    r = guestlib.boot(boot_args("virtio-blk", blk_extra + " blk_ro=1", ["--disk", img + ",ro"]),
                      timeout=VM_TIMEOUT_S + 30)
    passed = check_run("blk ro", r)
    t.ok("blk: write to a read-only disk -> IOERR (status 1)" in passed, "blk ro: the write was refused")
    with open(img, "rb") as f:
        t.ok(f.read(1024) == guestlib.blk_pattern(SEED, 0) + guestlib.blk_pattern(SEED, 1),
             "blk ro: the image is unchanged")

    # --- malformed requests ---
    r = guestlib.boot(boot_args("virtio-blk-bad", f"blk_seed={SEED}", ["--disk", img]),
                      timeout=VM_TIMEOUT_S + 30)
    passed = check_run("blk-bad", r)
    t.eq(sum(1 for d in passed if d.endswith("-> DEVICE_NEEDS_RESET")), 5,
         "blk-bad: five malformed requests each set DEVICE_NEEDS_RESET")
    t.ok(not r.timed_out and "crash" not in r.err, "blk-bad: kvrun ended normally", r.describe())

    # --- virtio-vsock ---
    uds = os.path.join(tmp, "v.sock")
    PORT, LISTEN = 5000, 6000
    echo_srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    echo_srv.bind(f"{uds}_{PORT}")
    echo_srv.listen(1)
    echo_srv.settimeout(VM_TIMEOUT_S)
    echoed = []

    def echo():
        try:
            c, _ = echo_srv.accept()
        except OSError as e:
            echoed.append(f"accept: {e}")
            return
        with c:
            c.settimeout(VM_TIMEOUT_S)
            while True:
                try:
                    b = c.recv(4096)
                except OSError as e:
                    echoed.append(f"recv: {e}")
                    return
                if not b:
                    return
                echoed.append(b)
                c.sendall(b)

    th = threading.Thread(target=echo, daemon=True)
    th.start()

    argv = [guestlib.kvrun(), "boot"] + boot_args(
        "virtio-vsock", f"vsock_seed={SEED} vsock_port={PORT} vsock_listen={LISTEN}", ["--vsock", uds])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out = {"out": b"", "err": b""}

    def drain(stream, key):
        for chunk in iter(lambda: stream.read1(4096), b""):
            out[key] += chunk

    drains = [threading.Thread(target=drain, args=(p.stdout, "out"), daemon=True),
              threading.Thread(target=drain, args=(p.stderr, "err"), daemon=True)]
    for d in drains:
        d.start()
    host = {"ok_line": None, "reply": b"", "error": None}
    deadline = time.monotonic() + VM_TIMEOUT_S
    marker = f"# vsock: listening on port {LISTEN}".encode()
    while time.monotonic() < deadline and p.poll() is None and marker not in out["out"] + out["err"]:
        time.sleep(0.02)
    if marker in out["out"] + out["err"]:
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
                host["ok_line"] = line.decode(errors="replace")
                c.sendall(f"from-host-{SEED}".encode())
                want = f"from-guest-{SEED}".encode()
                while len(host["reply"]) < len(want):
                    b = c.recv(4096)
                    if not b:
                        break
                    host["reply"] += b
        except OSError as e:
            host["error"] = str(e)
    try:
        p.wait(timeout=max(1, deadline - time.monotonic()) + 10)
        timed_out = False
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        timed_out = True
    for d in drains:
        d.join(5)
    th.join(5)
    echo_srv.close()
    r = guestlib.Result(argv, p.returncode, out["out"].decode(errors="replace"),
                        out["err"].decode(errors="replace"), 0, timed_out)
    check_run("vsock", r)
    t.ok(host["error"] is None, f"vsock: host side without socket errors ({host['error']})")
    got = b"".join(x for x in echoed if isinstance(x, bytes))
    t.eq(got, f"echo-me-{SEED}".encode(), "vsock: the host port received the guest's payload")
    ok_line = host["ok_line"] or ""
    parts = ok_line.split()
    t.ok(len(parts) == 2 and parts[0] == "OK" and parts[1].isdigit() and int(parts[1]) >= 1 << 30,
         f"vsock: CONNECT answered 'OK <port>' ({ok_line!r})")
    t.eq(host["reply"], f"from-guest-{SEED}".encode(), "vsock: the guest's reply reached the host")
    t.ok(not os.path.exists(uds), "vsock: the listener socket file is removed")
    t.eq(sorted(os.listdir(tmp)), ["disk.img", f"v.sock_{PORT}"], "no other file left in the test directory")

    # --- what `kvrun boot --vsock` must refuse ---
    def refuse(name, devices, keep=None):
        r = guestlib.boot(boot_args("poweroff", "", devices), timeout=VM_TIMEOUT_S)
        t.ok(r.rc == 125 and "kvrun boot:" in r.err, f"refuses {name} (status 125 with a message)", r.describe())
        if keep:
            with open(keep, "rb") as f:
                t.eq(f.read(), b"keep me", f"{name}: the file is left alone")

    notsock = os.path.join(tmp, "not-a-socket")
    with open(notsock, "wb") as f:
        f.write(b"keep me")
    refuse("--vsock on an existing regular file", ["--vsock", notsock], keep=notsock)
    refuse("--vsock in a missing directory", ["--vsock", os.path.join(tmp, "no", "v.sock")])
    refuse("--vsock with --snapshot-on-port", ["--vsock", uds, "--snapshot-on-port", os.path.join(tmp, "s")])
    t.ok(not os.path.exists(uds) and not os.path.exists(os.path.join(tmp, "s")),
         "refused runs left no socket or snapshot file")

t.eq(guestlib.kvrun_pids() - before, set(), "no kvrun process left behind")
t.done()
