#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The manual pages and completion scripts the build writes (dist/): every
verb `kvrun --help` lists has its page, every flag its --help lists is in
the page as `man` renders it, `man` renders each page without a warning;
kvrun(8) has the global flags and the verbs. The bash completion loads and
completes verbs, flags and sub-commands; the zsh one parses and compinit
finds it.

    test_man.py [DIR]    DIR holds the pages and scripts (default build/dist)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from taplib import Tap

KVRUN = os.path.abspath(os.environ.get("KVRUN", "build/runtime/kvrun"))
BUILD = os.environ.get("KVRUN_BUILD_ROOT", os.path.join(os.path.dirname(os.path.dirname(KVRUN))))


def kvrun(*args):
    return subprocess.run([KVRUN] + list(args), capture_output=True, text=True, timeout=60)


def verbs():
    """The COMMANDS of `kvrun --help` (name, alias)."""
    out = kvrun("--help").stdout
    sect = out.split("COMMANDS:\n", 1)[1].split("\n\n", 1)[0]
    return [re.match(r"   (\S+?)(,|\s)", l).group(1) for l in sect.splitlines()]


def help_flags(*argv):
    """The flag labels of a --help's OPTIONS ("--all, -a", "--log value")."""
    out = kvrun(*argv).stdout
    flags = []
    for block in out.split("OPTIONS:\n")[1:]:
        for l in block.split("\n\n", 1)[0].splitlines():
            m = re.match(r"   (\S.*?)(\s{2,}|$)", l)
            if m:
                flags.append(m.group(1).strip())
    return flags


def render(path):
    env = dict(os.environ, MANWIDTH="200", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
    return subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, env=env, timeout=60)


def pages(t, d):
    if not shutil.which("man"):
        t.skip("pages render", "man (man-db) is not installed")
        return
    names = verbs()
    t.ok(len(names) >= 20 and "check" in names, f"kvrun --help lists {len(names)} verbs", names)
    for v in names:
        path = os.path.join(d, f"kvrun-{v}.8")
        if not t.ok(os.path.exists(path), f"kvrun-{v}.8 exists"):
            continue
        r = render(path)
        text = re.sub(r".\x08", "", r.stdout)
        t.ok(r.returncode == 0 and not r.stderr.strip(), f"man -l kvrun-{v}.8 renders without warnings", r.stderr)
        want = help_flags(v, "--help")
        if v == "template":
            want += help_flags("template", "build", "--help")
        flat = re.sub(r"\s+", " ", text)
        missing = [f for f in want if f not in flat]
        t.eq(missing, [], f"kvrun-{v}.8 has the {len(want)} flags of kvrun {v} --help")
        summary = re.search(rf"kvrun {re.escape(v)} - (.*)", kvrun(v, "--help").stdout)
        t.ok(summary and re.sub(r"\s+", " ", summary.group(1)) in flat, f"kvrun-{v}.8 has the summary")
    main_page = os.path.join(d, "kvrun.8")
    r = render(main_page)
    flat = re.sub(r"\s+", " ", re.sub(r".\x08", "", r.stdout))
    t.ok(r.returncode == 0 and not r.stderr.strip(), "man -l kvrun.8 renders without warnings", r.stderr)
    t.eq([f for f in help_flags("--help") if f not in flat], [], "kvrun.8 has every global flag")
    t.eq([v for v in names if f"kvrun-{v}(8)" not in flat], [], "kvrun.8 points at every verb's page")
    extra = sorted(set(f for f in os.listdir(d) if f.endswith(".8")) - {f"kvrun-{v}.8" for v in names} - {"kvrun.8"})
    t.eq(extra, [], "no page for a verb kvrun does not have")


def bash(t, d):
    script = os.path.join(d, "kvrun")
    if not shutil.which("bash"):
        t.skip("bash completion", "bash not installed")
        return
    prog = f"""source {script} || exit 9
complete -p kvrun || exit 8
c() {{ COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=(); _kvrun; echo "${{COMPREPLY[*]}}"; }}
c kvrun chec
c kvrun --ro
c kvrun --root /x kil
c kvrun kill --
c kvrun template ''
c kvrun template build --ni
c kvrun --log /nonexistent-dir/x
"""
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, timeout=60)
    out = r.stdout.splitlines()
    t.ok(r.returncode == 0 and out and out[0].startswith("complete -F _kvrun kvrun"), "bash completion loads",
         r.stdout + r.stderr)
    want = ["checkpoint check", "--root --rootless", "kill", "--all --help", "build list rm", "--nics"]
    t.eq(out[1:7], want, "bash completes verbs, global flags after a flag's value, verb flags, sub-commands")
    t.ok(len(out) > 7 and out[7] == "", "bash: nothing but files after --log (none match here)", out)


def zsh(t, d):
    if not shutil.which("zsh"):
        t.skip("zsh completion", "zsh not installed")
        return
    script = os.path.join(d, "_kvrun")
    r = subprocess.run(["zsh", "-n", script], capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 0, "zsh -n _kvrun: it parses", r.stderr)
    with tempfile.TemporaryDirectory() as home:
        prog = f"fpath=({d} $fpath); autoload -Uz compinit; compinit -u -d {home}/dump; print -r -- $_comps[kvrun]"
        r = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, HOME=home))
    t.eq(r.stdout.strip(), "_kvrun", "zsh: compinit maps kvrun to _kvrun")


def main():
    t = Tap()
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "dist")
    if not os.access(KVRUN, os.X_OK):
        t.skip_all(f"kvrun binary not found at {KVRUN}")
    if not os.path.isdir(d):
        t.skip_all(f"{d} missing (the build writes it)")
    pages(t, d)
    bash(t, d)
    zsh(t, d)
    t.done()


main()
