# SPDX-License-Identifier: Apache-2.0
"""datapath: the device data path at native guest speed, and exits: what it
costs per operation.

The freestanding test guest's benchmark mode (tests/guest/bench*.c) sets
its queues up at CPL0 and drives the devices from CPL3 with interrupts
suppressed, polling the used rings: no guest kernel code runs per request,
so on a host that emulates only the guest's CPL0 code (kvm_pvm) the loop
runs natively. kvrun reports each workload on `kvrun boot --bench-out`
with the guest's TSC figures and the exits, doorbells and interrupts it
cost (KVM's binary statistics and kvrun's counters). The same operations
done directly on the host (bench/datapath-host.c) are the physical limit;
QEMU microvm running the same guest is the peer.

Figures (per run, runtimes in turn): virtio-blk 4 KiB random read and
write, 1 MiB sequential read and write, at queue depths 1, 32 and 128, on
a raw file and on the copy-on-write disk of that file; IOPS for 4 KiB,
MB/s for 1 MiB, from the guest's own cycles."""
import json
import os
import shutil
import subprocess

from .suite_start import rotate
from .util import log, sh

S = "datapath"
SE = "exits"
# Host CPU per operation: kvrun's process less its polling vCPU thread (the
# device's worker or event loop does the work) against the host-direct
# process doing the same; on a host with fewer cores than busy threads
# (the vCPU polls all the time) this is the figure contention leaves alone.
SC = "datapath-cpu"
# Taken on a nested kvm_pvm host: the guest's CPL3 loop runs natively, its
# CPL0 set-up is emulated (docs/benchmarks.md).
LABEL = "nested kvm_pvm, guest CPL3"
BLK_WORKLOADS = [(m, bs, qd) for m, bs in (("randread", "4K"), ("randwrite", "4K"), ("read", "1M"), ("write", "1M"))
                 for qd in (1, 32, 128)]
# Targets (the brief of record, docs/benchmarks.md): kvrun / host-direct.
TARGETS = {("randread", "4K", 32): 0.80, ("read", "1M", 32): 0.90, ("write", "1M", 32): 0.90,
           ("read", "1M", 128): 0.90, ("write", "1M", 128): 0.90}
DISKS = ("raw", "cow")


def ops_for(bs, qd, quick):
    if bs == "1M":
        return 100 if quick else 300
    if qd == 1:
        return 3000 if quick else 10000
    return 20000 if quick else 60000


def disk_mib(quick):
    return 256 if quick else 512


HOST_SRCS = ("datapath-host.c", "datapath-host-net.c", "datapath-host-unix.c", "datapath-host.h")


def build_host_tool(ctx):
    """bench/datapath-host*.c (needs liburing-dev), rebuilt when changed."""
    out = os.path.join(ctx.cache, "datapath-host")
    srcs = [os.path.join(ctx.src, "bench", f) for f in HOST_SRCS]
    if not os.path.exists(out) or os.path.getmtime(out) < max(os.path.getmtime(s) for s in srcs):
        sh(["cc", "-O2", "-o", out] + [s for s in srcs if s.endswith(".c")] + ["-luring"])
    return out


def make_disk(ctx):
    """A file of random data (reads of holes would cost nothing), reused."""
    d = os.path.join(ctx.cache, "datapath")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"disk-{disk_mib(ctx.quick)}M.img")
    if not os.path.exists(path):
        chunk = os.urandom(1 << 20)
        with open(path + ".tmp", "wb") as f:
            for _ in range(disk_mib(ctx.quick)):
                f.write(chunk)
        os.rename(path + ".tmp", path)
    # In the page cache for every side alike.
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass
    return path


def spec(workloads, quick):
    return ",".join(f"{m}:{bs}:{qd}:{ops_for(bs, qd, quick)}" for m, bs, qd in workloads)


def metric_name(kind, m, bs, qd):
    return f"blk {m} {bs} qd{qd} ({kind})"


def unit_of(bs):
    return ("IOPS", "ops") if bs == "4K" else ("MB/s", "bytes")


