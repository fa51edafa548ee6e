# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the engine tests (docker, podman, containerd running
their containers through kvrun, or runc for comparison).

Everything an engine test makes lives under one temporary directory: the
daemon's root, state and socket, the image tarball, and the runtime
wrapper. The engines do not pass kvrun their caller's environment, so the
wrapper registered as the runtime sets $KVRUN_CONFIG to a config file of
the test's own that names the guest kernel (nothing is written to
/etc/kvrun).

- problem(runtime): why this test cannot run here (for a skip), or None.
- plan(): "full" on hosts with hardware KVM, else "subset" (a boot takes
  minutes where the guest kernel is emulated); $KVRUN_ENGINES_FULL=1 forces
  "full".
- suite_templates(): the slow suite's templates (with N network devices)
  for the containers, and the environment the wrapper passes on to kvrun.
- check_restored(): a container's VM was restored from a template, by the
  --log of its create, which the wrapper keeps (Workdir.create_log()).
- Workdir: the temporary directory, the wrapper, the rootfs tarball, the OCI
  archive, daemons started there, and what is left behind.
"""
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import urllib.request

import guestlib
from bundlelib import processes_mentioning, wait_for

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
BOOT_TIMEOUT = int(os.environ.get("KVRUN_BOOT_TIMEOUT", "1300"))
IMAGE = "kvt-busybox"
IMAGE_REF = "docker.io/library/kvt-busybox:1"
KVRUN_TAP_RE = re.compile(r"^kvt[0-9a-f]{8}_[0-9]+$")  # kvrun's TAP names (runtime/host/netns.c)


def find_kernel():
    k = os.environ.get("KVRUN_KERNEL")
    if k:
        return (k if os.path.isfile(k) else None), [f"$KVRUN_KERNEL={k}"]
    return guestlib.find_kernel()


def problem(runtime, tools):
    """Why the test cannot run (a skip reason), or None. tools: binaries
    the engine needs, checked on $PATH or as absolute paths."""
    for t in tools:
        if not (os.path.isabs(t) and os.access(t, os.X_OK)) and not shutil.which(t):
            return f"{t} is not installed (scripts/setup.sh --engines installs the engines)"
    if os.geteuid() != 0:
        return "the engines' daemons need root"
    if not os.path.exists(BUSYBOX):
        return f"busybox-static is missing ({BUSYBOX})"
    if runtime == "runc":
        return None if shutil.which("runc") else "runc is not installed"
    if not os.access(KVRUN, os.X_OK):
        return f"kvrun is not built ({KVRUN})"
    p = guestlib.kvm_problem()
    if p:
        return p
    if not shutil.which("mke2fs"):
        return "mke2fs (e2fsprogs) is missing"
    k, tried = find_kernel()
    if not k:
        return "no guest kernel (tried " + ", ".join(tried) + ")"
    return None


def plan():
    if os.environ.get("KVRUN_ENGINES_FULL") == "1":
        return "full"
    return "full" if guestlib.host_kind() == "native" else "subset"


def suite_templates(t, *nics):
    """The slow suite's templates (guestlib.suite_template(), built once per
    build tree) with each of these numbers of network devices, for the plan
    the wrapper gives kvrun (the kernel in its config file, kvrun's
    defaults). Returns (env, ok): what the wrapper adds to kvrun's
    environment (the templates' directory, and guestlib.plan_env()), and for
    each number whether its template is there. A failed build is a failed
    TAP line; the containers it would have served then boot cold."""
    kernel, _ = find_kernel()
    got = {n: guestlib.suite_template(t, kernel, nics=n) for n in nics}
    good = [tp for tp in got.values() if tp.ok]
    env = dict(good[0].env if good else next(iter(got.values())).env)
    env.update(guestlib.plan_env())
    return env, {n: tp.ok for n, tp in got.items()}


def check_restored(t, wd, what, cid, ok=True):
    """One TAP line (and a TODO one, guestlib.check_template_use()): the VM
    of container cid (what) was restored from a suite template, by kvrun's
    --log of its create (Workdir.create_log()). ok: whether the template
    it needs is there (else a skip)."""
    if not ok:
        t.skip(f"{what}: its VM starts from the suite template", "no template (its build failed)")
        return False
    log = wd.create_log(cid) if cid else None
    if log is None:
        return t.ok(False, f"{what}: its VM starts from the suite template",
                    f"no --log kept of the create of {cid!r} (kept: {wd.create_log_ids()})")
    return guestlib.check_template_use(t, what, log=log)


def eq(t, got, want, what, diag=""):
    """t.eq with extra diagnostics (the command's stderr) on failure."""
    return t.ok(got == want, what, f"got:  {got!r}\nwant: {want!r}" + (f"\n{diag}" if diag else ""))


def run(cmd, timeout=BOOT_TIMEOUT + 120, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    if "input" not in kw:
        kw.setdefault("stdin", subprocess.DEVNULL)
    try:
        return subprocess.run(cmd, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or "", (e.stderr or "") + f"\n(timed out after {timeout}s)")


def read_text(path):
    """A file's text, or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def http_get(url, timeout=10):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode(errors="replace")
    except (OSError, ValueError) as e:
        return f"(error: {e})"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_subnet():
    """A 10.2xx.y.0/24 no host route covers (first two octets only vary
    between runs so that parallel runs do not collide)."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    addrs = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    start = os.getpid() % 200
    for i in range(200):
        y = (start + i) % 200 + 20
        net = f"10.213.{y}."
        if net not in routes and net not in addrs:
            return net
    raise RuntimeError("no free 10.213.x.0/24 subnet")


def rootfs_tar(path):
    """A root filesystem tarball: busybox-static with its applets, an
    /etc/passwd and the usual mount points."""
    with tarfile.open(path, "w") as t:
        def add_dir(name, mode=0o755):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = tarfile.DIRTYPE, mode
            t.addfile(ti)

        def add_file(name, data, mode=0o644):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), mode
            t.addfile(ti, io.BytesIO(data))

        for d in ["bin", "dev", "etc", "proc", "sys", "tmp", "root", "run", "var", "www"]:
            add_dir(d, 0o1777 if d == "tmp" else 0o755)
        with open(BUSYBOX, "rb") as f:
            add_file("bin/busybox", f.read(), 0o755)
        applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
        for a in applets:
            if a != "busybox":
                ti = tarfile.TarInfo("bin/" + a)
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, "busybox", 0o777
                t.addfile(ti)
        add_file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        add_file("etc/group", b"root:x:0:\n")
        add_file("www/index.html", b"hello-from-the-container\n")


def oci_archive(layer_tar, path, ref=IMAGE_REF, cmd=("/bin/sh",)):
    """An OCI image-layout tarball (one uncompressed layer) that
    `ctr image import` and `podman load` read, named ref (IMAGE_REF),
    whose command is cmd."""
    with open(layer_tar, "rb") as f:
        layer = f.read()
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": list(cmd)},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest,
                    "size": len(layer)}],
    }).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
                       "size": len(manifest),
                       "annotations": {"io.containerd.image.name": ref,
                                       "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1]}}],
    }).encode()
    with tarfile.open(path, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            t.addfile(ti, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for d, data in [(layer_digest, layer), (config_digest, config), (manifest_digest, manifest)]:
            add("blobs/sha256/" + d.split(":", 1)[1], data)


class Daemon:
    """A daemon started by the test in its own session, stopped with
    SIGTERM (then SIGKILL) with its whole process group."""

    def __init__(self, name, cmd, log_path, env=None):
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self, n=15):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # The daemon's own helpers (containerd under dockerd, shims) share
        # its process group only until they setsid; kill what is left.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Workdir:
    """The test's temporary directory and what goes in it."""

    def __init__(self, prefix, runtime, config=None, env=None, root=False):
        # Short: sockets live under it (sun_path holds 107 bytes).
        self.path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        self.runtime = runtime
        self.daemons = []
        self.cleanups = []
        self.late_cleanups = []  # after the daemons are stopped
        self.rootfs_tar = os.path.join(self.path, "rootfs.tar")
        rootfs_tar(self.rootfs_tar)
        self.argv_log = os.path.join(self.path, "runtime-argv.log")
        self.kvrun_cache = os.path.join(self.path, "kvrun-cache")
        # root: the runtime's state under the test's directory (--root given
        # by the wrapper) for engines that give it none (podman's conmon).
        self.runtime_root = os.path.join(self.path, "runtime-root") if root else None
        self.create_log_dir = os.path.join(self.path, "create-logs")
        self.wrapper = self._wrapper(config or {}, env or {})

    def _wrapper(self, config, extra_env):
        """The executable registered as the engine's runtime: records its
        argv and runs kvrun with the test's config (or runc), and
        extra_env (a template directory)."""
        path = os.path.join(self.path, f"{self.runtime}-engine-test")
        if self.runtime == "runc":
            target, env = shutil.which("runc"), ""
        else:
            kernel = os.path.abspath(find_kernel()[0])  # as the suite templates' key has it
            cfg = os.path.join(self.path, "kvrun-config.json")
            with open(cfg, "w") as f:
                json.dump(dict(config, kernel=kernel), f)
            # Each call's guest console, for the diagnostics of a failure.
            # Engines may not pass the test's environment: the boot
            # timeout goes in here too.
            # The caches (initramfs, root disks) are the run's own.
            target, env = KVRUN, (f"export KVRUN_CONFIG='{cfg}'\n"
                                  f"export KVRUN_CACHE_DIR='{self.kvrun_cache}'\n"
                                  f"export KVRUN_BOOT_TIMEOUT={BOOT_TIMEOUT}\n"
                                  f"export KVRUN_CONSOLE='{self.path}/console-'$$.log\n"
                                  + "".join(f"export {k}='{v}'\n" for k, v in sorted(extra_env.items())))
        root = f" --root '{self.runtime_root}'" if self.runtime_root else ""
        create = ""
        if self.runtime != "runc":
            # A create's --log (the engine's, else one of the wrapper's) is
            # kept as create-logs/<id>.log: it says whether the VM was
            # restored from a template or booted cold, and an engine
            # removes the bundle it lives in with the container.
            os.makedirs(self.create_log_dir)
            create = (f"case \" $* \" in *\" create \"*)\n"
                      "  log= prev= id=\n"
                      "  for a in \"$@\"; do\n"
                      "    [ \"$prev\" = --log ] && log=$a\n"
                      "    case $a in --log=*) log=${a#--log=};; esac\n"
                      "    prev=$a id=$a\n"
                      "  done\n"
                      f"  keep='{self.create_log_dir}'/\"$id\".log\n"
                      f"  if [ -n \"$log\" ]; then '{target}'{root} \"$@\"\n"
                      f"  else '{target}'{root} --log \"$keep\" \"$@\"; fi\n"
                      "  rc=$?\n"
                      "  [ -z \"$log\" ] || cp \"$log\" \"$keep\" 2>/dev/null\n"
                      "  exit $rc;;\n"
                      "esac\n")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    f"echo \"$(date +%T) $*\" >> '{self.argv_log}'\n"
                    f"{env}{create}exec '{target}'{root} \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def create_log(self, cid):
        """kvrun's --log of the create of container cid (its text), or None
        when the wrapper kept none."""
        return read_text(os.path.join(self.create_log_dir, cid + ".log"))

    def create_log_ids(self):
        d = self.create_log_dir
        return sorted(f[:-len(".log")] for f in os.listdir(d) if f.endswith(".log")) if os.path.isdir(d) else []

    def sub(self, *names):
        p = os.path.join(self.path, *names)
        os.makedirs(p, exist_ok=True)
        return p

    def daemon(self, name, cmd, env=None):
        d = Daemon(name, cmd, os.path.join(self.path, name + ".log"), env)
        self.daemons.append(d)
        return d

    def rootfs_images(self):
        """The images in kvrun's root disk cache (docs/runtime.md)."""
        d = os.path.join(self.kvrun_cache, "rootfs")
        return sorted(f for f in os.listdir(d) if f.endswith(".img")) if os.path.isdir(d) else []

    def runtime_calls(self):
        try:
            with open(self.argv_log) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def runtime_verbs(self):
        """The commands the engine ran the runtime with, and one full
        create call (its argv after the wrapper)."""
        verbs, create = set(), ""
        for line in self.runtime_calls():
            toks = line.split()[1:]
            i = 0
            while i < len(toks) and toks[i].startswith("-"):
                i += 1 if "=" in toks[i] or toks[i] not in ("--root", "--log", "--log-format", "--criu") else 2
            if i < len(toks):
                verbs.add(toks[i])
                if toks[i] == "create" and not create:
                    create = " ".join(toks)
        return sorted(verbs), create

    def consoles(self, lines=15):
        """The last lines of each guest console written so far."""
        out = []
        for name in sorted(os.listdir(self.path)):
            if name.startswith("console-"):
                with open(os.path.join(self.path, name), errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                if tail:
                    out.append(f"{name}:\n  " + "\n  ".join(tail))
        return "\n".join(out)

    def report(self, t):
        """TAP diagnostics at the end of an engine test: the runtime
        commands the engine used, one create call, and where kvrun's checks
        failed, the guests' consoles."""
        verbs, create = self.runtime_verbs()
        print("# runtime commands used: " + " ".join(verbs))
        print("# a create call: " + create)
        if t.failed and self.runtime == "kvrun":
            t.diag(self.consoles())

    def leftovers(self):
        """Runtime processes still running for this test (none once every
        container is gone)."""
        return [p for p in processes_mentioning(self.path) if not any(p == d.proc.pid for d in self.daemons)]

    def close(self, keep=False):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # cleanup goes on regardless
                print(f"# cleanup: {e}")
        for d in reversed(self.daemons):
            d.stop()
        left = self.leftovers()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        # Until they are gone: a dying process still holds its cgroup.
        wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in left), 10, 0.2)
        for fn in reversed(self.late_cleanups):
            try:
                fn()
            except Exception as e:
                print(f"# cleanup: {e}")
        # Mounts a daemon left (overlay, shm, netns) block removal.
        subprocess.run(f"grep -o ' {self.path}[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l",
                       shell=True, capture_output=True)
        if keep:
            print(f"# kept {self.path}")
        else:
            shutil.rmtree(self.path, ignore_errors=True)


