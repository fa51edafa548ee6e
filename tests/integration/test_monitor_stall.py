#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A guest that stops in the middle of a control frame cannot freeze its
container's VM monitor.

`kvrun create` boots the freestanding test guest as the container's
kernel, in scenario fake-init (tests/guest/virtio-vsock.c): it says HELLO,
answers START with READY, opens the three stdio streams, then sends the
header of an EXIT frame that promises 30 bytes of body, 4 of them, and
nothing more. The monitor must keep answering control.sock (`kvrun ps`)
while the frame is incomplete, then drop guest-init's stream at its
deadline (30 s without a byte) with the reason in the log, and end the
container. Before, the monitor read the body with a blocking read: every
request after that point hung.

Then a guest that halts for good with interrupts off (fake-init halt=1)
after the start: its vCPU stays inside KVM_RUN. The monitor must still
answer "vmstats" (every `kvrun events` sample asks for it) at once, and
again; it once opened the VM statistics there (KVM_GET_STATS_FD on each
vCPU, which waits for that vCPU's KVM_RUN to return), and the monitor froze
for good. Then kill 9 ends the container.

Needs /dev/kvm and root; skips loudly otherwise."""
import socket
import json
import os
import shutil
import subprocess
import tempfile
import time

import guestlib
from bundlelib import wait_for
from taplib import Tap

KVRUN = guestlib.kvrun()
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
STALL_S = 30  # GUEST_FRAME_STALL_MS in runtime/monitor-int.h
t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
if os.geteuid() != 0:
    t.skip_all("needs root (kvrun create builds a root disk and a cgroup-less monitor as root)")
if not os.path.isfile(GUEST):
    t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={GUEST!r})")
    t.done()


def kvrun(env, root, *args, timeout=60):
    return subprocess.run([KVRUN, "--root", root] + list(args), capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def create(env, root, *args, timeout=120):
    """create, whose stdout and stderr become the container's: files, not
    pipes that would stay open as long as the container."""
    with open(os.path.join(tmp, "create.out"), "w+") as out:
        p = subprocess.run([KVRUN, "--root", root] + list(args), stdout=out, stderr=out, env=env,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        out.seek(0)
        return p.returncode, out.read()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


tmp = tempfile.mkdtemp(prefix="kvrun-test-stall-")
root, bundle, log = os.path.join(tmp, "root"), os.path.join(tmp, "bundle"), os.path.join(tmp, "kvrun.log")
os.makedirs(os.path.join(bundle, "rootfs", "bin"))
subprocess.run([KVRUN, "spec", "-b", bundle], check=True)
with open(os.path.join(bundle, "config.json")) as f:
    spec = json.load(f)
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/true"]
# The test guest finds its devices on the command line, and has no modules.
spec.setdefault("annotations", {}).update({"io.kvrun.kernel.acpi": "off", "io.kvrun.kernel.modules": "none"})
with open(os.path.join(bundle, "config.json"), "w") as f:
    json.dump(spec, f)
with open(os.path.join(tmp, "config.json"), "w") as f:
    json.dump({"cmdline_extra": "test=fake-init stall=1"}, f)
env = dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=os.path.join(tmp, "config.json"), KVRUN_TEMPLATES="0",
           KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_ROOTFS_CACHE="0")
pidfile = os.path.join(tmp, "pid")
cid = f"stall{os.getpid()}"  # its default cgroup: its own, also beside another run of this test

rc, out = create(env, root, "--log", log, "create", "--bundle", bundle, "--pid-file", pidfile, cid)
if not t.ok(rc == 0, "create with the fake guest-init", f"rc {rc}\n{out}"):
    t.diag(open(log).read() if os.path.exists(log) else "(no log)")
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()
pid = int(open(pidfile).read())
t0 = time.time()

# The guest sends its partial frame right after its stdio streams: give it
# a moment, then the monitor must answer while the frame stays incomplete.
time.sleep(2)
answers = []
for i in range(3):
    start = time.time()
    try:
        p = kvrun(env, root, "ps", "--format", "json", cid, timeout=10)
        answers.append((p.returncode, round(time.time() - start, 2), p.stderr.strip()))
    except subprocess.TimeoutExpired:
        answers.append(("hung", 10, ""))
    time.sleep(2)
t.ok(all(a[0] == 0 and a[1] < 5 for a in answers),
     "the monitor answers ps while guest-init's frame is incomplete", repr(answers))
t.ok(time.time() - t0 < STALL_S - 5, "those answers came before the stall deadline")

# At the deadline the stream is dropped and the container ends.
gone = wait_for(lambda: not alive(pid), timeout=STALL_S + 40)
t.ok(gone, f"the monitor ended the container after about {STALL_S} s of silence",
     f"still alive after {round(time.time() - t0)} s")
elapsed = time.time() - t0
t.ok(STALL_S - 3 <= elapsed, f"not before the deadline ({elapsed:.0f} s after create)")
text = open(log).read() if os.path.exists(log) else ""
t.ok("sent part of a frame and nothing for 30 s" in text, "the log says why the stream was dropped",
     text[-2000:])
st = kvrun(env, root, "state", cid)
t.ok(st.returncode == 0 and json.loads(st.stdout).get("status") == "stopped", "state: stopped",
     st.stdout + st.stderr)
d = kvrun(env, root, "delete", "--force", cid)
t.ok(d.returncode == 0, "delete", d.stderr)
if not gone:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def ask(sock_path, request, timeout=10):
    """One control.sock request's reply line, or why there was none."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall(request.encode() + b"\n")
        data = b""
        while b"\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace").split("\n")[0]
    except OSError as e:  # socket.timeout among them
        return f"no answer: {e}"
    finally:
        s.close()


with open(os.path.join(tmp, "config.json"), "w") as f:
    json.dump({"cmdline_extra": "test=fake-init halt=1"}, f)
hid = f"halted{os.getpid()}"
hpid_file = os.path.join(tmp, "hpid")
rc, out = create(env, root, "--log", log, "create", "--bundle", bundle, "--pid-file", hpid_file, hid)
if t.ok(rc == 0, "halted guest: create with the fake guest-init (halt=1)", f"rc {rc}\n{out}"):
    hpid = int(open(hpid_file).read())
    sock = os.path.join(root, hid, "control.sock")
    # The guest halts right after its stdio streams.
    time.sleep(3)
    replies = []
    for _ in range(2):
        start = time.time()
        replies.append((ask(sock, "vmstats"), round(time.time() - start, 2)))
    t.ok(all(r.startswith("ok {") and el < 5 for r, el in replies),
         "halted guest: the monitor answers vmstats at once, twice, its vCPU inside KVM_RUN",
         repr([(r[:120], el) for r, el in replies]))
    k = kvrun(env, root, "kill", hid, "9")
    t.ok(k.returncode == 0, "halted guest: kill 9", k.stderr)
    t.ok(wait_for(lambda: not alive(hpid), timeout=30), "halted guest: its monitor ends")
    d = kvrun(env, root, "delete", "--force", hid)
    t.ok(d.returncode == 0, "halted guest: delete", d.stderr)
    if alive(hpid):
        os.kill(hpid, 9)
if t.failed:
    t.diag(f"kept {tmp}")
else:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
