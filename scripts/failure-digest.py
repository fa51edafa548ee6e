#!/usr/bin/env python3
"""Print, for each test that failed in the given meson JSON test logs,
its failed checks with the diagnostics that follow them, kept short.

scripts/test.sh runs this before its summary line, so that a run whose
output is read from the end (CI keeps the tail) says why a test failed,
not only which. Bounded: at most LINES_PER_TEST lines per test, each cut
at WIDTH characters, and TOTAL lines in all."""
import json
import sys

LINES_PER_TEST = 40
DIAG_PER_CHECK = 8
WIDTH = 240
TOTAL = 300


def failed_checks(stdout):
    """The 'not ok' lines of a TAP stream, each with the '#' lines after
    it (at most DIAG_PER_CHECK); non-TAP output: its last lines."""
    lines = stdout.splitlines()
    out, i = [], 0
    tap = any(ln.startswith(("ok ", "not ok ")) for ln in lines)
    if not tap:
        return lines[-DIAG_PER_CHECK:]
    while i < len(lines):
        ln = lines[i]
        i += 1
        if not ln.startswith("not ok ") or "# TODO" in ln or "# SKIP" in ln:
            continue
        out.append(ln)
        n = 0
        while i < len(lines) and not lines[i].startswith(("ok ", "not ok ")):
            if lines[i].strip() and n < DIAG_PER_CHECK:
                out.append("    " + lines[i].strip())
                n += 1
            i += 1
    if not out:  # failed without a failed check: how it ended
        out = lines[-DIAG_PER_CHECK:]
    return out


def main(paths):
    printed = 0
    for path in paths:
        try:
            records = [json.loads(ln) for ln in open(path) if ln.strip()]
        except (OSError, ValueError):
            continue
        for rec in records:
            if rec.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
                continue
            if printed >= TOTAL:
                print("failure digest: more failures left out (see the meson logs)")
                return
            head = f"== {rec.get('name')}: {rec.get('result')} (exit {rec.get('returncode')}, " \
                   f"{rec.get('duration', 0):.0f} s)"
            body = failed_checks(rec.get("stdout") or "")[:LINES_PER_TEST]
            for ln in [head] + body:
                print(ln if len(ln) <= WIDTH else ln[:WIDTH] + " ...")
            printed += 1 + len(body)


if __name__ == "__main__":
    main(sys.argv[1:])
