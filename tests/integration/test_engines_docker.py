#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docker (dockerd 20.10 from Debian, its own containerd) with kvrun as a
registered runtime (`--add-runtime`), or runc for comparison
(`test_engines_docker.py runc`).

The test starts its own dockerd: private --data-root, --exec-root,
--pidfile and socket under a temporary directory, its own bridge, and
--iptables=false (published ports go through docker-proxy), so the host's
docker, firewall and networks are left alone. The image is a busybox-static
rootfs tarball made here and `docker import`ed.

Checks: `run --rm` (output, stderr, exit code, the container gone);
`run -d --device /dev/fuse` (of the image with a VOLUME, with `-v` of a
host directory, the same read-only, and a named volume, each written both
ways while it runs) + `exec` (the device usable, one docker did not allow
refused) + `logs` + a port published on 127.0.0.1 and fetched from the
host + `stop` (the process traps SIGTERM, which must reach it,
and ignores it, so it is killed after the stop timeout) + `rm`; `run -it`
typed into through tmux; N containers at once, all cleaned up. With
hardware KVM each check has its own container and N is 10; on a nested-KVM
host the `run --rm`, `run -d` and `run -it` containers start at once
instead (the "at once" check), and the detached container's checks share
its VM.

Under kvrun every container is on docker's bridge network (eth0) and its
VM restores the slow suite's template with one network device
(guestlib.suite_template(nics=1), built once per build tree and shared with
the other engine tests): no container boots Linux cold, and the test checks
by each create's --log (el.check_restored) that its VM was restored. The
three at once are then three restores at once, not three cold boots: still
a parallel-start check (three monitors restoring the one template file,
attaching their TAPs to docker's veths, docker's network and volumes set up
for all three meanwhile), only no longer one of three guests booting
together on an emulating host."""
import json
import os
import sys
import threading
import time

import enginelib as el
from taplib import Tap

RUNTIME = sys.argv[1] if len(sys.argv) > 1 else "kvrun"
DOCKER = "/usr/bin/docker"  # Debian's client, matching its dockerd
IMAGE_VOLUME = el.IMAGE + "-volume"  # the same rootfs, with VOLUME /anon
T = el.BOOT_TIMEOUT


class Docker:
    def __init__(self, wd):
        self.wd = wd
        d = wd.path
        self.sock = os.path.join(d, "docker.sock")
        self.bridge = el.Bridge("kvtdk%d" % (os.getpid() % 100000))
        wd.cleanups.append(self.bridge.delete)
        self.cgroup_parent = "/kvt-docker-%d" % os.getpid()
        # Runs after the daemon is stopped (cleanups run first: the cgroup
        # goes once the daemon's containers are gone).
        wd.late_cleanups.append(el.cpu_parent(self.cgroup_parent, 3))
        self.daemon = wd.daemon("dockerd", [
            "dockerd", "--data-root", wd.sub("data"), "--exec-root", wd.sub("exec"),
            "--pidfile", os.path.join(d, "dockerd.pid"), "-H", "unix://" + self.sock,
            "--iptables=false", "--ip-masq=false", "--ip-forward=false", "--bridge", self.bridge.name,
            "--add-runtime", "enginetest=" + wd.wrapper, "--log-level", "info",
            "--cgroup-parent", self.cgroup_parent,
        ])

    def __call__(self, *args, timeout=T + 120, **kw):
        return el.run([DOCKER, "-H", "unix://" + self.sock] + list(args), timeout=timeout, **kw)

    def ready(self):
        ok = el.wait_for(lambda: not self.daemon.alive() or self("version", timeout=10).returncode == 0, 60)
        return ok and self.daemon.alive()


def cidfile(dk, name):
    """Where docker writes the id of container name (--cidfile): read after
    it is gone too, for its create's --log (el.check_restored)."""
    return os.path.join(dk.wd.path, "cid-" + name)


def cid(dk, name):
    return (el.read_text(cidfile(dk, name)) or "").strip()


def start_run_rm(dk):
    return dk("run", "--rm", "--runtime", "enginetest", "--name", "kvt-rm", "--cidfile", cidfile(dk, "kvt-rm"),
              el.IMAGE, "sh", "-c", "echo out-$((6*7)); echo to-stderr >&2; exit 3")


