#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kernel/kvrun.fragment survives `make tinyconfig` + merge + `make olddefconfig`.

The cheap CI check for kvrun's guest kernel configuration: instead of building
the kernel it unpacks only what Kconfig needs from Debian's linux-source-6.12
(the top Makefile, scripts/, every Kconfig file and the tiny.config
fragments: about 1/10 of the tree), caches that per package version under the
build directory, generates the configuration the way kernel/build.sh does and
runs kernel/check-config.py on it. Skips when the source package is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import guestlib
from taplib import Tap

TARBALL = "/usr/src/linux-source-6.12.tar.xz"
PACKAGE = "linux-source-6.12"
TOP = "linux-source-6.12"
# What `make tinyconfig` and `make olddefconfig` read.
MEMBERS = [
    f"{TOP}/Makefile",
    f"{TOP}/scripts/*",
    "*/Kconfig*",
    f"{TOP}/kernel/configs/*",
    f"{TOP}/arch/x86/configs/*",
    f"{TOP}/arch/x86/Makefile*",
]

t = Tap()
src_root = os.environ.get("KVRUN_SOURCE_ROOT",
                          os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def c_string_macro(path, name):
    """The value of #define name in path, a body of C string literals and
    names of such macros (continuation lines joined); "" when missing."""
    text = re.sub(r"\\\n", " ", open(path).read())
    raw = dict(re.findall(r"^#define\s+(\w+)\s+(.+)$", text, re.M))

    def value(n):
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"|(\w+)', raw.get(n, ""))
        return "".join(lit if lit or not ref else value(ref) for lit, ref in parts)
    return value(name)


# The slow tests' `kvrun boot`s pass their own command line: on an
# emulating host it must carry exactly the quirks kvrun's runtime adds there
# (the GLIBC_TUNABLES among them: docs/runtime.md, "AVX on emulating hosts").
quirks = c_string_macro(os.path.join(src_root, "runtime", "sandbox", "vm-config.c"), "CMDLINE_EMULATING_HOST")
t.ok(quirks and guestlib.PVM_CMDLINE.endswith(" " + quirks) and guestlib.EMULATING_HOST_TUNABLES in quirks,
     "guestlib's emulating-host command line ends with the runtime's quirks, its GLIBC_TUNABLES included",
     f"runtime: {quirks!r}\nguestlib: {guestlib.PVM_CMDLINE!r}")
build_root = os.environ.get("KVRUN_BUILD_ROOT", os.path.join(src_root, "build"))
fragment = os.path.join(src_root, "kernel", "kvrun.fragment")
checker = os.path.join(src_root, "kernel", "check-config.py")

if not os.path.exists(TARBALL):
    t.skip_all(f"{TARBALL} missing: apt-get install {PACKAGE} (or scripts/setup.sh --kernel)")
for tool in ("make", "gcc", "flex", "bison"):
    if not shutil.which(tool):
        t.skip_all(f"{tool} not installed (needed to build the kconfig tools)")


def package_version():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", PACKAGE],
                       capture_output=True, text=True)
    if r.returncode == 0 and r.stdout:
        return r.stdout.strip()
    st = os.stat(TARBALL)
    return f"{st.st_size}-{int(st.st_mtime)}"


def run(cmd, cwd, what):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    t.ok(r.returncode == 0, what, f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


version = package_version()
cache = os.path.join(build_root, "kernel-kconfig", version.replace("/", "_").replace("~", "_"))
tree = os.path.join(cache, TOP)
stamp = os.path.join(cache, ".complete")

start = time.monotonic()
if not os.path.exists(stamp):
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    r = subprocess.run(["tar", "-xf", TARBALL, "-C", cache, "--wildcards"] + MEMBERS,
                       capture_output=True, text=True)
    if not t.ok(r.returncode == 0, f"unpack the Kconfig files of {PACKAGE} {version}", r.stderr[-2000:]):
        t.done()
    open(stamp, "w").close()
    t.diag(f"unpacked Kconfig subset in {time.monotonic() - start:.1f} s into {cache}")
else:
    t.ok(True, f"Kconfig files of {PACKAGE} {version} cached in {cache}")

# Generate the config in a scratch copy of .config only: the tree is shared
# between runs and kconfig writes just .config, include/config and the
# kconfig tool binaries, which are the same every time.
unpacked = time.monotonic()
run(["make", "-s", "tinyconfig"], tree, "make tinyconfig")
run(["scripts/kconfig/merge_config.sh", "-m", "-O", ".", ".config", fragment], tree,
    "merge kernel/kvrun.fragment")
run(["make", "-s", "olddefconfig"], tree, "make olddefconfig")
t.diag(f"configuration generated in {time.monotonic() - unpacked:.1f} s")

config = os.path.join(tree, ".config")
r = subprocess.run([sys.executable, checker, fragment, config], capture_output=True, text=True)
t.ok(r.returncode == 0, "every fragment option survives olddefconfig", r.stdout + r.stderr)
t.diag(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "check-config.py printed nothing")

# The checker must be able to fail: a fragment asking for something its
# dependencies forbid (PCI-only driver without PCI) has to be reported.
with tempfile.NamedTemporaryFile("w", suffix=".fragment", delete=False) as f:
    f.write("CONFIG_VIRTIO_PCI=y\nCONFIG_PCI=n\n")
    bad = f.name
try:
    r = subprocess.run([sys.executable, checker, bad, config], capture_output=True, text=True)
    t.ok(r.returncode == 1 and "CONFIG_VIRTIO_PCI" in r.stdout,
         "check-config.py reports an option olddefconfig dropped", r.stdout + r.stderr)
finally:
    os.unlink(bad)

# Spot checks of what the fragment is for, read from the generated .config.
want = {
    "CONFIG_ACPI": "y", "CONFIG_PVH": "y", "CONFIG_KVM_GUEST": "y", "CONFIG_VIRTIO_MMIO": "y",
    "CONFIG_HZ": "100", "CONFIG_MODULES": None, "CONFIG_PCI": None, "CONFIG_PARAVIRT_SPINLOCKS": None,
    "CONFIG_FUSE_FS": "y", "CONFIG_VIRTIO_FS": "y",
    "CONFIG_VIRTIO_BALLOON": "y", "CONFIG_PAGE_REPORTING": "y", "CONFIG_INIT_ON_FREE_DEFAULT_ON": None,
}
have = {}
with open(config) as f:
    for line in f:
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.strip().split("=", 1)
            have[k] = v
for k, v in want.items():
    t.eq(have.get(k), v, f"{k} {'=' + v if v else 'unset'}")
t.diag(f"total {time.monotonic() - start:.1f} s")
t.done()
