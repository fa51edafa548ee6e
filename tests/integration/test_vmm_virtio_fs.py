#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun's virtio-fs device driven by the freestanding test guest
(tests/guest/virtio-fs.c) in a VM made by `kvrun boot --share` (the
device attached as docs/virtio.md describes: irqfd, ioeventfd doorbell).

The shared directory holds a seeded file; the guest checks the config tag,
INITs, LOOKUPs it, reads it into chained and indirect buffers, writes 600
bytes from split buffers, FORGETs on the high-priority queue and sends
malformed requests. Afterwards the file must hold exactly the guest's
bytes at 4096..4695 and the seeded pattern elsewhere, nothing else may
appear in the share, and the canary beside it is untouched.

The same again with `--jail`: the monitor's sandbox with shares (a file
server's capabilities and system calls only) serves the same requests.

Needs /dev/kvm; skips loudly without it.
"""
import os
import subprocess
import tempfile

import guestlib
from taplib import Tap

t = Tap()
problem = guestlib.kvm_problem()
if problem:
    t.skip_all(f"needs /dev/kvm: {problem}")
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
VM = guestlib.kvrun()
for what, path in (("test guest", GUEST), ("kvrun", VM)):
    if not os.path.isfile(path):
        t.ok(False, f"{what} exists ({path!r})")
        t.done()

SEED, SIZE, TAG = 57, 10000, "kvrun-test-share"


def pattern(i):
    return (SEED * 31 + i * 13 + (i >> 9)) & 0xff


def run_guest(tmp, jail):
    """The guest's checks, then the host's view; jail: in the monitor's
    sandbox (a file server's capabilities and calls only)."""
    what = "jailed: " if jail else ""
    share, outside = os.path.join(tmp, "share" + what[:1]), os.path.join(tmp, "outside" + what[:1])
    os.mkdir(share)
    os.mkdir(outside)
    with open(os.path.join(outside, "secret"), "w") as f:
        f.write("canary")
    want = bytearray(pattern(i) for i in range(SIZE))
    with open(os.path.join(share, "data.bin"), "wb") as f:
        f.write(want)
    argv = [VM, "boot", "--kernel", GUEST, "--test-device", "--console", f"--share={TAG}={share}", "--timeout", "60",
            "--cmdline",
            f"test=virtio-fs fs_tag={TAG} fs_seed={SEED} fs_size={SIZE} fs_file=data.bin"] + (["--jail"] if jail else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    results, plan = guestlib.parse_tap(r.stdout + "\n" + r.stderr)
    diag = f"command: {' '.join(argv)}\nexit {r.returncode}\n{r.stderr[-3000:]}"
    for ok, desc in results:
        t.ok(ok, f"{what}guest: {desc}", diag)
    t.ok(plan is not None and plan == len(results) and plan >= 20,
         f"{what}the guest printed a plan matching its {len(results)} results", diag)
    t.eq(r.returncode, 0, f"{what}kvrun boot exit status 0 (every guest check passed)")
    with open(os.path.join(share, "data.bin"), "rb") as f:
        got = f.read()
    for i in range(600):
        want[4096 + i] = (0x5a ^ i ^ SEED) & 0xff
    t.eq(len(got), SIZE, f"{what}the file keeps its size")
    t.ok(got == bytes(want), f"{what}the file holds the guest's 600 bytes at 4096 and the pattern elsewhere")
    t.eq(sorted(os.listdir(share)), ["data.bin"], f"{what}nothing else appeared in the share")
    with open(os.path.join(outside, "secret")) as f:
        t.eq(f.read(), "canary", f"{what}the canary beside the share is untouched")
    t.eq(os.listdir(outside), ["secret"], f"{what}nothing appeared beside the share")


with tempfile.TemporaryDirectory(prefix="kvrun-vfs-") as tmp:
    run_guest(tmp, False)
    run_guest(tmp, True)

    # A shared directory that does not exist: a clear error, no VM.
    r = subprocess.run([VM, "boot", "--kernel", GUEST, "--test-device", f"--share={TAG}={os.path.join(tmp, 'missing')}"],
                       capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 125 and "virtio-fs 'kvrun-test-share'" in r.stderr and "missing" in r.stderr,
         f"a missing shared directory is named ({r.stderr.strip()})")
t.done()
