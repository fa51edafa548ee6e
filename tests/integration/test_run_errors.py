#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""create/run failures that happen before a guest boots: a clear message,
a non-zero exit, nothing left under --root and no process left behind.
Needs no kernel that boots (a bogus one is enough) and finishes in seconds."""
import json
import os
import shutil
import socket
import subprocess
import tempfile

from bundlelib import processes_mentioning
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))


def make_bundle(tmp, name, mutate=None, rootfs=True, config=True):
    b = os.path.join(tmp, name)
    os.makedirs(b)
    if rootfs:
        os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    if mutate:
        mutate(spec)
    if config is True:
        with open(path, "w") as f:
            json.dump(spec, f)
    else:
        with open(path, "w") as f:
            f.write(config)
    return b


def main():
    t = Tap()
    tmp = tempfile.mkdtemp(prefix="kvrun-run-errors-")
    cache = os.path.join(tmp, "cache")
    # A real file that is not a kernel: everything up to the VM's kernel
    # load runs, including the monitor, which must then fail cleanly.
    bogus_kernel = os.path.join(tmp, "not-a-kernel")
    with open(bogus_kernel, "wb") as f:
        f.write(b"\x7fELF this is not a kernel" + b"\0" * 4096)
    hostdir = os.path.join(tmp, "hostdir")
    os.mkdir(hostdir)
    nokernel_config = os.path.join(tmp, "nokernel-config.json")
    with open(nokernel_config, "w") as f:
        f.write('{"kernel": "/nope3"}')
    bad_config = os.path.join(tmp, "bad-config.json")
    with open(bad_config, "w") as f:
        f.write('{"kernel": "/x", "memroy": 5}')
    bad_locks_config = os.path.join(tmp, "bad-locks-config.json")
    with open(bad_locks_config, "w") as f:
        f.write(json.dumps({"kernel": bogus_kernel, "fs_locks": "both"}))

    sock_path = os.path.join(tmp, "a.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)

    def bind(source, dest="/data"):
        def mutate(spec):
            spec["mounts"].append({"destination": dest, "type": "bind", "source": source,
                                   "options": ["rbind", "rw"]})
        return mutate

    def terminal(spec):
        spec["process"]["terminal"] = True

    cases = [
        # (name, bundle args, env, verb args, expected words in stderr)
        ("missing rootfs", dict(rootfs=False), {}, ["run"], ["rootfs"]),
        ("broken config.json", dict(config='{"ociVersion": "1.2.0", "process": {'), {}, ["run"],
         ["config.json"]),
        ("kernel that does not exist", {}, {"KVRUN_KERNEL": "/nope"}, ["run"],
         ["kernel /nope", "$KVRUN_KERNEL", "No such file"]),
        ("kernel annotation that does not exist",
         dict(mutate=lambda s: s.setdefault("annotations", {}).update({"io.kvrun.kernel": "/nope2"})),
         {"KVRUN_KERNEL": bogus_kernel}, ["create"], ["kernel /nope2", "io.kvrun.kernel"]),
        ("kernel from the config file that does not exist", {},
         {"KVRUN_CONFIG": nokernel_config, "KVRUN_KERNEL": ""}, ["run"],
         ["kernel /nope3", "nokernel-config.json", "No such file"]),
        ("same through create", {}, {"KVRUN_CONFIG": nokernel_config, "KVRUN_KERNEL": ""}, ["create"],
         ["kernel /nope3", "nokernel-config.json"]),
        ("--kernel that does not exist", {}, {"KVRUN_KERNEL": bogus_kernel}, ["--kernel", "/nope4", "run"],
         ["kernel /nope4", "--kernel", "No such file"]),
        ("bad kvrun config file", {}, {"KVRUN_CONFIG": bad_config, "KVRUN_KERNEL": ""}, ["run"],
         ["bad-config.json", "unknown key", "memroy"]),
        ("lock mode annotation that is neither host nor guest",
         dict(mutate=lambda s: (s.setdefault("annotations", {}).update({"io.kvrun.fs.locks": "none"}),
                                bind(hostdir)(s))),
         {"KVRUN_KERNEL": bogus_kernel}, ["create"],
         ["annotation io.kvrun.fs.locks: expected", "host", "guest", "none"]),
        ("lock mode in the config file that is neither host nor guest", dict(mutate=bind(hostdir)),
         {"KVRUN_CONFIG": bad_locks_config, "KVRUN_KERNEL": ""}, ["run"],
         ["bad-locks-config.json: fs_locks: expected", "host", "guest", "both"]),
        ("bind mount source that does not exist", dict(mutate=bind(os.path.join(tmp, "nope"))),
         {"KVRUN_KERNEL": bogus_kernel}, ["run"], ["mounts[", "(/data)", "nope", "No such file"]),
        ("bind mount source that is a socket", dict(mutate=bind(sock_path)), {"KVRUN_KERNEL": bogus_kernel},
         ["create"], ["mounts[", "(/data)", sock_path, "is a socket"]),
        ("bind mount source that is a device", dict(mutate=bind("/dev/null", "/dev/mynull")),
         {"KVRUN_KERNEL": bogus_kernel}, ["run"], ["mounts[", "(/dev/mynull)", "is a character device"]),
        ("bind mount source that is not absolute", dict(mutate=bind("relative/dir")),
         {"KVRUN_KERNEL": bogus_kernel}, ["run"], ["mounts[", "(/data)", "absolute"]),
        ("host directory bind mount, kernel the VM cannot load (the share opened, then the monitor fails)",
         dict(mutate=bind(hostdir)), {"KVRUN_KERNEL": bogus_kernel}, ["create"], ["not-a-kernel"]),
        ("terminal", dict(mutate=terminal), {"KVRUN_KERNEL": bogus_kernel}, ["run", "--detach"],
         ["console socket"]),
        ("kernel the VM cannot load (monitor fails)", {}, {"KVRUN_KERNEL": bogus_kernel}, ["run"],
         ["not-a-kernel"]),
        ("same through create", {}, {"KVRUN_KERNEL": bogus_kernel}, ["create"], ["not-a-kernel"]),
    ]
    for i, (name, bargs, env, verb, words) in enumerate(cases):
        b = make_bundle(tmp, f"b{i}", **bargs)
        root = os.path.join(tmp, f"root{i}")
        e = dict(os.environ, KVRUN_CACHE_DIR=cache, KVRUN_CONFIG=os.path.join(tmp, "no-config.json"))
        e.update(env)
        p = subprocess.run([KVRUN, "--root", root] + verb + ["--bundle", b, f"c{i}"], env=e,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        t.ok(p.returncode != 0, f"{name}: fails", p.stderr)
        t.ok(all(w in p.stderr for w in words), f"{name}: message names {words}", p.stderr)
        t.eq(p.stdout, "", f"{name}: nothing on stdout")
        left = os.listdir(root) if os.path.isdir(root) else []
        t.eq(left, [], f"{name}: nothing left under --root")
        t.eq(processes_mentioning(root), [], f"{name}: no process left")

    t.eq(os.listdir(hostdir), [], "the shared directory is as it was")
    sock.close()
    shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    if not os.access(KVRUN, os.X_OK):
        print(f"1..0 # SKIP {KVRUN} not built")
        raise SystemExit(0)
    main()
