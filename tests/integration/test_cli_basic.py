#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kvrun's informational commands: --version, help texts, features, list and
state on an empty root."""
import json
import os
import re
import subprocess
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
COMMANDS = ["checkpoint", "create", "delete", "events", "exec", "kill", "list",
            "pause", "ps", "restore", "resume", "run", "spec", "start", "state",
            "update", "features", "check", "help"]


def kvrun(*args, root=None, stdin=None):
    argv = [KVRUN] + (["--root", root] if root else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, stdin=stdin or subprocess.DEVNULL, timeout=60)


def main():
    t = Tap()
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"kvrun binary not found at {KVRUN}")

    for flag in ("--version", "-v"):
        p = kvrun(flag)
        lines = p.stdout.splitlines()
        t.eq(p.returncode, 0, f"{flag} exits 0")
        t.ok(len(lines) == 3 and re.fullmatch(r"kvrun version \d+\.\d+\.\d+", lines[0]),
             f"{flag}: first line is 'kvrun version X.Y.Z'", p.stdout)
        t.ok(len(lines) == 3 and re.fullmatch(r"commit: \S+", lines[1]), f"{flag}: commit line", p.stdout)
        t.eq(lines[2:], ["spec: 1.2.0"], f"{flag}: spec line")

    for argv in (["--help"], ["-h"], [], ["help"], ["h"]):
        p = kvrun(*argv)
        t.eq(p.returncode, 0, f"kvrun {' '.join(argv)} exits 0")
        t.ok("USAGE:" in p.stdout and "GLOBAL OPTIONS:" in p.stdout and "--root value" in p.stdout,
             f"kvrun {' '.join(argv)} prints the main help", p.stdout[:500])
        missing = [c for c in COMMANDS if not re.search(rf"^   {c}\b", p.stdout, re.M)]
        t.eq(missing, [], f"kvrun {' '.join(argv)} lists every command")

    for cmd in COMMANDS:
        for argv in ([cmd, "--help"], [cmd, "-h"], ["help", cmd]):
            p = kvrun(*argv)
            ok = p.returncode == 0 and p.stdout.startswith(f"NAME:\n   kvrun {cmd} - ") and "USAGE:" in p.stdout
            t.ok(ok, f"kvrun {' '.join(argv)} prints the help of {cmd}", p.stdout[:300] + p.stderr)
    # kvrun's own command with subcommands: each level has its help.
    for argv, name in ((["template", "--help"], "template"), (["template", "-h"], "template"),
                       (["template", "build", "--help"], "template build")):
        p = kvrun(*argv)
        ok = p.returncode == 0 and p.stdout.startswith(f"NAME:\n   kvrun {name} - ") and "USAGE:" in p.stdout
        t.ok(ok, f"kvrun {' '.join(argv)} prints the help of {name}", p.stdout[:300] + p.stderr)
    t.ok("--nics value" in kvrun("template", "build", "--help").stdout, "template build --help lists --nics")
    p = kvrun("create", "--help")
    for flag in ("--bundle value, -b value", "--console-socket value", "--pid-file value", "--no-pivot",
                 "--no-new-keyring", "--preserve-fds value", "--pidfd-socket value"):
        t.ok(flag in p.stdout, f"create --help lists {flag}")
    p = kvrun("exec", "--help")
    for flag in ("--env value, -e value", "--tty, -t", "--user value, -u value", "--process value, -p value",
                 "--detach, -d", "--cap value, -c value", "--ignore-paused", "--additional-gids value, -g value"):
        t.ok(flag in p.stdout, f"exec --help lists {flag}")

    p = kvrun("features")
    t.eq(p.returncode, 0, "features exits 0")
    try:
        f = json.loads(p.stdout)
    except ValueError as e:
        f = {}
        t.diag(f"features output is not JSON: {e}")
    for key in ("ociVersionMin", "ociVersionMax", "hooks", "mountOptions", "linux"):
        t.ok(key in f, f"features has {key}")
    t.ok(isinstance(f.get("linux", {}).get("namespaces"), list), "features lists linux namespaces")
    ann = f.get("annotations", {})
    t.ok("virtio-fs" in ann.get("io.kvrun.mounts.bind", "") and ann.get("io.kvrun.rootfs") == "block,virtiofs" and
         ann.get("io.kvrun.fs.locks") == "host,guest",
         "features: what kvrun does with bind mounts, the root filesystem and their locks", json.dumps(ann))
    lx = f.get("linux", {})
    t.ok("user" in lx.get("namespaces", []) and "time" not in lx.get("namespaces", []),
         "features: user namespaces are applied, time namespaces are not", str(lx.get("namespaces")))
    t.eq(lx.get("cgroup", {}).get("systemd"), True, "features: the systemd cgroup driver exists")
    t.eq((lx.get("intelRdt"), lx.get("mountExtensions"), lx.get("apparmor"), lx.get("selinux")),
         ({"enabled": False}, {"idmap": {"enabled": False}}, {"enabled": False}, {"enabled": False}),
         "features: no Intel RDT, idmapped mounts, AppArmor or SELinux")
    t.ok("io.kvrun." in f.get("potentiallyUnsafeConfigAnnotations", []),
         "features: kvrun's annotations (host file paths) are potentially unsafe", p.stdout[-300:])
    p = kvrun("features", "extra")
    t.ok(p.returncode == 1 and 'kvrun: \\"features\\" requires exactly 0 argument(s)' in p.stderr,
         "features takes no arguments", p.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        p = kvrun("list", root=root)
        t.eq((p.returncode, p.stdout), (0, "ID          PID         STATUS      BUNDLE      CREATED     OWNER\n"),
             "list on an empty root prints runc's header")
        p = kvrun("list", "-q", root=root)
        t.eq((p.returncode, p.stdout), (0, ""), "list -q on an empty root prints nothing")
        for argv in (["list", "--format", "json"], ["list", "--format=json"], ["list", "-f", "json"]):
            p = kvrun(*argv, root=root)
            t.eq((p.returncode, p.stdout), (0, "null\n"), f"{' '.join(argv)} on an empty root prints null")
        p = kvrun("list", "--format", "yaml", root=root)
        t.ok(p.returncode == 1 and "invalid format option" in p.stderr, "list rejects an unknown format", p.stderr)
        p = kvrun("state", "nosuch", root=root)
        t.ok(p.returncode == 1 and "container does not exist" in p.stderr, "state of a missing id", p.stderr)
        t.eq(p.stdout, "", "state of a missing id prints nothing on stdout")
        t.ok(not os.path.exists(root), "list and state leave no root behind")

    t.done()


if __name__ == "__main__":
    main()
