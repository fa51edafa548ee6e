#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The monitor's jail (runtime/host/jail.h, docs/security.md).

1. Probes: the jail-probe helper (KVRUN_JAIL_PROBE) makes the jail as a
   monitor does (its uid, a mount namespace holding only its state
   directory and /dev/kvm, a new network namespace, the build filter, a VM
   built, its uid and serving filter) and tries one thing a compromised
   monitor would: read /etc/shadow, read another process's memory through
   /proc/PID/mem, connect to a root-only unix socket (in its own state
   directory, and elsewhere), unlink a root-owned file, kill, tgkill and
   prlimit64 another process, TIOCSTI, ptrace; and, on a thread with the
   vCPU filter, a connect. Each is refused (an errno) or kills the probe
   (SIGSYS), and the other process and the files are untouched.
2. The freestanding test guest under `kvrun boot --jail`: the virtio-blk
   scenario (disk reads, writes, flush), the virtio-balloon scenario
   (memory given back with madvise), the virtio-vsock scenario (the
   guest connects to a host unix socket; the host connects to the guest),
   and a snapshot restored into a jailed VM must pass. While the vsock VM
   runs, /proc/<pid> shows on every thread Seccomp 2, NoNewPrivs 1 and no
   capability, a uid of the jail's range, a root that is not the host's,
   no descriptor of a file outside what the VM was given. The vsock
   scenario again with a shared directory (`--share`) and a disk: a file
   server's capabilities, effective and permitted, on its threads only
   (named fs-...), none on any other (the main thread, the disk's worker,
   made while the VM was built as the server's are), and of /proc only
   the process's own descriptors.
3. A container (the test guest as fake-init) with bind mounts of a host
   directory and a file (and its root disk), then one whose root
   filesystem is shared too: its jailed monitor holds the directories as
   descriptors, the file server's capabilities on its threads only.

Needs root and /dev/kvm; skips loudly without them."""
import json
import os
import signal
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
if os.geteuid() != 0:
    t.skip_all("needs root (the jail's namespaces and uid)")
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
if not os.path.isfile(GUEST):
    t.ok(False, f"test guest ELF exists (KVRUN_TEST_GUEST={GUEST!r})")
    t.done()
PROBE = os.environ.get("KVRUN_JAIL_PROBE", "")
UID_BASE = int(os.environ.get("KVRUN_JAIL_UID_BASE", "0x71000000"), 0)
UID_RANGE = 1 << 22

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


def probe(state_dir, action, arg=None, vcpu=False):
    """(result errno or None, killed by SIGSYS, output)."""
    argv = [PROBE, "--state-dir", state_dir] + (["--vcpu"] if vcpu else []) + [action] + ([str(arg)] if arg else [])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("result="):
            res = int(line[7:])
    jailed = "jailed uid=" in p.stdout
    return res, jailed and p.returncode == -signal.SIGSYS, jailed, f"rc={p.returncode} {p.stdout} {p.stderr}"


def probes():
    if not os.path.isfile(PROBE):
        t.ok(False, f"jail-probe exists (KVRUN_JAIL_PROBE={PROBE!r})")
        return
    with tempfile.TemporaryDirectory() as state, tempfile.TemporaryDirectory() as elsewhere:
        os.chmod(state, 0o711)
        victim = subprocess.Popen(["sleep", "120"])
        secret = os.path.join(state, "secret")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chmod(secret, 0o600)
        socks = []
        for d in (state, elsewhere):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(os.path.join(d, "root.sock"))
            os.chmod(os.path.join(d, "root.sock"), 0o600)
            s.listen(1)
            socks.append(s)
        res, killed, jailed, out = probe(state, "nothing")
        t.ok(jailed and res == 0, "probe: the jail is made and the probe runs in it", out)
        refused = [
            ("read /etc/shadow", "read", "/etc/shadow"),
            ("read a root-only file in its state directory", "read", "/state/secret"),
            ("read another process's memory", "mem", victim.pid),
            ("connect to a root-only unix socket in its state directory", "connect", "/state/root.sock"),
            ("connect to a root-only unix socket elsewhere", "connect", os.path.join(elsewhere, "root.sock")),
            ("unlink a root-owned file", "unlink", "/state/secret"),
        ]
        for what, action, arg in refused:
            res, killed, jailed, out = probe(state, action, arg)
            t.ok(jailed and (killed or (res is not None and res < 0)), f"probe: {what}: refused ({res})", out)
        killing = [
            ("kill another process", "kill", victim.pid),
            ("tgkill another process", "tgkill", victim.pid),
            ("prlimit64 another process", "prlimit", victim.pid),
            ("TIOCSTI", "tiocsti", None),
            ("ptrace another process", "ptrace", victim.pid),
        ]
        for what, action, arg in killing:
            res, killed, jailed, out = probe(state, action, arg)
            t.ok(killed, f"probe: {what}: the probe dies by SIGSYS", out)
        res, killed, jailed, out = probe(state, "connect", "/state/root.sock", vcpu=True)
        t.ok(killed, "probe: a connect on a vCPU thread: the probe dies by SIGSYS", out)
        t.ok(victim.poll() is None, "the other process is still alive")
        t.ok(os.path.exists(secret), "the root-owned file is still there")
        victim.kill()
        victim.wait()
        for s in socks:
            s.close()


NO_CAPS = guestlib.NO_CAPS


def check_thread_caps(pid, what, file_server):
    """Each thread of a jailed monitor by name: Seccomp 2, NoNewPrivs 1, and,
    effective and permitted, exactly guestlib.FS_CAPS (CHOWN, DAC_OVERRIDE,
    DAC_READ_SEARCH, FOWNER, FSETID, SETGID, SETFCAP: JAIL_FS_CAPS) on the
    file server's threads (fs-worker, fs-locks) and nothing on every other
    one (the main thread, the disk's worker and whatever else was made while
    the VM was built, vCPUs, event loop, relays)."""
    bad, tasks = guestlib.jail_thread_problems(pid)
    t.ok(len(tasks) >= 3, f"{what}: its threads are listed ({len(tasks)})")
    names = sorted(f"{st.get('Name')} {st.get('CapEff')}/{st.get('CapPrm')}" for st in tasks.values())
    t.ok(tasks and not bad, f"{what}: every thread has Seccomp 2, NoNewPrivs 1, "
         + ("no capability, effective or permitted, but a file server's on its own threads"
            if file_server else "no capability, effective or permitted"), "\n".join(bad + names))
    fs = [tid for tid, st in tasks.items() if st.get("Name", "").startswith(guestlib.FS_THREAD_PREFIX)]
    if file_server:
        t.ok(fs and str(pid) not in fs, f"{what}: the file server's threads are there, named, "
             f"the main thread not among them ({len(fs)} of {len(tasks)} threads)", "\n".join(names))
    else:
        t.eq(fs, [], f"{what}: no file server's thread")
    return tasks


def check_running(pid, allowed_paths, what="running VM", file_server=False):
    """What /proc says of a running jailed VM; with a file server, its
    threads alone keep guestlib.FS_CAPS and every other thread, the main one
    first, has none."""
    check_thread_caps(pid, what, file_server)
    if file_server:
        try:
            seen = os.listdir(f"/proc/{pid}/root/proc")
        except OSError as e:
            seen = str(e)
        t.eq(seen, ["self"], f"{what}: of /proc, only its own descriptors")
    st = status_of(pid)
    uids = st.get("Uid", "").split()
    t.ok(len(uids) == 4 and all(int(u) == UID_BASE + pid for u in uids),
         f"{what}: uid {UID_BASE + pid} (base + pid), not 0", st.get("Uid"))
    t.eq(st.get("CapBnd"), "0000000000000000", f"{what}: empty bounding set")
    try:
        r, h = os.stat(f"/proc/{pid}/root/"), os.stat("/")
        t.ok((r.st_dev, r.st_ino) != (h.st_dev, h.st_ino), f"{what}: its root is not the host's")
    except OSError as e:
        t.ok(False, f"{what}: its root: {e}")
    files = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                files.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
    except OSError:
        pass
    stray = [f for f in files if f.startswith("/") and f not in allowed_paths]
    t.ok(files and not stray, f"{what}: no descriptor of a file it was not given ({len(files)} fds)",
         f"stray: {stray}; all: {files}")


def run_vsock(tmp, share=None):
    """The virtio-vsock scenario under --jail, looked at in /proc while it
    runs; share: a directory also shared with the VM (virtio-fs), which the
    guest leaves alone: the jail then has a file server. A disk with it,
    which the guest leaves alone too: its worker is made while the VM is
    built, as the file server's are, and must keep nothing."""
    what = "vsock" + (" with a share and a disk" if share else "")
    uds = os.path.join(tmp, "vs.sock" if share else "v.sock")
    disk = os.path.join(tmp, "vs-disk.img")
    if share:
        with open(disk, "wb") as f:
            f.truncate(SECTORS * 512)
    devices = ["--vsock", uds] + ([f"--share=kvrun-share={share}", "--disk", disk] if share else [])
    PORT, LISTEN = 5000, 6000
    # The jailed VM reaches the directory and the socket as its own uid.
    os.chmod(tmp, 0o711)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(f"{uds}_{PORT}")
    os.chmod(f"{uds}_{PORT}", 0o666)
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
        "virtio-vsock", f"vsock_seed={SEED} vsock_port={PORT} vsock_listen={LISTEN}", devices)
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
    given = {"/dev/kvm", "/dev/null", GUEST} | ({share, f"/proc/{p.pid}/fd", disk} if share else set())
    check_running(p.pid, given, what, file_server=bool(share))
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
    check_run(what, p.returncode, out[0].decode(errors="replace"))
    t.eq(b"".join(echoed), f"echo-me-{SEED}".encode(), f"{what}: the guest's connect reached the host socket")
    t.eq(reply, f"from-guest-{SEED}".encode(), f"{what}: the host's connect reached the guest")


