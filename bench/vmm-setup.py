#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""VMM setup time and monitor memory: kvrun against QEMU microvm, side by
side in one run. Driven by bench/vmm-setup.sh (see docs/vmm.md).

Setup time: from just before exec to the process's first ioctl(KVM_RUN),
taken by an LD_PRELOAD shim for both VMMs. Monitor memory: total Rss of
the process minus the Rss of its guest memory (the ranges it registered with
KVM_SET_USER_MEMORY_REGION, also recorded by the shim), from
/proc/PID/smaps, sampled a fixed time after the first KVM_RUN.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def smaps_rss(pid, slots):
    """(total Rss KiB, guest RAM Rss KiB) of pid; guest RAM is every mapping
    inside a range the VMM registered with KVM_SET_USER_MEMORY_REGION."""
    total = guest = 0
    in_guest = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                a, b = int(m.group(1), 16), int(m.group(2), 16)
                in_guest = any(s <= a and b <= s + n for s, n in slots)
                continue
            m = re.match(r"^Rss:\s+(\d+) kB", line)
            if m:
                total += int(m.group(1))
                if in_guest:
                    guest += int(m.group(1))
    return total, guest


def read_slots(path):
    slots = []
    if os.path.exists(path):
        for line in open(path):
            a, n = line.split()
            slots.append((int(a, 16), int(n, 16)))
    return slots


def run_once(cmd, shim, settle_s, timeout_s=60):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "first-run")
        env = dict(os.environ, LD_PRELOAD=shim, VMM_BENCH_OUT=out)
        env["VMM_BENCH_T0_NS"] = str(time.monotonic_ns())
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(out) or os.path.getsize(out) == 0:
            if p.poll() is not None or time.monotonic() > deadline:
                p.kill()
                err = p.communicate()[1].decode(errors="replace")
                raise RuntimeError(f"{cmd[0]} did not reach KVM_RUN: {err.strip()[-400:]}")
            time.sleep(0.002)
        setup_ns = int(open(out).read())
        time.sleep(settle_s)
        total, guest = smaps_rss(p.pid, read_slots(out + ".slots"))
        p.send_signal(signal.SIGKILL)
        p.communicate()
    return {"setup_us": setup_ns // 1000, "rss_kib": total, "guest_rss_kib": guest,
            "monitor_rss_kib": total - guest}


def summarise(samples):
    keys = samples[0].keys()
    return {k: statistics.median(s[k] for s in samples) for k in keys}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvrun", required=True)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--shim", required=True)
    ap.add_argument("--vmlinux", required=True)
    ap.add_argument("--bzimage", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--cmdline", required=True)
    ap.add_argument("--memory-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    kv = [a.kvrun, "boot", "--memory", f"{a.memory_mib}M", "--initrd", a.initrd, "--cmdline", a.cmdline]
    configs = {
        "kvrun-vmlinux": kv + ["--kernel", a.vmlinux],
        "kvrun-bzimage": kv + ["--kernel", a.bzimage],
        "qemu-microvm-bzimage": [a.qemu, "-M", "microvm", "-enable-kvm", "-cpu", "host", "-m",
                                 f"{a.memory_mib}M", "-smp", "1", "-nodefaults", "-no-user-config",
                                 "-nographic", "-serial", "none", "-monitor", "none",
                                 "-kernel", a.bzimage, "-initrd", a.initrd, "-append", a.cmdline],
    }
    samples = {k: [] for k in configs}
    # Interleave the configurations so that host noise hits all alike.
    for i in range(a.runs):
        for name, cmd in configs.items():
            samples[name].append(run_once(cmd, a.shim, a.settle))
        print(f"run {i + 1}/{a.runs} done", file=sys.stderr)
    med = {k: summarise(v) for k, v in samples.items()}
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": os.uname().nodename, "kernel": os.uname().release,
        "runs": a.runs, "memory_mib": a.memory_mib, "settle_s": a.settle,
        "method": "setup_us: exec to first KVM_RUN (LD_PRELOAD shim); monitor_rss_kib: smaps Rss "
                  "minus Rss inside the KVM memory slots, settle_s after first KVM_RUN; medians",
        "median": med, "samples": samples,
    }
    with open(os.path.join(a.out, "vmm-setup.json"), "w") as f:
        json.dump(result, f, indent=2)
    q = med["qemu-microvm-bzimage"]
    lines = [
        f"# VMM setup time and monitor memory ({result['date']})", "",
        f"Medians of {a.runs} interleaved runs, {a.memory_mib} MiB guest, 1 vCPU, same kernel build "
        "(QEMU needs the bzImage: the vmlinux has no PVH note). Ratios are QEMU / kvrun.", "",
        "| VMM | setup (exec to first KVM_RUN) | setup, fastest run | monitor RSS (excl. guest RAM) "
        "| setup ratio | memory ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in med.items():
        fastest = min(x["setup_us"] for x in samples[name])
        lines.append(f"| {name} | {m['setup_us'] / 1000:.1f} ms | {fastest / 1000:.1f} ms | "
                     f"{m['monitor_rss_kib'] / 1024:.1f} MiB | "
                     f"{q['setup_us'] / max(m['setup_us'], 1):.2f}x | "
                     f"{q['monitor_rss_kib'] / max(m['monitor_rss_kib'], 1):.2f}x |")
    lines += ["", "Host: nested KVM on a shared 2-core machine; absolute times are noisy, the ratios "
              "from the same interleaved run are the figure to read. Boot-to-marker times on this host "
              "are emulator-bound (guest CPL0 is emulated) and are not VMM figures."]
    with open(os.path.join(a.out, "vmm-setup.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
