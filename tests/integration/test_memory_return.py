#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory a container frees goes back to the host: a container with no
memory limit (kvrun's default guest, 2 GiB) runs memhog (memhog.c, built
static here), which writes 1 GiB, holds it, frees it and idles. The
monitor's RSS (its mappings hold the guest RAM the guest touched) must grow
by about 1 GiB while memhog holds it and fall back within 10 s of the free:
the guest kernel reports the freed blocks (free page reporting, 2 s after
a free) to kvrun's virtio-balloon, which gives them back with madvise.

The container's VM is cold-booted with 2 GiB (a restored one's guest RAM
is a private mapping of the template file: what the guest wrote is the
VM's own copy, which the balloon drops all the same). In the guest the
test also checks that it has its RAM, the balloon driver, and free page
reporting of order 9 (2 MiB blocks). $KVRUN_TEST_MEMHOG_MIB changes the
1 GiB.

Where the host emulates guest kernel code (guestlib.emulating_host()) a
guest page fault costs milliseconds: 1 GiB's 262144 faults take over 25
minutes. There the container is kvrun's default guest of such hosts
(256 MiB, restored from the suite template) and memhog writes 64 MiB; the
same checks (growth, return within 10 s, within a quarter of what was
freed) hold.

Skips when the guest kernel, /dev/kvm, root, busybox, mke2fs or a C
compiler with a static libc is missing.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import guestlib
from bundlelib import keep_or_remove
from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUSYBOX = os.environ.get("KVRUN_TEST_BUSYBOX") or shutil.which("busybox") or "/bin/busybox"
SRC = os.environ.get("KVRUN_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EMULATING = guestlib.emulating_host()
MIB = int(os.environ.get("KVRUN_TEST_MEMHOG_MIB", "64" if EMULATING else "1024"))
# The guest: kvrun's default where guest kernel code runs natively (2 GiB,
# written out since emulating hosts default to 256 MiB), else that default.
GUEST_MIB = 256 if EMULATING else 2048
RETURN_S = 10
HOLD_S = 5
# What may stay resident once the free went back: the guest's page tables
# and the pages it reused meanwhile (RSS is sampled every 0.1 s).
SLACK_MIB = min(64, MIB // 4)
SCRIPT = (
    "echo mem:$(head -1 /proc/meminfo | tr -s ' ' | cut -d' ' -f2); "
    "echo balloon:$(ls /sys/bus/virtio/drivers/virtio_balloon 2>/dev/null | grep -c virtio); "
    "echo order:$(cat /sys/module/page_reporting/parameters/page_reporting_order 2>/dev/null); "
    "echo idle; sleep 30; echo go; exec /bin/memhog {mib} {hold} 600"
)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def lines_of(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def wait_line(path, prefix, timeout, alive):
    """The first line of path starting with prefix, waiting up to timeout
    seconds while alive() (None when it never came)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hit = next((ln for ln in lines_of(path) if ln.startswith(prefix)), None)
        if hit is not None or not alive():
            return hit
        time.sleep(0.1)
    return None


def make_bundle(tmp, memhog):
    b = os.path.join(tmp, "bundle")
    rootfs = os.path.join(b, "rootfs")
    for d in ("bin", "proc", "sys", "dev", "tmp"):
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in ("sh", "echo", "head", "tr", "cut", "ls", "grep", "cat", "sleep"):
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    shutil.copy(memhog, os.path.join(rootfs, "bin", "memhog"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/sh", "-c", SCRIPT.format(mib=MIB, hold=HOLD_S)]
    spec["linux"].pop("resources", None)  # no limit: the default guest
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return b


def check_guest(t, out):
    got = {ln.split(":", 1)[0]: ln.split(":", 1)[1] for ln in lines_of(out) if ln.split(":", 1)[0] in
           ("mem", "balloon", "order")}
    mem = int(got.get("mem") or 0)
    t.ok(mem > GUEST_MIB * 1024 * 0.9, f"guest: MemTotal {mem} KiB, the {GUEST_MIB} MiB asked for", lines_of(out))
    t.eq(got.get("balloon"), "1", "guest: the virtio_balloon driver has the device")
    t.eq(got.get("order"), "9", "guest: free page reporting of order 9 (2 MiB blocks)")


def watch(t, pid, out, alive):
    """Baseline while the container idles (at "go" memhog is already
    writing), the peak with memhog's memory, the return."""
    idle = wait_line(out, "idle", 300, alive)
    time.sleep(20)
    base = rss_kib(pid)
    go = wait_line(out, "go", 60, alive)
    if not t.ok(idle is not None and go is not None and base, "the container runs to memhog", lines_of(out)):
        return
    alloc = wait_line(out, "allocated", 1500, alive)
    if not t.ok(alloc is not None, f"memhog wrote {MIB} MiB ({alloc})", lines_of(out)):
        return
    peak = rss_kib(pid)
    t.diag(f"monitor RSS {base >> 10} MiB idle, {peak >> 10} MiB with memhog's {MIB} MiB written ({alloc})")
    t.ok(peak - base >= MIB * 1024 * 0.85, f"the monitor's RSS grew by about {MIB} MiB ({(peak - base) >> 10} MiB)")
    freed = wait_line(out, "freed", HOLD_S + 60, alive)
    t0 = time.monotonic()
    if not t.ok(freed is not None, "memhog freed its memory", lines_of(out)):
        return
    samples = []
    while time.monotonic() - t0 < 120:
        samples.append((time.monotonic() - t0, rss_kib(pid) or 0))
        if samples[-1][1] <= base + SLACK_MIB * 1024:
            break
        time.sleep(0.1)
    back = samples[-1][1] <= base + SLACK_MIB * 1024
    took = samples[-1][0]
    t.diag(f"monitor RSS {samples[-1][1] >> 10} MiB {took:.1f} s after the free "
           f"({'back' if back else 'not back'}; samples: " +
           ", ".join(f"{s:.1f}s:{r >> 10}M" for s, r in samples[::max(1, len(samples) // 12)]) + ")")
    t.ok(back, f"the monitor's RSS fell back within {SLACK_MIB} MiB of {base >> 10} MiB")
    t.ok(back and took <= RETURN_S, f"within {RETURN_S} s of the free ({took:.1f} s)")


def main():
    t = Tap()
    kernel, tried = guestlib.find_kernel()
    if os.environ.get("KVRUN_KERNEL"):
        kernel = os.environ["KVRUN_KERNEL"]
    if not kernel or not os.path.exists(kernel):
        t.skip_all(f"no guest kernel: tried {', '.join(tried)} (set KVRUN_TEST_KERNEL)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        t.skip_all("no usable /dev/kvm")
    if os.geteuid() != 0:
        t.skip_all("needs root (the rootfs keeps root-owned files)")
    if not shutil.which("mke2fs") and not os.path.exists("/sbin/mke2fs"):
        t.skip_all("mke2fs (e2fsprogs) missing")
    if not os.path.exists(BUSYBOX):
        t.skip_all("busybox-static missing")
    tmp = tempfile.mkdtemp(prefix="kvrun-memret-")
    memhog = os.path.join(tmp, "memhog")
    cc = subprocess.run([shutil.which("cc") or "cc", "-O2", "-static", "-o", memhog,
                         os.path.join(SRC, "tests", "integration", "memhog.c")], capture_output=True, text=True)
    if cc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        t.skip_all(f"no C compiler with a static libc for memhog: {cc.stderr.strip()[-200:]}")
    if EMULATING:  # the suite template's shape: restored, not booted
        env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"))
        env.update(guestlib.suite_template(t, kernel).env)
    else:  # 2 GiB: a cold boot (the suite template has the default shape)
        config = os.path.join(tmp, "config.json")
        with open(config, "w") as f:
            f.write(f'{{"memory": "{GUEST_MIB}M"}}\n')
        env = dict(os.environ, KVRUN_KERNEL=os.path.abspath(kernel), KVRUN_CACHE_DIR=os.path.join(tmp, "cache"),
                   KVRUN_CONFIG=config)
    b = make_bundle(tmp, memhog)
    root, out, log = os.path.join(tmp, "root"), os.path.join(tmp, "out.txt"), os.path.join(tmp, "log.txt")
    cid = "memret"
    with open(out, "wb") as so:
        p = subprocess.run([KVRUN, "--root", root, "--log", log, "--debug", "run", "-d", "--bundle", b, cid],
                           stdin=subprocess.DEVNULL, stdout=so, stderr=so, env=env, timeout=1800)
    try:
        if t.ok(p.returncode == 0, "run -d: the container runs", "\n".join(lines_of(out)[-20:] + lines_of(log)[-20:])):
            state = json.loads(subprocess.run([KVRUN, "--root", root, "state", cid], capture_output=True,
                                              text=True, env=env).stdout or "{}")
            pid = state.get("pid")

            def alive():
                return pid and os.path.exists(f"/proc/{pid}")
            watch(t, pid, out, alive)
            check_guest(t, out)
    finally:
        subprocess.run([KVRUN, "--root", root, "delete", "-f", cid], capture_output=True, env=env, timeout=120)
    keep_or_remove(t, tmp, ("out.txt", "log.txt"), 30)
    t.done()


if __name__ == "__main__":
    main()
