#!/usr/bin/env bash
# Run kvrun's whole test suite (unit, integration, and the slow Linux-guest
# suite with its own time budget) from ./build, then print one summary line.
# Extra arguments go to `meson test` (for example --suite unit).
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build -Dwerror=true >/dev/null
meson compile -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    r = json.loads(line).get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif r == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
exit $rc