def check_run_rm(t, dk, p):
    """p: the finished `docker run --rm` (start_run_rm)."""
    el.eq(t, p.returncode, 3, "run --rm: the container's exit code", p.stderr)
    el.eq(t, p.stdout, "out-42\n", "run --rm: its stdout")
    t.ok("to-stderr" in p.stderr, "run --rm: its stderr apart", p.stderr)
    p = dk("ps", "-a", "-q", "--filter", "name=kvt-rm")
    t.ok(p.returncode == 0 and p.stdout.strip() == "", "run --rm: the container is gone", p.stdout + p.stderr)


# pid 1 traps SIGTERM, says so, and goes on: docker stop must then SIGKILL.
DETACHED = ("httpd -p 8080 -h /www; trap 'echo got-SIGTERM' TERM; echo ready; "
            "while true; do sleep 1; done")


def start_detached(dk, port, hostdir):
    # --device: linux.devices and an allow rule after docker's deny-all.
    return dk("run", "-d", "--runtime", "enginetest", "--name", "kvt-d", "--cidfile", cidfile(dk, "kvt-d"),
              "-p", f"127.0.0.1:{port}:8080",
              "-v", f"{hostdir}:/hostdir", "-v", "kvt-named:/named", "-v", f"{hostdir}:/hostdir-ro:ro",
              "--device", "/dev/fuse", IMAGE_VOLUME, "sh", "-c", DETACHED)


def check_device(t, dk):
    """--device /dev/fuse: the node (its host numbers, 10:229), usable;
    a device docker did not allow is not (its cgroup's rules)."""
    p = dk("exec", "kvt-d", "sh", "-c", "stat -c '%t:%T' /dev/fuse; head -c 0 /dev/fuse && echo fuse-opens; "
           "mknod /tmp/kmsg c 1 11 2>/dev/null; head -c 1 /tmp/kmsg 2>&1 | grep -q 'not permitted' && echo kmsg-denied")
    el.eq(t, (p.returncode, p.stdout), (0, "a:e5\nfuse-opens\nkmsg-denied\n"),
          "--device /dev/fuse: the node, usable; a device not allowed is refused", p.stderr)


def check_volumes(t, dk, hostdir):
    """`-v` of a host directory and of a named volume, and the image's
    VOLUME (an anonymous volume): shared with the VM, written both ways."""
    p = dk("exec", "kvt-d", "sh", "-c", "echo from-ctr > /hostdir/ctr-file; echo named-data > /named/ctr-file; "
           "echo anon-data > /anon/ctr-file; cat /hostdir/host-file")
    el.eq(t, (p.returncode, p.stdout), (0, "from-host\n"), "-v host directory: the container reads the host's file",
          p.stderr)
    el.eq(t, el.read_text(os.path.join(hostdir, "ctr-file")), "from-ctr\n",
          "-v host directory: the host reads the container's write")
    with open(os.path.join(hostdir, "host-file-2"), "w") as f:
        f.write("later\n")
    p = dk("exec", "kvt-d", "cat", "/hostdir/host-file-2")
    el.eq(t, p.stdout, "later\n", "-v host directory: a file the host writes while the container runs", p.stderr)
    p = dk("exec", "kvt-d", "sh", "-c", "touch /hostdir-ro/x")
    t.ok(p.returncode != 0 and "Read-only file system" in p.stderr, "-v host directory:ro: a write is refused",
         p.stderr)
    mp = dk("volume", "inspect", "-f", "{{.Mountpoint}}", "kvt-named").stdout.strip()
    el.eq(t, el.read_text(os.path.join(mp, "ctr-file")) if mp else None, "named-data\n",
          f"-v named volume: the write is in the volume's directory ({mp})")
    mounts = dk("inspect", "-f", "{{range .Mounts}}{{.Destination}}={{.Source}} {{end}}", "kvt-d").stdout.split()
    anon = dict(m.split("=", 1) for m in mounts if "=" in m).get("/anon")
    el.eq(t, el.read_text(os.path.join(anon, "ctr-file")) if anon else None, "anon-data\n",
          f"the image's VOLUME /anon: the write is in its anonymous volume ({anon})")


