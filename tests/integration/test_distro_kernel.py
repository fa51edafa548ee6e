#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The distro-kernel path of `kvrun create` without booting a guest: Debian's
cloud kernel (linux-image-cloud-amd64's versioned package, unpacked into a
cache by distro_kernel.py, never installed) chosen with --kernel or the
io.kvrun.kernel annotation. Checks, from kvrun's debug log and the
initramfs it built:

- the release is read from the bzImage header (compared with an
  independent reading here) and the module tree found from it;
- the initramfs holds the modules kvrun needs, their dependencies included,
  in dependency order (checked against depmod's text modules.dep), byte
  for byte, with the load-order list guest-init follows; a second create
  reuses the cached image;
- the VM is assembled with ACPI device description (no virtio_mmio.device=
  on the command line) for the modular kernel, and not with
  io.kvrun.kernel.acpi=false or for kvrun's own built-in kernel.

Each create is cut short: $KVRUN_BOOT_TIMEOUT=1 ends it one second after the
VM started (or at VM creation without /dev/kvm; the VM assembly checks then
skip). Needs root (network namespace, state); skips otherwise, and when the
kernel package is neither cached nor downloadable."""
import json
import os
import re
import subprocess
import sys
import tempfile

import distro_kernel
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
KVRUN_KERNEL_DIR = "/usr/local/share/kvrun/kernel"
WANTED = ["virtio_mmio", "virtio_blk", "virtio_net", "vmw_vsock_virtio_transport", "ext4", "erofs", "overlay"]


def read_cpio(path):
    """[(name, mode, data)] of a newc archive, in archive order."""
    out = []
    with open(path, "rb") as f:
        buf = f.read()
    off = 0
    while off + 110 <= len(buf):
        h = buf[off:off + 110]
        if h[:6] != b"070701":
            raise ValueError(f"bad cpio magic at {off}")
        fields = [int(h[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = buf[off + 110:off + 110 + namesize - 1].decode()
        off = (off + 110 + namesize + 3) & ~3
        data = buf[off:off + size]
        off = (off + size + 3) & ~3
        if name == "TRAILER!!!":
            break
        out.append((name, mode, data))
    return out


def make_bundle(tmp, annotations=None):
    b = tempfile.mkdtemp(dir=tmp, prefix="bundle-")
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    if annotations:
        spec["annotations"] = annotations
    with open(path, "w") as f:
        json.dump(spec, f)
    return b


class Creator:
    def __init__(self, tmp):
        self.tmp, self.n = tmp, 0
        self.root = os.path.join(tmp, "state")
        self.env = dict(os.environ, KVRUN_CONFIG=os.path.join(tmp, "no-config.json"),
                        KVRUN_CACHE_DIR=os.path.join(tmp, "cache"), KVRUN_BOOT_TIMEOUT="1")
        self.env.pop("KVRUN_KERNEL", None)

    def create(self, flags, annotations=None):
        """Run a create that is cut short; return (debug log text, result)."""
        self.n += 1
        log = os.path.join(self.tmp, f"create-{self.n}.log")
        b = make_bundle(self.tmp, annotations)
        cid = f"distro{self.n}"
        p = subprocess.run([KVRUN, "--root", self.root, "--debug", "--log", log] + flags +
                           ["create", "--bundle", b, cid], capture_output=True, text=True, env=self.env,
                           stdin=subprocess.DEVNULL, timeout=120)
        # It failed on purpose; make sure nothing is left either way.
        subprocess.run([KVRUN, "--root", self.root, "delete", "--force", cid], capture_output=True,
                       env=self.env, timeout=60)
        with open(log) as f:
            return f.read(), p


def plan_line(log):
    m = re.search(r'msg="kernel (\S+) \(from ([^)]*)\), release (\S+): ([^"]*), devices described by ([^"]*)"', log)
    return m.groups() if m else None


def initramfs_line(log):
    m = re.search(r'msg="initramfs (\S+) \((built|cached)\), (\d+) module\(s\)"', log)
    return (m.group(1), m.group(2), int(m.group(3))) if m else None


def sandbox_line(log):
    m = re.search(r'msg="kernel \S+, initrd \S+, \d+ vCPU, \d+ MiB, ([^,]*), command line: ([^"]*)"', log)
    return m.groups() if m else None


def check_initramfs(t, path, moddir):
    entries = read_cpio(path)
    names = [e[0] for e in entries]
    files = {e[0]: e[2] for e in entries}
    t.ok("init" in names, "the initramfs has /init")
    order = files.get("lib/modules/kvrun/load-order", b"").decode().split()
    t.ok(len(order) > 0, f"load-order lists {len(order)} modules", "\n".join(names))
    need, deps = distro_kernel.module_closure(moddir, WANTED)
    got = [distro_kernel.modname(n) for n in order]
    t.eq(sorted(got), sorted(need), "exactly the wanted modules and their dependencies (modules.dep)")
    t.eq(len(got), len(set(got)), "each module once")
    bad = [f"{m} before its dependency {d}" for i, m in enumerate(got) for d in deps.get(m, [])
           if d not in got[:i]]
    t.ok(not bad, "every module after all its dependencies (modules.dep)", "\n".join(bad))
    cpio_mods = [n[len("lib/modules/kvrun/"):] for n in names
                 if n.startswith("lib/modules/kvrun/") and n.endswith(".ko")]
    t.eq(cpio_mods, order, "the archive stores the modules in load order")
    paths = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            p = line.split(":")[0]
            paths[os.path.basename(p)] = os.path.join(moddir, p)
    same = []
    for m in order:
        with open(paths[m], "rb") as f:
            same.append(f.read() == files["lib/modules/kvrun/" + m])
    t.ok(all(same), "each module file is the tree's file, byte for byte")
    t.diag("load order: " + " ".join(got))


def main():
    t = Tap()
    if os.geteuid() != 0:
        t.skip_all("needs root (network namespace and state of a container)")
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"{KVRUN} not built")
    try:
        vmlinuz, moddir, release = distro_kernel.fetch(log=t.diag)
    except distro_kernel.Unavailable as e:
        t.skip_all(f"Debian distro kernel not available: {e}")
    have_kvm = os.path.exists("/dev/kvm")
    t.diag(f"kernel {vmlinuz}, modules {moddir}")
    t.eq(distro_kernel.bzimage_release(vmlinuz), release, "bzImage header release matches the package's")

    with tempfile.TemporaryDirectory(prefix="kvrun-distro-") as tmp:
        c = Creator(tmp)
        log, p = c.create(["--kernel", vmlinuz])
        t.ok(p.returncode != 0, "the create is cut short (boot timeout 1 s or no KVM)")
        pl = plan_line(log)
        t.ok(pl is not None, "kvrun logs its kernel plan", log[-3000:])
        if pl:
            t.eq(pl[1], "--kernel", "the kernel came from --kernel")
            t.eq(pl[2], release, "kvrun read the release from the bzImage header")
            t.eq(pl[3], f"modular, module tree {moddir}", "module tree found beside the kernel")
            t.eq(pl[4], "ACPI tables", "modular kernel: devices described by ACPI")
        ir = initramfs_line(log)
        t.ok(ir is not None and ir[1] == "built", "initramfs built", log[-2000:])
        if ir:
            check_initramfs(t, ir[0], moddir)
            t.eq(ir[2], len(distro_kernel.module_closure(moddir, WANTED)[0]), "module count in the log")
        sl = sandbox_line(log)
        if have_kvm:
            t.ok(sl is not None, "the VM was assembled", log[-2000:])
            if sl:
                t.eq(sl[0], "ACPI tables describe the devices", "VM assembled with ACPI tables")
                t.ok("virtio_mmio.device=" not in sl[1], "no virtio-mmio devices on the command line", sl[1])
        else:
            t.ok(True, "VM assembly # SKIP no /dev/kvm")

        # The same kernel again, through the annotation: the cached image.
        log, p = c.create([], {"io.kvrun.kernel": vmlinuz})
        ir2 = initramfs_line(log)
        t.ok(ir2 is not None and ir is not None and ir2[0] == ir[0] and ir2[1] == "cached",
             "a second create reuses the cached initramfs (same content hash)", f"{ir} / {ir2}")
        pl = plan_line(log)
        t.ok(pl is not None and pl[1] == "annotation io.kvrun.kernel", "the kernel came from the annotation",
             str(pl))

        # ACPI off by annotation: the command line describes the devices
        # (such a kernel then finds none: virtio_mmio has no device= here).
        log, p = c.create(["--kernel", vmlinuz], {"io.kvrun.kernel.acpi": "false"})
        pl = plan_line(log)
        t.ok(pl is not None and pl[4] == "the command line", "io.kvrun.kernel.acpi=false: command line", str(pl))
        sl = sandbox_line(log)
        if have_kvm and sl:
            t.ok("virtio_mmio.device=" in sl[1] and sl[0] == "devices on the command line",
                 "VM assembled with command-line devices", str(sl))
        # No modules by annotation: an initramfs with guest-init only.
        log, p = c.create(["--kernel", vmlinuz], {"io.kvrun.kernel.modules": "none"})
        pl, ir = plan_line(log), initramfs_line(log)
        t.ok(pl is not None and pl[3].startswith("no module tree") and pl[4] == "the command line",
             "io.kvrun.kernel.modules=none: built-in path", str(pl))
        t.ok(ir is not None and ir[2] == 0, "no modules packed", str(ir))

        own = os.path.join(KVRUN_KERNEL_DIR, "bzImage")
        if os.path.exists(own):
            log, p = c.create(["--kernel", own])
            pl = plan_line(log)
            t.ok(pl is not None and pl[2] == distro_kernel.bzimage_release(own),
                 "kvrun's kernel: release from its bzImage header", str(pl))
            t.ok(pl is not None and pl[3].startswith("no module tree") and pl[4] == "the command line",
                 "kvrun's kernel (everything built in): today's command-line path", str(pl))
        else:
            t.ok(True, f"kvrun's own kernel # SKIP {own} not installed (scripts/setup.sh --kernel)")
    t.done()


if __name__ == "__main__":
    sys.exit(main())
