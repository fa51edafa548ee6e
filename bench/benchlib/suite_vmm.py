# SPDX-License-Identifier: Apache-2.0
"""vmm: kvrun's VMM against QEMU microvm (setup to first KVM_RUN, monitor
memory: bench/vmm-setup.py), kvrun's boot breakdown (`kvrun boot
--timings`) on the freestanding test guest and on Linux, and the root disk
image build kvrun's create runs for a bundle."""
import json
import os
import re
import shutil
import subprocess
import time

from . import rootfs
from .runtimes import write_bundle
from .suite_start import rotate
from .util import du_bytes_fallback, log, sh

S = "vmm"


def kernel_files(ctx):
    d = ctx.kernel_dir
    files = {k: os.path.join(d, f) for k, f in (("vmlinux", "vmlinux"), ("bzimage", "bzImage"),
                                                  ("cmdline", "cmdline.txt"), ("mkinitramfs", "mkinitramfs.sh"))}
    missing = [f for f in files.values() if not os.path.exists(f)]
    return files, missing


def initramfs(ctx, files):
    out = os.path.join(ctx.cache, "marker-initramfs.cpio")
    if not os.path.exists(out):
        sh(["sh", files["mkinitramfs"], out + ".tmp"])
        os.rename(out + ".tmp", out)
    return out


