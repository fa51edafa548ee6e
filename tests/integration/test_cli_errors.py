#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every way of calling kvrun wrongly: a clear one-line message on stderr,
exit status 1, and nothing left under --root. Also the --log formats."""
import json
import os
import re
import subprocess
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"


class Env:
    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def root(self):
        self.n += 1
        return os.path.join(self.tmp, f"root{self.n}")

    def bundle(self, name, config=None, rootfs=True, terminal=False):
        b = os.path.join(self.tmp, name)
        os.makedirs(b)
        if rootfs:
            os.mkdir(os.path.join(b, "rootfs"))
        if config is None:
            subprocess.run([KVRUN, "spec", "-b", b], check=True)
            with open(os.path.join(b, "config.json")) as f:
                spec = json.load(f)
            spec["process"]["terminal"] = terminal
            config = json.dumps(spec, indent=2)
        if config is not False:
            with open(os.path.join(b, "config.json"), "w") as f:
                f.write(config)
        return b


def kvrun(root, *args, log=None, fmt=None):
    argv = [KVRUN, "--root", root]
    if log:
        argv += ["--log", log]
    if fmt:
        argv += ["--log-format", fmt]
    return subprocess.run(argv + list(args), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def root_clean(root):
    return not os.path.exists(root) or os.listdir(root) == []


def expect_error(t, env, args, want, what=None, stdin=None, status=1):
    """One call that must fail: status 1 (exec's failures after its flags:
    255, as runc's), one stderr line containing want
    (a string or a regexp object), nothing under the root."""
    root = env.root()
    if stdin is None:
        p = kvrun(root, *args)
    else:
        p = subprocess.run([KVRUN, "--root", root] + list(args), capture_output=True, text=True, input=stdin,
                           timeout=60)
    what = what or "kvrun " + " ".join(a if len(a) < 40 else a[:20] + "..." for a in args)
    lines = p.stderr.splitlines()
    msg = lines[0] if lines else ""
    m = re.fullmatch(r'time="[^"]+" level=error msg="(.*)"', msg)
    text = msg
    if m:
        try:
            text = json.loads('"' + m.group(1) + '"')  # undo logrus's quoting
        except ValueError:
            text = m.group(1)
    found = want.search(text) if hasattr(want, "search") else want in text
    t.ok(p.returncode == status and len(lines) == 1 and found and root_clean(root), what,
         f"rc={p.returncode}\nstderr={p.stderr}\nwant={want!r}\nroot={os.listdir(root) if os.path.exists(root) else None}")
    return p


def main():
    t = Tap()
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"kvrun binary not found at {KVRUN}")
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(tmp)
        good = env.bundle("good")
        tty = env.bundle("tty", terminal=True)
        broken = env.bundle("broken", config='{\n  "ociVersion": "1.0.0",\n  "process": {\n')
        wrongtype = env.bundle("wrongtype", config='{"ociVersion": "1.0.0", "root": {"path": "rootfs"},'
                               ' "process": {"cwd": "/", "args": ["sh", 7]}}')
        norootfs = env.bundle("norootfs", rootfs=False)
        noconfig = env.bundle("noconfig", config=False)
        missing = os.path.join(tmp, "does-not-exist")
        longid = "a" * 300

        # Usage errors: runc's wording.
        expect_error(t, env, ["--bogus", "list"], "flag provided but not defined: -bogus")
        expect_error(t, env, ["state", "--bogus", "x"], "flag provided but not defined: -bogus")
        expect_error(t, env, ["nosuchcommand"], 'unknown command "nosuchcommand"')
        expect_error(t, env, ["list", "--format"], "flag needs an argument: -format")
        expect_error(t, env, ["list", "-q=maybe"], 'invalid boolean value "maybe" for -q')
        expect_error(t, env, ["create", "--preserve-fds", "x", "id"], 'invalid value "x" for flag -preserve-fds')
        for cmd in ("state", "start", "delete", "pause", "resume", "create", "run", "events", "update",
                    "checkpoint", "restore"):
            expect_error(t, env, [cmd], f'kvrun: "{cmd}" requires exactly 1 argument(s)')
        expect_error(t, env, ["state", "a", "b"], 'kvrun: "state" requires exactly 1 argument(s)')
        for cmd in ("kill", "exec", "ps"):
            expect_error(t, env, [cmd], f'kvrun: "{cmd}" requires a minimum of 1 argument(s)')
        expect_error(t, env, ["list", "x"], 'kvrun: "list" requires exactly 0 argument(s)')
        # urfave/cli stops at the first positional argument, as runc.
        expect_error(t, env, ["state", "x", "--bogus"], 'kvrun: "state" requires exactly 1 argument(s)')

        # Global flag values.
        expect_error(t, env, ["--log-format", "xml", "list"], "invalid log-format: xml")
        expect_error(t, env, ["--rootless", "maybe", "list"], "invalid --rootless value: maybe")
        for v in ("true", "false", "auto"):
            p = kvrun(env.root(), "--rootless", v, "--systemd-cgroup", "--criu", "/bin/false", "list", "-q")
            t.eq(p.returncode, 0, f"--rootless {v} --systemd-cgroup --criu accepted")

        # Container ids.
        for cmd in (["state"], ["delete"], ["kill"], ["pause"], ["create", "-b", good]):
            expect_error(t, env, cmd + ["../x"], "invalid container ID format")
            expect_error(t, env, cmd + ["a/b"], "invalid container ID format")
            expect_error(t, env, cmd + [""], "container id cannot be empty")
            expect_error(t, env, cmd + [longid], "invalid container ID format", f"{cmd[0]} with a 300-byte id")
        for cmd in (["state"], ["start"], ["delete"], ["pause"], ["resume"], ["kill"], ["ps"], ["events"],
                    ["update", "--memory", "1g"], ["checkpoint"], ["kill", "--all"]):
            expect_error(t, env, cmd + ["nosuch"], "container does not exist")
        expect_error(t, env, ["exec", "nosuch", "ls"], "exec failed: container does not exist", status=255)
        p = kvrun(env.root(), "delete", "--force", "nosuch")
        t.eq((p.returncode, p.stderr), (0, ""), "delete --force of a missing container succeeds (as runc)")

        # Signals: the container is looked up first, as runc does; each
        # spelling is compared with runc's in test_runc_parity.
        for sig in ("9", "KILL", "FOO", "9x", ""):
            expect_error(t, env, ["kill", "nosuch", sig], "container does not exist",
                         f"kill of a missing container with signal '{sig}': the container is missing")
        expect_error(t, env, ["kill", "nosuch", "9", "extra"], 'kvrun: "kill" requires a maximum of 2 argument(s)')

        # Other value checks.
        expect_error(t, env, ["events", "--interval", "0s", "x"], "duration interval must be greater than 0")
        expect_error(t, env, ["events", "--interval", "5", "x"], 'invalid value "5" for flag -interval')
        expect_error(t, env, ["update", "--memory", "lots", "x"], "invalid value for memory: lots")
        expect_error(t, env, ["update", "--cpu-quota", "1.5", "x"], "invalid value for cpu-quota: 1.5")
        expect_error(t, env, ["ps", "--format", "yaml", "x"], "invalid format option")
        expect_error(t, env, ["update", "-r", "-", "x"], "<stdin>: memory.limit", "update -r - names the JSON path",
                     stdin='{"memory": {"limit": "lots"}}')
        expect_error(t, env, ["update", "--resources=-", "x"], "container does not exist",
                     "update --resources=- with valid JSON looks the container up", stdin='{"memory": {"limit": 1}}')
        expect_error(t, env, ["update", "-r", missing, "x"], f"read resources from {missing}")
        expect_error(t, env, ["checkpoint", "--manage-cgroups-mode", "odd", "x"], "Invalid manage cgroups mode")
        expect_error(t, env, ["exec", "x"], "exec failed: args must not be empty", status=255)
        expect_error(t, env, ["exec", "--user", "bob", "x", "ls"], "parsing bob as int for uid failed", status=255)
        expect_error(t, env, ["exec", "-p", missing, "x"], f"exec failed: open {missing}", status=255)
        badproc = os.path.join(tmp, "process.json")
        with open(badproc, "w") as f:
            f.write('{"cwd": "/", "args": ["sh"], "user": {"uid": "root"}}')
        expect_error(t, env, ["exec", "-p", badproc, "x"], re.compile(r"process\.json: user\.uid"),
                     "exec -p with a wrong field names its JSON path", status=255)

        # Bundles: what is wrong is named.
        for verb in ("create", "run"):
            expect_error(t, env, [verb, "-b", missing, "c1"], f"bundle {missing}")
            expect_error(t, env, [verb, "-b", noconfig, "c1"], f"bundle {noconfig} has no config.json")
            expect_error(t, env, [verb, "-b", norootfs, "c1"], f"rootfs {norootfs}/rootfs")
            expect_error(t, env, [verb, "-b", broken, "c1"], re.compile(rf"{broken}/config\.json: line \d+"),
                         f"{verb} with malformed JSON names the file and line")
            expect_error(t, env, [verb, "-b", wrongtype, "c1"],
                         re.compile(r"config\.json: process\.args\[1\]"),
                         f"{verb} with a wrong type names the JSON path")
        expect_error(t, env, ["create", "-b", tty, "c1"],
                     "cannot allocate tty if kvrun will detach without setting console socket")
        expect_error(t, env, ["run", "-b", good, "--console-socket", "/x.sock", "c1"],
                     "cannot use console socket if kvrun will not detach or allocate tty")

        # A valid bundle with no kernel to boot: a plain error naming the
        # kernel, no success, no state (test_run_errors.py goes further).
        os.environ["KVRUN_KERNEL"] = "/nonexistent/vmlinux"
        os.environ["KVRUN_CONFIG"] = os.path.join(tmp, "no-config.json")
        for args in (["create", "-b", good, "c1"], ["run", "-b", good, "c1"], ["run", "-d", "-b", good, "c1"],
                     ["create", "--bundle=" + good, "--pid-file", os.path.join(tmp, "pid"), "--no-pivot",
                      "--no-new-keyring", "c1"]):
            expect_error(t, env, args, "kernel /nonexistent/vmlinux (from $KVRUN_KERNEL)",
                         f"{args[0]} of a valid bundle without a kernel fails cleanly")
        expect_error(t, env, ["restore", "-b", good, "--image-path", tmp, "-no-subreaper", "--detach", "c1"],
                     "is not a complete kvrun checkpoint", "restore of a valid bundle fails cleanly")
        t.ok(not os.path.exists(os.path.join(tmp, "pid")), "no pid file written")

        # --log: JSON lines for the shim, text lines for people.
        log = os.path.join(tmp, "log.json")
        with open(log, "w") as f:
            f.write('{"level":"info","msg":"earlier","time":"2024-01-01T00:00:00Z"}\n')
        root = env.root()
        p = kvrun(root, "state", "nosuch", log=log, fmt="json")
        t.eq((p.returncode, p.stderr), (1, "container does not exist\n"),
             "with --log, stderr has the bare message")
        p = kvrun(root, "create", "-b", broken, "c1", log=log, fmt="json")
        t.eq(p.returncode, 1, "second failure logged")
        with open(log) as f:
            lines = f.read().splitlines()
        t.eq(len(lines), 3, "log file appended, not truncated")
        try:
            objs = [json.loads(line) for line in lines]
        except ValueError as e:
            objs = []
            t.diag(str(e))
        t.ok(len(objs) == 3 and all(set(o) == {"level", "msg", "time"} for o in objs),
             "every line is a JSON object with level, msg and time", lines)
        t.ok(all(re.fullmatch(RFC3339, o["time"]) for o in objs), "times are RFC 3339 with a zone", lines)
        errors = [o["msg"] for o in objs if o["level"] == "error"]
        t.eq(errors[:1], ["container does not exist"], "first error message")
        t.ok(len(errors) == 2 and errors[1] == p.stderr.strip() and "config.json" in errors[1],
             "last error (what the shim reports) equals stderr", (errors, p.stderr))
        t.ok(root_clean(root), "nothing under --root after logged failures")

        p = kvrun(env.root(), "--log-format", "json", "state", "nosuch")
        try:
            o = json.loads(p.stderr)
        except ValueError:
            o = {}
        t.eq((o.get("level"), o.get("msg")), ("error", "container does not exist"),
             "--log-format json without --log writes the JSON line to stderr")

        tlog = os.path.join(tmp, "log.txt")
        p = kvrun(env.root(), "--debug", "state", "nosuch", log=tlog, fmt="text")
        with open(tlog) as f:
            lines = f.read().splitlines()
        t.ok(any(re.fullmatch(rf'time="{RFC3339}" level=debug msg=.*', line) for line in lines),
             "--debug adds debug lines", lines)
        t.ok(re.fullmatch(rf'time="{RFC3339}" level=error msg="container does not exist"', lines[-1] if lines else ""),
             "text log line in logrus format", lines)
        p = kvrun(env.root(), "state", "nosuch", log=tlog)
        with open(tlog) as f:
            t.ok(not any("level=debug" in line for line in f.read().splitlines()[len(lines):]),
                 "no debug lines without --debug")
        p = kvrun(env.root(), "state", "x", log=os.path.join(missing, "log.json"), fmt="json")
        t.ok(p.returncode == 1 and missing in p.stderr, "an unopenable --log file is reported", p.stderr)

    t.done()


if __name__ == "__main__":
    main()
