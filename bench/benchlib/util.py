# SPDX-License-Identifier: Apache-2.0
"""Small helpers shared by the suites: commands, statistics, host facts."""
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time


class NotAvailable(Exception):
    """A measurement that cannot be taken here; the message says why."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd, check=True, timeout=600, **kw):
    """Run cmd (list), return CompletedProcess with text output."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-600:]}")
    return r


def timed(cmd, timeout=600, **kw):
    """Run cmd, return (seconds, CompletedProcess)."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    return time.monotonic() - t0, r


def percentile(xs, p):
    """Nearest-rank percentile of xs (p in 0..100)."""
    s = sorted(xs)
    if not s:
        return None
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def summary(xs):
    """Median and spread of a list of numbers (None when empty)."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "samples": xs}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def host_kind():
    """Native KVM (vmx/svm visible) or nested kvm_pvm with an emulated guest kernel."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    pvm = os.path.isdir("/sys/module/kvm_pvm")
    hw = "vmx" in flags or "svm" in flags
    env = os.environ.get("KVRUN_EMULATING_HOST")
    if env in ("0", "1"):
        emulating = env == "1"
    else:
        emulating = pvm or ("hypervisor" in flags and not hw)
    if emulating:
        kind = "nested-kvm_pvm-emulated-guest-kernel" if pvm else "nested-kvm-emulated-guest-kernel"
    else:
        kind = "native-kvm" if hw else "no-hardware-virtualisation"
    return {"kind": kind, "emulating": emulating, "kvm_pvm_module": pvm, "vmx_svm": hw,
            "hypervisor_flag": "hypervisor" in flags, "dev_kvm": os.path.exists("/dev/kvm")}


def host_info():
    def ver(cmd):
        try:
            return sh(cmd, check=False, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return None
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1])
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
        "cpu_model": cpu, "mem_total_kib": mem, "host": host_kind(),
        "versions": {
            "runc": ver(["runc", "--version"]), "crun": ver(["crun", "--version"]),
            "qemu": ver(["qemu-system-x86_64", "--version"]),
            "postgres": ver(["/usr/lib/postgresql/15/bin/postgres", "--version"]),
            "nginx": (sh(["nginx", "-v"], check=False).stderr.strip() if shutil.which("nginx") else None),
            "wrk": ver(["sh", "-c", "wrk -v 2>&1 | head -1"]), "fio": ver(["fio", "--version"]),
            "gcc": ver(["gcc", "--version"]),
        },
    }


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=False)
        f.write("\n")


def pss_kib(pids):
    """Sum of Pss (and Rss) in KiB from /proc/PID/smaps_rollup over pids."""
    pss = rss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    return pss, rss


def proc_dir(pid, what):
    """The names in /proc/pid/what ("task", "fd"); [] when it is gone."""
    try:
        return os.listdir(f"/proc/{pid}/{what}")
    except OSError:
        return []


def descendants(root_pid):
    """root_pid and every process below it."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root_pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def du_bytes_fallback(root):
    """Apparent size of a tree in bytes."""
    r = sh(["du", "-sb", root], check=False)
    return int(r.stdout.split()[0]) if r.returncode == 0 else 0
