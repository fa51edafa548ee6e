#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Driver of bench/snapshot.sh: for each guest RAM size, boot the test guest
with test=snapshot, let it ask for a snapshot (--snapshot-stop), then
restore the file RUNS times in fresh processes, with the memory checksum
and with --restore-trust-memory, interleaved. Reports the medians of
kvrun's --timings fields:

- snapshot_us: pause, save, resume as the event loop saw it;
- restore_us: process start to the restored guest's first KVM_RUN;
- restore_load_us: open and check the file, create the VM and devices,
  map RAM and load all state (inside restore_us);
- the file's apparent size, its blocks on disk, and the bytes written.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def timings(err):
    for line in reversed(err.splitlines()):
        if line.startswith("{") and "total_us" in line:
            return json.loads(line)
    raise RuntimeError("no --timings line:\n" + err[-2000:])


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return timings(p.stderr)


def bench_size(a, size, tmp):
    path = os.path.join(tmp, f"{size}.snap")
    save = run([a.kvrun, "boot", "--kernel", a.guest, "--test-device", "--memory", size,
                "--cmdline", f"test=snapshot mem_expect={size}", "--snapshot-on-port", path,
                "--snapshot-stop", "--timings", "--timeout", "120"])
    st = os.stat(path)
    res = {"size": size, "snapshot_us": save["snapshot_us"], "snapshot_save_us": save["snapshot_save_us"],
           "bytes_written": save["snapshot_bytes"], "mem_pages": save["snapshot_mem_pages"],
           "file_apparent_bytes": st.st_size, "file_disk_bytes": st.st_blocks * 512}
    samples = {"checked": [], "trusted": []}
    for _ in range(a.runs):
        for kind, extra in (("checked", []), ("trusted", ["--restore-trust-memory"])):
            t = run([a.kvrun, "boot", "--restore", path, "--test-device", "--timings", "--timeout", "120"] + extra)
            samples[kind].append(t)
    for kind, ts in samples.items():
        res[f"restore_us_p50_{kind}"] = statistics.median(t["restore_us"] for t in ts)
        res[f"restore_load_us_p50_{kind}"] = statistics.median(t["restore_load_us"] for t in ts)
        res[f"restore_us_min_{kind}"] = min(t["restore_us"] for t in ts)
    os.unlink(path)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvrun", required=True)
    ap.add_argument("--guest", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", required=True)
    ap.add_argument("sizes", nargs="+")
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="kvrun-bench-snap-", dir=os.environ.get("TMPDIR", "/var/tmp")) as tmp:
        for size in a.sizes:
            results.append(bench_size(a, size, tmp))
            print(json.dumps(results[-1]), flush=True)
    with open(os.path.join(a.out, "snapshot.json"), "w") as f:
        json.dump({"runs": a.runs, "guest": "tests/guest test=snapshot", "results": results}, f, indent=2)
    with open(os.path.join(a.out, "snapshot.md"), "w") as f:
        f.write(f"# Snapshot and restore, test guest, {a.runs} restores per size (p50)\n\n")
        f.write("| RAM | snapshot ms | written MiB | file on disk MiB | restore ms (checked) | "
                "restore ms (trusted) | load ms (checked) | load ms (trusted) |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for r in results:
            f.write(f"| {r['size']} | {r['snapshot_us'] / 1000:.1f} | {r['bytes_written'] / 2**20:.1f} | "
                    f"{r['file_disk_bytes'] / 2**20:.1f} | {r['restore_us_p50_checked'] / 1000:.1f} | "
                    f"{r['restore_us_p50_trusted'] / 1000:.1f} | {r['restore_load_us_p50_checked'] / 1000:.1f} | "
                    f"{r['restore_load_us_p50_trusted'] / 1000:.1f} |\n")
        f.write("\nrestore = process start to the restored guest's first KVM_RUN; load = open, check, "
                "create the VM and devices, map RAM, load state. The guest is the small test guest, "
                "not Linux.\n")


if __name__ == "__main__":
    main()
