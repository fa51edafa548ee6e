#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""File system work inside containers, side by side in one run:

  kvrun, block root        the container's root disk (ext4 image, cached)
  kvrun, virtio-fs root    the bundle's rootfs directory shared (io.kvrun.rootfs=virtiofs)
  kvrun, virtio-fs volume  a host directory bind-mounted (virtio-fs share), block root
  runc, bind mount         the same host directory bind-mounted under runc

One busybox container per case and run does, in the directory under test:
create FILES small files, `ls -l` them, remove them (metadata-heavy), then
write MB MiB with dd and fsync, drop the guest's page cache (kvrun only:
under runc that would be the host's), and read it back (data-heavy; the
host's page cache is warm for every case). Times are taken inside the
container from /proc/uptime (10 ms resolution). For the two kvrun root
modes, `kvrun create` is timed too (from the host: the VM from a template
when there is one, the root disk from its cache, the guest building the
container).

Where the guest kernel runs emulated (nested kvm_pvm), every kvrun figure
is labelled "emulated": it measures the emulator as much as kvrun.

  bench/fs-guest.py [--runs N] [--files N] [--mb N] [--out FILE.json] [--only TEXT]

Needs root, /dev/kvm, a guest kernel ($KVRUN_KERNEL, else the one the
tests boot), busybox-static, runc. Linux guests: run it under
`flock /tmp/kvrun-guest.lock` on a shared host. Templates: as configured
($KVRUN_TEMPLATE_DIR; default the slow suite's, build/tests/templates).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import bundlelib  # noqa: E402
import guestlib  # noqa: E402

KVRUN = os.environ.get("KVRUN", os.path.join(ROOT, "build", "runtime", "kvrun"))
RUNC = shutil.which("runc") or "/usr/sbin/runc"
APPLETS = ["sh", "cat", "cut", "echo", "ls", "rm", "mkdir", "dd", "sync"]
SCRIPT = r"""#!/bin/sh
# bench.sh DIR FILES MB DROP
d=$1/bench.$$; n=$2; mb=$3
t() { cut -d' ' -f1 /proc/uptime; }
mkdir -p $d
a=$(t); i=0; while [ $i -lt $n ]; do echo x > $d/f$i; i=$((i+1)); done; b=$(t)
ls -l $d > /dev/null; c=$(t)
rm -rf $d/*; e=$(t)
echo "STEP create $a $b"; echo "STEP stat $b $c"; echo "STEP remove $c $e"
a=$(t); dd if=/dev/zero of=$d/big bs=1M count=$mb conv=fsync 2>/dev/null; b=$(t)
[ "$4" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
c=$(t); dd if=$d/big of=/dev/null bs=1M 2>/dev/null; e=$(t)
echo "STEP write $a $b"; echo "STEP read $c $e"
rm -rf $d
"""
STEPS = ["create", "stat", "remove", "write", "read"]
COLUMNS = ["FILES small files made", "ls -l of them", "rm of them", "MB MiB written (fsync)", "MB MiB read"]
CASES = [
    ("kvrun, block root", "kvrun", "block", "/work"),
    ("kvrun, virtio-fs root", "kvrun", "virtiofs", "/work"),
    ("kvrun, virtio-fs volume", "kvrun", "block", "/vol"),
    ("runc, bind mount", "runc", None, "/vol"),
]


def make_bundle(tmp, name, root_mode, vol, args):
    b = os.path.join(tmp, name)
    rootfs = os.path.join(b, "rootfs")
    bundlelib.busybox_rootfs(rootfs, APPLETS, dirs=["work", "vol"])
    with open(os.path.join(rootfs, "bench.sh"), "w") as f:
        f.write(SCRIPT)
    os.chmod(os.path.join(rootfs, "bench.sh"), 0o755)

    def mutate(spec):
        spec["process"]["args"] = args
        spec["process"]["env"] = ["PATH=/bin"]
        spec["root"]["readonly"] = False
        spec["linux"]["readonlyPaths"] = [p for p in spec["linux"].get("readonlyPaths", []) if p != "/proc/sys"]
        spec["mounts"].append({"destination": "/vol", "type": "bind", "source": vol, "options": ["rbind", "rw"]})
        if root_mode:
            spec.setdefault("annotations", {})["io.kvrun.rootfs"] = root_mode

    bundlelib.write_spec(KVRUN, b, mutate)
    return b


def run_case(tmp, env, i, case, a):
    name, rt, root_mode, d = case
    vol = os.path.join(tmp, f"vol-{i}")
    os.makedirs(vol, exist_ok=True)
    drop = "1" if rt == "kvrun" else "0"
    b = make_bundle(tmp, f"b-{i}", root_mode, vol, ["/bench.sh", d, str(a.files), str(a.mb), drop])
    binary = KVRUN if rt == "kvrun" else RUNC
    root = os.path.join(tmp, f"root-{rt}")
    cid = f"fs-{i}"
    out_path, err_path = os.path.join(tmp, f"{cid}.out"), os.path.join(tmp, f"{cid}.err")
    # The container keeps create's stdio: files, not pipes create's caller
    # would wait on.
    with open(out_path, "w") as so, open(err_path, "w") as se:
        t0 = time.monotonic()
        p = subprocess.run([binary, "--root", root, "create", "--bundle", b, cid], env=env, stdout=so, stderr=se,
                           timeout=3000, stdin=subprocess.DEVNULL)
        create_s = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{name}: create: {open(err_path).read()[-800:]}")
    subprocess.run([binary, "--root", root, "start", cid], env=env, check=True, timeout=600, capture_output=True)
    for _ in range(12000):
        st = subprocess.run([binary, "--root", root, "state", cid], env=env, capture_output=True, text=True)
        if st.returncode != 0 or json.loads(st.stdout).get("status") == "stopped":
            break
        time.sleep(0.5)
    with open(out_path) as f:
        out = f.read()
    subprocess.run([binary, "--root", root, "delete", "--force", cid], env=env, capture_output=True, timeout=300)
    steps = {m.group(1): float(m.group(3)) - float(m.group(2))
             for m in re.finditer(r"^STEP (\S+) ([\d.]+) ([\d.]+)$", out, re.M)}
    if set(steps) != set(STEPS):
        raise RuntimeError(f"{name}: the workload's output: {out[-800:]!r}")
    return create_s, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--mb", type=int, default=None)
    ap.add_argument("--out")
    ap.add_argument("--only", help="run only the cases whose name contains this (e.g. runc)")
    a = ap.parse_args()
    emulated = guestlib.host_kind() == "pvm"
    a.runs = a.runs or (1 if emulated else 3)
    a.files = a.files or (300 if emulated else 5000)
    a.mb = a.mb or (16 if emulated else 256)
    kernel = os.environ.get("KVRUN_KERNEL") or guestlib.find_kernel()[0]
    if not kernel:
        sys.exit("no guest kernel: set KVRUN_KERNEL")
    tmp = tempfile.mkdtemp(prefix="kvrun-fs-guest-")
    env = dict(os.environ, KVRUN_KERNEL=kernel, KVRUN_CACHE_DIR=os.environ.get("KVRUN_CACHE_DIR",
                                                                                 os.path.join(tmp, "cache")))
    env.setdefault("KVRUN_TEMPLATE_DIR", os.path.join(ROOT, "build", "tests", "templates"))
    cases = [c for c in CASES if not a.only or a.only in c[0]]
    results = {c[0]: {"create_s": [], **{s: [] for s in STEPS}} for c in cases}
    try:
        for r in range(a.runs):
            for i, case in enumerate(cases):
                create_s, steps = run_case(tmp, env, r * len(cases) + i, case, a)
                results[case[0]]["create_s"].append(create_s)
                for s, v in steps.items():
                    results[case[0]][s].append(v)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    label = " (emulated guest kernel)" if emulated else ""
    print(f"{a.files} files, {a.mb} MiB, {a.runs} run(s), p50 in seconds; kvrun figures{label or ' on hardware KVM'}")
    cols = [c.replace("FILES", str(a.files)).replace("MB", str(a.mb)) for c in COLUMNS]
    print("| case | container create | " + " | ".join(cols) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in STEPS) + " |")
    for name, rt, root_mode, _ in cases:
        m = {k: statistics.median(v) for k, v in results[name].items()}
        create = f"{m['create_s']:.2f}" if rt == "kvrun" and name != "kvrun, virtio-fs volume" else "-"
        print(f"| {name}{label if rt == 'kvrun' else ''} | {create} | " +
              " | ".join(f"{m[s]:.2f}" for s in STEPS) + " |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"files": a.files, "mb": a.mb, "runs": a.runs, "emulated": emulated, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