class Bridge:
    """A Linux bridge the test owns (docker's --bridge)."""

    def __init__(self, name):
        self.name = name
        net = free_subnet()
        self.gateway = net + "1"
        self.cidr = net + "1/24"
        subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True)
        subprocess.run(["ip", "addr", "add", self.cidr, "dev", name], check=True)
        subprocess.run(["ip", "link", "set", name, "up"], check=True)

    def delete(self):
        subprocess.run(["ip", "link", "del", self.name], capture_output=True)


def cpu_parent(name, containers):
    """A cgroup parent for an engine's containers (--cgroup-parent) whose
    CPU weight is that of `containers` processes. On cgroup v1 a parent
    group competes as one task: several VMs booting under one default-weight
    parent get the share of a single process on a loaded host, and their
    boots take that many times longer. Returns the cleanup."""
    path = os.path.join("/sys/fs/cgroup/cpu", name.strip("/"))
    if not os.path.isdir("/sys/fs/cgroup/cpu"):
        return lambda: None
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "cpu.shares"), "w") as f:
            f.write(str(1024 * containers))
    except OSError as e:
        print(f"# cpu weight of {name}: {e}")
    return lambda: remove_cgroup_parent(name)


def remove_cgroup_parent(name):
    """rmdir the (empty) cgroup `name` in every hierarchy: runtimes remove
    a container's cgroup but leave the parents the engine named."""
    root = "/sys/fs/cgroup"
    for h in os.listdir(root) if os.path.isdir(root) else []:
        path = os.path.join(root, h, name.strip("/"))
        if not os.path.isdir(path):
            continue
        # Children first (podman leaves <parent>/conmon).
        for d, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"# cgroup {d} left: {e}")


