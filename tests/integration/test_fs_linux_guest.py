#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Linux's own virtio-fs driver against kvrun's device: a Linux guest
(`kvrun boot --share`, a busybox initramfs) mounts the shared directory
with `mount -t virtiofs`, reads the host's files (a 3 MiB one through
large READs), writes, makes a directory, a symlink, a device node and a
set-user-ID file, lists, renames and removes, and reports what it saw.
The host then checks the share: the guest's data, its device node and
set-ID file as plain mode-0 files with the override xattr, nothing left of
what was removed, the canary beside the share untouched.

Slow suite: a Linux boot takes about two minutes where the guest kernel
is emulated. Needs /dev/kvm, a guest kernel with CONFIG_VIRTIO_FS and a
static busybox; skips loudly without them.
"""
import hashlib
import os
import re
import stat
import subprocess
import tempfile

import guestlib
from taplib import Tap

TAG = "kvrun-share"
INIT = r"""#!/bin/sh
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mkdir -p /mnt
say() { echo "FS-GUEST $*"; }
if $bb mount -t virtiofs %(tag)s /mnt; then say mount ok; else say mount failed; fi
say hello "$($bb cat /mnt/hello.txt)"
h=$($bb md5sum /mnt/big.bin 2>&1); say md5rc $?; say md5 "${h%%%% *}"
say size "$($bb stat -c %%s /mnt/big.bin)"
echo "written by the guest" > /mnt/fromguest.txt && say write ok
$bb dd if=/mnt/big.bin of=/mnt/copy.bin bs=1M 2>/dev/null && say copy ok
$bb mkdir /mnt/gdir && $bb ln -s ../hello.txt /mnt/gdir/link && say link "$($bb cat /mnt/gdir/link)"
$bb mknod /mnt/gdev c 1 3 && say dev "$($bb stat -c '%%F %%t,%%T' /mnt/gdev)"
echo '#!/bin/sh' > /mnt/gprog && $bb chmod 4755 /mnt/gprog && say suid "$($bb stat -c %%a /mnt/gprog)"
$bb mv /mnt/fromguest.txt /mnt/gdir/moved.txt && say mv ok
$bb rm /mnt/copy.bin && say rm ok
say ls "$($bb ls /mnt | $bb tr '\n' ' ')"
say up "$($bb ls /mnt/.. | $bb tr '\n' ' ')"
$bb sync
$bb umount /mnt && say umount ok
say done
$bb reboot -f
"""
LINE_RE = re.compile(r"FS-GUEST (\S+) ?(.*)")

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
if not os.path.isfile(guestlib.busybox_path()):
    t.skip_all(f"no static busybox at {guestlib.busybox_path()} (install busybox-static)")
kernel, tried = guestlib.find_kernel()
if not kernel:
    t.skip_all(f"no Linux guest kernel: tried {', '.join(tried)}")
config = os.path.join(os.path.dirname(kernel), "config")
if os.path.isfile(config) and "CONFIG_VIRTIO_FS=y" not in open(config).read():
    t.skip_all(f"{kernel} has no CONFIG_VIRTIO_FS=y ({config})")
VM = guestlib.kvrun()

kind = guestlib.host_kind()
timeout = 1200 if kind == "pvm" else 120

with tempfile.TemporaryDirectory(prefix="kvrun-fs-linux-") as tmp:
    share, outside = os.path.join(tmp, "share"), os.path.join(tmp, "outside")
    os.mkdir(share)
    os.mkdir(outside)
    with open(os.path.join(outside, "secret"), "w") as f:
        f.write("canary")
    with open(os.path.join(share, "hello.txt"), "w") as f:
        f.write("hello from the host")
    big = bytes((i * 7 + (i >> 12)) & 0xff for i in range(3 << 20))
    with open(os.path.join(share, "big.bin"), "wb") as f:
        f.write(big)
    initrd = os.path.join(tmp, "initramfs.cpio")
    guestlib.write_initramfs(initrd, INIT % {"tag": TAG})
    argv = [VM, "boot", "--kernel", kernel, "--initrd", initrd, "--console", "--test-device", f"--share={TAG}={share}",
            "--memory", "256", "--timeout", str(timeout), "--cmdline", guestlib.linux_cmdline(kind)]
    t.diag(f"booting {kernel} ({kind} host), up to {timeout} s")
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 60)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace"), None
    seen = {}
    for line in out.splitlines():
        m = LINE_RE.search(line)
        if m:
            seen[m.group(1)] = m.group(2).strip()
    diag = f"command: {' '.join(argv)}\nexit {rc}\n" + "\n".join(out.splitlines()[-40:])
    t.ok(rc == 120 and "done" in seen, f"the guest ran its script and rebooted (exit {rc})", diag)
    t.eq(seen.get("mount"), "ok", "mount -t virtiofs")
    t.eq(seen.get("hello"), "hello from the host", "the guest reads the host's file")
    want = hashlib.md5(big).hexdigest()
    if seen.get("md5") != want and guestlib.guest_segv(int(seen.get("md5rc") or 0), ""):
        t.todo(False, "3 MiB read through the device intact (md5)", guestlib.GUEST_SEGV_GAP,
               f"md5sum exit {seen.get('md5rc')}")
    else:
        t.ok(seen.get("md5") == want, "3 MiB read through the device intact (md5)",
             f"got {seen.get('md5')!r} (md5sum exit {seen.get('md5rc')}), want {want!r}")
    t.eq(seen.get("size"), str(len(big)), "its size")
    t.eq(seen.get("link"), "hello from the host", "a symlink made by the guest, resolved by the guest")
    t.eq(seen.get("dev"), "character special file 1,3", "the guest sees its device node")
    t.eq(seen.get("suid"), "4755", "and its set-user-ID mode")
    for step in ("write", "copy", "mv", "rm", "umount"):
        t.eq(seen.get(step), "ok", f"{step} in the guest")
    t.ok(seen.get("ls", "").split() == sorted(["big.bin", "gdev", "gdir", "gprog", "hello.txt"]),
         f"the guest's listing ({seen.get('ls')})")
    t.ok("secret" not in seen.get("up", "") and "outside" not in seen.get("up", ""),
         f"the share's '..' in the guest is the guest's own / ({seen.get('up')})")
    # The host's side.
    with open(os.path.join(share, "gdir", "moved.txt")) as f:
        t.eq(f.read(), "written by the guest\n", "the guest's file, renamed, is on the host")
    t.eq(os.readlink(os.path.join(share, "gdir", "link")), "../hello.txt", "its symlink on the host")
    for name, want in (("gdev", b":0644:char-1-3"), ("gprog", b":4755:file")):
        st = os.lstat(os.path.join(share, name))
        try:
            xa = os.getxattr(os.path.join(share, name), "user.containers.override_stat")
        except OSError:
            xa = b""
        t.ok(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0 and xa.endswith(want),
             f"{name}: a plain mode-0 file on the host, {xa.decode()!r} in its xattr")
    t.ok(not os.path.exists(os.path.join(share, "copy.bin")), "the removed copy is gone from the host")
    with open(os.path.join(outside, "secret")) as f:
        t.eq(f.read(), "canary", "the canary beside the share is untouched")
t.done()
