#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A podman pod (podman 4.3 from Debian, conmon, CNI) with kvrun as its
--runtime (the pod in one VM, its infra container's: docs/runtime.md,
"Pods"), or runc for comparison (`test_engines_podpod.py runc`).

podman is set up as in test_engines_podman.py (everything private to the
test: --root, --runroot, --tmpdir, containers.conf, a CNI bridge of its
own); the runtime's wrapper also gives it a --root under the test's
directory (conmon gives none), so that what it keeps can be counted. The
infra container restores the slow suite's template with one network
device (guestlib.suite_template(nics=1), built once per build tree): one
Linux boot, the template's.

Checks: `podman pod create`; `podman run -d --pod` of "web" (busybox httpd
on :8080) and "fetch" (wget of http://localhost:8080/ in a loop); fetch
gets web's page (the pod's localhost), in `podman logs`; both see the
pod's address on eth0 and the pod's hostname; the host reaches the pod's
address; `podman exec` in web (output, exit code); `podman logs` of web;
`podman stop` of fetch leaves web serving; `podman pod stop`, `pod rm`;
nothing left: podman's containers and pods, the runtime's --root, runtime
processes, kvrun TAPs, mounts under the test's directory, the pod's
cgroups. Under kvrun also: the infra's VM restored from the template, one
VM for the pod (the one process of the test holding a KVM VM is the
infra's monitor), each app container's pid a VM-less process in its
cgroup below the pod's."""
import json
import os
import subprocess
import sys
import time

import enginelib as el
import guestlib
from taplib import Tap
from test_engines_podman import NET, Podman

RUNTIME = sys.argv[1] if len(sys.argv) > 1 else "kvrun"
T = el.BOOT_TIMEOUT
PAGE = "hello-from-the-container\n"  # enginelib.rootfs_tar()'s /www/index.html
POD = "kvt-pod-%d" % os.getpid()
FETCH = ("echo fetcher-up; while true; do wget -q -O - http://localhost:8080/ 2>&1 && echo fetched-ok; "
         "sleep 2; done")


def kvrun_state(wd, cid):
    """kvrun's state of a container under the wrapper's --root ({} when
    there is none)."""
    p = el.run([el.KVRUN, "--root", wd.runtime_root, "state", cid], timeout=60)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


def ctr_field(pm, name, fmt):
    return pm("inspect", "-f", fmt, name, timeout=60).stdout.strip()


def retry_exec(pm, name, script, want, tries=5):
    """A podman exec until its stdout has want: on an emulating host a short
    guest process now and then dies of SIGSEGV (guestlib.GUEST_SEGV_GAP)."""
    p = None
    for _ in range(tries):
        p = pm("exec", name, "sh", "-c", script)
        if p.returncode == 0 and want in p.stdout:
            break
        time.sleep(2)
    return p


def check_one_vm(t, wd, pm, infra, ids):
    """One VM for the pod: the infra's monitor is the one process with a
    KVM VM; each app container's pid (its member proxy) is another,
    VM-less process, in the cgroup podman gave it (below the pod's)."""
    mon = kvrun_state(wd, infra).get("pid")
    vms = el.vm_processes(wd)
    el.eq(t, vms, [mon], "one VM for the pod: the infra container's monitor")
    pids = {name: kvrun_state(wd, cid).get("pid") for name, cid in ids.items()}
    t.ok(all(p and p != mon and p not in vms for p in pids.values()) and len(set(pids.values())) == len(pids),
         "each app container's pid is a process of its own, without a VM", json.dumps(pids))
    cgs, want = {}, {}
    for name, cid in ids.items():
        want[name] = ctr_field(pm, cid, "{{.HostConfig.CgroupParent}}") + f"/libpod-{cid}"
        cgs[name] = el.read_text(f"/proc/{pids[name]}/cgroup") or ""
    t.ok(all(line.endswith(":" + want[name]) for name, text in cgs.items() for line in text.splitlines()),
         "each app container's pid is in its cgroup below the pod's (what podman reads)",
         json.dumps({"want": want, "got": cgs}))


def run_pod(t, wd, pm, template):
    p = pm("pod", "create", "--name", POD, "--network", NET, "--cgroup-parent", pm.cgroup_parent, timeout=300)
    if not t.ok(p.returncode == 0, "podman pod create", p.stdout + p.stderr):
        return False
    infra = pm("pod", "inspect", "-f", "{{.InfraContainerID}}", POD, timeout=60).stdout.strip()
    t.ok(len(infra) == 64, f"the pod has an infra container ({infra[:12]})")
    ids = {}
    for name, cmd in (("web", ["httpd", "-f", "-vv", "-p", "8080", "-h", "/www"]), ("fetch", ["sh", "-c", FETCH])):
        t0 = time.monotonic()
        p = pm("run", "-d", "--pod", POD, "--name", name, el.IMAGE, *cmd)
        cid = p.stdout.strip()
        if not t.ok(p.returncode == 0 and len(cid) == 64,
                    f"podman run -d --pod {name} ({time.monotonic() - t0:.0f} s)", p.stdout + p.stderr):
            return True
        ids[name] = cid
    web, fetch = ids["web"], ids["fetch"]
    p = pm("ps", "-q", "--no-trunc", "--filter", f"pod={POD}", "--filter", "status=running")
    el.eq(t, sorted(p.stdout.split()), sorted([infra, web, fetch]), "podman ps: the infra and both containers run",
          p.stderr)
    ip = ctr_field(pm, infra, "{{.NetworkSettings.Networks.%s.IPAddress}}" % NET)
    t.ok(ip.count(".") == 3, f"the pod has an address on podman's bridge network ({ip})")
    if RUNTIME == "kvrun":
        st = kvrun_state(wd, infra)
        t.ok(st.get("status") == "running" and st.get("pid", 0) > 0, "kvrun state: the infra container runs",
             json.dumps(st))
        if template.ok:
            guestlib.check_template_use(t, "the pod's infra container", pid=st.get("pid"), template_dir=template.dir)
        else:
            t.skip("the pod's infra container: its VM starts from the suite template", "no template (its build failed)")
        check_one_vm(t, wd, pm, infra, ids)

    def fetched():
        out = pm("logs", fetch, timeout=60).stdout
        return out if "fetched-ok" in out else ""

    logs = el.wait_for(fetched, 300, 3)
    t.ok("fetcher-up" in logs and PAGE + "fetched-ok" in logs,
         "fetch gets web's page from http://localhost:8080/ (the pod's localhost), in podman logs",
         pm("logs", fetch, timeout=60).stdout[-1500:] + pm("logs", web, timeout=60).stderr[-500:])
    for name in ids:
        p = retry_exec(pm, name, "ip -4 -o addr show dev eth0; hostname", ip + "/")
        t.ok(p.returncode == 0 and f" {ip}/" in p.stdout and p.stdout.rstrip().endswith("\n" + POD),
             f"{name} sees the pod's address on eth0 and the pod's hostname", p.stdout + p.stderr)
    body = el.wait_for(lambda: PAGE in (b := el.http_get(f"http://{ip}:8080/")) and b, 120, 2)
    el.eq(t, body or el.http_get(f"http://{ip}:8080/"), PAGE, "the host reaches web at the pod's address")
    p = pm("exec", "web", "sh", "-c", "echo exec-out-$((6*7)); echo exec-err >&2; exit 3")
    el.eq(t, (p.returncode, p.stdout, p.stderr), (3, "exec-out-42\n", "exec-err\n"),
          "podman exec in web: stdout, stderr, exit code")
    p = pm("logs", "web", timeout=60)
    t.ok(p.returncode == 0 and "response:200" in p.stdout + p.stderr, "podman logs of web: httpd's request log",
         (p.stdout + p.stderr)[-1500:])

    p = pm("stop", "-t", "5", "fetch", timeout=300)
    t.ok(p.returncode == 0, "podman stop fetch", p.stdout + p.stderr)
    st = ctr_field(pm, "fetch", "{{.State.Status}} {{.State.ExitCode}}")
    el.eq(t, st, "exited 137", "fetch exited, killed after the stop timeout (its sh ignores SIGTERM as pid 1)")
    p = pm("ps", "-q", "--no-trunc", "--filter", f"pod={POD}", "--filter", "status=running")
    el.eq(t, sorted(p.stdout.split()), sorted([infra, web]), "podman ps: the infra and web still run", p.stderr)
    body = el.wait_for(lambda: PAGE in (b := el.http_get(f"http://{ip}:8080/")) and b, 30, 2)
    el.eq(t, body or el.http_get(f"http://{ip}:8080/"), PAGE, "web still serves the host after fetch stopped")
    p = retry_exec(pm, "web", "wget -q -O - http://localhost:8080/", PAGE)
    el.eq(t, (p.returncode, p.stdout.strip()), (0, PAGE.strip()), "web still serves localhost after fetch stopped",
          p.stderr)
    if RUNTIME == "kvrun":
        el.eq(t, kvrun_state(wd, fetch), {}, "kvrun has no state of fetch left")
        el.eq(t, el.vm_processes(wd), [kvrun_state(wd, infra).get("pid")], "still the infra's one VM")
    return True


def container_cgroups(pm):
    """The containers' cgroup directories (libpod-<id>) left below the
    test's cgroup parent, in any hierarchy. podman leaves the pod's own in
    the named hierarchies (systemd, unified on a hybrid host) under runc
    too; the test's cleanup removes those."""
    left = []
    for h in os.listdir("/sys/fs/cgroup"):
        base = os.path.join("/sys/fs/cgroup", h, pm.cgroup_parent.strip("/"))
        for d, subs, _ in os.walk(base):
            left += [os.path.join(d, s) for s in subs if s.startswith("libpod-")]
    return sorted(left)


def mounts_under(path):
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(path + "/")]