def container_with_bind(tmp, shared_root=False):
    """A container (the test guest as fake-init) with bind mounts of a host
    directory and a host file (and, with shared_root, its root filesystem
    shared too: no root disk): its monitor opens them and is jailed with a
    file server, whose workers alone keep its capabilities."""
    what = "a container with bind mounts" + (" and a shared root" if shared_root else "")
    kv = guestlib.kvrun()
    d = os.path.join(tmp, "ctr-root" if shared_root else "ctr")
    root, bundle, vol = os.path.join(d, "root"), os.path.join(d, "bundle"), os.path.join(d, "vol")
    os.makedirs(os.path.join(bundle, "rootfs", "bin"))
    os.makedirs(vol)
    with open(os.path.join(d, "hostname"), "w") as f:
        f.write("jailed\n")
    subprocess.run([kv, "spec", "-b", bundle], check=True)
    with open(os.path.join(bundle, "config.json")) as f:
        spec = json.load(f)
    spec["process"].update(terminal=False, args=["/bin/true"])
    spec.setdefault("annotations", {}).update({"io.kvrun.kernel.acpi": "off", "io.kvrun.kernel.modules": "none"})
    if shared_root:
        spec["annotations"]["io.kvrun.rootfs"] = "virtiofs"
    spec["mounts"] += [{"destination": "/vol", "type": "bind", "source": vol, "options": ["rbind", "rw"]},
                       {"destination": "/etc/hostname", "type": "bind", "source": os.path.join(d, "hostname"),
                        "options": ["rbind", "ro"]}]
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"cmdline_extra": "test=fake-init"}, f)
    env = dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=os.path.join(d, "config.json"), KVRUN_TEMPLATES="0",
               KVRUN_CACHE_DIR=os.path.join(d, "cache"), KVRUN_ROOTFS_CACHE="0")
    pidfile = os.path.join(d, "pid")
    # Its default cgroup is named after it: an id of this run's own.
    cid = f"jail{os.getpid()}-{'root' if shared_root else 'bind'}"
    with open(os.path.join(d, "create.out"), "w+") as out:
        p = subprocess.run([kv, "--root", root, "create", "--bundle", bundle, "--pid-file", pidfile, cid],
                           stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=env, timeout=120)
        out.seek(0)
        msg = out.read()
    if not t.ok(p.returncode == 0, f"{what}: create", msg[-2000:]):
        return
    pid = int(open(pidfile).read())
    check_thread_caps(pid, what, True)
    t.eq(status_of(pid).get("CapEff"), NO_CAPS, f"{what}: the main thread has none")
    uids = status_of(pid).get("Uid", "").split()
    t.ok(len(uids) == 4 and all(int(u) == UID_BASE + pid for u in uids), f"{what}: the jail's uid", str(uids))
    try:
        seen = os.listdir(f"/proc/{pid}/root/proc")
    except OSError as e:
        seen = str(e)
    t.eq(seen, ["self"], f"{what}: of /proc, only its own descriptors")
    links = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    want = {vol, d} | ({os.path.join(bundle, "rootfs")} if shared_root else set())
    t.ok(want <= links, f"{what}: the shared directories are its descriptors", str(sorted(links)))
    k = subprocess.run([kv, "--root", root, "delete", "--force", cid], capture_output=True, text=True,
                       env=env, timeout=60)
    t.ok(k.returncode == 0, f"{what}: delete --force", k.stderr)
    t.eq(sorted(os.listdir(vol)), [], f"{what}: the volume is left as it was")


