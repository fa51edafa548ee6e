#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package: built from a copy of the tree with dpkg-buildpackage
(debian/), lintian without errors, apt accepts it (`apt-get install
--simulate ./kvrun_*.deb`), and installed with dpkg into a root directory
of its own: every file the package lists is there, the installed kvrun's
`kvrun check` passes on this host (its kernel and kvrun-init found below
that root, no KVRUN_* variable), and purging it leaves nothing but dpkg's
own records.

The guest kernel goes into the package when kernel/build.sh's cache holds
a build of the current inputs ($KVRUN_KERNEL_CACHE or
/var/cache/kvrun/kernel); otherwise the package is built with the
pkg.kvrun.nokernel profile and `kvrun check` is expected to fail for want
of a kernel, which the test says.

$KVRUN_TEST_DEB_SYSTEM=1 also installs the package on this machine with
apt, runs `kvrun check`, purges it and checks that none of its files is
left. Skips when dpkg-buildpackage or dpkg-deb is missing, or when not
root.
"""
import glob
import os
import shutil
import subprocess
import tempfile

from taplib import Tap

SRC = os.environ.get("KVRUN_SOURCE_ROOT",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(argv, **kw)


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("KVRUN_") or k == "KVRUN_KERNEL_CACHE"}


def copy_tree(dest):
    """The tree as git sees it (tracked and untracked, not ignored)."""
    files = run(["git", "-C", SRC, "ls-files", "-co", "--exclude-standard", "-z"]).stdout.split("\0")
    for f in filter(None, files):
        src = os.path.join(SRC, f)
        if not os.path.lexists(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, f), follow_symlinks=False)


def build(t, work):
    key = run([os.path.join(SRC, "kernel", "build.sh"), "--print-key"]).stdout.strip()
    cache = os.environ.get("KVRUN_KERNEL_CACHE", "/var/cache/kvrun/kernel")
    with_kernel = bool(key) and os.path.exists(os.path.join(cache, key, "out", "vmlinux"))
    if not with_kernel:
        t.diag(f"kernel cache cold for key {key} in {cache}: building with -Ppkg.kvrun.nokernel")
    src = os.path.join(work, "kvrun-src")
    copy_tree(src)
    env = dict(clean_env(), DEB_BUILD_OPTIONS="nocheck")
    argv = ["dpkg-buildpackage", "-b", "-us", "-uc", "-j2"] + ([] if with_kernel else ["-Ppkg.kvrun.nokernel"])
    r = run(argv, cwd=src, env=env, timeout=3600)
    t.ok(r.returncode == 0, "dpkg-buildpackage -b" + ("" if with_kernel else " -Ppkg.kvrun.nokernel"),
         r.stdout[-3000:] + r.stderr[-3000:])
    debs = [d for d in glob.glob(os.path.join(work, "kvrun_*.deb"))]
    return (debs[0] if debs else None), with_kernel


def lintian(t, deb):
    if not shutil.which("lintian"):
        t.skip("lintian", "lintian not installed")
        return
    r = run(["lintian", "--allow-root", deb], timeout=600)
    tags = [l for l in r.stdout.splitlines() if l[:2] in ("E:", "W:")]
    t.eq([l for l in tags if l.startswith("E:")], [], "lintian: no errors")
    t.diag(f"lintian: {len([l for l in tags if l.startswith('W:')])} warning(s)" + "".join("\n" + l for l in tags))


def fake_root_install(t, deb, with_kernel):
    root = tempfile.mkdtemp(prefix="kvrun-deb-root-")
    try:
        for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"):
            os.makedirs(os.path.join(root, d))
        for f in ("var/lib/dpkg/status", "var/lib/dpkg/available"):
            open(os.path.join(root, f), "w").close()
        r = run(["dpkg", f"--root={root}", "--force-depends", "--force-script-chrootless", "-i", deb], timeout=300)
        t.ok(r.returncode == 0, "dpkg -i into a root of its own", r.stdout[-2000:] + r.stderr[-2000:])
        listed = [l for l in run(["dpkg-deb", "-c", deb]).stdout.splitlines()]
        files = [l.split()[-1][1:] for l in listed if l.startswith("-")]
        t.eq([f for f in files if not os.path.isfile(root + f)], [], f"the {len(files)} files of the package in place")
        kernel = root + "/usr/share/kvrun/kernel/vmlinux"
        t.eq(os.path.exists(kernel), with_kernel, "the guest kernel installed exactly when it was built in")
        with tempfile.TemporaryDirectory() as home:
            env = dict(clean_env(), HOME=home)
            env.pop("KVRUN_KERNEL_CACHE", None)
            c = run([root + "/usr/bin/kvrun", "check"], env=env, timeout=300)
        if with_kernel:
            t.ok(c.returncode == 0, "the installed kvrun check passes", c.stdout + c.stderr)
            t.ok(f"kernel: {kernel} (from the default location" in c.stdout, "it finds the package's kernel",
                 c.stdout)
        else:
            t.ok(c.returncode == 1 and f"kernel {kernel} (from the default location" in c.stdout,
                 "without a kernel in the package, check fails naming the kernel it looked for", c.stdout)
        if with_kernel:
            t.ok(f"built by kvrun from {root}/usr/libexec/kvrun/kvrun-init" in c.stdout,
                 "it packs the package's kvrun-init", c.stdout)
        else:
            t.skip("it packs the package's kvrun-init", "no kernel in the package: check stops before the initramfs")
        r = run(["dpkg", f"--root={root}", "--force-script-chrootless", "--purge", "kvrun"], timeout=300)
        t.ok(r.returncode == 0, "dpkg --purge", r.stderr[-2000:])
        left = []
        for d, dirs, fs in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel.startswith("var/lib/dpkg"):
                continue
            left += [os.path.normpath(os.path.join(rel, x)) for x in fs + dirs]
        left = [x for x in left if x not in ("var", "var/lib", "var/lib/dpkg")]
        t.eq(sorted(left), [], "purging leaves nothing outside dpkg's records")
        info = [f for f in os.listdir(os.path.join(root, "var/lib/dpkg/info")) if f.startswith("kvrun.")]
        t.eq(info, [], "and dpkg keeps no file list of kvrun")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def system_install(t, deb):
    r = run(["apt-get", "install", "-y", "-q", deb], timeout=600, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if not t.ok(r.returncode == 0, "apt-get install ./kvrun_*.deb on this machine", r.stdout[-2000:] + r.stderr[-2000:]):
        return
    files = [l.split()[-1][1:] for l in run(["dpkg-deb", "-c", deb]).stdout.splitlines() if l.startswith("-")]
    c = run(["/usr/bin/kvrun", "check"], env=clean_env(), timeout=300)
    t.diag(c.stdout)
    t.ok(c.returncode == 0, "kvrun check passes after apt install", c.stdout + c.stderr)
    r = run(["apt-get", "purge", "-y", "-q", "kvrun"], timeout=600, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    t.ok(r.returncode == 0, "apt-get purge kvrun", r.stderr[-2000:])
    t.eq([f for f in files if os.path.lexists(f)], [], "none of the package's files left")
    t.eq([d for d in ("/usr/share/kvrun", "/usr/libexec/kvrun", "/usr/share/doc/kvrun") if os.path.exists(d)], [],
         "no directory of the package left")


def main():
    t = Tap()
    for tool in ("dpkg-buildpackage", "dpkg-deb", "dpkg", "dh"):
        if not shutil.which(tool):
            t.skip_all(f"{tool} missing (scripts/setup.sh --deb installs debhelper, dpkg-dev, lintian)")
    if os.getuid() != 0:
        t.skip_all("not root: dpkg cannot install into a root of its own")
    work = tempfile.mkdtemp(prefix="kvrun-deb-")
    try:
        deb, with_kernel = build(t, work)
        if not t.ok(deb is not None, "a kvrun_*.deb was built"):
            t.done()
        t.diag(f"{os.path.basename(deb)}: {os.path.getsize(deb)} bytes")
        lintian(t, deb)
        r = run(["apt-get", "install", "--simulate", "-q", deb], timeout=300)
        t.ok(r.returncode == 0, "apt-get install --simulate ./kvrun_*.deb: apt accepts it",
             r.stdout[-2000:] + r.stderr[-2000:])
        fake_root_install(t, deb, with_kernel)
        if os.environ.get("KVRUN_TEST_DEB_SYSTEM") == "1":
            system_install(t, deb)
        else:
            t.skip("apt install on this machine, check, purge", "set KVRUN_TEST_DEB_SYSTEM=1 (it changes /usr)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t.done()


main()
