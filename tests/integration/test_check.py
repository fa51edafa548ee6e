#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun check`: on this host (what it says about the virtualisation must
match /proc/cpuinfo, read here independently), and below fake roots
($KVRUN_HOST_ROOT) for the kinds this host is not: hardware and nested KVM,
no /dev/kvm, no virtualisation at all, cgroup v2 with systemd, and engines
with and without a kvrun runtime, `--fix` (with its backup), and the
snippets it prints against docs/engines.md."""
import os
import re
import shutil
import subprocess
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
SRC = os.environ.get("KVRUN_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def host_kind():
    """hardware, nested, emulated or none, from the first flags line."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                virt = "vmx" in flags or "svm" in flags
                hv = "hypervisor" in flags
                return ("nested" if hv else "hardware") if virt else ("emulated" if hv else "none")
    except OSError:
        pass
    return "unknown"


def check(*args, env_extra=None, root=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KVRUN_") or k in ("KVRUN_INIT",)}
    if root:
        env["KVRUN_HOST_ROOT"] = root
    env.update(env_extra or {})
    return subprocess.run([KVRUN, "check"] + list(args), capture_output=True, text=True, env=env, timeout=120)


def lines(out, tag):
    return [l[8:] for l in out.splitlines() if l.startswith(f"  {tag:<5} ")]


def put(root, rel, text="", mode=0o644):
    path = root + rel
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class Fake:
    """A fake root with /proc/cpuinfo, /dev/kvm and cgroups, and the
    environment a check below it needs (a stand-in kernel, caches in it)."""

    def __init__(self, base, name, flags="fpu vmx sse2", kvm=True, cgroup="v2", systemd=True):
        self.root = os.path.join(base, name)
        put(self.root, "/proc/cpuinfo", f"processor\t: 0\nflags\t\t: {flags}\n")
        if kvm:
            put(self.root, "/dev/kvm", "", 0o666)
        if cgroup == "v2":
            put(self.root, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
        if systemd:
            os.makedirs(self.root + "/run/systemd/system", exist_ok=True)
        put(self.root, "/boot/vmlinux", "not a real kernel, but a readable file\n")
        # The binary as engines would name it exists below the root too.
        os.makedirs(os.path.dirname(self.root + KVRUN), exist_ok=True)
        os.symlink(KVRUN, self.root + KVRUN)
        self.env = {"KVRUN_KERNEL": self.root + "/boot/vmlinux", "KVRUN_CACHE_DIR": self.root + "/cache",
                    "KVRUN_TEMPLATE_DIR": self.root + "/templates", "KVRUN_CONFIG": self.root + "/none.json"}

    def run(self, *args):
        return check(*args, env_extra=self.env, root=self.root)


def this_host(t):
    env = {}
    kernel = os.environ.get("KVRUN_TEST_KERNEL") or os.path.normpath(
        os.path.join(SRC, "..", "shared", "guest-kernel", "vmlinux"))
    if os.path.exists(kernel):
        env["KVRUN_KERNEL"] = kernel
    with tempfile.TemporaryDirectory() as cache:
        env["KVRUN_CACHE_DIR"] = cache
        p = check(env_extra=env)
    t.ok(p.stdout.startswith("kvrun ") and " at " in p.stdout.splitlines()[0], "this host: first line names kvrun",
         p.stdout + p.stderr)
    fails = lines(p.stdout, "FAIL")
    t.eq(p.returncode, 1 if fails else 0, "this host: exit status 1 exactly when a line says FAIL")
    t.ok(("cannot run containers here" in p.stdout) == bool(fails), "this host: the last line agrees")
    kind = host_kind()
    want = {"hardware": "virtualisation: hardware", "nested": "virtualisation: nested, hardware-assisted",
            "emulated": "virtualisation: nested, emulated guest kernel", "none": "virtualisation: none"}.get(kind)
    t.ok(want is not None and any(l[8:].startswith(want) for l in p.stdout.splitlines()),
         f"this host ({kind} per /proc/cpuinfo): check says \"{want}\"", p.stdout)
    if os.path.exists("/dev/kvm") and os.getuid() == 0:
        t.ok(any(l.startswith("/dev/kvm: read-write, KVM API 12") for l in lines(p.stdout, "ok")),
             "this host: /dev/kvm opened, API 12", p.stdout)
    else:
        t.skip("this host: /dev/kvm opened", "no /dev/kvm or not root")
    if "KVRUN_KERNEL" in env:
        t.ok(any(l.startswith(f"kernel: {os.path.realpath(kernel)} (from $KVRUN_KERNEL)") for l in lines(p.stdout, "ok")),
             "this host: the kernel and where it came from", p.stdout)
        t.ok(any(l.startswith("initramfs: ") and "built by kvrun from " in l for l in lines(p.stdout, "ok")),
             "this host: the initramfs kvrun built", p.stdout)
    else:
        t.skip("this host: kernel line", f"no test kernel at {kernel}")
        t.skip("this host: initramfs line", f"no test kernel at {kernel}")
    for engine in ("docker", "podman", "containerd", "CRI-O"):
        t.ok(any(re.match(rf"  (ok|warn|-)\s+{re.escape(engine)}[ :(]", l) for l in p.stdout.splitlines()),
             f"this host: a line for {engine}", p.stdout)


def kinds(t, base):
    hw = Fake(base, "hardware")
    p = hw.run()
    t.eq(p.returncode, 0, "hardware KVM, cgroup v2, systemd: exit 0")
    ok = lines(p.stdout, "ok")
    t.ok(any(l.startswith("virtualisation: hardware") for l in ok), "hardware: said", p.stdout)
    t.ok(any(l.startswith("cgroups: v2 (unified), controllers cpuset cpu io memory pids") for l in ok),
         "cgroup v2 and its controllers", p.stdout)
    t.ok(any(l.startswith("cgroup driver: systemd") for l in ok), "systemd as the cgroup driver", p.stdout)
    t.ok(any(l.startswith("/dev/kvm: present, read-write") for l in ok), "stand-in /dev/kvm", p.stdout)
    t.ok(any(l.startswith("kernel: " + hw.root + "/boot/vmlinux (from $KVRUN_KERNEL)") for l in ok),
         "the kernel and its source", p.stdout)
    t.eq(sorted(l.split(":")[0] for l in lines(p.stdout, "-")), ["CRI-O", "containerd", "docker", "podman"],
         "no engine installed in the fake root")
    t.ok(p.stdout.rstrip().endswith("kvrun can run containers here."), "hardware: the last line", p.stdout)

    p = Fake(base, "nested", flags="fpu vmx hypervisor").run()
    t.ok(p.returncode == 0 and any(l.startswith("virtualisation: nested, hardware-assisted")
                                   for l in lines(p.stdout, "ok")), "nested KVM: said, exit 0", p.stdout)
    p = Fake(base, "emulated", flags="fpu hypervisor sse2", cgroup="none", systemd=False).run()
    t.ok(p.returncode == 0 and any(l.startswith("virtualisation: nested, emulated guest kernel")
                                   for l in lines(p.stdout, "warn")), "emulating host: a warning, exit 0", p.stdout)
    t.ok(any(l.startswith("cgroups: none mounted") for l in lines(p.stdout, "warn")), "no cgroups: warning")
    t.ok(any(l.startswith("cgroup driver: cgroupfs") for l in lines(p.stdout, "ok")), "no systemd: cgroupfs")
    t.ok("(see the warnings above)" in p.stdout.splitlines()[-1], "warnings: the last line says so", p.stdout)

    p = Fake(base, "nokvm", kvm=False).run()
    t.ok(p.returncode == 1 and any(l.startswith("/dev/kvm: missing") for l in lines(p.stdout, "FAIL")),
         "no /dev/kvm: FAIL, exit 1", p.stdout)
    t.ok("kvrun cannot run containers here: 1 problem(s)" in p.stdout, "no /dev/kvm: the last line", p.stdout)
    p = Fake(base, "novirt", flags="fpu sse2").run()
    t.ok(p.returncode == 1 and any(l.startswith("virtualisation: none") for l in lines(p.stdout, "FAIL")),
         "no vmx/svm, not a VM: FAIL, exit 1", p.stdout)
    nok = Fake(base, "nokernel")
    nok.env["KVRUN_KERNEL"] = nok.root + "/boot/missing"
    p = nok.run()
    t.ok(p.returncode == 1 and any("/boot/missing (from $KVRUN_KERNEL)" in l for l in lines(p.stdout, "FAIL")),
         "a missing kernel: FAIL naming it and where it came from, exit 1", p.stdout)


def snippet_after(out, engine):
    """The indented lines under an engine's warning."""
    got, on = [], False
    for l in out.splitlines():
        if l.startswith("  warn  " + engine + " ("):
            on = True
        elif on and l.startswith("          "):
            got.append(l[10:])
        elif on:
            break
    return "\n".join(got)


def engines(t, base):
    f = Fake(base, "engines")
    for b in ("/usr/sbin/dockerd", "/usr/bin/podman", "/usr/bin/containerd", "/usr/bin/crio"):
        put(f.root, b, "#!/bin/sh\n", 0o755)
    put(f.root, "/etc/docker/daemon.json", '{"log-level": "warn"}\n')
    put(f.root, "/etc/containerd/config.toml", 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n')
    p = f.run()
    t.eq(p.returncode, 0, "engines without kvrun: warnings only, exit 0")
    docs = open(os.path.join(SRC, "docs", "engines.md")).read()
    for engine, where in (("docker", "/etc/docker/daemon.json"),
                          ("podman", "/etc/containers/containers.conf.d/50-kvrun.conf"),
                          ("containerd", "/etc/containerd/config.toml"),
                          ("CRI-O", "/etc/crio/crio.conf.d/10-kvrun.conf")):
        t.ok(any(l.startswith(f"{engine} (") and f"no runtime runs kvrun; add to {where}" in l
                 for l in lines(p.stdout, "warn")), f"{engine}: the file to add to", p.stdout)
        snip = snippet_after(p.stdout, engine)
        t.ok(KVRUN in snip, f"{engine}: the snippet names this kvrun", snip)
        # The documented snippet is the one kvrun prints, for /usr/local/bin/kvrun.
        t.ok(snip and snip.replace(KVRUN, "/usr/local/bin/kvrun") in docs,
             f"{engine}: docs/engines.md has the snippet check prints", snip)

    p = f.run("--fix")
    t.eq(p.returncode, 0, "check --fix exits 0")
    fixed = [l for l in lines(p.stdout, "ok") if "runtime \"kvrun\" added to" in l]
    t.eq(len(fixed), 4, "--fix: four engines registered")
    t.ok(any("/etc/docker/daemon.json (the old file is " + f.root + "/etc/docker/daemon.json.kvrun-backup" in l
             for l in fixed), "--fix: daemon.json backed up", p.stdout)
    t.eq(open(f.root + "/etc/docker/daemon.json.kvrun-backup").read(), '{"log-level": "warn"}\n',
         "the backup is the old file")
    p = f.run()
    ok = lines(p.stdout, "ok")
    for engine in ("docker", "podman", "containerd", "CRI-O"):
        t.ok(any(l.startswith(f"{engine} (") and 'runtime "kvrun"' in l for l in ok),
             f"after --fix: {engine} runs kvrun", p.stdout)
    t.ok(not lines(p.stdout, "warn") or all("virtualisation" in l for l in lines(p.stdout, "warn")),
         "after --fix: no engine warning left", p.stdout)
    # An entry named kvrun for another binary is not overwritten.
    put(f.root, "/etc/docker/daemon.json", '{"runtimes": {"kvrun": {"path": "/opt/old/kvrun"}}}')
    p = f.run("--fix")
    t.ok(any(l.startswith('docker (') and "runs /opt/old/kvrun, not this kvrun" in l for l in lines(p.stdout, "warn"))
         and any("change it by hand" in l for l in lines(p.stdout, "warn")),
         "--fix leaves another kvrun's entry alone and says so", p.stdout)


def main():
    t = Tap()
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"kvrun binary not found at {KVRUN}")
    this_host(t)
    base = tempfile.mkdtemp(prefix="kvrun-check-")
    try:
        kinds(t, base)
        engines(t, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    t.done()


main()
