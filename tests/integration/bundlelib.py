# SPDX-License-Identifier: Apache-2.0
"""Bundles for the tests that run containers (with kvrun, or with runc to
check a test's expectations against the reference runtime).

- busybox_rootfs(): busybox-static and some applet links, nothing else.
- dynamic_rootfs(): host programs with the libraries ldd names.
- write_spec(): `kvrun spec`'s default config.json, changed by a function.
- logrus_msg(): the message of a runc-style error line on stderr.
- processes_mentioning(): pids whose command line contains a string.
- wait_for(): poll a predicate until it is true or a timeout passes.
- keep_or_remove(): after a test, its files as diagnostics on failure.
"""
import json
import os
import re
import shutil
import subprocess
import time

BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"


def busybox_rootfs(rootfs, applets, dirs=()):
    """rootfs/bin/busybox plus a link per applet, and the given (empty)
    directories; no /proc, /sys, /dev, /tmp or /etc unless asked for."""
    os.makedirs(os.path.join(rootfs, "bin"))
    for d in dirs:
        os.makedirs(os.path.join(rootfs, d.lstrip("/")), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in applets:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))


def _ldd_paths(program):
    """The files ldd says program loads (the vDSO excluded)."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            paths.append(m.group(1))
    return paths


def dynamic_rootfs(rootfs, programs):
    """Each host program at rootfs/bin/<name>, with its shared libraries
    (symlinks resolved) at the paths ldd gives. Returns the names."""
    names = []
    os.makedirs(os.path.join(rootfs, "bin"), exist_ok=True)
    for prog in programs:
        path = shutil.which(prog) or prog
        name = os.path.basename(path)
        shutil.copy(os.path.realpath(path), os.path.join(rootfs, "bin", name))
        names.append(name)
        for lib in _ldd_paths(path):
            dest = os.path.join(rootfs, lib.lstrip("/"))
            if not os.path.exists(dest):
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy(os.path.realpath(lib), dest)
    return names


def write_spec(kvrun, bundle, mutate):
    """`kvrun spec -b bundle` (rootfs relative), without a terminal, then
    mutate(spec) before it is written back."""
    subprocess.run([kvrun, "spec", "-b", bundle], check=True)
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    mutate(spec)
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return spec


LOGRUS_RE = re.compile(r'time="[^"]+" level=error msg="(.*)"')


def logrus_msg(stderr):
    """The message of the last `level=error` line (runc's format, which
    kvrun keeps), unquoted; else stderr's last line."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        m = LOGRUS_RE.fullmatch(line.strip())
        if m:
            try:
                return json.loads('"' + m.group(1) + '"')
            except ValueError:
                return m.group(1)
    return lines[-1] if lines else ""


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def wait_for(pred, timeout=120, step=0.5):
    """pred()'s first true value within timeout seconds, else its last."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def keep_or_remove(t, tmp, names, lines):
    """After a test that failed: the last `lines` lines of each file of
    `names` in tmp as TAP diagnostics, and tmp kept. Otherwise tmp goes."""
    if not t.failed:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    for name in names:
        path = os.path.join(tmp, name)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                t.diag(f"--- {name} (last {lines} lines)\n" + "".join(f.readlines()[-lines:]))
    t.diag(f"kept {tmp}")
