#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering of kvrun's C code, checked over a built tree (TAP).

Graph: product .c files (common/, oci-spec/, vmm/, virtio/, guest-init/,
runtime/), with A -> B when an object compiled from A needs a global symbol
defined by one compiled from B (nm over the objects that
compile_commands.json names), or when A includes B's header (b.h beside
b.c).

Checks:
 1. no circle between product .c files, within a library or across
    libraries, but for ALLOWED_CIRCLES (each with its reason);
 2. no .c or .h file includes a header of a layer it may not use;
 3. no object needs a symbol defined in a layer it may not use;
 4. each static_library in meson.build is handed only the layers it may use;
 5. no product .c file over MAX_LINES lines.

Layers, bottom up: common < oci-spec < vmm < virtio < runtime/host <
runtime/sandbox, runtime/store < runtime/monitor < runtime/cli; sandbox
and store are peers and use neither the other (docs/architecture.md). guest-init uses only common
(the protocol header is common/protocol.h); nothing uses guest-init.
A layer may use itself and the layers below it.

runtime/*.c files that are not in one of runtime's layer folders yet are
"unplaced": what concerns only them is listed as information and does not
fail (with --unplaced fail it does).

Usage: check-layers.py --source DIR --build DIR [--unplaced report|fail]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

MAX_LINES = 700

RANK = {
    "common": 0,
    "oci-spec": 1,
    "vmm": 2,
    "virtio": 3,
    "runtime/host": 4,
    "runtime/sandbox": 5,
    "runtime/store": 5,
    "runtime/monitor": 6,
    "runtime/cli": 7,
}
GUEST = "guest-init"
UNPLACED = "runtime"
TOP_LAYERS = ("common", "oci-spec", "vmm", "virtio", GUEST)
RUNTIME_FOLDERS = ("host", "sandbox", "store", "monitor", "cli")

# Circles kept on purpose: the exact set of files, and why. A circle that
# grows or shrinks no longer matches and is reported.
ALLOWED_CIRCLES = {
    # frozenset({"dir/a.c", "dir/b.c"}): "reason",
}


def layer_of(path):
    """The layer of a path relative to the source root; None when it is not
    product code."""
    parts = path.split("/")
    if len(parts) < 2:
        return None
    if parts[0] in TOP_LAYERS:
        return parts[0]
    if parts[0] == "runtime":
        if len(parts) > 2 and parts[1] in RUNTIME_FOLDERS:
            return "runtime/" + parts[1]
        return UNPLACED
    return None


def may_use(src, dst):
    """True, False, or None when it cannot be told (an unplaced file)."""
    if src == dst:
        return True
    if dst == GUEST:
        return False
    if src == GUEST:
        return dst == "common"
    if src == UNPLACED:
        # Whichever of runtime's layers it lands in, it may use those below.
        return True if dst in RANK and RANK[dst] < RANK["runtime/host"] else None
    if dst == UNPLACED:
        return False if RANK[src] < RANK["runtime/host"] else None
    return RANK[dst] < RANK[src]


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def result(self, ok, name, lines=()):
        self.n += 1
        if not ok:
            self.failed += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {name}")
        for line in lines:
            print(f"# {line}")

    def note(self, line):
        print(f"# {line}")


def product_objects(source, build):
    """{source path: [object paths]} from compile_commands.json."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    objs = collections.defaultdict(list)
    for e in commands:
        src = os.path.relpath(os.path.normpath(os.path.join(e["directory"], e["file"])), source)
        if not src.endswith(".c") or layer_of(src) is None:
            continue
        objs[src].append(os.path.normpath(os.path.join(e["directory"], e["output"])))
    return objs


def read_symbols(objs):
    """defs: symbol -> set of sources; needs: source -> set of symbols. One
    nm run per batch of objects (a run per object is slow on a busy host)."""
    defs = collections.defaultdict(set)
    needs = collections.defaultdict(set)
    src_of = {o: src for src, paths in objs.items() for o in paths}
    present = sorted(o for o in src_of if os.path.exists(o))
    missing = sorted(set(src_of) - set(present))
    for i in range(0, len(present), 200):
        out = subprocess.run(["nm", "-A", "-P", *present[i:i + 200]], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            obj, _, rest = line.partition(": ")
            p = rest.split()
            if obj not in src_of or len(p) < 2:
                continue
            src, name, kind = src_of[obj], p[0], p[1]
            if kind in ("U", "w", "v"):
                needs[src].add(name)
            elif kind.isupper():
                defs[name].add(src)
    return defs, needs, missing


INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes_of(source, path):
    """Headers path includes ("..." form), as paths relative to source that
    exist in the tree."""
    with open(os.path.join(source, path), errors="replace") as f:
        text = f.read()
    out = []
    for inc in INCLUDE_RE.findall(text):
        for base in (os.path.dirname(path), ""):
            cand = os.path.normpath(os.path.join(base, inc))
            if os.path.isfile(os.path.join(source, cand)):
                out.append(cand)
                break
    return out


def product_files(source, exts):
    out = []
    for top in TOP_LAYERS + ("runtime",):
        for dirpath, _, names in os.walk(os.path.join(source, top)):
            for n in names:
                if n.endswith(exts):
                    out.append(os.path.relpath(os.path.join(dirpath, n), source))
    return sorted(out)


def build_graph(source, objs, defs, needs):
    """edges: a -> {b: [why...]}."""
    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for a, syms in needs.items():
        for s in syms:
            owners = defs.get(s, set()) - {a}
            if len(owners) > 1:
                # The same name in two programs (the host's and the
                # guest's): the one in a's own layer.
                same = {b for b in owners if layer_of(b) == layer_of(a)}
                owners = same or owners
            for b in owners:
                edges[a][b].append(s)
    for a in objs:
        for h in includes_of(source, a):
            if not h.endswith(".h"):
                continue
            b = h[:-2] + ".c"
            if b != a and b in objs:
                edges[a][b].append("#include " + h)
    return edges


def circles(nodes, edges):
    """Strongly connected components with more than one file (Tarjan,
    iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def describe_circle(comp, edges):
    lines = [f"circle of {len(comp)}: " + " ".join(comp)]
    members = set(comp)
    for a in comp:
        for b in sorted(edges.get(a, {})):
            if b in members:
                why = sorted(edges[a][b])
                more = f" (+{len(why) - 3} more)" if len(why) > 3 else ""
                lines.append(f"  {a} -> {b}: {', '.join(why[:3])}{more}")
    return lines


def check_circles(t, objs, edges, strict):
    bad, info, allowed = [], [], []
    for comp in circles(objs.keys(), edges):
        key = frozenset(comp)
        if key in ALLOWED_CIRCLES:
            allowed.append(f"allowed circle ({ALLOWED_CIRCLES[key]}): " + " ".join(comp))
        elif any(layer_of(f) == UNPLACED for f in comp) and not strict:
            info.extend("unplaced: " + line for line in describe_circle(comp, edges))
        else:
            bad.extend(describe_circle(comp, edges))
    t.result(not bad, "no circle between product .c files", bad + allowed + info)


def check_includes(t, source, strict):
    bad, info = [], []
    for f in product_files(source, (".c", ".h")):
        src = layer_of(f)
        for h in includes_of(source, f):
            dst = layer_of(h)
            if dst is None:
                continue
            ok = may_use(src, dst)
            if ok is False:
                bad.append(f"{f} ({src}) includes {h} ({dst})")
            elif ok is None:
                (bad if strict else info).append(f"unplaced: {f} ({src}) includes {h} ({dst})")
    t.result(not bad, "no file includes a header of a layer it may not use", bad + info)


def check_links(t, edges, strict):
    bad, info = [], []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            syms = [s for s in edges[a][b] if not s.startswith("#include")]
            if not syms:
                continue
            ok = may_use(layer_of(a), layer_of(b))
            line = f"{a} ({layer_of(a)}) needs {', '.join(sorted(syms)[:3])} from {b} ({layer_of(b)})"
            if ok is False:
                bad.append(line)
            elif ok is None:
                (bad if strict else info).append("unplaced: " + line)
    t.result(not bad, "no object needs a symbol of a layer it may not use", bad + info)


def meson_calls(text, func):
    """(variable, body) of each `var = func(...)` in a meson.build text."""
    out = []
    for m in re.finditer(r"(\w+)\s*=\s*" + func + r"\(", text):
        depth, i, quote = 1, m.end(), None
        while i < len(text) and depth:
            c = text[i]
            if quote:
                quote = None if c == quote else quote
            elif c == "'":
                quote = c
            elif c == "#":
                i = text.find("\n", i)
                if i < 0:
                    break
            elif c == "(" or c == "[":
                depth += 1
            elif c == ")" or c == "]":
                depth -= 1
            i += 1
        out.append((m.group(1), text[m.end():i]))
    return out


def check_meson(t, source, build):
    """Each static_library, and the dependency declared over it, names in
    its dependencies and link_with only layers it may use. A library's
    layer is that of its sources."""
    with open(os.path.join(build, "meson-info", "intro-targets.json")) as f:
        targets = json.load(f)
    lib_layer = {}
    for tgt in targets:
        if tgt["type"] != "static library":
            continue
        layers = set()
        for ts in tgt.get("target_sources", []):
            for src in ts.get("sources", []):
                layers.add(layer_of(os.path.relpath(src, source)))
        if len(layers) == 1 and None not in layers:
            lib_layer[tgt["name"]] = layers.pop()
    calls, var_layer = [], {}
    for f in product_files(source, ("meson.build",)):
        with open(os.path.join(source, f)) as fh:
            text = fh.read()
        for var, body in meson_calls(text, "static_library"):
            name = re.match(r"\s*'([^']+)'", body)
            if name and name.group(1) in lib_layer:
                var_layer[var] = lib_layer[name.group(1)]
                calls.append((f, var, body))
        for var, body in meson_calls(text, "declare_dependency"):
            calls.append((f, var, body))
    for _, var, body in calls:
        m = re.search(r"link_with\s*:\s*(\w+)", body)
        if var not in var_layer and m and m.group(1) in var_layer:
            var_layer[var] = var_layer[m.group(1)]
    bad, info = [], []
    for f, var, body in calls:
        if var not in var_layer:
            continue
        layer = var_layer[var]
        for used in sorted(set(re.findall(r"\b(\w+)\b", body)) & set(var_layer)):
            ok = may_use(layer, var_layer[used])
            line = f"{f}: {var} ({layer}) is handed {used} ({var_layer[used]})"
            if ok is False:
                bad.append(line)
            elif ok is None:
                info.append("unplaced: " + line)
    t.result(not bad and bool(var_layer), "each static_library is handed only layers it may use",
             bad + info + ([] if var_layer else ["no static_library of a layer found"]))


def check_sizes(t, source, strict):
    bad, info = [], []
    for f in product_files(source, (".c",)):
        with open(os.path.join(source, f), errors="replace") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            line = f"{f}: {n} lines (most {MAX_LINES})"
            if layer_of(f) == UNPLACED and not strict:
                info.append("unplaced: " + line)
            else:
                bad.append(line)
    t.result(not bad, f"no product .c file over {MAX_LINES} lines", bad + info)


def main():
    ap = argparse.ArgumentParser(description="Check the layering of kvrun's C code over a built tree.")
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--unplaced", choices=("report", "fail"), default="report",
                    help="what to do with runtime/*.c files not in a layer folder yet")
    a = ap.parse_args()
    source, build = os.path.abspath(a.source), os.path.abspath(a.build)
    strict = a.unplaced == "fail"

    objs = product_objects(source, build)
    if not objs:
        print("1..0 # SKIP no product objects in compile_commands.json of " + build)
        return 0
    defs, needs, missing = read_symbols(objs)
    if missing:
        print(f"Bail out! {len(missing)} objects not built, such as {missing[0]} (build first)")
        return 1
    edges = build_graph(source, objs, defs, needs)
    unplaced = sorted(f for f in objs if layer_of(f) == UNPLACED)

    t = Tap()
    print("1..5")
    check_circles(t, objs, edges, strict)
    check_includes(t, source, strict)
    check_links(t, edges, strict)
    check_meson(t, source, build)
    check_sizes(t, source, strict)
    if unplaced:
        t.note(f"{len(unplaced)} unplaced files (runtime/ not in {', '.join(RUNTIME_FOLDERS)} yet): "
               + " ".join(unplaced))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
