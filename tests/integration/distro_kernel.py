#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Debian distro kernel (linux-image-cloud-amd64's versioned package)
unpacked into a cache directory, without installing it on the host:
`apt-get download`, `dpkg-deb -x`, `depmod -b`. Used by the tests of the
distro-kernel path (docs/kernels.md) and by `scripts/setup.sh
--distro-kernel`, which fetches it ahead of the test run.

    python3 tests/integration/distro_kernel.py [--dir DIR]   # fetch, print paths

The cache is $KVRUN_DISTRO_KERNEL_DIR, else /var/cache/kvrun/distro-kernel
(root) or ~/.cache/kvrun/distro-kernel. Layout: <dir>/<package>/root/boot/
vmlinuz-<release>, <dir>/<package>/root/lib/modules/<release>/ (indexed)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

META = "linux-image-cloud-amd64"


class Unavailable(Exception):
    """The kernel is not cached and cannot be fetched (the reason says why)."""


def cache_dir():
    d = os.environ.get("KVRUN_DISTRO_KERNEL_DIR")
    if d:
        return d
    if os.geteuid() == 0:
        return "/var/cache/kvrun/distro-kernel"
    return os.path.join(os.path.expanduser("~"), ".cache", "kvrun", "distro-kernel")


def bzimage_release(path):
    """The release string the bzImage setup header's kernel_version points at
    (boot protocol: "HdrS" at 0x202, offset from 0x200 at 0x20e)."""
    with open(path, "rb") as f:
        head = f.read(0x10000)
    if head[0x202:0x206] != b"HdrS":
        raise ValueError(f"{path}: not a bzImage")
    off = int.from_bytes(head[0x20E:0x210], "little")
    s = head[0x200 + off:0x200 + off + 256]
    return s.split(b"\0")[0].split(b" ")[0].decode()


def versioned_package():
    """linux-image-cloud-amd64's dependency, e.g. linux-image-6.1.0-57-cloud-amd64."""
    out = subprocess.run(["apt-cache", "depends", META], capture_output=True, text=True)
    m = re.search(r"Depends:\s*(linux-image-\S+-cloud-amd64)", out.stdout)
    if out.returncode != 0 or not m:
        raise Unavailable(f"apt-cache depends {META} found no versioned package "
                          f"({(out.stderr or out.stdout).strip()[:200]})")
    return m.group(1)


def find(base):
    """(vmlinuz, module dir, release) of an unpacked package root, or None."""
    for vmlinuz in sorted(glob.glob(os.path.join(base, "root", "boot", "vmlinuz-*"))):
        release = os.path.basename(vmlinuz)[len("vmlinuz-"):]
        moddir = os.path.join(base, "root", "lib", "modules", release)
        if os.path.exists(os.path.join(moddir, "modules.dep.bin")) and os.path.exists(os.path.join(base, "done")):
            return vmlinuz, moddir, release
    return None


def fetch(d=None, log=lambda s: None):
    """Return (vmlinuz, moddir, release), fetching into the cache when missing.
    Raises Unavailable when it is not cached and apt cannot get it."""
    d = d or cache_dir()
    for base in sorted(glob.glob(os.path.join(d, "linux-image-*"))):
        got = find(base)
        if got:
            return got
    for tool in ("apt-get", "apt-cache", "dpkg-deb", "depmod"):
        if not shutil.which(tool) and not os.path.exists(f"/sbin/{tool}"):
            raise Unavailable(f"{tool} not installed")
    pkg = versioned_package()
    base = os.path.join(d, pkg)
    os.makedirs(d, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=d) as work:
        log(f"apt-get download {pkg}")
        out = subprocess.run(["apt-get", "download", "-q", pkg], cwd=work, capture_output=True, text=True)
        debs = glob.glob(os.path.join(work, "*.deb"))
        if out.returncode != 0 or not debs:
            raise Unavailable(f"apt-get download {pkg} failed: {(out.stderr or out.stdout).strip()[-300:]}")
        root = os.path.join(work, "root")
        subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
        vmlinuz = glob.glob(os.path.join(root, "boot", "vmlinuz-*"))
        if not vmlinuz:
            raise Unavailable(f"{os.path.basename(debs[0])} has no /boot/vmlinuz-*")
        release = os.path.basename(vmlinuz[0])[len("vmlinuz-"):]
        # The package ships no indexes: its postinst runs depmod.
        depmod = shutil.which("depmod") or "/sbin/depmod"
        subprocess.run([depmod, "-b", root, release], check=True)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        os.rename(root, os.path.join(base, "root"))
        shutil.move(debs[0], base)
    with open(os.path.join(base, "done"), "w") as f:
        f.write(pkg + "\n")
    got = find(base)
    if not got:
        raise Unavailable(f"{base}: unpacked, but no kernel with an indexed module tree")
    return got


def module_closure(moddir, names):
    """From depmod's text modules.dep: the module names (dashes as
    underscores) that loading names needs, and each module's dependencies.
    Names found only in modules.builtin are left out."""
    deps = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[modname(path)] = [modname(p) for p in rest.split()]
    need = set()
    for n in names:
        if n in deps:
            need.add(n)
            need.update(deps[n])
    return need, deps


def modname(path):
    b = os.path.basename(path)
    return b.split(".ko")[0].replace("-", "_")


def main():
    d = None
    if len(sys.argv) == 3 and sys.argv[1] == "--dir":
        d = sys.argv[2]
    elif len(sys.argv) != 1:
        print("usage: distro_kernel.py [--dir DIR]", file=sys.stderr)
        return 2
    try:
        vmlinuz, moddir, release = fetch(d, log=lambda s: print(s, file=sys.stderr))
    except Unavailable as e:
        print(f"distro kernel not available: {e}", file=sys.stderr)
        return 1
    print(f"kernel {vmlinuz}\nmodules {moddir}\nrelease {release}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