def check_detached(t, dk, port, hostdir, p):
    """p: the finished `docker run -d` (start_detached)."""
    el.eq(t, p.returncode, 0, "run -d: started", p.stderr)
    if p.returncode != 0:
        return
    up = el.wait_for(lambda: "ready" in dk("logs", "kvt-d", timeout=30).stdout, T, 2)
    t.ok(up, "logs: the container's output", dk("logs", "kvt-d", timeout=30).stderr)
    check_volumes(t, dk, hostdir)
    p = dk("exec", "kvt-d", "sh", "-c", "echo exec-$((2+3)); echo exec-err >&2; exit 4")
    el.eq(t, p.returncode, 4, "exec: exit code", p.stderr)
    el.eq(t, (p.stdout, p.stderr), ("exec-5\n", "exec-err\n"), "exec: stdout and stderr")
    p = dk("exec", "-i", "kvt-d", "cat", input="piped-stdin\n")
    el.eq(t, p.stdout, "piped-stdin\n", "exec -i: stdin reaches the process", p.stderr)
    check_device(t, dk)
    body = el.wait_for(lambda: "hello-from" in (b := el.http_get(f"http://127.0.0.1:{port}/")) and b, 60, 2)
    el.eq(t, body or el.http_get(f"http://127.0.0.1:{port}/"), "hello-from-the-container\n",
         "published port 127.0.0.1:%d reaches the container's httpd" % port)
    p = dk("stop", "-t", "5", "kvt-d")
    el.eq(t, p.returncode, 0, "stop: done", p.stderr)
    logs = dk("logs", "kvt-d", timeout=30).stdout
    t.ok("got-SIGTERM" in logs, "stop: SIGTERM reached the process", logs[-300:])
    st = dk("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", "kvt-d").stdout.strip()
    el.eq(t, st, "exited 137", "stop: the process ignoring SIGTERM was SIGKILLed after the timeout")
    p = dk("rm", "kvt-d")
    el.eq(t, p.returncode, 0, "rm: removed", p.stderr)


def check_exits_on_sigterm(t, dk):
    """Full plan only: a process that exits on SIGTERM stops at once."""
    p = dk("run", "-d", "--runtime", "enginetest", "--name", "kvt-term", "--cidfile", cidfile(dk, "kvt-term"),
           el.IMAGE, "sh", "-c", "trap 'echo bye; exit 0' TERM; echo ready; while true; do sleep 1; done")
    el.eq(t, p.returncode, 0, "run -d (exits on SIGTERM): started", p.stderr)
    el.wait_for(lambda: "ready" in dk("logs", "kvt-term", timeout=30).stdout, T, 2)
    p = dk("stop", "-t", "300", "kvt-term")
    st = dk("inspect", "-f", "{{.State.ExitCode}}", "kvt-term").stdout.strip()
    t.ok(p.returncode == 0 and st == "0", "stop: a process exiting on SIGTERM ends with its own status", st)
    dk("rm", "-f", "kvt-term")


def check_restored(t, dk, names, tpl_ok):
    """Each container's VM restored from the suite template with one
    network device (docker's bridge network: eth0), by its create's --log."""
    for name in names:
        el.check_restored(t, dk.wd, f"{name} (docker's bridge network)", cid(dk, name), tpl_ok)


def start_tty(dk, wd):
    status = os.path.join(wd.path, "tty-status")
    cmd = (f"{DOCKER} -H unix://{dk.sock} run -it --rm --runtime enginetest --name kvt-tty "
           f"--cidfile {cidfile(dk, 'kvt-tty')} {el.IMAGE} sh; "
           f"echo $? > {status}; sleep 600")
    tm = el.Tmux(wd.path, cmd)
    wd.cleanups.append(tm.kill)
    return tm, status


