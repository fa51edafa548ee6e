#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kvrun spec`: the example config.json, --rootless, --bundle, and never
overwriting an existing config.json."""
import json
import os
import shutil
import subprocess
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))


def run(argv, cwd=None):
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, stdin=subprocess.DEVNULL, timeout=60)


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    t = Tap()
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"kvrun binary not found at {KVRUN}")
    runc = shutil.which("runc")

    with tempfile.TemporaryDirectory() as tmp:
        # Default bundle: the current directory.
        p = run([KVRUN, "spec"], cwd=tmp)
        cfg = os.path.join(tmp, "config.json")
        t.eq((p.returncode, p.stdout, p.stderr), (0, "", ""), "spec in the current directory succeeds quietly")
        spec = load(cfg)
        t.eq(spec.get("process", {}).get("args"), ["sh"], "default process.args is sh")
        t.eq(spec.get("root", {}).get("path"), "rootfs", "default root.path is rootfs")
        t.ok(any(n.get("type") == "pid" for n in spec.get("linux", {}).get("namespaces", [])),
             "default spec has a pid namespace")
        t.ok("uidMappings" not in spec.get("linux", {}), "default spec has no uid mappings")
        with open(cfg) as f:
            first = f.read()

        # Refuses to overwrite, and leaves the file alone.
        p = run([KVRUN, "spec"], cwd=tmp)
        t.eq(p.returncode, 1, "spec over an existing config.json fails")
        t.ok("File config.json exists. Remove it first" in p.stderr and len(p.stderr.splitlines()) == 1,
             "with runc's one-line message", p.stderr)
        with open(cfg) as f:
            t.eq(f.read(), first, "the existing config.json is untouched")

        # --bundle / -b / -bundle=.
        for i, flag in enumerate((["--bundle"], ["-b"], ["-bundle="])):
            b = os.path.join(tmp, f"b{i}")
            os.mkdir(b)
            argv = [KVRUN, "spec"] + ([flag[0] + b] if flag[0].endswith("=") else [flag[0], b])
            p = run(argv)
            t.ok(p.returncode == 0 and os.path.isfile(os.path.join(b, "config.json")),
                 f"spec {flag[0]} writes into the bundle", p.stderr)

        # --rootless maps root to the caller.
        rl = os.path.join(tmp, "rootless")
        os.mkdir(rl)
        p = run([KVRUN, "spec", "--rootless", "-b", rl])
        t.eq(p.returncode, 0, "spec --rootless succeeds")
        spec = load(os.path.join(rl, "config.json"))
        lin = spec.get("linux", {})
        t.eq([m.get("hostID") for m in lin.get("uidMappings", [])], [os.geteuid()],
             "rootless uidMappings map to our euid")
        t.eq([m.get("hostID") for m in lin.get("gidMappings", [])], [os.getegid()],
             "rootless gidMappings map to our egid")
        t.ok(any(n.get("type") == "user" for n in lin.get("namespaces", [])), "rootless spec has a user namespace")

        # Compare with runc when it is installed (ociVersion aside: it is
        # the version each runtime implements).
        if runc:
            for extra in ([], ["--rootless"]):
                a = os.path.join(tmp, "cmp-kvrun" + "".join(extra))
                r = os.path.join(tmp, "cmp-runc" + "".join(extra))
                os.mkdir(a)
                os.mkdir(r)
                run([KVRUN, "spec", "-b", a] + extra)
                pr = run([runc, "spec", "-b", r] + extra)
                if pr.returncode != 0:
                    t.diag(f"runc spec failed: {pr.stderr}")
                    continue
                ka, kr = load(os.path.join(a, "config.json")), load(os.path.join(r, "config.json"))
                ka.pop("ociVersion", None)
                kr.pop("ociVersion", None)
                t.ok(ka == kr, f"spec {' '.join(extra)} matches runc's", json.dumps([ka, kr])[:2000])
        else:
            t.diag("runc not installed: no comparison with runc spec")

        # Errors: a missing bundle, extra arguments, unknown flags.
        p = run([KVRUN, "spec", "-b", os.path.join(tmp, "missing")])
        t.ok(p.returncode == 1 and "missing" in p.stderr and len(p.stderr.splitlines()) == 1,
             "spec into a missing bundle names it", p.stderr)
        t.ok(not os.path.exists(os.path.join(tmp, "missing")), "and does not create it")
        p = run([KVRUN, "spec", "extra"], cwd=rl)
        t.ok(p.returncode == 1 and 'kvrun: \\"spec\\" requires exactly 0 argument(s)' in p.stderr, "spec takes no arguments",
             p.stderr)
        p = run([KVRUN, "spec", "--bogus"], cwd=rl)
        t.ok(p.returncode == 1 and "flag provided but not defined: -bogus" in p.stderr, "spec --bogus", p.stderr)

    t.done()


if __name__ == "__main__":
    main()
