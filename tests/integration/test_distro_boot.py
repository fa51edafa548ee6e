#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A container booted with Debian's stock cloud kernel (the distro-kernel
path: its modules in kvrun's initramfs, devices described by ACPI). One
`kvrun run` of a busybox bundle whose process reports what the guest saw:
the kernel release, the modules loaded (from the initramfs, by guest-init),
the root disk and the vsock channel (the run itself only works when both
were found: the root is the virtio disk, and the process's stdio goes over
vsock).

For a host with native KVM (vmx or svm in /proc/cpuinfo): where guest kernel
code is emulated (nested KVM without them, the development host) a stock
kernel lacks the pvmhost=1 workarounds kvrun's kernel carries and cannot
run user space, so the test skips there, saying so. docs/kernels.md has
what a boot attempt on such a host showed. $KVRUN_TEST_DISTRO_BOOT=1 runs
it anyway (a bounded trial: $KVRUN_BOOT_TIMEOUT applies)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import distro_kernel
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
SCRIPT = r"""
echo "release:$(uname -r)"
echo "modules:$(cut -d' ' -f1 /proc/modules | sort | tr '\n' ' ')"
echo "root:$(grep ' / ' /proc/mounts | head -1)"
echo "vda:$(cat /sys/block/vda/size 2>/dev/null)"
echo "acpi:$(ls /sys/bus/acpi/devices 2>/dev/null | grep -c LNRO0005)"
echo done
"""


def native_kvm():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return " vmx" in line or " svm" in line
    return False


def make_bundle(tmp):
    b = os.path.join(tmp, "bundle")
    rootfs = os.path.join(b, "rootfs")
    for d in ["bin", "proc", "sys", "dev", "tmp"]:
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in ["sh", "echo", "cat", "cut", "sort", "tr", "grep", "head", "ls", "uname"]:
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/sh", "-c", SCRIPT]
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


def main():
    t = Tap()
    if os.geteuid() != 0:
        t.skip_all("needs root")
    if not os.path.exists("/dev/kvm"):
        t.skip_all("no /dev/kvm")
    if not native_kvm() and os.environ.get("KVRUN_TEST_DISTRO_BOOT") != "1":
        t.skip_all("guest kernel code is emulated on this host (KVM without vmx/svm in /proc/cpuinfo): a stock "
                   "distro kernel lacks the pvmhost=1 workarounds and cannot boot here; needs a native KVM host "
                   "(docs/kernels.md; KVRUN_TEST_DISTRO_BOOT=1 forces a bounded trial)")
    try:
        vmlinuz, moddir, release = distro_kernel.fetch(log=t.diag)
    except distro_kernel.Unavailable as e:
        t.skip_all(f"Debian distro kernel not available: {e}")
    with tempfile.TemporaryDirectory(prefix="kvrun-distro-boot-") as tmp:
        b = make_bundle(tmp)
        env = dict(os.environ, KVRUN_CONFIG=os.path.join(tmp, "no-config.json"),
                   KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_CONSOLE=os.path.join(tmp, "console.log"))
        env.pop("KVRUN_KERNEL", None)
        root = os.path.join(tmp, "state")
        p = subprocess.run([KVRUN, "--root", root, "--debug", "--log", os.path.join(tmp, "log.txt"),
                            "--kernel", vmlinuz, "run", "--bundle", b, "distro-boot"],
                           capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=1500)
        out = dict(line.split(":", 1) for line in p.stdout.splitlines() if ":" in line)
        t.eq(p.returncode, 0, "kvrun run with the distro kernel exits 0")
        if p.returncode != 0:
            for name in ("log.txt", "console.log"):
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        t.diag(f"--- {name} (tail)\n" + f.read()[-3000:])
            t.diag(p.stderr[-2000:])
        t.eq(out.get("release"), release, "the guest runs the distro kernel")
        mods = set(out.get("modules", "").split())
        for m in ("virtio_mmio", "virtio_blk", "vmw_vsock_virtio_transport", "overlay", "erofs"):
            t.ok(m in mods, f"module {m} loaded by guest-init", out.get("modules"))
        t.ok(out.get("vda", "") not in ("", "0"), "the root disk is /dev/vda", out.get("vda"))
        t.ok(out.get("acpi", "0") not in ("", "0"), "devices came from the ACPI DSDT (LNRO0005)", out.get("acpi"))
        t.ok("done" in p.stdout, "the process's output came back over vsock")
        subprocess.run([KVRUN, "--root", root, "delete", "--force", "distro-boot"], capture_output=True, env=env)
    t.done()


if __name__ == "__main__":
    sys.exit(main())