def check_tty(t, tm, status):
    # Until the prompt, or docker run has ended (it failed).
    prompt = el.wait_for(lambda: "/ #" in tm.screen() or os.path.exists(status), T, 1) and "/ #" in tm.screen()
    t.ok(prompt, "run -it: a shell prompt on the terminal", tm.screen()[-400:])
    if not prompt:
        return
    # Each command is a process of its own, which an emulating guest may
    # take a while to start: the screen is read once the last one, after
    # `stty size`, has printed ("sized-25", computed in the container).
    tm.send("echo tty-$((7*6)); tty; stty size; echo sized-$((5*5))", "Enter")
    t.ok(tm.wait_screen("tty-42", 120), "run -it: typed command's output", tm.screen()[-400:])
    scr = tm.wait_screen("sized-25", 120) and tm.screen()
    t.ok(scr and "/dev/pts/" in scr, "run -it: the process has a terminal", tm.screen()[-300:])
    t.ok(scr and "\n30 100" in scr, "run -it: the terminal's size (30x100) reached the container",
         tm.screen()[-300:])
    # Outputs computed in the container ("sleeping-9"), so that what the
    # terminal echoes as typed never matches.
    tm.send("echo sleeping-$((3*3)); sleep 300", "Enter")
    tm.wait_screen("sleeping-9", 120)
    time.sleep(3)  # the shell forks sleep; ^C must reach sleep, not sh
    tm.send("C-c")
    tm.send("echo after-$((40+2))", "Enter")
    t.ok(tm.wait_screen("after-42", 120), "run -it: ^C interrupts the foreground process", tm.screen()[-300:])
    tm.send("exit 5", "Enter")
    got = el.wait_for(lambda: os.path.exists(status) and open(status).read().strip(), 180, 1)
    el.eq(t, got, "5", "run -it: docker run exits with the shell's status")