probes()
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

    run_vsock(tmp)
    share = os.path.join(tmp, "share")
    os.mkdir(share)
    run_vsock(tmp, share)
    container_with_bind(tmp)
    container_with_bind(tmp, shared_root=True)
    # A snapshot (made without the jail: it writes a file) restored in it.
    snap = os.path.join(tmp, "vm.snap")
    r = guestlib.boot(["--kernel", GUEST, "--test-device", "--console", "--memory", "64M", "--cmdline",
                       "test=snapshot mem_expect=64M snap_fill=8M", "--timeout", str(VM_TIMEOUT_S),
                       "--snapshot-on-port", snap, "--snapshot-stop"], timeout=VM_TIMEOUT_S + 30)
    t.eq(r.rc, 0, "snapshot of the test guest written")
    r = guestlib.boot(["--restore", snap, "--test-device", "--console", "--jail", "--timeout", str(VM_TIMEOUT_S)],
                      timeout=VM_TIMEOUT_S + 30)
    results, plan = guestlib.parse_tap(r.out + "\n" + r.err)
    bad = [d for ok, d in results if not ok]
    # The saved VM printed the first lines of the plan; the restored one the rest.
    t.ok(results and not bad and plan is not None and len(results) < plan,
         f"restore: the restored guest's checks pass ({len(results)} of {plan})", r.describe())
    t.eq(r.rc, 0, "restore: kvrun boot --restore --jail exits 0")
t.done()
