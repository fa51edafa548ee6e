#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""config.json fields and flags kvrun refuses by name, before anything is
built: create fails naming the field, exits non-zero, prints nothing on
stdout, leaves nothing under --root and no process behind. No guest boots
(the refusals come before the kernel is looked up), so this runs in
seconds.

Where runc refuses the same thing on a host without the feature
(apparmorProfile, selinuxLabel and mountLabel on a host without AppArmor
or SELinux), runc runs the same bundle side by side and must fail too: the
VM has no LSM policy, like such a host. That part needs runc and a host
without AppArmor and SELinux; it is skipped (saying why) otherwise.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile

from bundlelib import BUSYBOX, processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))


def make_bundle(tmp, name, mutate):
    b = os.path.join(tmp, name)
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    shutil.copy(BUSYBOX, os.path.join(b, "rootfs", "bin", "busybox"))
    os.symlink("busybox", os.path.join(b, "rootfs", "bin", "sh"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/sh", "-c", "echo ran"]
    mutate(spec)
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def resources(**kw):
    return lambda s: s["linux"].setdefault("resources", {}).update(kw)


def linux(**kw):
    return lambda s: s["linux"].update(kw)


def process(**kw):
    return lambda s: s["process"].update(kw)


def add_ns(ns):
    """ns added, or replacing the spec's entry of its type."""
    def mutate(s):
        s["linux"]["namespaces"] = [n for n in s["linux"]["namespaces"] if n["type"] != ns["type"]] + [ns]
    return mutate


def tmpfs_mapped(s):
    s["mounts"].append({"destination": "/m", "type": "tmpfs", "source": "tmpfs",
                        "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
                        "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]})


CASES = [
    # (name, mutate, words of the message)
    ("joining another container's ipc namespace", add_ns({"type": "ipc", "path": "/proc/1/ns/ipc"}),
     ["linux.namespaces[", "].path: joining the ipc namespace at /proc/1/ns/ipc is not supported"]),
    ("a time namespace", add_ns({"type": "time"}), ["time namespaces are not supported"]),
    ("linux.timeOffsets", linux(timeOffsets={"monotonic": {"secs": 5}}),
     ["linux.timeOffsets: time namespaces are not supported"]),
    ("linux.intelRdt", linux(intelRdt={"closID": "x"}), ["linux.intelRdt: intelRdt is specified in config"]),
    ("an AppArmor profile", process(apparmorProfile="docker-default"),
     ["process.apparmorProfile: apparmor profile", "docker-default", "is set, but AppArmor is not enabled"]),
    ("an SELinux label", process(selinuxLabel="system_u:system_r:container_t:s0"),
     ["process.selinuxLabel: selinux label is specified in config, but SELinux is not enabled"]),
    ("an SELinux mount label", linux(mountLabel="system_u:object_r:container_file_t:s0"),
     ["linux.mountLabel: a mount label is specified in config, but SELinux is not enabled"]),
    ("execCPUAffinity", process(execCPUAffinity={"initial": "0-1"}),
     ["process.execCPUAffinity.initial: CPU affinity is not supported"]),
    ("an idmapped mount", tmpfs_mapped, ["mounts[", "].uidMappings: idmapped mounts are not supported"]),
    ("personality flags", linux(personality={"domain": "LINUX", "flags": ["ADDR_NO_RANDOMIZE"]}),
     ["linux.personality.flags: personality flags are not supported"]),
    ("a seccomp notification listener",
     linux(seccomp={"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/seccomp.sock",
                    "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}),
     ["linux.seccomp.listenerPath: seccomp notifications cannot leave the VM"]),
    ("kernel memory", resources(memory={"kernel": 1 << 20}), ["linux.resources.memory.kernel"]),
    ("swappiness", resources(memory={"swappiness": 10}), ["linux.resources.memory.swappiness"]),
    ("disabling the OOM killer", resources(memory={"disableOOMKiller": True}),
     ["linux.resources.memory.disableOOMKiller"]),
    ("swap below the memory limit", resources(memory={"limit": 128 << 20, "swap": 64 << 20}),
     ["linux.resources.memory.swap: memory+swap limit should be >= memory limit"]),
    ("real-time CPU", resources(cpu={"realtimeRuntime": 1000}), ["linux.resources.cpu.realtimeRuntime"]),
    ("a block I/O weight", resources(blockIO={"weight": 100}), ["linux.resources.blockIO.weight"]),
    ("a block I/O throttle of a host device",
     resources(blockIO={"throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1000}]}),
     ["linux.resources.blockIO.throttleReadBpsDevice"]),
    ("net_cls", resources(network={"classID": 7}), ["linux.resources.network.classID"]),
    ("RDMA", resources(rdma={"mlx5_0": {"hcaHandles": 1}}), ["linux.resources.rdma: the VM has no RDMA devices"]),
    ("a unified key that is not a file name", resources(unified={"../cgroup.procs": "1"}),
     ["linux.resources.unified[", "../cgroup.procs", "]: must be a cgroup file name"]),
    ("a device rule punching a hole in a wildcard",
     resources(devices=[{"allow": False, "access": "rwm"},
                        {"allow": True, "type": "c", "access": "rwm"},
                        {"allow": False, "type": "c", "major": 1, "minor": 3, "access": "r"}]),
     ["linux.resources.devices[2]: c 1:3 r cannot be taken out of the wider rule c *:* rwm"]),
    ("a device rule without access", resources(devices=[{"allow": True, "type": "c", "major": 1, "minor": 3}]),
     ["linux.resources.devices[0].access: must not be empty"]),
    ("a device number out of range",
     linux(devices=[{"path": "/dev/x", "type": "c", "major": 5000, "minor": 0}]),
     ["linux.devices[0] (/dev/x): device number 5000:0 is out of range"]),
]

# runc fails these too on a host without the LSM (its own words).
RUNC_TOO = {
    "an AppArmor profile": "unable to apply apparmor profile",
    "an SELinux label": "selinux label is specified in config, but selinux is disabled or not supported",
    "an SELinux mount label": "context=",
}


def no_lsm_host():
    return not os.path.exists("/sys/module/apparmor") and not os.path.exists("/sys/fs/selinux")


def refused(t, name, p, root, words):
    err = p.stderr
    t.ok(p.returncode != 0 and all(w in err for w in words), f"{name}: refused, naming it", f"{err[-600:]}")
    t.eq(p.stdout, "", f"{name}: nothing on stdout")
    t.eq(os.listdir(root) if os.path.isdir(root) else [], [], f"{name}: nothing left under --root")


def run(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(args, **kw)


def check_config_refusals(t, tmp):
    for i, (name, mutate, words) in enumerate(CASES):
        b = make_bundle(tmp, f"b{i}", mutate)
        root = os.path.join(tmp, f"root{i}")
        p = run([KVRUN, "--root", root, "create", "--bundle", b, f"c{i}"])
        refused(t, name, p, root, words)
        if name not in RUNC_TOO:
            continue
        if not shutil.which("runc") or not no_lsm_host():
            t.skip(f"{name}: runc refuses it too", "needs runc on a host without AppArmor and SELinux")
            continue
        rroot = os.path.join(tmp, f"runc-root{i}")
        p = run(["runc", "--root", rroot, "run", "--bundle", b, f"kvt-refusal-{os.getpid()}-{i}"])
        t.ok(p.returncode != 0 and RUNC_TOO[name] in p.stderr and "ran" not in p.stdout,
             f"{name}: runc (no LSM on this host) refuses it too", p.stderr[-600:])
        run(["runc", "--root", rroot, "delete", "--force", f"kvt-refusal-{os.getpid()}-{i}"])


def check_unconfined(t, tmp):
    """"unconfined" asks for what every process in the VM is: accepted (the
    create then fails later, for want of a kernel, past the checks)."""
    b = make_bundle(tmp, "unconfined", process(apparmorProfile="unconfined"))
    root = os.path.join(tmp, "root-unconfined")
    p = run([KVRUN, "--root", root, "create", "--bundle", b, "u"], env=dict(os.environ, KVRUN_KERNEL="/nonexistent"))
    t.ok(p.returncode != 0 and "apparmor" not in p.stderr.lower() and "/nonexistent" in p.stderr,
         "apparmorProfile unconfined: accepted (create goes on to the kernel lookup)", p.stderr[-400:])


def check_flags(t, tmp):
    b = make_bundle(tmp, "flags", lambda s: None)
    env = dict(os.environ, KVRUN_KERNEL="/nonexistent")
    root = os.path.join(tmp, "root-flags")
    # fd 3 open, fd 4 not: nothing else may stand in for it.
    p = run(["sh", "-c", f"exec 4>&-; exec {KVRUN} --root {root} create --preserve-fds 2 --bundle {b} f1 3</dev/null"],
            env=env)
    refused(t, "--preserve-fds with a closed fd", p, root, ["--preserve-fds: fd 4: Bad file descriptor"])
    p = run(["sh", "-c", f"exec {KVRUN} --root {root} create --preserve-fds 1 --bundle {b} f2 3<{tmp}"], env=env)
    refused(t, "--preserve-fds of a directory", p, root, ["--preserve-fds: fd 3 is a directory"])
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(os.path.join(tmp, "listening.sock"))
    lsock.listen(1)
    p = run([KVRUN, "--root", root, "create", "--preserve-fds", "1", "--bundle", b, "f3"], env=env,
            pass_fds=(lsock.fileno(),), preexec_fn=lambda: os.dup2(lsock.fileno(), 3))
    refused(t, "--preserve-fds of a listening socket", p, root, ["--preserve-fds: fd 3 is a listening socket"])
    lsock.close()
    p = run([KVRUN, "--root", root, "create", "--preserve-fds", "65", "--bundle", b, "f4"], env=env)
    refused(t, "--preserve-fds above 64", p, root, ["--preserve-fds 65: at most 64 descriptors"])
    p = run(["sh", "-c", f"LISTEN_PID=$$ LISTEN_FDS=1 exec {KVRUN} --root {root} create --bundle {b} f5 3</dev/null"],
            env=env)
    refused(t, "socket activation ($LISTEN_FDS)", p, root, ["socket activation ($LISTEN_FDS) is not supported"])
    p = run([KVRUN, "--root", root, "create", "--pidfd-socket", os.path.join(tmp, "nope.sock"), "--bundle", b,
             "f6"], env=env)
    refused(t, "--pidfd-socket that does not exist", p, root, ["pidfd socket", "nope.sock", "No such file"])
    for flag, words in ((["--lazy-pages"], "--lazy-pages is not supported"),
                        (["--parent-path", tmp], "--parent-path is not supported"),
                        (["--lsm-profile", "apparmor:x"], "--lsm-profile is not supported")):
        p = run([KVRUN, "--root", root, "restore", "--image-path", tmp, "--bundle", b] + flag + ["r1"], env=env)
        refused(t, f"restore {flag[0]}", p, root, [words])


def main():
    t = Tap()
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"{KVRUN} not built")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    tmp = tempfile.mkdtemp(prefix="kvrun-refusals-")
    try:
        check_config_refusals(t, tmp)
        check_unconfined(t, tmp)
        check_flags(t, tmp)
        t.eq(processes_mentioning(tmp), [], "no process left")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