def vmm_setup(ctx):
    """bench/vmm-setup.py, results folded in as runtimes kvrun and qemu-microvm."""
    files, missing = kernel_files(ctx)
    names = {"kvrun-vmlinux": "kvrun", "kvrun-bzimage": "kvrun (bzImage)", "qemu-microvm-bzimage": "qemu-microvm"}
    metrics = [("setup_us", "setup_ms", "ms", 1 / 1000, "VMM setup: exec to first KVM_RUN (256 MiB, 1 vCPU)"),
               ("monitor_rss_kib", "monitor_rss", "MiB", 1 / 1024, "VMM monitor RSS, guest RAM excluded")]
    reason = None
    if missing:
        reason = f"guest kernel files missing: {', '.join(missing)}"
    elif not shutil.which("qemu-system-x86_64"):
        reason = "qemu-system-x86_64 not installed (scripts/setup.sh --bench)"
    if not reason:
        out = os.path.join(ctx.out, "vmm")
        os.makedirs(out, exist_ok=True)
        r = subprocess.run([ctx.python, os.path.join(ctx.src, "bench", "vmm-setup.py"), "--kvrun", ctx.kvrun_bin,
                            "--shim", ctx.shim, "--vmlinux", files["vmlinux"], "--bzimage", files["bzimage"],
                            "--initrd", initramfs(ctx, files), "--cmdline", open(files["cmdline"]).read().strip(),
                            "--runs", str(ctx.runs), "--out", out], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            reason = f"bench/vmm-setup.py failed: {(r.stderr or r.stdout).strip()[-300:]}"
    for key, metric, unit, scale, title in metrics:
        for vmm_name, rt in names.items():
            if reason:
                ctx.results.na(S, metric, rt, reason, unit=unit, better="lower", title=title)
                continue
            data = json.load(open(os.path.join(out, "vmm-setup.json")))
            for smp in data["samples"].get(vmm_name, []):
                ctx.results.add(S, metric, rt, smp[key] * scale, unit=unit, better="lower", title=title)


def boot_timings(ctx, args, timeout):
    """Run `kvrun boot ... --timings`; returns (wall s, timings dict, stderr)."""
    t0 = time.monotonic()
    r = subprocess.run([ctx.kvrun_bin, "boot", "--timings"] + args, capture_output=True, text=True,
                       timeout=timeout)
    wall = time.monotonic() - t0
    tm = None
    for line in r.stderr.splitlines():
        if line.startswith("{") and "setup_us" in line:
            tm = json.loads(line)
    if tm is None:
        raise RuntimeError(f"kvrun boot gave no timings (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return wall, tm, r.stderr


def test_guest(ctx):
    guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    label = "guest CPL0 code emulated on this host" if ctx.host["emulating"] else None
    meta = dict(unit="ms", better="lower", label=label)
    ms = [("setup_us", "tg_setup", "test guest: VMM setup (process start to first KVM_RUN)"),
          ("boot_marker_us", "tg_marker", "test guest: process start to guest's boot marker"),
          ("total_us", "tg_total", "test guest: process start to guest exit")]
    if not os.path.exists(guest):
        for _, m, title in ms:
            ctx.results.na(S, m, "kvrun", f"{guest} not built", title=title, **meta)
        return
    for i in range(ctx.runs):
        _, tm, _ = boot_timings(ctx, ["--kernel", guest, "--test-device", "--memory", "128M", "--cmdline",
                                      "test=basic mem_expect=128M", "--timeout", "60"], 120)
        for key, m, title in ms:
            if tm.get(key) is not None:
                ctx.results.add(S, m, "kvrun", tm[key] / 1000, title=title, **meta)
        ctx.results.add(S, "tg_monitor_rss", "kvrun", tm["monitor_rss_kib"] / 1024, unit="MiB", better="lower",
                        title="test guest: monitor RSS (guest RAM excluded)")


def snapshot_restore(ctx):
    """Snapshot of the test guest (256 MiB) and restore of it in a fresh
    `kvrun boot --restore` process: process start to the restored guest's
    first KVM_RUN, with the guest-memory checksum checked and trusted.
    (runc's and crun's container checkpoint/restore is in the start suite.)"""
    guest = os.path.join(ctx.build, "tests", "guest", "kvrun-test-guest")
    meta = dict(unit="ms", better="lower")
    titles = {"snap_save": "test guest 256 MiB: snapshot (pause, save, stop)",
              "snap_restore_checked": "test guest 256 MiB: restore to first KVM_RUN (RAM checksum checked)",
              "snap_restore_trusted": "test guest 256 MiB: restore to first KVM_RUN (RAM trusted)"}
    path = os.path.join(ctx.work, "vm.snap")
    try:
        if not os.path.exists(guest):
            raise RuntimeError(f"{guest} not built")
        for i in range(ctx.runs):
            _, tm, _ = boot_timings(ctx, ["--kernel", guest, "--test-device", "--memory", "256M", "--cmdline",
                                          "test=snapshot mem_expect=256M", "--snapshot-on-port", path,
                                          "--snapshot-stop", "--timeout", "120"], 180)
            ctx.results.add(S, "snap_save", "kvrun", tm["snapshot_us"] / 1000, title=titles["snap_save"], **meta)
            for kind, extra in (("checked", []), ("trusted", ["--restore-trust-memory"])):
                _, tm, _ = boot_timings(ctx, ["--restore", path, "--test-device", "--timeout", "120"] + extra, 180)
                ctx.results.add(S, f"snap_restore_{kind}", "kvrun", tm["restore_us"] / 1000,
                                title=titles[f"snap_restore_{kind}"], **meta)
    except (RuntimeError, KeyError, subprocess.TimeoutExpired) as e:
        for m, title in titles.items():
            ctx.results.na(S, m, "kvrun", f"not available: kvrun boot snapshot/restore: {e}", title=title, **meta)
    finally:
        if os.path.exists(path):
            os.unlink(path)


def linux_boot(ctx):
    """Linux to /init and reset, kvrun (with its breakdown) and QEMU microvm."""
    files, missing = kernel_files(ctx)
    titles = {"lx_setup": "Linux boot: VMM setup", "lx_kernel": "Linux boot: kernel to /init (guest uptime)",
              "lx_total": "Linux boot: exec to VM end after /init"}
    meta = dict(unit="ms", better="lower")
    reason = None
    if missing:
        reason = f"guest kernel files missing: {', '.join(missing)}"
    elif ctx.host["emulating"] and not ctx.force_emulated:
        reason = ctx.EMULATED_REASON
    if reason:
        for m, title in titles.items():
            for rt in ("kvrun", "qemu-microvm"):
                if m == "lx_total" or rt == "kvrun":
                    ctx.results.na(S, m, rt, reason, title=title, **meta)
        return
    label = "emulator-bound (guest kernel emulated)" if ctx.host["emulating"] else None
    meta["label"] = label
    initrd = initramfs(ctx, files)
    cmdline = open(files["cmdline"]).read().strip()
    for i in range(ctx.runs):
        for which in rotate(["kvrun", "qemu-microvm"], i):
            if which == "kvrun":
                wall, tm, err = boot_timings(ctx, ["--kernel", files["vmlinux"], "--initrd", initrd, "--cmdline",
                                                   cmdline, "--console", "--timeout", "600"], 700)
                ctx.results.add(S, "lx_setup", "kvrun", tm["setup_us"] / 1000, title=titles["lx_setup"], **meta)
                m = re.search(r"INIT-MARKER uptime=([\d.]+)", err)
                if m:
                    ctx.results.add(S, "lx_kernel", "kvrun", float(m.group(1)) * 1000, title=titles["lx_kernel"],
                                    **meta)
                ctx.results.add(S, "lx_total", "kvrun", wall * 1000, title=titles["lx_total"], **meta)
            else:
                t0 = time.monotonic()
                subprocess.run(["qemu-system-x86_64", "-M", "microvm", "-enable-kvm", "-cpu", "host", "-m", "256M",
                                "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
                                "-serial", "none", "-monitor", "none", "-kernel", files["bzimage"], "-initrd", initrd,
                                "-append", cmdline], capture_output=True, timeout=700)
                ctx.results.add(S, "lx_total", "qemu-microvm", (time.monotonic() - t0) * 1000,
                                title=titles["lx_total"], **meta)


def distro_boot(ctx):
    """`kvrun run` of /bin/true with kvrun's own kernel against Debian's
    cloud kernel on the distro path (modules in the initramfs, ACPI device
    description): wall time, which on native KVM is mostly boot to init."""
    import importlib.util
    title = "Linux boot: `kvrun run` of /bin/true, kvrun's kernel vs Debian's cloud kernel (distro path)"
    meta = dict(unit="ms", better="lower", title=title)
    names = ("kvrun (kvrun kernel)", "kvrun (Debian cloud kernel)")
    own = "/usr/local/share/kvrun/kernel/bzImage"
    reason = None
    if ctx.host["emulating"] and not ctx.force_emulated:
        reason = (ctx.EMULATED_REASON + "; a stock distro kernel also lacks the pvmhost=1 workarounds and cannot "
                  "run user space there (docs/kernels.md)")
    elif not os.path.exists(own):
        reason = f"not available: kvrun's kernel not installed ({own}; scripts/setup.sh --kernel)"
    if not reason:
        spec = importlib.util.spec_from_file_location(
            "distro_kernel", os.path.join(ctx.src, "tests", "integration", "distro_kernel.py"))
        dk = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(dk)
        try:
            distro = dk.fetch()[0]
        except dk.Unavailable as e:
            reason = f"not available: Debian cloud kernel: {e} (scripts/setup.sh --distro-kernel)"
    if reason:
        for rt in names:
            ctx.results.na(S, "lx_distro_run", rt, reason, **meta)
        return
    if ctx.host["emulating"]:
        meta["label"] = "emulator-bound (guest kernel emulated)"
    kv = ctx.rt["kvrun"]
    root = rootfs.ensure(ctx.cache, "busybox", ctx.src)
    b = write_bundle(os.path.join(ctx.work, "b-distro"), root, ["/bin/true"], ctx.limits)
    failed = set()
    for i in range(ctx.runs):
        for rt in rotate(list(names), i):
            if rt in failed:
                continue
            kernel = own if rt == names[0] else distro
            cid = f"distro-{os.getpid()}-{i}"
            t0 = time.monotonic()
            r = subprocess.run([kv.binary, "--root", kv.state_root, "--kernel", kernel, "run", "-b", b, cid],
                               capture_output=True, text=True, env=kv.env, stdin=subprocess.DEVNULL, timeout=1500)
            wall = time.monotonic() - t0
            kv.remove(cid)
            if r.returncode != 0:
                failed.add(rt)
                ctx.results.na(S, "lx_distro_run", rt, f"not available: `kvrun run` with {kernel} failed: "
                               f"{r.stderr.strip()[-200:]}", **meta)
                continue
            ctx.results.add(S, "lx_distro_run", rt, wall * 1000, **meta)


def image_prep(ctx):
    """mke2fs -d of each rootfs, as kvrun's create builds the root disk."""
    title = "root disk image build alone (mke2fs -d as kvrun create runs it; runc/crun use the directory)"
    for name in ("busybox", "nginx", "postgres"):
        root = rootfs.ensure(ctx.cache, name, ctx.src)
        size_mib = du_bytes_fallback(root) // (1 << 20) * 2 + 16 + 256
        img = os.path.join(ctx.work, "image.img")
        for i in range(ctx.runs):
            if os.path.exists(img):
                os.unlink(img)
            sh(["truncate", "-s", f"{size_mib}M", img])
            t0 = time.monotonic()
            sh(["mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard",
                "-d", root, img])
            ctx.results.add(S, f"image_{name}", "kvrun", (time.monotonic() - t0) * 1000, unit="ms",
                            better="lower", title=f"{title}: {name} ({size_mib} MiB image)")
        os.unlink(img)


def run(ctx):
    log("vmm: kvrun vs QEMU microvm setup and memory; test guest; image build")
    vmm_setup(ctx)
    test_guest(ctx)
    snapshot_restore(ctx)
    image_prep(ctx)
    linux_boot(ctx)
    distro_boot(ctx)
