#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A control stream that guest-init gave up on before its HELLO does not
end the container: the host takes the next one.

Linux's vsock connect() gives up after 2 s of the guest's time and answers
the host's late acceptance with a reset; a guest restored from a template
on a loaded host (its memory faulted in page by page, its kernel emulated)
took that long, and the monitor had already taken that stream as
guest-init's and closed the control port: guest-init's next connect found
no listener, and create failed with "guest-init closed the control stream"
(churn, docs/testing.md). The freestanding test guest in scenario
fake-init with drop_ctl=1 (tests/guest/fake-init.c) opens each control
stream after one that it resets as soon as the host accepts it: at the
template's build, at a cold boot, after the template's restore and after
a checkpoint's. Each container must run and answer an exec, the log must
show the stream that ended before its HELLO, and the container must be
deleted.

Needs /dev/kvm and root; skips loudly otherwise."""
import json
import os
import shutil
import subprocess

import guestlib
from bundlelib import processes_mentioning, wait_for
from taplib import Tap

KVRUN = guestlib.kvrun()
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
TAG = f"cr{os.getpid()}"
DROPPED = "a control stream ended before its HELLO"

t = Tap()
tmp = guestlib.test_guest_tmp(t, GUEST, "kvrun-test-ctlre-", "kvrun create builds a root disk and a cgroup")
root, cache, tpl = (os.path.join(tmp, d) for d in ("root", "cache", "templates"))
log = os.path.join(tmp, "kvrun.log")
cfg = os.path.join(tmp, "config.json")
with open(cfg, "w") as f:
    json.dump({"cmdline_extra": "test=fake-init drop_ctl=1", "modules": "none", "acpi": "off"}, f)
ENV = dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=cfg, KVRUN_CACHE_DIR=cache, KVRUN_TEMPLATE_DIR=tpl,
           KVRUN_CONSOLE=os.path.join(tmp, "console.log"))
ENV.pop("KVRUN_TEMPLATES", None)


def kvrun(*args, env=ENV, timeout=120):
    return guestlib.run_kvrun(root, log, args, env, timeout)


def mark(what):
    with open(log, "a") as f:
        f.write(f"--- {what}\n")
    return f"--- {what}\n"


def log_since(m):
    with open(log, errors="replace") as f:
        return f.read().split(m)[-1]


def state(cid):
    try:
        return json.loads(kvrun("state", cid, timeout=20).stdout).get("status")
    except ValueError:
        return None


def runs(name, cid, args, origin, env=ENV):
    """The container made by kvrun args runs, its VM came from origin
    (a line of the log), the host dropped one control stream on the way,
    and an exec answers."""
    m = mark(name)
    p = kvrun(*args, env=env)
    if not t.ok(p.returncode == 0, f"{name}: the container is made", p.stderr[-1500:]):
        return False
    text = log_since(m)
    t.ok(origin in text, f"{name}: {origin}", text[-1500:])
    t.ok(DROPPED in text, f"{name}: the host dropped the stream reset before its HELLO", text[-1500:])
    t.eq(state(cid), "running", f"{name}: the container runs")
    e = kvrun("exec", cid, "echo", "still", "here", env=env)
    t.ok((e.returncode, e.stdout) == (0, "still here\n"), f"{name}: exec", f"{e.returncode} {e.stdout!r} {e.stderr[-800:]}")
    return True


b = os.path.join(tmp, "bundle")
os.makedirs(os.path.join(b, "rootfs", "bin"))
subprocess.run([KVRUN, "spec", "-b", b], check=True)
with open(os.path.join(b, "config.json")) as f:
    spec = json.load(f)
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/true"]
with open(os.path.join(b, "config.json"), "w") as f:
    json.dump(spec, f)
try:
    cold = dict(ENV, KVRUN_TEMPLATES="0")
    if runs("cold boot", f"{TAG}-cold", ["run", "--detach", "--bundle", b, f"{TAG}-cold"],
            "VM: cold boot (templates off)", env=cold):
        t.eq(kvrun("delete", "--force", f"{TAG}-cold", env=cold).returncode, 0, "cold boot: delete --force")
    m = mark("template build")
    p = kvrun("template", "build")
    t.ok(p.returncode == 0 and DROPPED in log_since(m),
         "template build: its guest's control stream taken after one reset before its HELLO", p.stderr[-1500:])
    cid = f"{TAG}-tpl"
    if p.returncode == 0 and runs("template restore", cid, ["run", "--detach", "--bundle", b, cid],
                                  "VM: restoring template"):
        img = os.path.join(tmp, "img")
        p = kvrun("checkpoint", "--image-path", img, cid)
        t.ok(p.returncode == 0, "checkpoint", p.stderr[-1500:])
        wait_for(lambda: state(cid) == "stopped", timeout=30, step=0.2)
        kvrun("delete", cid)
        if p.returncode == 0:
            cid2 = f"{TAG}-ckpt"
            runs("checkpoint restore", cid2, ["restore", "--image-path", img, "--bundle", b, "--detach", cid2],
                 "VM: restoring checkpoint")
            t.eq(kvrun("delete", "--force", cid2).returncode, 0, "checkpoint restore: delete --force")
        kvrun("delete", "--force", cid)
    wait_for(lambda: not processes_mentioning(TAG), timeout=20, step=0.1)
    t.eq(processes_mentioning(TAG), [], "no process of the test's containers is left")
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
