#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a virtio-fs device costs the host: `kvrun boot` of the
freestanding test guest with 0, 1, 4, 8 and 16 shared directories
(--share), RUNS times each, side by side in one run. Reports the p50 of
the VM's setup time (process start to the first KVM_RUN, --timings'
setup_us), the monitor's RSS at the end (monitor_rss_kib) and, from one
run of a guest that spins, the process's threads. The test guest never
mounts the shares: this is the fixed cost of each device (transport,
server tables, workers), which docs/benchmarks.md weighs against one
device serving every share as subtrees.

  bench/fs-devices.py [RUNS]      (default 10; needs /dev/kvm and a build)
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KVRUN = os.environ.get("KVRUN", os.path.join(ROOT, "build", "runtime", "kvrun"))
GUEST = os.environ.get("KVRUN_TEST_GUEST", os.path.join(ROOT, "build", "tests", "guest", "kvrun-test-guest"))
COUNTS = (0, 1, 4, 8, 16)


def boot(shares, test, extra=()):
    argv = [KVRUN, "boot", "--kernel", GUEST, "--test-device", "--cmdline", f"test={test}", "--timings"]
    argv += [f"--share=t{i}={d}" for i, d in enumerate(shares)] + list(extra)
    return argv


def timings(shares):
    p = subprocess.run(boot(shares, "basic"), capture_output=True, text=True, timeout=120)
    m = re.findall(r"\{.*\}", p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"kvrun boot failed ({p.returncode}): {p.stderr[-500:]}")
    return json.loads(m[-1])


def threads(shares):
    p = subprocess.Popen(boot(shares, "spin", ["--timeout", "3"]), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    try:
        with open(f"/proc/{p.pid}/status") as f:
            return int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))
    finally:
        p.wait()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with tempfile.TemporaryDirectory(prefix="kvrun-fs-devices-") as tmp:
        dirs = []
        for i in range(max(COUNTS)):
            dirs.append(os.path.join(tmp, f"s{i}"))
            os.mkdir(dirs[-1])
        samples = {n: [] for n in COUNTS}
        for _ in range(runs):  # interleaved: a busy moment hurts every count alike
            for n in COUNTS:
                samples[n].append(timings(dirs[:n]))
        print(f"| shares | setup p50 (ms) | monitor RSS p50 (KiB) | threads | runs |")
        print(f"| --- | --- | --- | --- | --- |")
        for n in COUNTS:
            setup = statistics.median(s["setup_us"] for s in samples[n]) / 1000
            rss = statistics.median(s["monitor_rss_kib"] for s in samples[n])
            print(f"| {n} | {setup:.1f} | {rss:.0f} | {threads(dirs[:n])} | {runs} |")


if __name__ == "__main__":
    main()
