#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""containerd (1.6 from Debian) and its runc shim (io.containerd.runc.v2)
running kvrun as the runc binary (`ctr run --runc-binary`, the same as the
runtime option BinaryName), or runc for comparison
(`test_engines_containerd.py runc`).

The test starts its own containerd: its own config (root, state, socket,
the CRI plugin off, so /etc/cni is not read), and gives the shim its own
runtime --root (`--runc-root`). The image is an OCI archive of a
busybox-static rootfs made here and `ctr image import`ed, so containerd's
snapshotter mounts the rootfs on the bundle as it does for any image.

ctr gives each container a network namespace of its own with only lo:
under kvrun the VM restores the slow suite's template without network
devices (guestlib.suite_template(), built once per build tree, normally by
the slow suite): no Linux cold boot, which the test checks by the create's
--log (el.check_restored).

Checks (one container): `ctr run --rm` with output and exit code, and the
task and container gone. Full plan (hardware KVM) also: `ctr run -d`,
`task exec`, `task metrics` (the shim reads the cgroup of the pid kvrun
reports), `task kill` and `task delete`."""
import os
import sys

import enginelib as el
from taplib import Tap

RUNTIME = sys.argv[1] if len(sys.argv) > 1 else "kvrun"
T = el.BOOT_TIMEOUT
NS = "kvt"


class Containerd:
    def __init__(self, wd):
        d = wd.path
        self.sock = os.path.join(d, "containerd.sock")
        self.runc_root = wd.sub("runc-root")
        cfg = os.path.join(d, "containerd.toml")
        with open(cfg, "w") as f:
            f.write(f"""version = 2
root = "{wd.sub('root')}"
state = "{wd.sub('state')}"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{wd.sub('opt')}"
""")
        self.daemon = wd.daemon("containerd", ["containerd", "--config", cfg, "--log-level", "info"])
        # ctr puts a container in the cgroup /<namespace>/<id>.
        wd.late_cleanups.append(lambda: el.remove_cgroup_parent(NS))
        self.wrapper = wd.wrapper
        self.wd = wd

    def __call__(self, *args, timeout=T + 120, **kw):
        return el.run(["ctr", "-a", self.sock, "-n", NS] + list(args), timeout=timeout, **kw)

    def run_args(self):
        return ["--runtime", "io.containerd.runc.v2", "--runc-binary", self.wrapper, "--runc-root", self.runc_root]

    def ready(self):
        ok = el.wait_for(lambda: not self.daemon.alive() or self("version", timeout=10).returncode == 0, 60)
        return ok and self.daemon.alive()


def check_run_rm(t, ct, tpl):
    p = ct("run", "--rm", *ct.run_args(), el.IMAGE_REF, "kvt-c1",
           "sh", "-c", "echo out-$((6*7)); echo to-stderr >&2; exit 3")
    el.eq(t, p.returncode, 3, "ctr run --rm: the container's exit code", p.stderr)
    el.eq(t, p.stdout, "out-42\n", "ctr run --rm: its stdout")
    t.ok("to-stderr" in p.stderr, "ctr run --rm: its stderr apart", p.stderr)
    el.eq(t, ct("containers", "ls", "-q").stdout.strip(), "", "ctr run --rm: container removed")
    el.eq(t, ct("tasks", "ls", "-q").stdout.strip(), "", "ctr run --rm: task removed")
    if RUNTIME == "kvrun":
        el.check_restored(t, ct.wd, "ctr run --rm (a network namespace of its own: no network device)", "kvt-c1",
                          tpl[0])


def check_detached(t, ct, tpl):
    """Full plan only."""
    p = ct("run", "-d", *ct.run_args(), el.IMAGE_REF, "kvt-c2", "sh", "-c",
           "echo ready > /tmp/ready; while true; do sleep 1; done")
    el.eq(t, p.returncode, 0, "ctr run -d: started", p.stderr)
    if RUNTIME == "kvrun":
        el.check_restored(t, ct.wd, "ctr run -d (no network device)", "kvt-c2", tpl[0])
    up = el.wait_for(lambda: ct("tasks", "exec", "--exec-id", "probe", "kvt-c2", "cat", "/tmp/ready",
                                timeout=120).stdout == "ready\n", T, 3)
    t.ok(up, "task exec: output from the running container")
    p = ct("tasks", "exec", "--exec-id", "e1", "kvt-c2", "sh", "-c", "exit 6")
    el.eq(t, p.returncode, 6, "task exec: exit code", p.stderr)
    p = ct("tasks", "metrics", "kvt-c2", timeout=60)
    t.ok(p.returncode == 0 and "memory" in p.stdout.lower(), "task metrics: the shim reads the cgroup",
         p.stdout + p.stderr)
    p = ct("tasks", "kill", "-s", "SIGKILL", "kvt-c2")
    el.eq(t, p.returncode, 0, "task kill", p.stderr)
    el.wait_for(lambda: "STOPPED" in ct("tasks", "ls", timeout=30).stdout, 120, 1)
    p = ct("tasks", "delete", "kvt-c2")
    el.eq(t, p.returncode, 0, "task delete", p.stderr)
    p = ct("containers", "delete", "kvt-c2")
    el.eq(t, p.returncode, 0, "container delete", p.stderr)


def main():
    t = Tap()
    why = el.problem(RUNTIME, ["containerd", "ctr", "containerd-shim-runc-v2"])
    if why:
        t.skip_all(why)
    plan = el.plan() if RUNTIME == "kvrun" else "full"
    print(f"# runtime {RUNTIME}, plan {plan}: ctr run --rm --runc-binary"
          + (", run -d/task exec/metrics/kill/delete" if plan == "full" else ""))
    env, tpl = {}, {}
    if RUNTIME == "kvrun":
        # ctr gives each container a network namespace of its own with
        # only lo: the suite template without network devices.
        env, tpl = el.suite_templates(t, 0)
    wd = el.Workdir("kvt-ct-", RUNTIME, env=env)
    try:
        ct = Containerd(wd)
        if not ct.ready():
            why = "containerd cannot start here: " + ct.daemon.log_tail(5).replace("\n", " | ")
            wd.close()
            t.skip_all(why)
        archive = os.path.join(wd.path, "image.oci.tar")
        el.oci_archive(wd.rootfs_tar, archive)
        p = ct("images", "import", archive, timeout=120)
        t.ok(p.returncode == 0 and el.IMAGE_REF in ct("images", "ls", "-q").stdout,
             "ctr images import of an OCI archive", p.stdout + p.stderr)
        check_run_rm(t, ct, tpl)
        if plan == "full":
            check_detached(t, ct, tpl)
        el.eq(t, os.listdir(os.path.join(ct.runc_root, NS)) if os.path.isdir(os.path.join(ct.runc_root, NS))
              else [], [], "nothing left under the runtime's --root")
        el.eq(t, [x for x in wd.leftovers() if x not in el.processes_mentioning("containerd")], [],
              "no runtime process left")
        wd.report(t)
    finally:
        wd.close(keep=os.environ.get("KVRUN_TEST_KEEP") == "1")
    t.done()


if __name__ == "__main__":
    main()
