#!/usr/bin/env bash
# Run kvrun's whole test suite from ./build: first the unit and integration
# suites, then the fuzz targets (tests/fuzz/run.sh: each libFuzzer target
# for $KVRUN_FUZZ_SECONDS, default 60, two at a time, in a clang build of
# its own; 0 skips them), then the slow Linux-guest suite (own time budget,
# one test at a time so that no other test sees its VMs; those also of
# suite 'long' only with KVRUN_TEST_LONG=1), then the engines
# suite (docker, podman and containerd running kvrun; one at a time too),
# then, with KVRUN_TEST_FIRST_COMMAND=1 (CI), the README's first command
# in a clean clone (scripts/first-command.sh), then each failed test's
# failed checks with their diagnostics (scripts/failure-digest.py,
# bounded), then one summary line (a fuzz target counts as one test, and
# so does the first command).
# Extra arguments go to every `meson test` run (for example --no-rebuild).
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build -Dwerror=true >/dev/null
meson compile -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 --no-suite slow --no-suite engines --logbase fast "$@"
rc_fast=$?
rc_fuzz=0
rm -f build-fuzz/fuzz-out/results
if [ "${KVRUN_FUZZ_SECONDS:-60}" != 0 ]; then
	tests/fuzz/run.sh -t "${KVRUN_FUZZ_SECONDS:-60}" -j 2
	rc_fuzz=$?
	[ "$rc_fuzz" = 77 ] && rc_fuzz=0 # no clang with libFuzzer: said so, skipped
fi
long=(--no-suite long)
[ "${KVRUN_TEST_LONG:-0}" = 1 ] && long=()
meson test -C build --print-errorlogs --num-processes 1 --suite slow "${long[@]}" --logbase slow "$@"
rc_slow=$?
meson test -C build --print-errorlogs --num-processes 1 --suite engines --logbase engines "$@"
rc_engines=$?
# The README's first command in a clean clone (scripts/first-command.sh),
# when asked for: CI does (.ci/run). One test in the summary.
rc_first=0
rm -f build/meson-logs/first-command.result
if [ "${KVRUN_TEST_FIRST_COMMAND:-0}" = 1 ]; then
	scripts/first-command.sh >build/meson-logs/first-command.txt 2>&1
	rc_first=$?
	tail -n 3 build/meson-logs/first-command.txt
	if [ "$rc_first" = 0 ]; then
		echo "first-command ok" >build/meson-logs/first-command.result
	else
		echo "first-command failed" >build/meson-logs/first-command.result
		echo "== first-command: FAIL (its last lines; all in build/meson-logs/first-command.txt)"
		tail -n 25 build/meson-logs/first-command.txt | cut -c1-240
	fi
fi
python3 scripts/failure-digest.py build/meson-logs/fast.json build/meson-logs/slow.json build/meson-logs/engines.json
python3 - build-fuzz/fuzz-out/results build/meson-logs/first-command.result build/meson-logs/fast.json \
	build/meson-logs/slow.json build/meson-logs/engines.json <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:3]:  # "name ok|failed" lines: fuzz targets, first-command
    try:
        for line in open(path):
            counts["passed" if line.split()[1] == "ok" else "failed"] += 1
    except OSError:
        pass
for path in sys.argv[3:]:
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
[ "$rc_fast" = 0 ] && [ "$rc_fuzz" = 0 ] && [ "$rc_slow" = 0 ] && [ "$rc_engines" = 0 ] && [ "$rc_first" = 0 ]
