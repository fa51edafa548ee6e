#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-layers.py on small made-up trees (TAP): a tree with one violation
of each kind is reported file by file, the same tree mended passes, and
runtime files outside runtime's layer folders are reported without failing
unless --unplaced fail."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-layers.py")

# path -> text. Each violation is marked with what should report it.
BAD = {
    # 1: circle inside a library
    "common/a.c": '#include "common/a.h"\nint b_fn(void);\nint a_fn(void) { return b_fn(); }\n',
    "common/a.h": "int a_fn(void);\n",
    "common/b.c": '#include "common/a.h"\nint b_fn(void) { return 1; }\nint b_more(void) { return a_fn(); }\n',
    # 2 and 3: vmm includes virtio's header and calls into virtio
    "vmm/v.c": '#include "virtio/x.h"\nint v_fn(void) { return x_fn(); }\n',
    "virtio/x.h": "int x_fn(void);\n",
    "virtio/x.c": '#include "virtio/x.h"\nint x_fn(void) { return 2; }\n',
    # 2: guest-init may include only common/
    "guest-init/g.c": '#include "vmm/v.h"\nint g_fn(void) { return 3; }\n',
    "vmm/v.h": "int v_fn(void);\n",
    # 5: too long
    "oci-spec/big.c": "int big_fn(void) { return 4; }\n" + "/* filler */\n" * 700,
    # unplaced: a runtime circle outside runtime's folders
    "runtime/r.c": "int s_fn(void);\nint r_fn(void) { return s_fn(); }\n",
    "runtime/s.c": "int r_fn(void);\nint s_fn(void) { return 0; }\nint s_more(void) { return r_fn(); }\n",
    # 4: vmm's library handed virtio
    "vmm/meson.build": "vmm_lib = static_library('kvrun-vmm', 'v.c',\n  dependencies : [common_dep, virtio_dep])\n",
    "virtio/meson.build": "virtio_lib = static_library('kvrun-virtio', 'x.c')\n"
                          "virtio_dep = declare_dependency(link_with : virtio_lib)\n",
    "common/meson.build": "common_lib = static_library('kvrun-common', 'a.c', 'b.c')\n"
                          "common_dep = declare_dependency(link_with : common_lib)\n",
}

GOOD = dict(BAD)
GOOD.update({
    "common/b.c": "int b_fn(void) { return 1; }\n",
    "vmm/v.c": "int v_fn(void) { return 2; }\n",
    "guest-init/g.c": '#include "common/a.h"\nint g_fn(void) { return a_fn(); }\n',
    "oci-spec/big.c": "int big_fn(void) { return 4; }\n",
    "vmm/meson.build": "vmm_lib = static_library('kvrun-vmm', 'v.c',\n  dependencies : [common_dep])\n",
})

LIBS = {"kvrun-common": ["common/a.c", "common/b.c"], "kvrun-vmm": ["vmm/v.c"], "kvrun-virtio": ["virtio/x.c"]}


def make_tree(top, files):
    src, build = os.path.join(top, "src"), os.path.join(top, "build")
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(src, path)), exist_ok=True)
        with open(os.path.join(src, path), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(build, "meson-info"))
    commands = []
    for path in sorted(p for p in files if p.endswith(".c")):
        obj = os.path.join(build, path.replace("/", "_") + ".o")
        subprocess.run(["cc", "-c", "-I", src, "-o", obj, os.path.join(src, path)], check=True)
        commands.append({"directory": build, "file": os.path.join(src, path), "output": obj})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    targets = [{"name": name, "type": "static library",
                "target_sources": [{"sources": [os.path.join(src, s) for s in srcs]}]}
               for name, srcs in LIBS.items()]
    with open(os.path.join(build, "meson-info", "intro-targets.json"), "w") as f:
        json.dump(targets, f)
    return src, build


def run_checker(src, build, *extra):
    p = subprocess.run([sys.executable, CHECKER, "--source", src, "--build", build, *extra],
                       capture_output=True, text=True)
    results = {}
    for line in p.stdout.splitlines():
        if line.startswith(("ok ", "not ok ")):
            results[int(line.split()[1 if line.startswith("ok") else 2])] = line.startswith("ok")
    return p.returncode, results, p.stdout


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        self.failed += not cond
        print(f"{'ok' if cond else 'not ok'} {self.n} - {name}")
        if not cond and detail:
            for line in detail.splitlines():
                print("# " + line)


def main():
    if not shutil.which("cc") or not shutil.which("nm"):
        print("1..0 # SKIP needs cc and nm")
        return 0
    t = Tap()
    with tempfile.TemporaryDirectory(prefix="kvrun-layers-") as top:
        src, build = make_tree(os.path.join(top, "bad"), BAD)
        rc, res, out = run_checker(src, build)
        t.ok(rc != 0, "a tree with violations fails", out)
        t.ok(res == {1: False, 2: False, 3: False, 4: False, 5: False}, "each of the five checks fails", out)
        for want in ("circle of 2: common/a.c common/b.c",
                     "common/b.c -> common/a.c: #include common/a.h, a_fn",
                     "vmm/v.c (vmm) includes virtio/x.h (virtio)",
                     "guest-init/g.c (guest-init) includes vmm/v.h (vmm)",
                     "vmm/v.c (vmm) needs x_fn from virtio/x.c (virtio)",
                     "vmm/meson.build: vmm_lib (vmm) is handed virtio_dep (virtio)",
                     "oci-spec/big.c: 701 lines",
                     "unplaced: circle of 2: runtime/r.c runtime/s.c"):
            t.ok(want in out, f"reports: {want}", out)

        src, build = make_tree(os.path.join(top, "good"), GOOD)
        rc, res, out = run_checker(src, build)
        t.ok(rc == 0 and res == {1: True, 2: True, 3: True, 4: True, 5: True},
             "the mended tree passes, its unplaced circle only reported", out)
        t.ok("unplaced: circle of 2: runtime/r.c runtime/s.c" in out, "the unplaced circle is listed", out)
        rc, res, out = run_checker(src, build, "--unplaced", "fail")
        t.ok(rc != 0 and res.get(1) is False, "--unplaced fail: the runtime circle fails", out)
    print(f"1..{t.n}")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
