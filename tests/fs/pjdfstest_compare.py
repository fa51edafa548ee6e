#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pjdfstest on three file systems side by side: a directory of the host's
own file system, bindfs over it, and kvrun's virtio-fs server over it
(through the host's /dev/fuse). Prints a markdown table and every
assertion that fails on kvrun but passes on bindfs (each must be fixed or
explained in docs/virtio-fs.md).

  tests/fs/pjdfstest_compare.py [--dir DIR] [--jobs N] [--json OUT]

DIR (default: a temporary directory under /var/tmp) must be on the file
system to compare against. Needs root, /dev/fuse, bindfs, prove, and a
built kvrun-fs-host ($KVRUN_FS_HOST or build/tests/fs/kvrun-fs-host).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import fslib  # noqa: E402


def fs_type(path):
    return subprocess.run(["df", "-PT", path], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    problem = fslib.fuse_problem()
    if problem or not fslib.have("bindfs") or not fslib.have("prove"):
        sys.exit(f"pjdfstest_compare: needs root, /dev/fuse, bindfs and prove ({problem or 'missing tool'})")
    pjd, tried = fslib.find_pjdfstest()
    if not pjd:
        sys.exit(f"pjdfstest_compare: pjdfstest not found ({tried})")
    base = tempfile.mkdtemp(prefix="kvrun-pjd-compare-", dir=a.dir or "/var/tmp")
    results = {}
    try:
        for name in ("host", "bindfs", "kvrun"):
            share, mnt = os.path.join(base, f"{name}-share"), os.path.join(base, f"{name}-mnt")
            os.mkdir(share)
            os.mkdir(mnt)
            if name == "host":
                where, ctx = share, None
            elif name == "bindfs":
                where, ctx = mnt, fslib.BindfsMount(share, mnt)
            else:
                where, ctx = mnt, fslib.KvrunMount(share, mnt, ["--threads", "4"])
            print(f"pjdfstest_compare: {name} ...", file=sys.stderr, flush=True)
            if ctx:
                with ctx:
                    r = fslib.run_pjdfstest(where, pjd, jobs=a.jobs)
            else:
                r = fslib.run_pjdfstest(where, pjd, jobs=a.jobs)
            failed, wstat, total, secs, _ = r
            results[name] = {"failed": {f: sorted(n) for f, n in failed.items()}, "wstat": wstat, "total": total,
                             "seconds": round(secs, 1)}
    finally:
        subprocess.run(["rm", "-rf", base])
    host_fs = fs_type(a.dir or "/var/tmp")
    print(f"| file system | assertions | failed | seconds (prove -j{a.jobs}) |")
    print("| --- | --- | --- | --- |")
    labels = {"host": f"host {host_fs}", "bindfs": "bindfs " + " ".join(fslib.BindfsMount.OPTIONS[1:]),
              "kvrun": "kvrun virtio-fs server (kvrun-fs-host, 4 threads)"}
    for name, r in results.items():
        n = sum(len(v) for v in r["failed"].values())
        detail = ", ".join(f"{f} {len(v)}" for f, v in sorted(r["failed"].items()))
        print(f"| {labels[name]} | {r['total']} | {n}{f' ({detail})' if detail else ''} | {r['seconds']} |")
    kv, bf = results["kvrun"]["failed"], results["bindfs"]["failed"]
    worse = {f: sorted(set(v) - set(bf.get(f, []))) for f, v in kv.items()}
    worse = {f: v for f, v in worse.items() if v}
    print()
    print("Failing on kvrun, passing on bindfs:", "none" if not worse else "")
    for line in fslib.format_failures({f: set(v) for f, v in worse.items()}):
        print(f"  {line}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
