# SPDX-License-Identifier: Apache-2.0
"""The runtimes under test, driven through the same runc command line, and
the OCI bundles they run (one config.json recipe for all, so limits,
namespaces and capabilities are identical)."""
import json
import os
import shutil
import subprocess
import time

from .util import sh

# Docker's default capability set: enough for nginx and PostgreSQL to drop
# to their users, nothing more.
CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]


class Limits:
    """CPU quota and memory limit written into every config.json; None:
    no such limit (the runtime's default)."""

    def __init__(self, cpus=2, memory_mib=1024):
        self.cpus, self.memory_mib = cpus, memory_mib

    def resources(self):
        res = {}
        if self.cpus is not None:
            res["cpu"] = {"quota": int(self.cpus * 100000), "period": 100000}
        if self.memory_mib is not None:
            res["memory"] = {"limit": self.memory_mib << 20}
        return res

    def describe(self):
        if self.cpus is None:
            return {"cpus": None, "memory_limit_mib": self.memory_mib}
        return {"cpu_quota_us": int(self.cpus * 100000), "cpu_period_us": 100000, "cpus": self.cpus,
                "memory_limit_mib": self.memory_mib}


def own_cgroup():
    """The harness's own cgroup path: of the memory controller on v1 and
    hybrid hosts, the unified one on v2."""
    unified = "/"
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrl, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctrl.split(","):
                return path
            if ctrl == "":
                unified = path
    return unified


def write_bundle(bundle, rootfs, args, limits, netns=None, uid=0, gid=0, cwd="/", env=None):
    """Write bundle/config.json for rootfs running args. Its cgroup is
    named after the bundle, below the harness's own cgroup, so every
    runtime places containers alike (left to themselves, runc nests under
    the caller's cgroup and crun under the root); one container at a time
    per bundle."""
    os.makedirs(bundle, exist_ok=True)
    ns = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
    ns.append({"type": "network", "path": f"/var/run/netns/{netns}"} if netns else {"type": "network"})
    cfg = {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": uid, "gid": gid}, "args": args, "cwd": cwd,
            "env": ["PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "LANG=C"] + (env or []),
            "capabilities": {k: CAPS for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": rootfs, "readonly": False},
        "hostname": "bench",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=262144k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "mode=1777", "size=262144k"]},
        ],
        "linux": {
            "cgroupsPath": os.path.join(own_cgroup(), "kvbench", os.path.basename(os.path.normpath(bundle))),
            "resources": limits.resources(),
            "namespaces": ns,
            "maskedPaths": ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                            "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    return bundle


def cgroup_layout():
    """'hybrid' (v1 controllers + an empty cgroup2 at unified/), 'v2' or 'v1'."""
    mounts = open("/proc/self/mounts").read().split("\n")
    types = {m.split()[1]: m.split()[2] for m in mounts if len(m.split()) > 2}
    if types.get("/sys/fs/cgroup") == "cgroup2":
        return "v2"
    if types.get("/sys/fs/cgroup/unified") == "cgroup2":
        return "hybrid"
    return "v1"


class Runtime:
    """One OCI runtime binary with its own state directory."""

    def __init__(self, name, binary, state_root, env=None, prefix=None):
        self.name, self.binary, self.state_root = name, binary, state_root
        self.env = dict(os.environ, **(env or {}))
        self.prefix = prefix or []

    def argv(self, *args):
        return self.prefix + [self.binary, "--root", self.state_root] + list(args)

    def invocation(self):
        return " ".join(self.argv("run", "-b", "BUNDLE", "ID"))

    def run(self, bundle, cid, timeout=600, stdout=subprocess.PIPE):
        """Foreground `run`; returns (seconds, CompletedProcess)."""
        t0 = time.monotonic()
        r = subprocess.run(self.argv("run", "-b", bundle, cid), stdout=stdout, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, text=True, timeout=timeout, env=self.env)
        return time.monotonic() - t0, r

    def popen_run(self, bundle, cid, detach=False, **kw):
        args = ["run"] + (["-d"] if detach else []) + ["-b", bundle, cid]
        return subprocess.Popen(self.argv(*args), env=self.env, stdin=subprocess.DEVNULL, **kw)

    def run_detached(self, bundle, cid, log_path, timeout=900):
        with open(log_path, "w") as logf:
            r = subprocess.run(self.argv("run", "-d", "-b", bundle, cid), stdin=subprocess.DEVNULL,
                               stdout=logf, stderr=subprocess.STDOUT, env=self.env, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{self.name} run -d {cid} failed: {open(log_path).read().strip()[-600:]}")

    def init_pid(self, cid):
        r = sh(self.argv("state", cid), env=self.env)
        return json.loads(r.stdout)["pid"]

    def remove(self, cid):
        subprocess.run(self.argv("kill", cid, "KILL"), capture_output=True, env=self.env, timeout=60)
        for _ in range(50):
            r = subprocess.run(self.argv("delete", "-f", cid), capture_output=True, env=self.env, timeout=60)
            if r.returncode == 0:
                return
            time.sleep(0.1)


def make_runtimes(names, work, kvrun_bin, kvrun_env):
    """The Runtime objects for names (kvrun, runc, crun), with how each is invoked."""
    out = {}
    layout = cgroup_layout()
    for n in names:
        root = os.path.join(work, "state", n)
        os.makedirs(root, exist_ok=True)
        if n == "runc":
            out[n] = Runtime("runc", shutil.which("runc") or "runc", root)
        elif n == "crun":
            # crun refuses the hybrid layout ("cgroups in hybrid mode not
            # supported"); in a private mount namespace without the empty
            # cgroup2 mount it sees plain cgroup v1 and applies the limits.
            prefix = []
            if layout == "hybrid":
                prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                          'umount /sys/fs/cgroup/unified && exec "$@"', "crun-wrap"]
            out[n] = Runtime("crun", shutil.which("crun") or "crun", root, prefix=prefix)
        elif n == "kvrun":
            out[n] = Runtime("kvrun", kvrun_bin, root, env=kvrun_env)
    return out