def record(ctx, rt, kind, m, bs, qd, ops, nbytes, seconds, label=None):
    unit, what = unit_of(bs)
    v = ops / seconds if what == "ops" else nbytes / seconds / 1e6
    meta = {"unit": unit, "better": "higher", "title": metric_name(kind, m, bs, qd)}
    if label:
        meta["label"] = label
    ctx.results.add(S, metric_name(kind, m, bs, qd), rt, v, **meta)


def kvrun_blk(ctx, disk, kind, tmp, datapath=True):
    """One kvrun boot running every block workload on one disk kind; its
    figures to datapath (unless not datapath) and exits."""
    out = os.path.join(tmp, f"bench-{kind}.json")
    overlay = os.path.join(tmp, "overlay.img")
    if kind == "cow":
        open(overlay, "w").close()
        arg = f"{overlay},base={disk}"
    else:
        arg = disk
    # The first workload touches every buffer page once (not recorded).
    warm = "read:1M:128:128"
    cmdline = f"test=bench bench_blk={warm},{spec(BLK_WORKLOADS, ctx.quick)}"
    r = subprocess.run([ctx.kvrun_bin, "boot", "--kernel", ctx.test_guest, "--test-device", "--console", "--memory", "512M",
                        "--disk", arg, "--bench-out", out, "--cmdline", cmdline, "--timeout", "900"],
                       capture_output=True, text=True, timeout=960)
    lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
    if r.returncode != 0 or len(lines) != len(BLK_WORKLOADS) + 1:
        fails = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("not ok") or "kvrun boot:" in x]
        raise RuntimeError(f"kvrun boot (bench, {kind} disk) exit {r.returncode}, {len(lines)} bench lines: "
                           f"{' '.join(fails)[-300:]}")
    for d, (m, bs, qd) in zip(lines[1:], BLK_WORKLOADS):
        if d["errors"]:
            raise RuntimeError(f"{d['name']}: {d['errors']} errors")
        seconds = d["cycles"] / (d["tsc_khz"] * 1e3)
        if datapath:
            record(ctx, "kvrun", kind, m, bs, qd, d["ops"], d["bytes"], seconds, LABEL)
            cpu_record(ctx, "kvrun", metric_name(kind, m, bs, qd), "request", d["cpu_ns"] - d["vcpu_cpu_ns"],
                       d["ops"], LABEL)
        exits(ctx, kind, m, bs, qd, d)
    if kind == "cow":
        os.unlink(overlay)


def exits(ctx, kind, m, bs, qd, d):
    """Per block request: what it cost in exits, doorbells, interrupts and
    passes of the device over its queue."""
    subject = f"blk {m} {bs} qd{qd} ({kind})"
    per_op(ctx, subject, d, "request")
    ctx.results.add(SE, f"{subject}: device passes per request", "kvrun",
                    d["stats"]["kvrun"]["queue_passes"] / max(1, d["ops"]), unit="passes", better="lower",
                    title=f"{subject}: device passes per request", label=LABEL)


def host_blk(ctx, tool, disk):
    for m, bs, qd in BLK_WORKLOADS:
        r = sh([tool, "blk", disk, m, bs, str(qd), str(ops_for(bs, qd, ctx.quick))], timeout=600)
        d = json.loads(r.stdout)
        for kind in DISKS:
            record(ctx, "host-direct", kind, m, bs, qd, d["ops"], d["bytes"], d["ns"] / 1e9)
            cpu_record(ctx, "host-direct", metric_name(kind, m, bs, qd), "request", d["cpu_ns"], d["ops"])


NET_WORKLOADS = [(d, size) for d in ("tx", "rx") for size in ("64", "1500", "64K")]
NET_TARGETS = {("tx", "1500"): 0.80, ("rx", "1500"): 0.80}
NS = "kvbench-dp"
TAP = "kvbdp0"


def frames_for(size, quick):
    if size == "64K":
        return 4000 if quick else 10000
    return 50000 if quick else 100000


