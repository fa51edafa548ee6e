#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`meson install --destdir`: every file in its place under the configured
prefix and nothing else (kvrun, kvrun-init, the pages, the completion
scripts, and the guest kernel when kernel/build.sh's cache holds a build of
the current inputs), the pages render, the bash completion loads from where
it was installed, and the installed kvrun finds its kernel and kvrun-init
below the staging directory with no KVRUN_* variable set."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUILD = os.environ.get("KVRUN_BUILD_ROOT", os.path.dirname(os.path.dirname(KVRUN)))
SRC = os.environ.get("KVRUN_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def options():
    r = subprocess.run(["meson", "introspect", "--buildoptions", BUILD], capture_output=True, text=True, timeout=120)
    return {o["name"]: o["value"] for o in json.loads(r.stdout)}


def under(prefix, d):
    return d if d.startswith("/") else os.path.join(prefix, d)


def verbs():
    out = subprocess.run([KVRUN, "--help"], capture_output=True, text=True, timeout=60).stdout
    sect = out.split("COMMANDS:\n", 1)[1].split("\n\n", 1)[0]
    return [re.match(r"   (\S+?)(,|\s)", l).group(1) for l in sect.splitlines()]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("KVRUN_")}


def main():
    t = Tap()
    if not shutil.which("meson"):
        t.skip_all("meson not installed")
    if not os.path.exists(os.path.join(BUILD, "meson-info")):
        t.skip_all(f"{BUILD} is not a meson build directory")
    o = options()
    prefix = o["prefix"]
    bindir, libexecdir = under(prefix, o["bindir"]), under(prefix, o["libexecdir"])
    datadir, mandir = under(prefix, o["datadir"]), under(prefix, o["mandir"])
    bashdir = under(prefix, o["bashcompletiondir"] or os.path.join(o["datadir"], "bash-completion", "completions"))
    zshdir = under(prefix, o["zshcompletiondir"] or os.path.join(
        o["datadir"], "zsh", "vendor-completions" if prefix == "/usr" else "site-functions"))
    dest = tempfile.mkdtemp(prefix="kvrun-install-")
    try:
        r = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild"],
                           capture_output=True, text=True, timeout=600)
        if not t.ok(r.returncode == 0, "meson install --destdir", r.stdout[-3000:] + r.stderr[-3000:]):
            t.done()
        kernel_dir = os.path.join(datadir, "kvrun", "kernel")
        with_kernel = os.path.exists(dest + kernel_dir + "/vmlinux")
        key = subprocess.run([os.path.join(SRC, "kernel", "build.sh"), "--print-key"], capture_output=True,
                             text=True, timeout=120).stdout.strip()
        cache = os.environ.get("KVRUN_KERNEL_CACHE", "/var/cache/kvrun/kernel")
        cached = bool(key) and os.path.exists(os.path.join(cache, key, "out", "vmlinux"))
        t.eq(with_kernel, cached, f"the kernel is installed exactly when the cache holds key {key or '?'} "
             f"({'cached' if cached else 'not cached'} in {cache})")
        want = {os.path.join(bindir, "kvrun"), os.path.join(libexecdir, "kvrun", "kvrun-init"),
                os.path.join(mandir, "man8", "kvrun.8"), os.path.join(bashdir, "kvrun"),
                os.path.join(zshdir, "_kvrun")}
        want |= {os.path.join(mandir, "man8", f"kvrun-{v}.8") for v in verbs()}
        if cached:
            want |= {os.path.join(kernel_dir, f) for f in ("vmlinux", "bzImage", "config", "System.map", "build-info")}
        got = set()
        for d, _, files in os.walk(dest):
            got |= {os.path.join(d, f)[len(dest):] for f in files}
        t.eq(sorted(got - want), [], "nothing installed but kvrun's files")
        t.eq(sorted(want - got), [], "every file in its place")
        t.ok(os.access(dest + os.path.join(bindir, "kvrun"), os.X_OK)
             and os.access(dest + os.path.join(libexecdir, "kvrun", "kvrun-init"), os.X_OK), "binaries executable")

        if shutil.which("man"):
            bad = []
            for f in sorted(os.listdir(dest + os.path.join(mandir, "man8"))):
                m = subprocess.run(["man", "--warnings", "-l", dest + os.path.join(mandir, "man8", f)],
                                   capture_output=True, text=True, env=dict(os.environ, MANWIDTH="120"), timeout=60)
                if m.returncode or m.stderr.strip() or "NAME" not in m.stdout:
                    bad.append(f"{f}: {m.stderr.strip()}")
            t.eq(bad, [], "man -l renders every installed page")
        else:
            t.skip("installed pages render", "man not installed")
        b = subprocess.run(["bash", "--norc", "-c", f"source {dest + os.path.join(bashdir, 'kvrun')} && complete -p kvrun"],
                           capture_output=True, text=True, timeout=60)
        t.ok(b.returncode == 0 and "_kvrun" in b.stdout, "the installed bash completion loads", b.stderr)

        # The installed binary's own lookups, with no KVRUN_* variable.
        kvrun = dest + os.path.join(bindir, "kvrun")
        stand_in = False
        if not with_kernel:
            os.makedirs(dest + kernel_dir, exist_ok=True)
            with open(dest + kernel_dir + "/vmlinux", "w") as f:
                f.write("a stand-in: the kernel cache is cold here\n")
            stand_in = True
            t.diag(f"no cached kernel for key {key}: a stand-in file at {kernel_dir}/vmlinux tests the lookup")
        with tempfile.TemporaryDirectory() as home:
            env = clean_env()
            env["HOME"] = home
            env.pop("XDG_CACHE_HOME", None)
            c = subprocess.run([kvrun, "check"], capture_output=True, text=True, env=env, timeout=300)
        t.ok(f"  ok    kernel: {dest + kernel_dir}/vmlinux (from the default location" in c.stdout,
             "the installed kvrun finds its kernel below the staging directory" + (" (stand-in)" if stand_in else ""),
             c.stdout + c.stderr)
        init = dest + os.path.join(libexecdir, "kvrun", "kvrun-init")
        t.ok(f"(built by kvrun from {init})" in c.stdout, "the installed kvrun packs its own kvrun-init",
             c.stdout + c.stderr)
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    t.done()


main()