def main():
    t = Tap()
    why = el.problem(RUNTIME, ["podman", "conmon", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local"])
    if why:
        t.skip_all(why)
    env, template, config = {}, None, {}
    if RUNTIME == "kvrun":
        # The infra's VM has the pod's eth0: the template with one network
        # device, for the plan the wrapper gives kvrun.
        kernel, _ = el.find_kernel()
        template = guestlib.suite_template(t, kernel, nics=1)
        env = dict(template.env)
        env.update(guestlib.plan_env())
        if el.plan() == "subset":
            # podman gives create 240 s: should the template not be used,
            # the infra's cold boot here outlasts it.
            config = {"early_create": True}
    print(f"# runtime {RUNTIME}: one podman pod with two containers"
          + (f", kvrun config {json.dumps(config)}" if config else ""))
    wd = el.Workdir("kvt-pp-", RUNTIME, config, env=env, root=True)
    t_start = time.monotonic()
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
        if run_pod(t, wd, pm, template):
            p = pm("pod", "stop", POD, timeout=300)
            t.ok(p.returncode == 0, "podman pod stop", p.stdout + p.stderr)
            # httpd, pid 1, ignores SIGTERM: runc's is killed after the stop
            # timeout, kvrun's with the pod's VM when the infra is deleted.
            st = ctr_field(pm, "web", "{{.State.Status}} {{.State.ExitCode}}")
            el.eq(t, st, "exited 137", "web exited as killed by SIGKILL")
            p = pm("pod", "rm", POD, timeout=300)
            t.ok(p.returncode == 0, "podman pod rm", p.stdout + p.stderr)
            p = pm("pod", "ps", "-q")
            el.eq(t, (p.stdout.strip(), pm("ps", "-a", "-q").stdout.strip()), ("", ""),
                  "podman pod ps, ps -a: nothing left", p.stderr)
        root = wd.runtime_root
        el.eq(t, os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under the runtime's --root")
        el.wait_for(lambda: not [x for x in wd.leftovers() if x not in el.processes_mentioning("podman")], 30)
        procs = [x for x in wd.leftovers() if x not in el.processes_mentioning("podman")]
        el.eq(t, procs, [], "no runtime process left")
        el.eq(t, el.host_taps(), [], "no kvrun TAP in the host's network namespace")
        el.eq(t, mounts_under(wd.path), [], "no mount left under the test's directory (podman's storage, "
              "the runtime's --root)")
        el.eq(t, container_cgroups(pm), [], "no container cgroup left below the pod's")
        wd.report(t)
    finally:
        if pm and pm("pod", "ps", "-q", timeout=60).stdout.strip():
            pm("pod", "rm", "-f", "-a", timeout=300)  # after a failure: podman's own cleanup first
        pm and pm("system", "reset", "--force", timeout=120)
        t.diag(f"took {time.monotonic() - t_start:.0f} s")
        wd.close(keep=os.environ.get("KVRUN_TEST_KEEP") == "1")
    t.ok(not el.link_exists(pm.bridge), "the test's bridge is gone")
    t.done()


if __name__ == "__main__":
    main()
