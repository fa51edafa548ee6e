#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""podman (4.3 from Debian, conmon, CNI) with kvrun as its --runtime, or
runc for comparison (`test_engines_podman.py runc`).

Everything podman keeps is private to the test: --root, --runroot,
--tmpdir, and a containers.conf ($CONTAINERS_CONF) that sets the CNI
network directory, cgroupfs, file events and the rlimits podman would
otherwise raise past what root may here (nofile, nproc). The network is a
CNI bridge of the test's own (own bridge name, subnet and IPAM directory;
no masquerading, so no firewall rules). The image is a busybox-static
rootfs tarball made here and `podman import`ed.

Under kvrun no container boots Linux cold: each VM restores one of the
slow suite's templates (guestlib.suite_template(), built once per build
tree and shared with the other tests): the bridge network's container (eth0)
the one with one network device, the two `--network none` ones (no network
device) the one without; the test checks by each create's --log
(el.check_restored) that it was restored.

Checks (three containers): `run --rm` on the bridge network with an httpd that the
host reaches at the container's bridge address, with `-v` of a host
directory and of a named volume (written both ways while it runs); `exec`
tells the process to finish; its output and exit code come back through
`run`, and the container is gone. `run --device /dev/fuse` with
`--uidmap`/`--gidmap` (the maps, root inside, the device usable) and
`--userns=auto` (a range podman picks from /etc/subuid's "containers"
entry, added for the test and taken out again). Full plan (hardware KVM)
also: `run -d`, `stop` of a process
ignoring SIGTERM, `rm`."""
import json
import os
import subprocess
import sys
import threading

import enginelib as el
from taplib import Tap

RUNTIME = sys.argv[1] if len(sys.argv) > 1 else "kvrun"
T = el.BOOT_TIMEOUT
NET = "kvtnet"


class Podman:
    def __init__(self, wd):
        self.wd = wd
        d = wd.path
        net = el.free_subnet()
        self.bridge = "kvtpm%d" % (os.getpid() % 100000)
        wd.cleanups.append(lambda: subprocess.run(["ip", "link", "del", self.bridge], capture_output=True))
        netdir = wd.sub("cni")
        with open(os.path.join(netdir, NET + ".conflist"), "w") as f:
            json.dump({"cniVersion": "0.4.0", "name": NET, "plugins": [{
                "type": "bridge", "bridge": self.bridge, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": wd.sub("ipam"), "routes": [{"dst": "0.0.0.0/0"}],
                         "ranges": [[{"subnet": net + "0/24", "gateway": net + "1"}]]}}]}, f)
        self.conf = os.path.join(d, "containers.conf")
        with open(self.conf, "w") as f:
            f.write(f"""[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[network]
network_backend = "cni"
network_config_dir = "{netdir}"
cni_plugin_dirs = ["/usr/lib/cni"]
default_network = "{NET}"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{d}/events.log"
""")
        self.cgroup_parent = "/kvt-podman-%d" % os.getpid()
        wd.late_cleanups.append(lambda: el.remove_cgroup_parent(self.cgroup_parent))
        self.base = ["podman", "--root", wd.sub("root"), "--runroot", wd.sub("runroot"),
                     "--tmpdir", wd.sub("tmp"), "--runtime", wd.wrapper]
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)

    def __call__(self, *args, timeout=T + 120, **kw):
        return el.run(self.base + list(args), timeout=timeout, env=self.env, **kw)

    def popen(self, *args):
        return subprocess.Popen(self.base + list(args), env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# Serves /www, says "ready", and ends (status 3) once /tmp/stop exists.
SERVE = ("httpd -p 8080 -h /www; echo ready; while [ ! -e /tmp/stop ]; do sleep 1; done; "
         "echo out-$((6*7)); exit 3")


def check_volumes(t, pm, hostdir):
    """`-v`: a host directory and a named volume, written both ways while
    the container runs (they are shared with its VM, not copied)."""
    p = pm("exec", "kvt-pm", "sh", "-c", "echo from-ctr > /hostdir/ctr-file; echo named-data > /named/ctr-file; "
           "cat /hostdir/host-file")
    el.eq(t, (p.returncode, p.stdout), (0, "from-host\n"), "-v host directory: the container reads the host's file",
          p.stderr)
    el.eq(t, el.read_text(os.path.join(hostdir, "ctr-file")), "from-ctr\n",
          "-v host directory: the host reads the container's write")
    with open(os.path.join(hostdir, "host-file-2"), "w") as f:
        f.write("later\n")
    p = pm("exec", "kvt-pm", "cat", "/hostdir/host-file-2")
    el.eq(t, p.stdout, "later\n", "-v host directory: a file the host writes while the container runs", p.stderr)
    mp = pm("volume", "inspect", "-f", "{{.Mountpoint}}", "kvt-named").stdout.strip()
    el.eq(t, el.read_text(os.path.join(mp, "ctr-file")) if mp else None, "named-data\n",
          f"-v named volume: the write is in the volume's directory ({mp})")


def new_create(wd, before):
    """The one container created since the create logs were `before`
    (Workdir.create_log_ids()), or None."""
    new = sorted(set(wd.create_log_ids()) - set(before))
    return new[0] if len(new) == 1 else None


def check_run_rm_bridge(t, pm, hostdir, tpl):
    proc = pm.popen("run", "--rm", "--network", NET, "--cgroup-parent", pm.cgroup_parent, "--name", "kvt-pm",
                    "-v", f"{hostdir}:/hostdir", "-v", "kvt-named:/named", el.IMAGE, "sh", "-c", SERVE)
    out, err = [], []
    readers = [threading.Thread(target=lambda s=s, b=b: b.extend(s)) for s, b in
               [(proc.stdout, out), (proc.stderr, err)]]
    for r in readers:
        r.start()
    up = el.wait_for(lambda: "ready\n" in out or proc.poll() is not None, T, 1)
    t.ok(up and proc.poll() is None, "run --rm: the container is up", "".join(err)[-500:])
    ip = pm("inspect", "-f", "{{.NetworkSettings.Networks.%s.IPAddress}}" % NET, "kvt-pm").stdout.strip()
    t.ok(ip.count(".") == 3, f"the container has an address on podman's bridge network ({ip})")
    if RUNTIME == "kvrun":
        cid = pm("inspect", "-f", "{{.Id}}", "kvt-pm").stdout.strip()
        el.check_restored(t, pm.wd, "run --rm on the bridge network (eth0)", cid, tpl[1])
    body = el.wait_for(lambda: "hello-from" in (b := el.http_get(f"http://{ip}:8080/")) and b, 60, 2)
    el.eq(t, body or el.http_get(f"http://{ip}:8080/"), "hello-from-the-container\n",
          "the host reaches the container's httpd over the bridge")
    check_volumes(t, pm, hostdir)
    p = pm("exec", "kvt-pm", "sh", "-c", "touch /tmp/stop; echo exec-$((2+3))")
    el.eq(t, (p.returncode, p.stdout), (0, "exec-5\n"), "exec: output and status", p.stderr)
    try:
        rc = proc.wait(T)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    for r in readers:
        r.join()
    el.eq(t, rc, 3, "run --rm: the container's exit code", "".join(err)[-500:])
    el.eq(t, "".join(out), "ready\nout-42\n", "run --rm: its output")
    p = pm("ps", "-a", "-q", "--filter", "name=kvt-pm")
    el.eq(t, p.stdout.strip(), "", "run --rm: the container is gone", p.stderr)


# The node is bound from outside (the host's under runc, the VM's under
# kvrun), owned by an id the namespace does not map: opening it is a
# permission (DAC) matter, as under runc, not the device filter's EPERM.
USERNS_SCRIPT = ("echo map=$(cat /proc/self/uid_map); echo id=$(id -u); echo owner=$(stat -c %u /bin/busybox); "
                 "stat -c '%t:%T' /dev/fuse; head -c 0 /dev/fuse 2>&1 | grep -o 'Permission denied'")


def check_device_uidmap(t, pm, tpl):
    """--device /dev/fuse in a user namespace of --uidmap/--gidmap: the
    maps, root inside over a rootfs podman chowns to the mapped ids, the
    device node there."""
    before = pm.wd.create_log_ids()
    p = pm("run", "--rm", "--network", "none", "--cgroup-parent", pm.cgroup_parent, "--device", "/dev/fuse",
           "--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536", el.IMAGE, "sh", "-c", USERNS_SCRIPT)
    el.eq(t, (p.returncode, p.stdout),
          (0, "map= 0 100000 65536\nid=0\nowner=0\na:e5\nPermission denied\n"),
          "run --device /dev/fuse --uidmap/--gidmap: maps, root inside, the device bound (its owner unmapped)",
          p.stderr)
    if RUNTIME == "kvrun":
        el.check_restored(t, pm.wd, "run --uidmap --network none (no network device)", new_create(pm.wd, before),
                          tpl[0])


def with_subids(name, start, size):
    """/etc/subuid and /etc/subgid give name a range (for --userns=auto);
    returns a function putting both files back as they were."""
    saved = {}
    for f in ("/etc/subuid", "/etc/subgid"):
        try:
            with open(f) as fh:
                saved[f] = fh.read()
        except FileNotFoundError:
            saved[f] = None
        if saved[f] is None or not any(line.startswith(name + ":") for line in saved[f].splitlines()):
            with open(f, "a") as fh:
                fh.write(f"{name}:{start}:{size}\n")

    def restore():
        for f, text in saved.items():
            if text is None:
                os.unlink(f)
            else:
                with open(f, "w") as fh:
                    fh.write(text)
    return restore


def check_userns_auto(t, pm, tpl):
    """--userns=auto: podman picks a range of its "containers" ids."""
    restore = with_subids("containers", 2000000, 1000000)
    before = pm.wd.create_log_ids()
    try:
        p = pm("run", "--rm", "--network", "none", "--cgroup-parent", pm.cgroup_parent, "--userns=auto", el.IMAGE,
               "sh", "-c", "echo map=$(cat /proc/self/uid_map); echo id=$(id -u); echo owner=$(stat -c %u /bin/busybox)")
    finally:
        restore()
    fields = p.stdout.split("\n")[0].split()
    t.ok(p.returncode == 0 and len(fields) == 4 and fields[1] == "0" and int(fields[2]) >= 2000000
         and p.stdout.endswith("id=0\nowner=0\n"),
         "run --userns=auto: a range of podman's, root inside over the mapped rootfs", p.stdout + p.stderr[-500:])
    if RUNTIME == "kvrun":
        el.check_restored(t, pm.wd, "run --userns=auto --network none (no network device)",
                          new_create(pm.wd, before), tpl[0])


def check_detached(t, pm, tpl):
    """Full plan only."""
    p = pm("run", "-d", "--cgroup-parent", pm.cgroup_parent, "--name", "kvt-pmd", el.IMAGE, "sh", "-c",
           "trap 'echo got-SIGTERM' TERM; echo ready; while true; do sleep 1; done")
    el.eq(t, p.returncode, 0, "run -d: started", p.stderr)
    if RUNTIME == "kvrun":
        el.check_restored(t, pm.wd, "run -d on the bridge network (eth0)", p.stdout.strip(), tpl[1])
    el.wait_for(lambda: "ready" in pm("logs", "kvt-pmd", timeout=30).stdout, T, 2)
    p = pm("stop", "-t", "5", "kvt-pmd")
    logs = pm("logs", "kvt-pmd", timeout=30).stdout
    st = pm("inspect", "-f", "{{.State.ExitCode}}", "kvt-pmd").stdout.strip()
    t.ok(p.returncode == 0 and "got-SIGTERM" in logs and st == "137",
         "stop: SIGTERM reached the process, then SIGKILL after the timeout", f"{p.stderr} {logs!r} {st}")
    p = pm("rm", "kvt-pmd")
    el.eq(t, p.returncode, 0, "rm: removed", p.stderr)


def main():
    t = Tap()
    why = el.problem(RUNTIME, ["podman", "conmon", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local"])
    if why:
        t.skip_all(why)
    plan = el.plan() if RUNTIME == "kvrun" else "full"
    print(f"# runtime {RUNTIME}, plan {plan}: run --rm + bridge network + exec"
          + (", run -d/stop/rm" if plan == "full" else ""))
    # podman gives the runtime's create 240 s (not configurable): where a
    # boot takes longer (a template that does not match, or that this
    # host's KVM refuses: a cold boot), kvrun's create must return before
    # the guest boots.
    config = {"early_create": True} if plan == "subset" else {}
    if config:
        print("# kvrun config: " + json.dumps(config) + " (a boot here outlasts podman's 240 s create timeout)")
    env, tpl = {}, {}
    if RUNTIME == "kvrun":
        # The bridge network's containers have eth0, the --network none
        # ones no network device: the suite templates with one and none.
        env, tpl = el.suite_templates(t, 1, 0)
    wd = el.Workdir("kvt-pm-", RUNTIME, config, env=env)
    pm = None
    try:
        pm = Podman(wd)
        p = pm("import", "-c", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "-c", 'CMD ["/bin/sh"]',
               wd.rootfs_tar, el.IMAGE, timeout=120)
        if p.returncode != 0 and "cannot" in p.stderr.lower() and "storage" in p.stderr.lower():
            why = "podman's storage cannot be set up here: " + p.stderr.strip()[-300:]
            wd.close()
            t.skip_all(why)
        el.eq(t, p.returncode, 0, "podman import of a busybox rootfs tarball", p.stderr)
        hostdir = wd.sub("hostdir")
        with open(os.path.join(hostdir, "host-file"), "w") as f:
            f.write("from-host\n")
        check_run_rm_bridge(t, pm, hostdir, tpl)
        check_device_uidmap(t, pm, tpl)
        check_userns_auto(t, pm, tpl)
        if plan == "full":
            check_detached(t, pm, tpl)
        procs = [x for x in wd.leftovers() if x not in el.processes_mentioning("podman")]
        el.eq(t, procs, [], "no runtime process left")
        wd.report(t)
    finally:
        pm and pm("system", "reset", "--force", timeout=120)
        wd.close(keep=os.environ.get("KVRUN_TEST_KEEP") == "1")
    t.ok(not el.link_exists(pm.bridge), "the test's bridge is gone")
    t.done()


if __name__ == "__main__":
    main()
