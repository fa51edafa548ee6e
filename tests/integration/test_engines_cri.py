#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Kubernetes pod through containerd's CRI plugin (containerd 1.6 from
Debian) and crictl, as the kubelet makes one, with kvrun as the runc shim's
BinaryName (the pod in one VM: docs/runtime.md, "Pods"), or runc for
comparison (`test_engines_cri.py runc`).

Everything is the test's own: containerd's root, state, sockets and config
(the CRI plugin on, netns mounts under its state directory, oomScoreAdj
kept at containerd's own: root here may lack CAP_SYS_RESOURCE, and runc
then fails the sandbox's -998), the runtime's --root (the shim's Root
option), a CNI bridge + host-local network (own bridge, subnet, IPAM
directory and conf dir; Debian's plugins in /usr/lib/cni), the pod's
cgroup parent, crictl's config, and the images: a static pause program
compiled here and a busybox-static rootfs, each an OCI archive
`ctr -n k8s.io images import`ed (no registry is reachable). The pod's
sandbox restores the slow suite's template with one network device
(guestlib.suite_template(nics=1), built once per build tree): one Linux
boot, the template's.

Checks: runp; two containers in the pod, "web" (busybox httpd on :8080)
and "fetch" (wget of http://localhost:8080/ in a loop, to its log), each
with a PID namespace of its own as the kubelet asks: fetch gets web's
page (the pod's localhost); both see the pod's IP on eth0 and its
hostname; the host reaches podIP:8080; `crictl exec` (sync and streamed,
exit codes); `crictl logs`; `crictl stop`/`rm` of fetch leaves web
serving; `stopp`/`rmp` leave nothing under the runtime's --root and no
kvrun TAP in the host's network namespace. Under kvrun also: the sandbox
restored from the template, one VM for the pod (the one process holding a
KVM VM is the sandbox's monitor), each app container's pid a VM-less
process in its cgroup below the pod's, and no kvrun process left."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

import enginelib as el
import guestlib
from taplib import Tap

RUNTIME = sys.argv[1] if len(sys.argv) > 1 else "kvrun"
T = el.BOOT_TIMEOUT
NS = "k8s.io"
PAUSE_REF = "docker.io/library/kvt-pause:1"
PAGE = "hello-from-the-container\n"  # enginelib.rootfs_tar()'s /www/index.html
HOSTNAME = "kvt-web-pod"
CNI_BIN = "/usr/lib/cni"

# The sandbox's process: pause(2) until SIGTERM or SIGINT, reaping
# children (the kubelet's pause does the same).
PAUSE_C = r"""
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) ; }

int main(void)
{
	struct sigaction q = {.sa_handler = quit}, r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};

	sigaction(SIGINT, &q, 0);
	sigaction(SIGTERM, &q, 0);
	sigaction(SIGCHLD, &r, 0);
	for (;;)
		pause();
}
"""


def find_crictl():
    """(path or None, [places tried]): $KVRUN_TEST_CRICTL, crictl on $PATH,
    else the static build kept in shared/tools/crictl (Debian 12 has no
    package)."""
    env = os.environ.get("KVRUN_TEST_CRICTL")
    if env:
        return (env if os.access(env, os.X_OK) else None), [f"$KVRUN_TEST_CRICTL={env}"]
    if shutil.which("crictl"):
        return shutil.which("crictl"), ["$PATH"]
    path, tried = guestlib.shared_file("tools", "crictl", "crictl")
    return path, ["$PATH"] + tried


def pause_archive(wd):
    """The pause image: a static pause program, alone in its layer."""
    src, exe = os.path.join(wd.path, "pause.c"), os.path.join(wd.path, "pause")
    with open(src, "w") as f:
        f.write(PAUSE_C)
    subprocess.run(["cc", "-static", "-Os", "-s", "-o", exe, src], check=True, capture_output=True)
    layer = os.path.join(wd.path, "pause-layer.tar")
    with tarfile.open(layer, "w") as t:
        t.add(exe, "pause")
        for d in ("dev", "proc", "sys", "etc"):
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            t.addfile(ti)
    archive = os.path.join(wd.path, "pause.oci.tar")
    el.oci_archive(layer, archive, PAUSE_REF, ["/pause"])
    return archive


class Cri:
    """containerd with its CRI plugin, a CNI network and crictl, all the
    test's own."""

    def __init__(self, wd, crictl):
        d = wd.path
        self.wd = wd
        self.sock = os.path.join(d, "containerd.sock")
        self.runc_root = wd.sub("runc-root")
        net = el.free_subnet()
        self.subnet = net
        # Not "kvt...": kvrun's TAPs are named so (enginelib.KVRUN_TAP_RE).
        self.bridge = "crikv%d" % (os.getpid() % 100000)
        wd.late_cleanups.append(lambda: subprocess.run(["ip", "link", "del", self.bridge], capture_output=True))
        netdir = wd.sub("cni")
        with open(os.path.join(netdir, "10-kvt.conflist"), "w") as f:
            json.dump({"cniVersion": "0.4.0", "name": "kvt-cri", "plugins": [{
                "type": "bridge", "bridge": self.bridge, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": wd.sub("ipam"), "routes": [{"dst": "0.0.0.0/0"}],
                         "ranges": [[{"subnet": net + "0/24", "gateway": net + "1"}]]}}]}, f)
        cfg = os.path.join(d, "containerd.toml")
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        with open(cfg, "w") as f:
            f.write(f"""version = 2
root = "{wd.sub('root')}"
state = "{wd.sub('state')}"
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{wd.sub('opt')}"
[{cri}]
  sandbox_image = "{PAUSE_REF}"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # Root here may lack CAP_SYS_RESOURCE: no oomScoreAdj below containerd's own.
  restrict_oom_score_adj = true
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "kvt"
[{cri}.containerd.runtimes.kvt]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.kvt.options]
  BinaryName = "{wd.wrapper}"
  Root = "{self.runc_root}"
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{netdir}"
  max_conf_num = 1
""")
        self.daemon = wd.daemon("containerd", ["containerd", "--config", cfg, "--log-level", "info"])
        self.crictl_cfg = os.path.join(d, "crictl.yaml")
        with open(self.crictl_cfg, "w") as f:
            f.write(f"runtime-endpoint: unix://{self.sock}\nimage-endpoint: unix://{self.sock}\n"
                    f"timeout: {T + 120}\npull-image-on-create: false\n")
        self.crictl = crictl
        # The pod's cgroup parent (cgroupfs: the sandbox's and each
        # container's cgroup is <parent>/<id>).
        self.cgroup_parent = "/kvt-cri-%d" % os.getpid()
        wd.late_cleanups.append(lambda: el.remove_cgroup_parent(self.cgroup_parent))

    def ctr(self, *args, timeout=300, **kw):
        return el.run(["ctr", "-a", self.sock, "-n", NS] + list(args), timeout=timeout, **kw)

    def __call__(self, *args, timeout=T + 180, **kw):
        return el.run([self.crictl, "--config", self.crictl_cfg] + list(args), timeout=timeout, **kw)

    def ready(self):
        ok = el.wait_for(lambda: not self.daemon.alive() or self("version", timeout=10).returncode == 0, 60)
        return ok and self.daemon.alive()

    def json_file(self, name, obj):
        path = os.path.join(self.wd.path, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def kvrun_root(self):
        return os.path.join(self.runc_root, NS)

    def kvrun_state(self, cid):
        """kvrun's state of a container under the shim's --root ({} when
        there is none)."""
        p = el.run([el.KVRUN, "--root", self.kvrun_root(), "state", cid], timeout=60)
        try:
            return json.loads(p.stdout)
        except ValueError:
            return {}


# As the kubelet sets them (CRI's default, mode 0, is POD: the sandbox's
# PID namespace): each container a PID namespace of its own (mode 1,
# CONTAINER), the pod's network and IPC.
NAMESPACES = {"network": 0, "pid": 1, "ipc": 0}


def pod_config(wd, cri):
    return {"metadata": {"name": "kvt-web", "namespace": "kvt", "uid": f"kvt-web-{os.getpid()}", "attempt": 0},
            "hostname": HOSTNAME, "log_directory": wd.sub("pod-logs"),
            "linux": {"cgroup_parent": cri.cgroup_parent,
                      "security_context": {"namespace_options": NAMESPACES}}}


def container_config(name, command):
    return {"metadata": {"name": name}, "image": {"image": el.IMAGE_REF}, "command": command,
            "log_path": f"{name}.log", "linux": {"security_context": {"namespace_options": NAMESPACES}}}


FETCH = ("echo fetcher-up; while true; do wget -q -O - http://localhost:8080/ 2>&1 && echo fetched-ok; "
         "sleep 2; done")


def exec_sync(cri, cid, script, timeout=300):
    return cri("exec", "-s", "--timeout", str(timeout), cid, "sh", "-c", script, timeout=timeout + 60)


def retry_exec(cri, cid, script, want, tries=5):
    """A sync exec until its stdout has want: on an emulating host a short
    guest process now and then dies of SIGSEGV (guestlib.GUEST_SEGV_GAP)."""
    p = None
    for _ in range(tries):
        p = exec_sync(cri, cid, script)
        if p.returncode == 0 and want in p.stdout:
            break
        time.sleep(2)
    return p


def run_pod(t, wd, cri, template):
    pod_json = cri.json_file("pod.json", pod_config(wd, cri))
    t0 = time.monotonic()
    p = cri("runp", pod_json)
    pod = p.stdout.strip()
    took = time.monotonic() - t0
    if not t.ok(p.returncode == 0 and len(pod) == 64, f"crictl runp: the pod's sandbox runs ({took:.0f} s)",
                p.stdout + p.stderr):
        return
    info = json.loads(cri("inspectp", pod).stdout or "{}")
    ip = info.get("status", {}).get("network", {}).get("ip", "")
    t.ok(ip.startswith(cri.subnet) and info.get("status", {}).get("state") == "SANDBOX_READY",
         f"inspectp: the pod is ready with an address on the CNI bridge ({ip})",
         json.dumps(info.get("status", {}))[:2000])
    if RUNTIME == "kvrun":
        st = cri.kvrun_state(pod)
        t.ok(st.get("status") == "running" and st.get("pid", 0) > 0, "kvrun state: the sandbox runs", json.dumps(st))
        check_template(t, wd, pod, template)

    ids = {}
    for name, cmd in (("web", ["httpd", "-f", "-vv", "-p", "8080", "-h", "/www"]), ("fetch", ["sh", "-c", FETCH])):
        cfg = cri.json_file(f"{name}.json", container_config(name, cmd))
        p = cri("create", "--no-pull", pod, cfg, pod_json)
        cid = p.stdout.strip()
        if not t.ok(p.returncode == 0 and len(cid) == 64, f"crictl create {name} in the pod", p.stdout + p.stderr):
            return pod
        ids[name] = cid
        p = cri("start", cid)
        if not t.ok(p.returncode == 0, f"crictl start {name}", p.stdout + p.stderr):
            return pod
    web, fetch = ids["web"], ids["fetch"]
    p = cri("ps", "-q", "--state", "Running", "--pod", pod)
    el.eq(t, sorted(p.stdout.split()), sorted(ids.values()), "crictl ps: both containers run", p.stderr)
    if RUNTIME == "kvrun":
        check_one_vm(t, wd, cri, pod, ids)

    def fetched():
        out = cri("logs", fetch, timeout=60).stdout
        return out if "fetched-ok" in out else ""

    logs = el.wait_for(fetched, 300, 3)
    t.ok("fetcher-up" in logs and PAGE + "fetched-ok" in logs,
         "fetch gets web's page from http://localhost:8080/ (the pod's localhost), in crictl logs",
         cri("logs", fetch, timeout=60).stdout[-1500:] + cri("logs", web, timeout=60).stdout[-500:])
    for name, cid in ids.items():
        p = retry_exec(cri, cid, "ip -4 -o addr show dev eth0; hostname", ip + "/")
        t.ok(p.returncode == 0 and f" {ip}/" in p.stdout and p.stdout.rstrip().endswith("\n" + HOSTNAME),
             f"{name} sees the pod's IP on eth0 and the pod's hostname", p.stdout + p.stderr)
    body = el.wait_for(lambda: PAGE in (b := el.http_get(f"http://{ip}:8080/")) and b, 120, 2)
    el.eq(t, body or el.http_get(f"http://{ip}:8080/"), PAGE, "the host reaches web at the pod's IP:8080")
    # crictl exec -s prints the command's stdout, then its stderr, each with
    # a newline, on its own stdout; a command's non-zero status is crictl's
    # error, which names it.
    p = exec_sync(cri, web, "echo exec-out-$((6*7)); echo exec-err >&2")
    t.ok(p.returncode == 0 and p.stdout.split() == ["exec-out-42", "exec-err"],
         "crictl exec -s: stdout, then stderr", f"rc {p.returncode}\n{p.stdout}{p.stderr}")
    p = exec_sync(cri, web, "exit 3")
    t.ok(p.returncode != 0 and "exited with 3" in p.stderr, "crictl exec -s: the exit code",
         f"rc {p.returncode}\n{p.stdout}{p.stderr}")
    p = cri("exec", fetch, "cat", "/etc/hostname", timeout=300)
    el.eq(t, (p.returncode, p.stdout.strip()), (0, HOSTNAME), "crictl exec (streamed): /etc/hostname", p.stderr)
    p = cri("logs", web, timeout=60)
    t.ok(p.returncode == 0 and "response:200" in p.stdout + p.stderr, "crictl logs of web: httpd's request log",
         (p.stdout + p.stderr)[-1500:])

    p = cri("stop", "--timeout", "10", fetch, timeout=300)
    t.ok(p.returncode == 0, "crictl stop fetch", p.stdout + p.stderr)
    p = cri("rm", fetch, timeout=300)
    t.ok(p.returncode == 0, "crictl rm fetch", p.stdout + p.stderr)
    p = cri("ps", "-a", "-q", "--pod", pod)
    el.eq(t, p.stdout.split(), [web], "crictl ps: only web left", p.stderr)
    body = el.wait_for(lambda: PAGE in (b := el.http_get(f"http://{ip}:8080/")) and b, 30, 2)
    el.eq(t, body or el.http_get(f"http://{ip}:8080/"), PAGE, "web still serves the host after fetch is gone")
    p = retry_exec(cri, web, "wget -q -O - http://localhost:8080/", PAGE)
    el.eq(t, (p.returncode, p.stdout.strip()), (0, PAGE.strip()), "web still serves localhost after fetch is gone",
          p.stderr)
    if RUNTIME == "kvrun":
        el.eq(t, cri.kvrun_state(fetch), {}, "kvrun has no state of fetch left")
        el.eq(t, el.vm_processes(wd), [cri.kvrun_state(pod).get("pid")], "still the sandbox's one VM")
    return pod


def check_template(t, wd, pod, template):
    """The sandbox's VM restored from the template, by kvrun's --log (the
    log.json the shim gives it, in the sandbox's bundle)."""
    if not template.ok:
        t.skip("the pod's sandbox: its VM starts from the suite template", "no template (its build failed)")
        return
    log = ""
    for d, _, files in os.walk(os.path.join(wd.path, "state")):
        if os.path.basename(d) == pod and "log.json" in files:
            log = el.read_text(os.path.join(d, "log.json")) or ""
    guestlib.check_template_use(t, "the pod's sandbox", log=log)


def check_one_vm(t, wd, cri, pod, ids):
    """One VM for the pod: the sandbox's monitor is the one process with a
    KVM VM; each app container's pid (its member proxy) is another,
    VM-less process."""
    mon = cri.kvrun_state(pod).get("pid")
    vms = el.vm_processes(wd)
    el.eq(t, vms, [mon], "one VM for the pod: the sandbox's monitor")
    pids = {name: cri.kvrun_state(cid).get("pid") for name, cid in ids.items()}
    t.ok(all(p and p != mon and p not in vms for p in pids.values()) and len(set(pids.values())) == len(pids),
         "each app container's pid is a process of its own, without a VM", json.dumps(pids))
    cgs = {name: el.read_text(f"/proc/{pids[name]}/cgroup") or "" for name in ids}
    t.ok(all(line.endswith(f":{cri.cgroup_parent}/{ids[name]}") for name, text in cgs.items()
             for line in text.splitlines()),
         "each app container's pid is in its cgroup below the pod's (what the shim reads)", json.dumps(cgs))


def main():
    t = Tap()
    crictl, tried = find_crictl()
    if not crictl:
        t.skip_all("crictl is not installed (tried " + ", ".join(tried) + ")")
    why = el.problem(RUNTIME, ["containerd", "ctr", "containerd-shim-runc-v2", "cc"] +
                     [os.path.join(CNI_BIN, p) for p in ("bridge", "host-local", "loopback")])
    if why:
        t.skip_all(why)
    env, template = {}, None
    if RUNTIME == "kvrun":
        # The sandbox's VM has the pod's eth0: the template with one
        # network device, for the plan the wrapper gives kvrun (the
        # kernel in its config file, kvrun's defaults).
        kernel, _ = el.find_kernel()
        template = guestlib.suite_template(t, kernel, nics=1)
        env = dict(template.env)
        env.update(guestlib.plan_env())
    print(f"# runtime {RUNTIME}: crictl {crictl}, one pod with two containers")
    wd = el.Workdir("kvt-cri-", RUNTIME, env=env)
    t_start = time.monotonic()
    cri = None
    try:
        cri = Cri(wd, crictl)
        if not cri.ready():
            why = "containerd cannot start here: " + cri.daemon.log_tail(5).replace("\n", " | ")
            wd.close()
            t.skip_all(why)
        for what, archive in (("pause", pause_archive(wd)), ("busybox", os.path.join(wd.path, "image.oci.tar"))):
            if what == "busybox":
                el.oci_archive(wd.rootfs_tar, archive)
            p = cri.ctr("images", "import", archive)
            t.ok(p.returncode == 0, f"ctr -n {NS} images import of the {what} image", p.stdout + p.stderr)
        p = cri("images", "-q")
        t.ok(p.returncode == 0 and len(p.stdout.split()) == 2, "crictl images: both images", p.stdout + p.stderr)
        pod = run_pod(t, wd, cri, template)
        if pod:
            p = cri("stopp", pod, timeout=300)
            t.ok(p.returncode == 0, "crictl stopp", p.stdout + p.stderr)
            p = cri("rmp", pod, timeout=300)
            t.ok(p.returncode == 0, "crictl rmp", p.stdout + p.stderr)
            p = cri("pods", "-q")
            el.eq(t, (p.stdout.strip(), cri("ps", "-a", "-q").stdout.strip()), ("", ""),
                  "crictl pods, ps -a: nothing left", p.stderr)
        root = cri.kvrun_root()
        el.eq(t, os.listdir(root) if os.path.isdir(root) else [], [], "nothing left under the runtime's --root")
        if RUNTIME == "kvrun":
            el.wait_for(lambda: not el.kvrun_processes(wd), 30)
            el.eq(t, el.kvrun_processes(wd), [], "no kvrun process left")
        el.eq(t, el.host_taps(), [], "no kvrun TAP in the host's network namespace")
        wd.report(t)
    finally:
        if cri and cri.daemon.alive() and cri("pods", "-q", timeout=60).stdout.strip():
            cri("rmp", "-f", "-a", timeout=300)  # after a failure: containerd's own cleanup first
        t.diag(f"took {time.monotonic() - t_start:.0f} s")
        wd.close(keep=os.environ.get("KVRUN_TEST_KEEP") == "1")
    t.done()


if __name__ == "__main__":
    main()
