#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pods as kvrun sees them today, on VMs that boot the freestanding test
guest in scenario fake-init (tests/guest/fake-init.c; no Linux boot):

- A sandbox container (containerd's CRI annotations) is created, its VM
  sized for the pod (io.kubernetes.cri.sandbox-memory and -cpu-*), and
  recorded in its state as the pod's sandbox; a malformed size is refused.
- An app container whose annotations name a sandbox that does not exist
  (containerd's; CRI-O may have none: drop_infra_ctr), or a stopped one
  (either), is refused with a message
  naming the sandbox and where it came from; nothing of it is left
  (processes, state, cache files, the namespace's TAPs and addresses).
- An app container of the running sandbox (by containerd's annotations
  and the CNI path, and also without annotations by the CNI path the
  sandbox serves or by /proc/<sandbox monitor>/ns/net, as a podman pod or
  a plain runc user names it) is created inside the sandbox's VM: its own
  host process (the pid in its state), no second VM, no TAP or address
  added; start, exec (the process runs in it), kill and delete work on it
  alone, the sandbox runs on; pause is refused naming it; delete --force
  of a created one ends its host process. Its shares keep their locks
  where its own annotation io.kvrun.fs.locks says (the sandbox's monitor
  logs each slot's mode).
- A container that joins the IPC or UTS namespace of a kvrun container
  that is not a pod's sandbox is refused naming it, before anything is
  made (its VM has no slots for another container's directories).
- An app container's shared directory slots are freed after its end,
  once the guest unmounted them (fake-init sends FUSE DESTROY after the
  EXIT, as Linux does when the tag's last mount goes): 6 app containers
  of 2 slots each (root and a volume) one after another in a VM of 8
  slots, each reading a file of its own root and writing it into its own
  volume through the slots; the sandbox's monitor has as many
  descriptors and file server threads at the end as before the first. An
  app container whose guest side never unmounts ("fs-keep") keeps its
  slots, and only those: the next ones use the rest, and one that needs
  more is refused after a bounded wait, naming the held slots.

Needs /dev/kvm and root; the namespace parts need ip and tc (skipped
loudly without them)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import guestlib
import netlib
from bundlelib import processes_mentioning, wait_for
from censuslib import Census, cgroup_dirs
from netlib import sh
from taplib import Tap

KVRUN = guestlib.kvrun()
GUEST = os.environ.get("KVRUN_TEST_GUEST", "")
TAG = f"kp{os.getpid()}"

CRI_SANDBOX = {"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-name": "web",
               "io.kubernetes.cri.sandbox-namespace": "default"}

t = Tap()
tmp = guestlib.test_guest_tmp(t, GUEST, "kvrun-test-pod-", "state, network namespaces")
root, cache = os.path.join(tmp, "root"), os.path.join(tmp, "cache")
log = os.path.join(tmp, "kvrun.log")
cfg = os.path.join(tmp, "config.json")
with open(cfg, "w") as f:
    json.dump({"cmdline_extra": "test=fake-init"}, f)
ENV = dict(os.environ, KVRUN_KERNEL=GUEST, KVRUN_CONFIG=cfg, KVRUN_TEMPLATES="0", KVRUN_CACHE_DIR=cache,
           KVRUN_CONSOLE=os.path.join(tmp, "console.log"))


def make_bundle(name, annotations=None, namespaces=None, hostname=True, cgroups_path=None, args=None, binds=()):
    """namespaces: {type: path} replacing the default spec's entries;
    hostname False: none (an app container, which has its sandbox's), a
    string: that one, True: the default spec's ("runc"); binds: (source,
    destination) bind mounts, writable."""
    b = os.path.join(tmp, name)
    os.makedirs(os.path.join(b, "rootfs", "bin"))
    subprocess.run([KVRUN, "spec", "-b", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = args or ["/bin/true"]
    spec["mounts"] += [{"destination": d, "type": "bind", "source": src, "options": ["rbind", "rw"]}
                       for src, d in binds]
    # The test guest finds its devices on the command line, and has no modules.
    spec["annotations"] = dict({"io.kvrun.kernel.acpi": "off", "io.kvrun.kernel.modules": "none"},
                               **(annotations or {}))
    if not hostname:
        spec.pop("hostname", None)
    elif isinstance(hostname, str):
        spec["hostname"] = hostname
    if cgroups_path:
        spec["linux"]["cgroupsPath"] = cgroups_path
    for typ, path in (namespaces or {}).items():
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != typ] + \
            [{"type": typ, "path": path}]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    return b


def kvrun(*args, timeout=60):
    """Output through files: a create's stdio becomes its container's."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.run([KVRUN, "--root", root, "--log", log] + list(args), stdout=out, stderr=err, env=ENV,
                               stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, None, "", f"(timed out after {timeout} s)")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())


def private(cid):
    """kvrun's private map in the state of cid."""
    try:
        with open(os.path.join(root, cid, "state.json")) as f:
            return json.load(f).get("kvrun", {})
    except OSError:
        return None


def state(cid):
    p = kvrun("state", cid, timeout=20)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def refused(census, before, bundle, cid, needle, what):
    p = kvrun("create", "--bundle", bundle, cid)
    t.ok(p.returncode not in (0, None) and needle in p.stderr, f"{what}: refused, saying why", p.stderr)
    t.ok(state(cid) is None and not os.path.exists(os.path.join(root, cid)), f"{what}: no state left")
    t.eq(Census.diff(before, census.take(), ("fds",)), {}, f"{what}: nothing else left")


def check_missing_sandbox():
    census = Census(TAG, root, cache=cache)
    before = census.take()
    nosuch = f"{TAG}-nosuch"
    b = make_bundle("b-orphan", {"io.kubernetes.cri.container-type": "container",
                                 "io.kubernetes.cri.sandbox-id": nosuch})
    refused(census, before, b, f"{TAG}-orphan",
            f"pod sandbox {nosuch} (from annotation io.kubernetes.cri.sandbox-id) does not exist",
            "containerd app container of a sandbox that does not exist")
    # CRI-O runs pods without a PID namespace of their own without a
    # sandbox container (drop_infra_ctr): not an error by itself.
    b = make_bundle("b-orphan-crio", {"io.kubernetes.cri-o.ContainerType": "container",
                                      "io.kubernetes.cri-o.SandboxID": nosuch})
    p = kvrun("create", "--bundle", b, f"{TAG}-crio")
    t.ok(p.returncode == 0, "CRI-O app container of a pod without a sandbox container: created", p.stderr)
    pv = private(f"{TAG}-crio") or {}
    t.ok(pv.get("pod-role") == "container" and pv.get("pod-sandbox") == nosuch, "recorded as of its pod",
         json.dumps(pv))
    t.eq(kvrun("delete", "--force", f"{TAG}-crio").returncode, 0, "its delete")
    before = census.take()
    b = make_bundle("b-bad-size", dict(CRI_SANDBOX, **{"io.kubernetes.cri.sandbox-id": f"{TAG}-bs",
                                                       "io.kubernetes.cri.sandbox-memory": "1Gi"}))
    refused(census, before, b, f"{TAG}-bs",
            "config.json: annotation io.kubernetes.cri.sandbox-memory: \"1Gi\" is not a number",
            "a sandbox whose pod memory is not a number")
    b = make_bundle("b-bad-type", {"io.kubernetes.cri.container-type": "pause"})
    refused(census, before, b, f"{TAG}-badtype",
            "config.json: annotation io.kubernetes.cri.container-type: \"pause\" is neither",
            "an unknown container type")


def monitor_pid(cid):
    s = state(cid)
    return s and s.get("pid")


def listed_status(cid):
    p = kvrun("list", "--format", "json")
    try:
        return {c["id"]: c["status"] for c in json.loads(p.stdout or "[]") or []}.get(cid)
    except ValueError:
        return None


def console_has(needle):
    try:
        with open(ENV["KVRUN_CONSOLE"], errors="replace") as f:
            return needle in f.read()
    except OSError:
        return False


def check_member_cpu(cid, what):
    """update of an app container's cpu limits: into its guest cgroup's
    cpu.max, cpu.weight (runc's conversion of shares) and cpuset.cpus,
    which must be the VM's."""
    gpid = (private(cid) or {}).get("pod-member-pid")
    p = kvrun("update", "--cpu-quota", "50000", "--cpu-period", "100000", "--cpu-share", "512",
              "--cpuset-cpus", "0", cid)
    t.ok(p.returncode == 0, f"app container {what}: update of its cpu limits", p.stderr)
    # 512 shares: 1 + (512 - 2) * 9999 / 262142 = 20, as runc's cgroup v2 manager converts.
    t.ok(wait_for(lambda: console_has(f"pod member {gpid} cpu: quota 50000 period 100000 weight 20 cpus 0"),
                  timeout=10, step=0.1), f"app container {what}: the guest got cpu.max, cpu.weight and cpuset.cpus")
    p = kvrun("update", "--cpu-quota", "-1", cid)
    t.ok(p.returncode == 0 and wait_for(lambda: console_has(f"pod member {gpid} cpu: quota 0 period 0 weight 0 "
                                                            "cpus -"), timeout=10, step=0.1),
         f"app container {what}: --cpu-quota -1 is no quota (max), the rest unchanged", p.stderr)
    p = kvrun("update", "--cpuset-cpus", "0-63", cid)
    t.ok(p.returncode != 0 and "cpuset-cpus: CPUs" in p.stderr and "not in the pod's VM, which has" in p.stderr,
         f"app container {what}: cpus the VM does not have refused naming them", p.stderr)
    p = kvrun("update", "--cpuset-cpus", "1-0", cid)
    t.ok(p.returncode != 0 and '"1-0" is not a CPU list' in p.stderr,
         f"app container {what}: a malformed cpu list refused", p.stderr)
    p = kvrun("update", "--cpu-share", "1", cid)
    t.ok(p.returncode != 0 and "cpu-share: 1" in p.stderr, f"app container {what}: shares below runc's range refused",
         p.stderr)


def events_proc(cid, name):
    out = open(os.path.join(tmp, name), "w+")
    return subprocess.Popen([KVRUN, "--root", root, "--log", log, "events", "--interval", "1s", cid], stdout=out,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=ENV), out.name


def check_member_oom(cid, what, sbx, i):
    """An OOM kill in the app container's guest cgroup (the fake guest's OOM
    naming it, after a memory limit below a page): runc's oom event in its
    events, none in the sandbox's. The app container's events process is
    returned running."""
    ev, path = events_proc(cid, f"events-{i}.out")
    sev, spath = events_proc(sbx, f"events-sbx-{i}.out")

    def text(p):
        with open(p) as f:
            return f.read()
    t.ok(wait_for(lambda: '"type":"stats"' in text(path) and '"type":"stats"' in text(spath), timeout=20, step=0.1),
         f"app container {what}: its events and the sandbox's print its figures", text(path) + text(spath))
    p = kvrun("update", "--memory", "1", cid)
    oom = '{"type":"oom","id":"%s"}' % cid
    t.ok(p.returncode == 0 and wait_for(lambda: oom in text(path), timeout=20, step=0.1),
         f"app container {what}: an OOM kill in it is its oom event", p.stderr + text(path)[-1000:])
    time.sleep(1)
    t.ok('"type":"oom"' not in text(spath), f"app container {what}: and not the sandbox's", text(spath)[-1000:])
    sev.terminate()
    sev.wait()
    return ev


def check_member_pause(cid, what, i):
    """pause/resume of a running app container: its guest cgroup frozen
    (the fake guest holds its signals but SIGKILL until the thaw), as runc's
    pause/resume do; case i: 0 a TERM held until resume, 1 SIGKILL while
    paused, 2 resume and on."""
    p = kvrun("pause", cid)
    if not t.ok(p.returncode == 0, f"app container {what}: pause", p.stderr):
        return
    t.eq((state(cid) or {}).get("status"), "paused", f"app container {what}: state says paused")
    t.eq(listed_status(cid), "paused", f"app container {what}: list says paused")
    p = kvrun("exec", cid, "echo", "x")
    t.ok(p.returncode != 0 and "cannot exec in a paused container" in p.stderr,
         f"app container {what}: exec into it refused as runc's", p.stderr)
    p = kvrun("exec", "--ignore-paused", cid, "echo", "x")
    t.ok(p.returncode != 0 and "paused app container" in p.stderr and cid in p.stderr,
         f"app container {what}: exec --ignore-paused refused naming it", p.stderr)
    p = kvrun("pause", cid)
    t.ok(p.returncode != 0 and "container not running" in p.stderr,
         f"app container {what}: a second pause refused as runc's", p.stderr)
    p = kvrun("events", "--stats", cid)
    t.ok(p.returncode == 0 and '"type":"stats"' in p.stdout, f"app container {what}: events --stats while paused",
         p.stdout + p.stderr)
    if i == 0:
        t.eq(kvrun("kill", cid, "TERM").returncode, 0, f"app container {what}: kill TERM of the paused container")
        time.sleep(1)
        t.eq((state(cid) or {}).get("status"), "paused", f"app container {what}: still paused (TERM held)")
    if i == 1:
        t.eq(kvrun("kill", cid, "KILL").returncode, 0, f"app container {what}: kill KILL of the paused container")
        t.ok(wait_for(lambda: (state(cid) or {}).get("status") == "stopped", timeout=20, step=0.1),
             f"app container {what}: SIGKILL stops it while paused", json.dumps(state(cid)))
        return
    p = kvrun("resume", cid)
    t.ok(p.returncode == 0, f"app container {what}: resume", p.stderr)
    if i == 0:
        t.ok(wait_for(lambda: (state(cid) or {}).get("status") == "stopped", timeout=20, step=0.1),
             f"app container {what}: the held TERM stops it once resumed", json.dumps(state(cid)))
        return
    t.eq((state(cid) or {}).get("status"), "running", f"app container {what}: running again")
    p = kvrun("resume", cid)
    t.ok(p.returncode != 0 and "not paused" in p.stderr, f"app container {what}: resume of a running one refused",
         p.stderr)


def check_pod_netns(cns):
    census = Census(TAG, root, cache=cache, netns=cns)
    before = census.take()
    sbx = f"{TAG}-sbx"
    nspath = f"/run/netns/{cns}"
    # containerd's: the sandbox's shm directory, a tmpfs bound at /dev/shm
    # in the sandbox and in each app container.
    shmdir = os.path.join(tmp, "sbx-shm")
    os.mkdir(shmdir)
    sh("mount", "-t", "tmpfs", "-o", "size=65536k", "kvt-pod-shm", shmdir)
    # The pod's containers may use 3 GiB and 1.5 CPUs (containerd's sums).
    b = make_bundle("b-sbx", dict(CRI_SANDBOX, **{"io.kubernetes.cri.sandbox-id": sbx,
                                                  "io.kubernetes.cri.sandbox-memory": str(3 << 30),
                                                  "io.kubernetes.cri.sandbox-cpu-quota": "150000",
                                                  "io.kubernetes.cri.sandbox-cpu-period": "100000"}),
                    {"network": nspath}, binds=((shmdir, "/dev/shm"),))
    mark = os.path.getsize(log) if os.path.exists(log) else 0
    p = kvrun("--debug", "create", "--bundle", b, sbx)
    if not t.ok(p.returncode == 0, "the pod's sandbox is created in the pod's namespace", p.stderr):
        return
    with open(log, errors="replace") as f:
        f.seek(mark)
        lines = f.read()
    # 3 GiB and 128 MiB for the guest's kernel and init, over the 2 GiB default.
    t.ok("pod: the sandbox's /dev/shm is the pod's" in lines, "the sandbox's /dev/shm (the engine's shm "
         "directory) is made the pod's", "\n".join(l for l in lines.splitlines() if "shm" in l))
    t.ok(re.search(r"kernel .*, \d+ vCPU, 3200 MiB, ", lines),
         "the sandbox's VM is sized for the pod (3200 MiB)",
         "\n".join(l for l in lines.splitlines() if "MiB" in l))
    pv = private(sbx) or {}
    t.ok(pv.get("pod-role") == "sandbox" and pv.get("pod-sandbox") == sbx, "its state records it as the sandbox",
         json.dumps(pv))
    mon = monitor_pid(sbx)
    served = census.take()
    t.ok(len(served["taps"]) == 1, "the sandbox's VM serves the namespace (one TAP)", json.dumps(served["taps"]))

    cases = [
        ("by the CNI path, no annotation", {}, nspath),
        ("by the sandbox monitor's /proc path, no annotation", {}, f"/proc/{mon}/ns/net"),
        ("by containerd's annotations and the CNI path",
         {"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": sbx}, nspath),
    ]
    monitors = set(processes_mentioning(f"{TAG}-sbx"))
    for i, (what, ann, path) in enumerate(cases):
        cid = f"{TAG}-app{i}"
        ns = {"network": path, "ipc": f"/proc/{mon}/ns/ipc", "uts": f"/proc/{mon}/ns/uts"} if i == 2 else \
            {"network": path}
        # containerd's: the pod's cgroup parent, the container's id below it.
        cgp = f"/{TAG}-pod/{cid}" if i == 2 else None
        # CRI-O's: the pod's hostname (the sandbox's, "runc" here) on each
        # app container.
        # The second keeps its shares' locks in the guest: its own
        # annotation says so (the member line's "g").
        locks = "guest" if i == 1 else "host"
        # containerd's: the sandbox's shm directory bound at /dev/shm (case 2).
        bdl = make_bundle(f"b-app{i}", dict(ann, **({"io.kvrun.fs.locks": "guest"} if i == 1 else {})), ns, i == 1,
                          cgp, binds=((shmdir, "/dev/shm"),) if i == 2 else ())
        mounted = None
        if i == 2:
            # containerd's: the rootfs a mount of the engine's, which it
            # unmounts right after the container's delete.
            mounted = os.path.join(bdl, "rootfs")
            sh("mount", "-t", "tmpfs", "kvt-pod-root", mounted)
            os.mkdir(os.path.join(mounted, "bin"))
        mark = os.path.getsize(log)
        p = kvrun("--debug", "create", "--bundle", bdl, cid)
        if not t.ok(p.returncode == 0, f"app container {what}: created in the pod's VM", p.stderr):
            continue
        with open(log, errors="replace") as f:
            f.seek(mark)
            lines = f.read()
        slots = re.findall(r"an app container's share \d+ is slot kvrun-fs\d+, locks on the (\w+)", lines)
        t.ok(slots and all(x == locks for x in slots),
             f"app container {what}: the sandbox's monitor gives its shares slots, locks on the {locks}", slots)
        t.eq("pod: /dev/shm is the pod's" in lines, i == 2,
             f"app container {what}: its /dev/shm is the pod's exactly when it binds the sandbox's shm directory")
        s = state(cid) or {}
        pv = private(cid) or {}
        t.ok(s.get("status") == "created" and s.get("pid", 0) > 0 and s.get("pid") != mon,
             f"app container {what}: created, its own host process", json.dumps(s))
        t.ok(pv.get("pod-role") == "container" and pv.get("pod-sandbox") == sbx and
             int(pv.get("pod-member-pid", "0")) >= 200,
             f"app container {what}: recorded as the pod's, with its process in the VM", json.dumps(pv))
        if cgp:
            with open(f"/proc/{s.get('pid')}/cgroup") as f:
                cgs = f.read()
            t.ok(cgroup_dirs(cgp) and all(line.endswith(":" + cgp) for line in cgs.splitlines()),
                 f"app container {what}: its host process is in its cgroupsPath {cgp} (what the engine reads)", cgs)
        now = census.take()
        t.eq(now["taps"], served["taps"], f"app container {what}: the sandbox keeps its TAP, none added")
        t.eq(now["addrs"], served["addrs"], f"app container {what}: the namespace's addresses unchanged")
        t.eq(set(processes_mentioning(f"{TAG}-sbx")), monitors, f"app container {what}: no second VM")
        if os.environ.get("KVRUN_JAIL", "1") != "0":
            # Its shares' request threads were started with the VM (they
            # alone hold the file server's capabilities).
            t.eq(guestlib.jail_problems(mon), [], f"app container {what}: the sandbox's monitor still jailed")
        p = kvrun("start", cid)
        t.ok(p.returncode == 0 and (state(cid) or {}).get("status") == "running",
             f"app container {what}: started", p.stderr)
        p = kvrun("exec", cid, "echo", "in", "the", "app")
        t.ok(p.returncode == 0 and p.stdout == "in the app\n", f"app container {what}: exec runs in it",
             f"rc {p.returncode} out {p.stdout!r} err {p.stderr!r}")
        p = kvrun("events", "--stats", cid)
        t.ok(p.returncode == 0 and '"type":"stats"' in p.stdout and f'"id":"{cid}"' in p.stdout
             and "kvrun_vm" not in p.stdout, f"app container {what}: events --stats (its own figures)",
             p.stdout + p.stderr)
        p = kvrun("update", "--pids-limit", "100", cid)
        t.ok(p.returncode == 0, f"app container {what}: update of its pids limit", p.stderr)
        pids_max = [os.path.join(d, "pids.max") for d in cgroup_dirs(cgp or "") if "/pids/" in d]
        if pids_max:
            t.eq(open(pids_max[0]).read().strip(), "max",
                 f"app container {what}: its host cgroup (its member proxy's) gets no limit")
        check_member_cpu(cid, what)
        events = check_member_oom(cid, what, sbx, i)
        check_member_pause(cid, what, i)
        if (state(cid) or {}).get("status") != "stopped":
            p = kvrun("kill", cid, "TERM")
            t.ok(p.returncode == 0 and wait_for(lambda: (state(cid) or {}).get("status") == "stopped",
                                                timeout=20, step=0.1),
                 f"app container {what}: kill TERM stops it", p.stderr + json.dumps(state(cid)))
        if events:
            try:
                events.wait(timeout=20)
            except subprocess.TimeoutExpired:
                events.kill()
                events.wait()
            t.eq(events.returncode, 0, f"app container {what}: its events end with it, as runc's do")
        t.ok((state(sbx) or {}).get("status") == "created", f"app container {what}: the sandbox lives on (created)")
        t.eq(kvrun("delete", cid).returncode, 0, f"app container {what}: delete")
        t.ok(state(cid) is None and not os.path.exists(os.path.join(root, cid)), f"app container {what}: gone")
        if cgp:
            t.eq(cgroup_dirs(cgp), [], f"app container {what}: its cgroup removed by its delete")
        if mounted:
            p = subprocess.run(["umount", mounted], capture_output=True, text=True)
            t.ok(p.returncode == 0, f"app container {what}: its rootfs mount can be unmounted after its delete "
                 "while the pod's VM runs on (the VM serves a private copy of the mount)", p.stderr)
            if p.returncode != 0:
                subprocess.run(["umount", "-l", mounted], capture_output=True)
    # A hostname that is not the sandbox's: the UTS namespace's name is the sandbox's.
    refused(census, census.take(), make_bundle("b-apph", cases[2][1], {"network": nspath}, "other-name"),
            f"{TAG}-apph", f"hostname: \"other-name\" is not the pod sandbox {sbx}'s hostname (\"runc\")",
            "an app container with a hostname of its own")
    # runc's pause of the pod's sandbox freezes its pause process only: the
    # sandbox's container's guest cgroup, the VM running on.
    t.eq(kvrun("start", sbx).returncode, 0, "the sandbox started")
    mark = os.path.getsize(log)
    p = kvrun("pause", sbx)
    t.ok(p.returncode == 0 and (state(sbx) or {}).get("status") == "paused", "the sandbox paused",
         p.stderr + json.dumps(state(sbx)))
    with open(log, errors="replace") as f:
        f.seek(mark)
        lines = f.read()
    t.ok("the sandbox's container (guest pid 0) frozen" in lines and "vCPUs paused" not in lines,
         "the sandbox's pause froze its container's guest cgroup, not the VM's vCPUs", lines[-2000:])
    # linux.resources.cpu of an app container: into its guest cgroup; CPUs
    # the pod's VM does not have refused, naming the field.
    b = make_bundle("b-appc", cases[2][1], {"network": nspath}, False)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["linux"].setdefault("resources", {})["cpu"] = {"quota": 20000, "period": 100000, "shares": 256,
                                                        "cpus": "0-63"}
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    refused(census, census.take(), b, f"{TAG}-appc", "linux.resources.cpu.cpus: CPUs",
            "an app container whose cpus the pod's VM does not have")
    # One created and never started: delete --force ends its process in the VM.
    # (Made while the sandbox is paused: the pod's VM runs on.)
    cid = f"{TAG}-appf"
    p = kvrun("create", "--bundle", make_bundle("b-appf", cases[2][1], {"network": nspath}, False), cid)
    if t.ok(p.returncode == 0, "an app container created", p.stderr):
        host = monitor_pid(cid)
        t.eq(kvrun("delete", "--force", cid).returncode, 0, "its delete --force")
        t.ok(wait_for(lambda: not os.path.exists(f"/proc/{host}"), timeout=20, step=0.1),
             "its host process is gone")
    # A paused one: delete refused as runc's, delete --force ends it (SIGKILL
    # reaches a frozen cgroup's processes).
    cid = f"{TAG}-appp"
    p = kvrun("create", "--bundle", make_bundle("b-appp", cases[2][1], {"network": nspath}, False), cid)
    if t.ok(p.returncode == 0 and kvrun("start", cid).returncode == 0 and kvrun("pause", cid).returncode == 0,
            "an app container created, started and paused", p.stderr):
        host = monitor_pid(cid)
        p = kvrun("delete", cid)
        t.ok(p.returncode != 0 and "that is not stopped: paused" in p.stderr, "its delete refused as runc's",
             p.stderr)
        t.eq(kvrun("delete", "--force", cid).returncode, 0, "its delete --force while paused")
        t.ok(wait_for(lambda: not os.path.exists(f"/proc/{host}"), timeout=20, step=0.1) and state(cid) is None,
             "the paused app container is gone, its host process too")
    p = kvrun("resume", sbx)
    t.ok(p.returncode == 0 and (state(sbx) or {}).get("status") == "running", "the sandbox resumed",
         p.stderr + json.dumps(state(sbx)))
    now = census.take()
    t.eq(now["taps"], served["taps"], "after the app containers: the sandbox's TAP as before")

    # The sandbox stops (its VM ends): its pod takes no container any more.
    t.eq(kvrun("kill", sbx, "KILL").returncode, 0, "kill -9 of the sandbox")
    t.ok(wait_for(lambda: (state(sbx) or {}).get("status") == "stopped", timeout=20, step=0.1),
         "the sandbox is stopped", json.dumps(state(sbx)))
    stopped = census.take()
    b = make_bundle("b-late", {"io.kubernetes.cri.container-type": "container",
                               "io.kubernetes.cri.sandbox-id": sbx}, {"network": nspath})
    refused(census, stopped, b, f"{TAG}-late",
            f"pod sandbox {sbx} (from annotation io.kubernetes.cri.sandbox-id) is stopped",
            "an app container of a stopped sandbox")
    t.eq(kvrun("delete", sbx).returncode, 0, "delete of the stopped sandbox")
    t.eq(Census.diff(before, census.take(), ("fds",)), {}, "the namespace is as before, nothing left")
    subprocess.run(["umount", shmdir], capture_output=True)


def fs_threads(pid):
    """The file server's threads of process pid (named "fs-...")."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            n += open(f"/proc/{pid}/task/{tid}/comm").read().startswith("fs-")
        except OSError:
            pass
    return n


def monitor_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def fd_targets(pid):
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return sorted(out)


def check_slot_reuse():
    """More app containers than the VM has slots, one after another."""
    census = Census(TAG, root, cache=cache)
    before = census.take()
    sbx = f"{TAG}-ssbx"
    b = make_bundle("b-ssbx", dict(CRI_SANDBOX, **{"io.kubernetes.cri.sandbox-id": sbx}))
    p = kvrun("--debug", "create", "--bundle", b, sbx)
    if not t.ok(p.returncode == 0, "slots: a pod's sandbox (a VM of 8 slots, none its own)", p.stderr):
        return
    mon = monitor_pid(sbx)
    fds0, threads0, targets0 = monitor_fds(mon), fs_threads(mon), fd_targets(mon)
    app_ann = {"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": sbx}
    mark = os.path.getsize(log) if os.path.exists(log) else 0

    def app(i, verb="fs"):
        name = f"b-slot{i}"
        vol = os.path.join(tmp, f"vol{i}")
        os.makedirs(vol)
        bdl = make_bundle(name, app_ann, hostname=False, args=[verb, "msg", "copied"], binds=[(vol, "/data")])
        with open(os.path.join(bdl, "rootfs", "msg"), "w") as f:
            f.write(f"root of app container {i}\n")
        return bdl, vol

    def run_one(i, verb="fs"):
        """Create (the guest copies its root's msg into its volume), start,
        kill, delete: whether each step went."""
        cid = f"{TAG}-slot{i}"
        bdl, vol = app(i, verb)
        p = kvrun("--debug", "create", "--bundle", bdl, cid)
        if not t.ok(p.returncode == 0, f"slots: app container {i} created", p.stderr):
            return False
        copied = os.path.join(vol, "copied")
        got = open(copied).read() if os.path.exists(copied) else None
        t.eq(got, f"root of app container {i}\n",
             f"slots: app container {i} read its own root and wrote its own volume through its slots")
        good = kvrun("start", cid).returncode == 0
        good = good and kvrun("kill", cid, "KILL").returncode == 0 and \
            wait_for(lambda: (state(cid) or {}).get("status") == "stopped", timeout=20, step=0.1)
        good = good and kvrun("delete", cid).returncode == 0 and state(cid) is None
        return t.ok(good, f"slots: app container {i} started, killed and deleted")

    ran = sum(run_one(i) for i in range(6))
    t.eq(ran, 6, "slots: 6 app containers of 2 slots each, one after another, in a VM of 8 slots")
    t.ok(wait_for(lambda: monitor_fds(mon) == fds0, timeout=20, step=0.2),
         f"slots: the monitor's descriptors back to {fds0} (now {monitor_fds(mon)}): every server closed",
         "\n".join(sorted(set(fd_targets(mon)) - set(targets0))))
    t.eq(fs_threads(mon), threads0, "slots: the monitor's file server threads as before the first")
    with open(log, errors="replace") as f:
        f.seek(mark)
        lines = f.read()
    released = len(re.findall(r"pod: slot \d released", lines))
    t.ok(released >= 12, f"slots: the log tells of each release ({released})")

    # A guest side that never unmounts keeps its own slots, nothing else.
    ran = run_one(6, "fs-keep")
    live = [f"{TAG}-slot{i}" for i in (7, 8, 9)]
    made = 0
    for i, cid in zip((7, 8, 9), live):
        bdl, _ = app(i)
        made += kvrun("create", "--bundle", bdl, cid).returncode == 0
    t.eq(made, 3, "slots: the 6 slots left take 3 more app containers at once")
    bdl, _ = app(10)
    t0 = time.monotonic()
    p = kvrun("create", "--bundle", bdl, f"{TAG}-slot10")
    waited = time.monotonic() - t0
    t.ok(p.returncode not in (0, None) and "the app container needs 2" in p.stderr and
         "are of ended app containers that the guest has not unmounted yet" in p.stderr and
         re.search(r"kvrun-fs\d kvrun-fs\d", p.stderr),
         "slots: one more is refused, naming the slots the guest keeps", p.stderr)
    t.ok(8 <= waited < 40, f"slots: after a bounded wait ({waited:.1f} s)")
    t.ok(state(f"{TAG}-slot10") is None, "slots: nothing of the refused one is left")
    for cid in live:
        kvrun("delete", "--force", cid)
    t.eq(kvrun("delete", "--force", sbx).returncode, 0, "slots: delete --force of the sandbox")
    t.ok(wait_for(lambda: not processes_mentioning(TAG), timeout=20, step=0.1), "slots: no process left",
         processes_mentioning(TAG))
    t.eq(Census.diff(before, census.take(), ("fds",)), {}, "slots: nothing left")


def check_ipc_member():
    census = Census(TAG, root, cache=cache)
    sbx, app = f"{TAG}-isbx", f"{TAG}-iapp"
    p = kvrun("create", "--bundle", make_bundle("b-isbx"), sbx)
    if not t.ok(p.returncode == 0, "a container to join by path is created", p.stderr):
        return
    before = census.take()
    mon = monitor_pid(sbx)
    for typ in ("ipc", "uts"):
        path = f"/proc/{mon}/ns/{typ}"
        refused(census, before, make_bundle(f"b-{typ}app", None, {typ: path}, False), app,
                f"{path} joins the {typ} namespace of container {sbx} (from {typ} namespace {path}), which is not "
                "a pod's sandbox",
                f"a container naming the {typ} namespace of a kvrun container's monitor (not a pod's sandbox)")
    t.eq(kvrun("delete", "--force", sbx).returncode, 0, f"delete --force {sbx}")
    t.ok(wait_for(lambda: not processes_mentioning(TAG), timeout=20, step=0.1), "no process left",
         processes_mentioning(TAG))


# podman 4.3's annotations (values shortened): every container's, and an
# app container's of a pod (CRI-O's names, which kvrun does not read on
# podman's containers: they are found by their namespace paths).
LIBPOD = {"io.container.manager": "libpod", "io.kubernetes.cri-o.TTY": "false",
          "io.podman.annotations.autoremove": "FALSE", "org.opencontainers.image.stopSignal": "15"}


def make_podman_bundle(name, args, annotations=None, namespaces=None, hostname=True):
    b = make_bundle(name, dict(LIBPOD, **(annotations or {})), namespaces, hostname)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["args"] = args
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f)
    return b


def check_podman_pod():
    """A podman pod: its infra container (no CRI-O type, `/catatonit -P`)
    is the pod's sandbox; its app containers join the infra's network, IPC,
    UTS (and, where cgroup namespaces are private, cgroup) namespaces by
    /proc/<pid>/ns/ paths, pid = the infra's state pid; `podman pod stop`
    deletes the infra before its app containers are killed."""
    census = Census(TAG, root, cache=cache)
    before = census.take()
    plain, infra = f"{TAG}-pmplain", f"{TAG}-pminfra"
    # An ordinary podman container: no sandbox, no container joins it.
    p = kvrun("create", "--bundle", make_podman_bundle("b-pmplain", ["httpd", "-f"]), plain)
    if t.ok(p.returncode == 0, "an ordinary podman container is created", p.stderr):
        t.ok("pod-role" not in (private(plain) or {}), "it is not a pod's sandbox", json.dumps(private(plain)))
        mon = monitor_pid(plain)
        made = census.take()
        refused(census, made, make_podman_bundle("b-pmjoin", ["sh"], None, {"ipc": f"/proc/{mon}/ns/ipc"}, False),
                f"{TAG}-pmjoin", f"joins the ipc namespace of container {plain}", "a container joining an "
                "ordinary podman container's IPC namespace")
        t.eq(kvrun("delete", "--force", plain).returncode, 0, "its delete --force")
    p = kvrun("create", "--bundle", make_podman_bundle("b-pminfra", ["/catatonit", "-P"], None, None, "kvtpod"),
              infra)
    if not t.ok(p.returncode == 0, "podman's infra container (/catatonit -P) is created", p.stderr):
        return
    pv = private(infra) or {}
    t.ok(pv.get("pod-role") == "sandbox", "its state records it as the pod's sandbox", json.dumps(pv))
    t.eq(kvrun("start", infra).returncode, 0, "the infra container starts")
    mon = monitor_pid(infra)
    monitors = set(processes_mentioning(infra))
    ns = {typ: f"/proc/{mon}/ns/{f}" for typ, f in (("network", "net"), ("ipc", "ipc"), ("uts", "uts"),
                                                   ("cgroup", "cgroup"))}
    ann = {"io.kubernetes.cri-o.ContainerType": "container", "io.kubernetes.cri-o.SandboxID": infra}
    app = f"{TAG}-pmapp"
    p = kvrun("create", "--bundle", make_podman_bundle("b-pmapp", ["httpd", "-f"], ann, ns, False), app)
    if t.ok(p.returncode == 0, "an app container joining the infra's network, IPC, UTS and cgroup namespaces: "
            "created", p.stderr):
        pv = private(app) or {}
        t.ok(pv.get("pod-role") == "container" and pv.get("pod-sandbox") == infra and "pod-member-pid" in pv,
             "it runs in the infra's VM", json.dumps(pv))
        t.eq(set(processes_mentioning(infra)), monitors, "no second VM")
        t.eq(kvrun("start", app).returncode, 0, "the app container starts")
        p = kvrun("exec", app, "echo", "in", "the", "app")
        t.ok(p.returncode == 0 and p.stdout == "in the app\n", "exec runs in it", p.stderr)
    userns = dict(ns, user=f"/proc/{mon}/ns/user")
    refused(census, census.take(), make_podman_bundle("b-pmuser", ["sh"], ann, userns, False), f"{TAG}-pmuser",
            f"{userns['user']}: an app container of a pod joins only its sandbox's network, IPC, UTS, PID and "
            "cgroup namespaces, not its user namespace", "an app container joining the infra's user namespace")
    # podman pod stop: SIGTERM to the infra and the app, the infra's
    # delete --force, then SIGKILL to the app and its delete --force.
    t.eq(kvrun("kill", infra, "TERM").returncode, 0, "pod stop: kill TERM of the infra")
    t.eq(kvrun("delete", "--force", infra).returncode, 0, "pod stop: delete --force of the infra")
    t.ok(wait_for(lambda: (state(app) or {}).get("status") == "stopped", timeout=20, step=0.1),
         "the app container is stopped with the pod's VM", json.dumps(state(app)))
    p = kvrun("kill", app, "KILL")
    t.ok(p.returncode != 0 and "container not running" in p.stderr, "kill of the stopped app container: runc's "
         "\"container not running\"", p.stderr)
    t.eq(kvrun("delete", "--force", app).returncode, 0, "delete --force of the app container")
    t.eq(Census.diff(before, census.take(), ("fds",)), {}, "nothing of the pod left")


try:
    check_missing_sandbox()
    check_ipc_member()
    check_slot_reuse()
    check_podman_pod()
    why = netlib.skip_reason()
    if why:
        t.skip("the pod network namespace parts", why)
    else:
        cns, pns = netlib.netns("podc"), netlib.netns("podp")
        sh("ip", "-n", cns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0", "netns", pns)
        sh("ip", "-n", cns, "addr", "add", "10.199.41.2/24", "dev", "eth0")
        sh("ip", "-n", cns, "link", "set", "eth0", "up")
        sh("ip", "-n", pns, "link", "set", "peer0", "up")
        check_pod_netns(cns)
finally:
    for pid in processes_mentioning(TAG):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    for d in cgroup_dirs(f"/{TAG}-pod"):
        for sub, _, _ in sorted(os.walk(d), key=lambda w: -len(w[0])):
            try:
                os.rmdir(sub)
            except OSError as e:
                t.diag(f"cgroup {sub} left: {e}")
if t.failed:
    t.diag(f"kept {tmp}")
    if os.path.exists(log):
        t.diag("".join(open(log, errors="replace").readlines()[-60:]))
else:
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