def check_many(t, dk, wd, n, tpl_ok):
    names = [f"kvt-many{i}" for i in range(n)]
    res = {}

    def start(name):
        res[name] = dk("run", "-d", "--runtime", "enginetest", "--name", name, "--cidfile", cidfile(dk, name),
                       el.IMAGE, "sh", "-c", f"echo up-{name}; while true; do sleep 1; done")

    threads = [threading.Thread(target=start, args=(nm,)) for nm in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t.ok(all(r.returncode == 0 for r in res.values()), f"{n} containers at once: all started",
         "; ".join(r.stderr.strip() for r in res.values() if r.returncode))
    up = el.wait_for(lambda: all(f"up-{nm}" in dk("logs", nm, timeout=30).stdout for nm in names), T, 3)
    t.ok(up, f"{n} containers at once: all running their process")
    if RUNTIME == "kvrun" and tpl_ok:
        logs = {nm: wd.create_log(cid(dk, nm)) or "" for nm in names}
        cold = [nm for nm, log in logs.items() if "VM: restoring template" not in log]
        t.ok(not cold, f"{n} containers at once: each VM starts from the suite template (their --log)",
             "booted cold: " + " ".join(cold))
        refused = [nm for nm, log in logs.items() if "cold boot instead" in log]
        t.todo(not refused, f"{n} containers at once: restored, no cold boot",
               "this host's KVM refused a restored state (docs/snapshot.md), kvrun cold-booted: " + " ".join(refused))
    p = dk("rm", "-f", *names)
    el.eq(t, p.returncode, 0, f"{n} containers at once: rm -f all", p.stderr)
    p = dk("ps", "-a", "-q", "--filter", "name=kvt-many")
    el.eq(t, p.stdout.strip(), "", f"{n} containers at once: none left in docker")


def check_rootfs_cache(t, wd, containers):
    """The containers of one docker image share one root disk: docker's
    root filesystems (overlay mounts over the image's layers, each with its
    own top layers) are one key of kvrun's root disk cache. Two images
    here: el.IMAGE, and IMAGE_VOLUME (its /anon mount point)."""
    imgs = wd.rootfs_images()
    el.eq(t, len(imgs), 2, f"root disk cache: one image for each docker image of the {containers} containers",
          imgs)


def check_clean(t, dk, wd):
    state_root = os.path.join(wd.path, "exec", "runtime-runc", "moby")
    left = [e for e in (os.listdir(state_root) if os.path.isdir(state_root) else [])]
    el.eq(t, left, [], "nothing left under the runtime's --root")
    procs = [p for p in wd.leftovers() if p not in el.processes_mentioning("containerd")
             and p not in el.processes_mentioning("tmux")]
    el.eq(t, procs, [], "no runtime process left")


def main():
    t = Tap()
    why = el.problem(RUNTIME, ["dockerd", DOCKER, "tmux"])
    if why:
        t.skip_all(why)
    plan = el.plan() if RUNTIME == "kvrun" else "full"
    many = 10
    print(f"# runtime {RUNTIME}, plan {plan}: run --rm, run -d/exec/logs/port/stop/rm, run -it, "
          + ("each alone, then stop of a SIGTERM-handling process, then 10 at once" if plan == "full" else
             "the three at once")
          + (" (each restored from the suite template)" if RUNTIME == "kvrun" else ""))
    env, tpl_ok = {}, False
    if RUNTIME == "kvrun":
        # Every container is on docker's bridge network (eth0): the suite
        # template with one network device.
        env, ok = el.suite_templates(t, 1)
        tpl_ok = ok[1]
    wd = el.Workdir("kvt-dk-", RUNTIME, env=env)
    dk = None
    try:
        dk = Docker(wd)
        if not dk.ready():
            why = "dockerd cannot start here: " + dk.daemon.log_tail(5).replace("\n", " | ")
            wd.close()
            t.skip_all(why)
        p = dk("import", "-c", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "-c", 'CMD ["/bin/sh"]',
               wd.rootfs_tar, el.IMAGE, timeout=120)
        el.eq(t, p.returncode, 0, "docker import of a busybox rootfs tarball", p.stderr)
        p = dk("import", "-c", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "-c", 'CMD ["/bin/sh"]', "-c",
               "VOLUME /anon", wd.rootfs_tar, IMAGE_VOLUME, timeout=120)
        el.eq(t, p.returncode, 0, "docker import of the same with a VOLUME", p.stderr)
        hostdir = wd.sub("hostdir")
        with open(os.path.join(hostdir, "host-file"), "w") as f:
            f.write("from-host\n")
        port = el.free_port()
        if plan == "full":
            check_run_rm(t, dk, start_run_rm(dk))
            check_detached(t, dk, port, hostdir, start_detached(dk, port, hostdir))
            check_exits_on_sigterm(t, dk)
            tm, status = start_tty(dk, wd)
            check_tty(t, tm, status)
            if RUNTIME == "kvrun":
                check_restored(t, dk, ["kvt-rm", "kvt-d", "kvt-term", "kvt-tty"], tpl_ok)
            check_many(t, dk, wd, many, tpl_ok)
        else:
            # One VM each (a restore under kvrun), all three at once: that
            # is the "at once" check.
            res = {}
            th = [threading.Thread(target=lambda: res.update(rm=start_run_rm(dk))),
                  threading.Thread(target=lambda: res.update(d=start_detached(dk, port, hostdir)))]
            for x in th:
                x.start()
            tm, status = start_tty(dk, wd)
            el.wait_for(lambda: not th[1].is_alive() and ("/ #" in tm.screen() or os.path.exists(status)), T, 2)
            running = dk("ps", "--format", "{{.Names}}").stdout.split()
            t.ok({"kvt-d", "kvt-tty"} <= set(running),
                 "3 containers started at once: the detached and the terminal one run together", running)
            for x in th:
                x.join()
            check_run_rm(t, dk, res["rm"])
            check_detached(t, dk, port, hostdir, res["d"])
            check_tty(t, tm, status)
            if RUNTIME == "kvrun":
                check_restored(t, dk, ["kvt-rm", "kvt-d", "kvt-tty"], tpl_ok)
        if RUNTIME == "kvrun":
            check_rootfs_cache(t, wd, len({c.split()[-1] for c in wd.runtime_calls() if " create " in f" {c} "}))
        check_clean(t, dk, wd)
        wd.report(t)
    finally:
        wd.close(keep=os.environ.get("KVRUN_TEST_KEEP") == "1")
    t.ok(not el.link_exists(dk.bridge.name), "the test's bridge is gone")
    t.done()


if __name__ == "__main__":
    main()
