#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check that a kernel .config kept every option a config fragment asks for.

    check-config.py FRAGMENT DOTCONFIG

`make olddefconfig` silently drops a fragment line whose dependencies are
not met (or whose symbol no longer exists). This lists each such line with
what the .config has instead, and exits 1 if there is any; 0 when all hold.
A fragment line "CONFIG_X=n" (or "# CONFIG_X is not set") is satisfied when
the .config does not set X at all or says it is not set.
"""
import re
import sys

SET_RE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
UNSET_RE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse(path, fragment):
    """Return {symbol: value} with "n" for unset; a fragment keeps order."""
    opts = {}
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            m = SET_RE.match(line)
            if m:
                opts[m.group(1)] = m.group(2)
                continue
            m = UNSET_RE.match(line)
            if m:
                opts[m.group(1)] = "n"
                continue
            if fragment and line and not line.startswith("#"):
                raise SystemExit(f"{path}:{lineno}: not a config line: {line}")
    return opts


def unquote(v):
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v


def dropped(fragment, config):
    """List (symbol, wanted, got) for every fragment option not honoured."""
    out = []
    for sym, want in fragment.items():
        got = config.get(sym, "n")
        if want == "n":
            if got != "n":
                out.append((sym, want, got))
        elif unquote(got) != unquote(want):
            # Numbers may be written in hex or decimal; compare values.
            try:
                if int(want, 0) == int(got, 0):
                    continue
            except ValueError:
                pass
            out.append((sym, want, "(unset)" if got == "n" and sym not in config else got))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    frag = parse(argv[1], True)
    conf = parse(argv[2], False)
    bad = dropped(frag, conf)
    for sym, want, got in bad:
        print(f"dropped: {sym}={want} (.config has {got})")
    if bad:
        print(f"{len(bad)} of {len(frag)} fragment options did not survive olddefconfig")
        return 1
    print(f"all {len(frag)} fragment options survived olddefconfig")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