def net_name(d, size):
    what = "64 KiB TSO frames" if size == "64K" else f"{size} B frames"
    return f"net {'guest to TAP' if d == 'tx' else 'TAP to guest'} {what}"


def net_setup():
    """A namespace of our own holding a persistent TAP, up, without IPv6
    (its router solicitations would reach the guest)."""
    net_teardown()
    sh(["ip", "netns", "add", NS])
    sh(["ip", "netns", "exec", NS, "ip", "tuntap", "add", "dev", TAP, "mode", "tap", "vnet_hdr"])
    sh(["ip", "netns", "exec", NS, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
    sh(["ip", "netns", "exec", NS, "ip", "link", "set", TAP, "up"])


def net_teardown():
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def in_ns(argv):
    return ["ip", "netns", "exec", NS] + argv


class Peer:
    """The host peer on the TAP's interface: a sink counting what the guest
    (or the host-direct writer) sends, or a source sending to the reader."""

    def __init__(self, tool, d, size):
        argv = [tool, "tap-sink", TAP, "600"] if d == "tx" else [tool, "tap-source", TAP, size, "600"]
        self.p = subprocess.Popen(in_ns(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the TAP peer did not start: {self.p.stderr.read()[-300:]}")

    def stop(self):
        self.p.terminate()
        out, err = self.p.communicate(timeout=30)
        lines = [x for x in out.splitlines() if x.startswith("{")]
        return json.loads(lines[-1]) if lines else None


def kvrun_net(ctx, tool, tmp, datapath=True):
    """One kvrun boot per network workload, its peer running meanwhile."""
    for d, size in NET_WORKLOADS:
        out = os.path.join(tmp, "bench-net.json")
        if os.path.exists(out):
            os.unlink(out)
        peer = Peer(tool, d, size)
        try:
            r = subprocess.run(in_ns([ctx.kvrun_bin, "boot", "--kernel", ctx.test_guest, "--test-device",
                                      "--console", "--memory", "512M", "--net", TAP, "--bench-out", out, "--cmdline",
                                      f"test=bench bench_net={d}:{size}:{frames_for(size, ctx.quick)}",
                                      "--timeout", "300"]), capture_output=True, text=True, timeout=360)
        finally:
            got = peer.stop()
        lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
        if r.returncode != 0 or len(lines) != 1 or lines[0]["errors"]:
            fails = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("not ok") or "kvrun boot:" in x]
            raise RuntimeError(f"kvrun boot (bench net {d} {size}) exit {r.returncode}: {' '.join(fails)[-300:]}")
        b = lines[0]
        seconds = b["cycles"] / (b["tsc_khz"] * 1e3)
        if datapath:
            net_record(ctx, "kvrun", d, size, b["ops"], b["bytes"], seconds, LABEL)
            cpu_record(ctx, "kvrun", net_name(d, size), "frame", b["cpu_ns"] - b["vcpu_cpu_ns"], b["ops"], LABEL)
        if d == "tx" and got and got["ops"] < b["ops"]:
            ctx.results.notes.append(f"{net_name(d, size)}: the host peer saw {got['ops']} of the guest's "
                                     f"{b['ops']} frames")
        per_op(ctx, net_name(d, size), b, "frame")


# The control for the frame-rate targets: the host-direct loop again with
# one more thread busy all the time, as kvrun's polling vCPU is. On a host
# with fewer cores than busy threads that thread's share is taken from the
# writer and the peer; kvrun / this figure is what the device path itself
# gives up.
SPIN_NAME = " (host-direct beside a busy thread, as the polling vCPU)"


def host_net(ctx, tool):
    for d, size in NET_WORKLOADS:
        for spin in ([False, True] if size == "1500" else [False]):
            n = str(frames_for(size, ctx.quick))
            peer = Peer(tool, d, size)
            spinner = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if spin else None
            try:
                argv = [tool, "tap-write", TAP, size, n] if d == "tx" else [tool, "tap-read", TAP, size, n, "5"]
                r = sh(in_ns(argv), timeout=300)
            finally:
                if spinner:
                    spinner.kill()
                    spinner.wait()
                peer.stop()
            x = json.loads([line for line in r.stdout.splitlines() if line.startswith("{")][-1])
            if spin:
                ctx.results.add(S, net_name(d, size) + SPIN_NAME, "host-direct", x["ops"] / (x["ns"] / 1e9),
                                unit="frames/s", better="higher", title=net_name(d, size) + SPIN_NAME)
                continue
            net_record(ctx, "host-direct", d, size, x["ops"], x["bytes"], x["ns"] / 1e9)
            cpu_record(ctx, "host-direct", net_name(d, size), "frame", x["cpu_ns"], x["ops"])


def cpu_record(ctx, rt, subject, what, cpu_ns, ops, label=None):
    meta = {"unit": "ns", "better": "lower", "title": f"{subject}: host CPU per {what}"}
    if label:
        meta["label"] = label
    ctx.results.add(SC, f"{subject}: host CPU per {what}", rt, cpu_ns / max(1, ops), **meta)


def net_record(ctx, rt, d, size, ops, nbytes, seconds, label=None):
    meta = {"unit": "frames/s", "better": "higher", "title": net_name(d, size)}
    if label:
        meta["label"] = label
    ctx.results.add(S, net_name(d, size), rt, ops / seconds, **meta)
    if size == "64K":
        meta = dict(meta, unit="MB/s", title=net_name(d, size) + ", bytes")
        ctx.results.add(S, net_name(d, size) + ", bytes", rt, nbytes / seconds / 1e6, **meta)


def per_op(ctx, subject, d, what):
    """Exits, doorbells and interrupts per operation of a bench line. The
    END mark is an MMIO exit (and one emulated instruction) of its own
    inside the window, not the workload's (the BEGIN mark's came before the
    first sample)."""
    st, ops = d["stats"], max(1, d["ops"])
    vcpu, own = st["kvm_vcpu"], st["kvrun"]
    uexits = max(0, own["exit_io"] + own["exit_mmio"] + own["exit_other"] - 1)
    figs = [
        (f"userspace exits per 128 {what}s", 128 * uexits / ops, "exits"),
        (f"KVM exits per {what}", max(0, vcpu.get("exits", 0) - 1) / ops, "exits"),
        (f"emulated instructions per {what}", max(0, vcpu.get("insn_emulation", 0) - 1) / ops, "insns"),
        (f"doorbells per {what}", own["doorbell_signals"] / ops, "kicks"),
        (f"interrupts per {what}", own["irq_raised"] / ops, "irqs"),
    ]
    for fig, v, unit in figs:
        ctx.results.add(SE, f"{subject}: {fig}", "kvrun", v, unit=unit, better="lower", title=f"{subject}: {fig}",
                        label=LABEL)


# (mode, packet size, count): streams of bytes, round trips.
def vsock_workloads(quick):
    stream = "128M" if quick else "512M"
    return [("send", "64K", stream), ("recv", "64K", stream), ("rr", "64", "5000" if quick else "20000")]


VSOCK_PORT = 5000


def vsock_name(mode, size):
    return {"send": "vsock stream guest to host", "recv": "vsock stream host to guest",
            "rr": f"vsock round trip of {size} B"}[mode]


def vsock_record(ctx, rt, mode, size, ops, nbytes, seconds, label=None):
    meta = {"better": "higher", "title": vsock_name(mode, size)}
    if label:
        meta["label"] = label
    if mode == "rr":
        ctx.results.add(S, vsock_name(mode, size), rt, seconds / ops * 1e6,
                        **dict(meta, unit="us", better="lower"))
    else:
        ctx.results.add(S, vsock_name(mode, size), rt, nbytes / seconds / 1e6, **dict(meta, unit="MB/s"))


def kvrun_vsock(ctx, tool, tmp, datapath=True):
    """One kvrun boot per vsock workload, the peer listening where the
    device connects the guest's stream."""
    uds = os.path.join(tmp, "v.sock")
    for mode, size, count in vsock_workloads(ctx.quick):
        out = os.path.join(tmp, "bench-vsock.json")
        if os.path.exists(out):
            os.unlink(out)
        peer = subprocess.Popen([tool, "vsock-peer", f"{uds}_{VSOCK_PORT}", mode, size], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            if peer.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the vsock peer did not start: {peer.stderr.read()[-300:]}")
            r = subprocess.run([ctx.kvrun_bin, "boot", "--kernel", ctx.test_guest, "--test-device", "--console",
                                "--memory", "512M", "--vsock", uds, "--bench-out", out, "--cmdline",
                                f"test=bench vsock_port={VSOCK_PORT} bench_vsock={mode}:{size}:{count}",
                                "--timeout", "300"], capture_output=True, text=True, timeout=360)
        finally:
            peer.kill()
            peer.communicate()
        lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
        if r.returncode != 0 or len(lines) != 1 or lines[0]["errors"]:
            fails = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("not ok") or "kvrun boot:" in x]
            raise RuntimeError(f"kvrun boot (bench vsock {mode}) exit {r.returncode}: {' '.join(fails)[-300:]}")
        b = lines[0]
        seconds = b["cycles"] / (b["tsc_khz"] * 1e3)
        if datapath:
            vsock_record(ctx, "kvrun", mode, size, b["ops"], b["bytes"], seconds, LABEL)
        per_op(ctx, vsock_name(mode, size), b, "round trip" if mode == "rr" else "packet")


def host_vsock(ctx, tool):
    for mode, size, count in vsock_workloads(ctx.quick):
        r = sh([tool, "unix", mode, size, count], timeout=300)
        x = json.loads(r.stdout.strip().splitlines()[-1])
        vsock_record(ctx, "host-direct", mode, size, x["ops"], x["bytes"], x["ns"] / 1e9)


# QEMU microvm running the same guest (its PVH entry), virtio-mmio 1.x
# devices, no ACPI (so that it names them on the command line), its exit
# device where kvrun's test device has the exit port.
QEMU = ["qemu-system-x86_64", "-M", "microvm,rtc=off,acpi=off", "-enable-kvm",
        # This host's KVM refuses QEMU's write of MSR_IA32_ARCH_CAPABILITIES.
        "-cpu", "host,-arch-capabilities", "-m", "512M", "-nodefaults", "-no-user-config", "-nographic",
        "-serial", "stdio", "-device", "isa-debug-exit,iobase=0x6f4,iosize=4",
        "-global", "virtio-mmio.force-legacy=false"]


def qemu_lines(r):
    return [json.loads(x.split(" ", 1)[1]) for x in r.stdout.splitlines() if x.startswith("KVRUN-BENCH {")]


def qemu_run(ctx, argv, cmdline, want, what):
    """QEMU with the test guest; its KVRUN-BENCH lines (want of them). The
    guest ends through isa-debug-exit: status (code << 1) | 1."""
    r = subprocess.run(QEMU + argv + ["-kernel", ctx.test_guest, "-append", cmdline], capture_output=True,
                       text=True, timeout=900)
    lines = qemu_lines(r)
    if r.returncode != 1 or len(lines) != want or any(x["errors"] for x in lines):
        fails = [x for x in (r.stdout + r.stderr).splitlines() if x.startswith("not ok") or "qemu" in x]
        raise RuntimeError(f"qemu ({what}) exit {r.returncode}, {len(lines)} bench lines: {' '.join(fails)[-300:]}")
    return lines


def qemu_seconds(ctx, b):
    # QEMU does not scale the guest's TSC: the rate kvrun's guest has.
    return b["cycles"] / (ctx.tsc_khz * 1e3)


def qemu_blk(ctx, disk, kind, tmp):
    if kind == "cow":
        ov = os.path.join(tmp, "overlay.qcow2")
        sh(["qemu-img", "create", "-q", "-f", "qcow2", "-b", disk, "-F", "raw", ov])
        drive = f"id=d0,file={ov},format=qcow2,if=none"
    else:
        drive = f"id=d0,file={disk},format=raw,if=none"
    cmdline = f"test=bench bench_blk=read:1M:128:128,{spec(BLK_WORKLOADS, ctx.quick)}"
    lines = qemu_run(ctx, ["-drive", drive, "-device", "virtio-blk-device,drive=d0"], cmdline,
                     len(BLK_WORKLOADS) + 1, f"blk {kind}")
    for b, (m, bs, qd) in zip(lines[1:], BLK_WORKLOADS):
        record(ctx, "qemu-microvm", kind, m, bs, qd, b["ops"], b["bytes"], qemu_seconds(ctx, b), LABEL)
    if kind == "cow":
        os.unlink(ov)


def qemu_net(ctx, tool):
    netdev = ["-netdev", f"tap,id=n0,ifname={TAP},script=no,downscript=no,vhost=off",
              "-device", "virtio-net-device,netdev=n0,mac=02:6b:76:74:01:00"]
    for d, size in NET_WORKLOADS:
        peer = Peer(tool, d, size)
        try:
            r = subprocess.run(in_ns(QEMU[:1]) + QEMU[1:] + netdev +
                               ["-kernel", ctx.test_guest, "-append",
                                f"test=bench bench_net={d}:{size}:{frames_for(size, ctx.quick)}"],
                               capture_output=True, text=True, timeout=900)
        finally:
            peer.stop()
        lines = qemu_lines(r)
        if r.returncode != 1 or len(lines) != 1 or lines[0]["errors"]:
            raise RuntimeError(f"qemu (net {d} {size}) exit {r.returncode}: {r.stderr.strip()[-300:]}")
        b = lines[0]
        net_record(ctx, "qemu-microvm", d, size, b["ops"], b["bytes"], qemu_seconds(ctx, b), LABEL)


def guarded_qemu(ctx, side, fn, *args):
    """A failing QEMU run costs its own figures only (noted), as kvrun's do."""
    try:
        fn(*args)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        err = str(e).strip().replace("\n", " ")[-300:]
        log(f"{side} failed: {err}")
        ctx.results.notes.append(f"a {side} session failed: {err}")


def tsc_khz(ctx, tmp):
    """The guest's TSC rate, which kvrun reports with every bench line."""
    out = os.path.join(tmp, "tsc.json")
    disk = os.path.join(tmp, "tsc.img")
    with open(disk, "wb") as f:
        f.truncate(1 << 20)
    sh([ctx.kvrun_bin, "boot", "--kernel", ctx.test_guest, "--test-device", "--disk", disk, "--bench-out", out,
        "--cmdline", "test=bench bench_blk=read:4K:1:10", "--timeout", "60"], timeout=90)
    os.unlink(disk)
    return json.loads(open(out).readline())["tsc_khz"]


def qemu_reason():
    if not shutil.which("qemu-system-x86_64") or not shutil.which("qemu-img"):
        return "not available: qemu-system-x86_64 not installed (scripts/setup.sh --bench)"
    return None


VSOCK_QEMU_NA = ("not available: QEMU's virtio-vsock is vhost-vsock only, and this host has no "
                 "/dev/vhost-vsock")


def qemu_na(ctx, why, vsock_only=False):
    for mode, size, _ in vsock_workloads(ctx.quick):
        ctx.results.na(S, vsock_name(mode, size), "qemu-microvm", why, unit="us" if mode == "rr" else "MB/s",
                       better="lower" if mode == "rr" else "higher", title=vsock_name(mode, size))
    if vsock_only:
        return
    for kind in DISKS:
        for m, bs, qd in BLK_WORKLOADS:
            unit, _ = unit_of(bs)
            ctx.results.na(S, metric_name(kind, m, bs, qd), "qemu-microvm", why, unit=unit, better="higher",
                           title=metric_name(kind, m, bs, qd))
    for d, size in NET_WORKLOADS:
        ctx.results.na(S, net_name(d, size), "qemu-microvm", why, unit="frames/s", better="higher",
                       title=net_name(d, size))


def run(ctx):
    ctx.test_guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    if not os.path.exists(ctx.test_guest):
        raise RuntimeError(f"{ctx.test_guest} not built")
    tool = build_host_tool(ctx)
    disk = make_disk(ctx)
    tmp = os.path.join(ctx.work, "datapath")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    # The guest's writes land in the file: a copy for them, so the host
    # side and every run read the same data.
    wdisk = os.path.join(tmp, "disk.img")
    shutil.copyfile(disk, wdisk)
    sides = ["kvrun raw", "kvrun cow", "host-direct blk", "kvrun net", "host-direct net", "kvrun vsock",
             "host-direct vsock"]
    why_no_qemu = qemu_reason()
    if not why_no_qemu:
        ctx.tsc_khz = tsc_khz(ctx, tmp)
        sides += ["qemu raw", "qemu cow", "qemu net"]
    net_setup()
    try:
        for run_i in range(ctx.runs):
            for side in rotate(sides, run_i):
                log(f"datapath run {run_i + 1}/{ctx.runs}: {side}")
                if side == "host-direct blk":
                    host_blk(ctx, tool, wdisk)
                elif side == "host-direct net":
                    host_net(ctx, tool)
                elif side == "kvrun net":
                    ctx.guarded("kvrun", [f"{S}/{net_name(*NET_WORKLOADS[0])}"], kvrun_net, ctx, tool, tmp)
                elif side == "host-direct vsock":
                    host_vsock(ctx, tool)
                elif side == "qemu net":
                    guarded_qemu(ctx, side, qemu_net, ctx, tool)
                elif side.startswith("qemu"):
                    guarded_qemu(ctx, side, qemu_blk, ctx, wdisk, side.split()[1], tmp)
                elif side == "kvrun vsock":
                    ctx.guarded("kvrun", [f"{S}/{vsock_name('send', '64K')}"], kvrun_vsock, ctx, tool, tmp)
                else:
                    kind = side.split()[1]
                    ctx.guarded("kvrun", [f"{S}/{metric_name(kind, *BLK_WORKLOADS[0])}"], kvrun_blk, ctx,
                                wdisk, kind, tmp)
    finally:
        net_teardown()
    qemu_na(ctx, why_no_qemu or VSOCK_QEMU_NA, vsock_only=not why_no_qemu)
    for kind in DISKS:
        for (m, bs, qd), want in TARGETS.items():
            ctx.results.metric(S, metric_name(kind, m, bs, qd))["target"] = {"vs": "host-direct", "min": want}
    for (d, size), want in NET_TARGETS.items():
        ctx.results.metric(S, net_name(d, size))["target"] = {"vs": "host-direct", "min": want}
    shutil.rmtree(tmp, ignore_errors=True)


def run_exits(ctx):
    """The exits suite without datapath in the run: kvrun's block runs for
    their cost per request."""
    ctx.test_guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    disk = make_disk(ctx)
    tmp = os.path.join(ctx.work, "datapath")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    wdisk = os.path.join(tmp, "disk.img")
    shutil.copyfile(disk, wdisk)
    tool = build_host_tool(ctx)
    net_setup()
    try:
        for run_i in range(ctx.runs):
            for side in rotate(list(DISKS) + ["net", "vsock"], run_i):
                log(f"exits run {run_i + 1}/{ctx.runs}: kvrun {side}")
                if side == "net":
                    ctx.guarded("kvrun", [f"{SE}/net"], kvrun_net, ctx, tool, tmp, False)
                elif side == "vsock":
                    ctx.guarded("kvrun", [f"{SE}/vsock"], kvrun_vsock, ctx, tool, tmp, False)
                else:
                    ctx.guarded("kvrun", [f"{SE}/blk {side}"], kvrun_blk, ctx, wdisk, side, tmp, False)
    finally:
        net_teardown()
    shutil.rmtree(tmp, ignore_errors=True)
