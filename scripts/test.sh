#!/usr/bin/env bash
# Run kvrun's whole test suite from ./build: first the unit and integration
# suites, then the slow Linux-guest suite (own time budget, one test at a
# time so that no other test sees its VMs), then the engines suite (docker,
# podman and containerd running kvrun; one at a time too), then print one
# summary line.
# Extra arguments go to every `meson test` run (for example --no-rebuild).
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build -Dwerror=true >/dev/null
meson compile -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 --no-suite slow --no-suite engines --logbase fast "$@"
rc_fast=$?
meson test -C build --print-errorlogs --num-processes 1 --suite slow --logbase slow "$@"
rc_slow=$?
meson test -C build --print-errorlogs --num-processes 1 --suite engines --logbase engines "$@"
rc_engines=$?
python3 - build/meson-logs/fast.json build/meson-logs/slow.json build/meson-logs/engines.json <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    try:
        lines = open(path).readlines()
    except OSError:
        continue
    for line in lines:
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
[ "$rc_fast" = 0 ] && [ "$rc_slow" = 0 ] && [ "$rc_engines" = 0 ]
