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

Times are printed as diagnostics (create from the template vs the build,
which is a cold boot); nothing asserts on them. Skips without a guest
kernel, /dev/kvm, root, mke2fs or busybox."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import guestlib
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
APPLETS = ["sh", "echo", "cat", "hostname", "touch", "od", "head", "date", "seq", "sleep", "tr"]
N = 5


def find_kernel():
    k = os.environ.get("KVRUN_KERNEL")
    if k:
        return k, [f"$KVRUN_KERNEL={k}"]
    return guestlib.find_kernel()


def make_bundle(tmp, name, args, readonly=False):
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
        rm = kvrun(env, "template", "rm", snaps[0][:16])
        t.ok(rm.returncode == 0 and not os.listdir(tpl_dir), "template rm removes it", rm.stderr)
    if t.failed:
        for name in sorted(os.listdir(tmp)):
            if name.endswith((".txt", ".log")):
                with open(os.path.join(tmp, name), errors="replace") as f:
                    t.diag(f"--- {name} (last 30 lines)\n" + "".join(f.readlines()[-30:]))
        t.diag(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