def vm_processes(wd):
    """This test's processes that hold a KVM VM (a kvrun monitor each)."""
    found = []
    for pid in wd.leftovers():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:kvm-vm":
                    found.append(pid)
                    break
            except OSError:
                pass
    return found


def kvrun_processes(wd):
    """This test's processes running the kvrun binary (monitors, member and
    exec proxies, CLI calls)."""
    kv = os.path.realpath(KVRUN)
    found = []
    for pid in wd.leftovers():
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == kv:
                found.append(pid)
        except OSError:
            pass
    return found


def host_taps():
    p = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = [line.split(":")[1].strip().split("@")[0] for line in p.stdout.splitlines() if ":" in line]
    return [n for n in names if KVRUN_TAP_RE.match(n)]


def link_exists(name):
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


class Tmux:
    """A private tmux server (its own socket) running one command in a pane
    of a fixed size, read like a person reads a terminal."""

    def __init__(self, workdir, cmd):
        self.sock = os.path.join(workdir, "tmux.sock")
        self.t = ["tmux", "-S", self.sock]
        subprocess.run(self.t + ["new-session", "-d", "-s", "kvt", "-x", "100", "-y", "30", cmd], check=True)

    def send(self, *keys):
        subprocess.run(self.t + ["send-keys", "-t", "kvt"] + list(keys), check=True)

    def screen(self):
        p = subprocess.run(self.t + ["capture-pane", "-p", "-t", "kvt", "-S", "-200"], capture_output=True,
                           text=True)
        return p.stdout if p.returncode == 0 else ""

    def wait_screen(self, text, timeout):
        return wait_for(lambda: text in self.screen(), timeout, 1)

    def kill(self):
        subprocess.run(self.t + ["kill-server"], capture_output=True)
