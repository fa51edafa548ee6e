#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""checkpoint and restore across every combination of how the VM started
(from a template, or a cold boot), its root (read-only, runc's default, or
writable) and its network (a namespace with a veth, or none), on VMs that
boot the freestanding test guest in scenario fake-init (tests/guest/
fake-init.c), which connects again after a restore and opens the init's
streams again as guest-init does: fast, so every combination runs.

For each: `run --detach`, `checkpoint` (the container stops), `delete`,
`restore --detach` under another name: it runs (an exec through the
restored monitor answers), the log says the VM came from the checkpoint
(and, for the first, from the template); then delete, and nothing is left
(censuslib.py). A container restored from a template with a read-only root
could not be restored before: its disk offered the template's features
(no VIRTIO_BLK_F_RO), the restore made one that offered RO.

Needs /dev/kvm and root; the network half needs ip and tc."""
import json
import os
import shutil
import subprocess

import guestlib
import netlib
from bundlelib import processes_mentioning, wait_for
from censuslib import Census
from netlib import sh
from taplib import Tap

KVRUN = guestlib.kvrun()
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
TAG = f"cm{os.getpid()}"

t = Tap()
tmp = guestlib.test_guest_tmp(t, GUEST, "kvrun-test-ckm-", "state, network namespaces")
root, cache, tpl = (os.path.join(tmp, d) for d in ("root", "cache", "templates"))
log = os.path.join(tmp, "kvrun.log")
cfg = os.path.join(tmp, "config.json")
with open(cfg, "w") as f:
    # modules and acpi here, not in the bundle: template and containers
    # then have one plan.
    json.dump({"cmdline_extra": "test=fake-init", "modules": "none", "acpi": "off"}, f)
ENV = dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=cfg, KVRUN_CACHE_DIR=cache, KVRUN_TEMPLATE_DIR=tpl,
           KVRUN_CONSOLE=os.path.join(tmp, "console.log"))
ENV.pop("KVRUN_TEMPLATES", None)


def kvrun(*args, env=ENV, timeout=120):
    return guestlib.run_kvrun(root, log, args, env, timeout)


def make_bundle(name, readonly, netns):
    b = os.path.join(tmp, name)
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/bin/true"]
    spec["root"]["readonly"] = readonly
    if netns:
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"] + \
            [{"type": "network", "path": f"/run/netns/{netns}"}]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    return b


def log_since(mark):
    with open(log, errors="replace") as f:
        return f.read().split(mark)[-1]


def mark(what):
    with open(log, "a") as f:
        f.write(f"--- {what}\n")
    return f"--- {what}\n"


def state(cid):
    p = kvrun("state", cid, timeout=20)
    try:
        return json.loads(p.stdout).get("status")
    except ValueError:
        return None


def case(boot, ro, nics, cns):
    name = f"{boot} boot, {'read-only' if ro else 'writable'} root, {'one NIC' if nics else 'no NIC'}"
    tag = f"{boot[0]}{'ro' if ro else 'rw'}{nics}"
    b = make_bundle(f"b-{tag}", ro, cns if nics else None)
    env = dict(ENV, KVRUN_TEMPLATES="0") if boot == "cold" else ENV
    census = Census(TAG, root, netns=cns if nics else None)
    before = census.take()
    cid, cid2, img = f"{TAG}-{tag}", f"{TAG}-{tag}-r", os.path.join(tmp, f"img-{tag}")
    m = mark(f"run {name}")
    p = kvrun("run", "--detach", "--bundle", b, cid, env=env)
    if not t.ok(p.returncode == 0, f"{name}: run --detach", p.stderr[-1500:]):
        return
    text = log_since(m)
    if boot == "template":
        t.ok("VM: restoring template" in text and "cold boot instead" not in text,
             f"{name}: the VM was restored from the template", text[-1500:])
    else:
        t.ok("VM: cold boot (templates off)" in text, f"{name}: the VM was cold booted", text[-1500:])
    p = kvrun("checkpoint", "--image-path", img, cid, env=env)
    t.ok(p.returncode == 0, f"{name}: checkpoint", p.stderr[-1500:])
    wait_for(lambda: state(cid) == "stopped", timeout=30, step=0.2)
    t.eq(kvrun("delete", cid, env=env).returncode, 0, f"{name}: delete after the checkpoint")
    m = mark(f"restore {name}")
    p = kvrun("restore", "--image-path", img, "--bundle", b, "--detach", cid2, env=env)
    t.ok(p.returncode == 0, f"{name}: restore", p.stderr[-1500:])
    if p.returncode == 0:
        t.ok("VM: restoring checkpoint" in log_since(m), f"{name}: the VM came from the checkpoint")
        t.eq(state(cid2), "running", f"{name}: the restored container runs")
        e = kvrun("exec", cid2, "echo", "restored", "answers", env=env)
        t.eq((e.returncode, e.stdout), (0, "restored answers\n"), f"{name}: exec through the restored monitor")
    d = kvrun("delete", "--force", cid2, env=env)
    t.eq(d.returncode, 0, f"{name}: delete")
    wait_for(lambda: not processes_mentioning(cid), timeout=20, step=0.1)
    after = wait_for(lambda: not Census.diff(before, census.take(), ("fds",)) and census.take(), timeout=5)
    t.eq(Census.diff(before, after or census.take(), ("fds",)), {}, f"{name}: nothing left")
    shutil.rmtree(img, ignore_errors=True)


def veth_ns():
    cns, pns = netlib.netns("ckmc"), netlib.netns("ckmp")
    sh("ip", "-n", cns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", pns)
    sh("ip", "-n", cns, "addr", "add", "10.199.40.2/24", "dev", "eth0")
    sh("ip", "-n", cns, "link", "set", "eth0", "up")
    sh("ip", "-n", pns, "link", "set", "peer0", "up")
    sh("ip", "-n", cns, "route", "add", "default", "via", "10.199.40.1")
    return cns


why = netlib.skip_reason()
cns = None if why else veth_ns()
if why:
    t.skip("the combinations with a network interface", why)
try:
    for nics in (0, 1) if cns else (0,):
        p = kvrun("template", "build", "--nics", str(nics))
        if not t.ok(p.returncode == 0, f"template build --nics {nics} (the test guest)", p.stderr[-1500:]):
            continue
        for boot in ("template", "cold"):
            for ro in (True, False):
                case(boot, ro, nics, cns)
finally:
    for pid in processes_mentioning(TAG):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
if t.failed:
    t.diag(f"kept {tmp}")
    if os.path.exists(log):
        t.diag("".join(open(log, errors="replace").readlines()[-40:]))
else:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
