#!/usr/bin/env bash
# Run kvrun's libFuzzer targets (tests/fuzz/, docs/testing.md): set up a
# clang build with AddressSanitizer and UBSan (build-fuzz/, -Dfuzz=enabled),
# build the targets, then run each from its seed corpus (corpus/<target>/)
# for a fixed time, JOBS at a time. Prints executions per target and ends
# with one line; exits 1 when a target crashed, leaked, hung on an input or
# did not run, 77 when no clang with libFuzzer is installed.
#
#   tests/fuzz/run.sh [-t SECONDS] [-j JOBS] [-b BUILD_DIR] [TARGET...]
#
# SECONDS per target: -t, else $KVRUN_FUZZ_SECONDS, else 60. JOBS: -j, else
# $KVRUN_FUZZ_JOBS, else 2. What each run found stays in
# BUILD_DIR/fuzz-out/<target>/: log, corpus/ (inputs that found new
# coverage; the seeds are never written to) and crash-*, leak-*, timeout-*
# (replay one: BUILD_DIR/tests/fuzz/fuzz-<target> FILE). A results file
# there (fuzz-out/results) has one line per target: name, ok|FAILED, runs.
set -uo pipefail
cd "$(dirname "$0")/../.."

secs=${KVRUN_FUZZ_SECONDS:-60} jobs=${KVRUN_FUZZ_JOBS:-2} build=build-fuzz
while getopts "t:j:b:" o; do
	case "$o" in
	t) secs=$OPTARG ;;
	j) jobs=$OPTARG ;;
	b) build=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS] [-j JOBS] [-b BUILD_DIR] [TARGET...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ "$#" -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for d in tests/fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
for t in "${targets[@]}"; do
	[ -d "tests/fuzz/corpus/$t" ] || { echo "fuzz: no target $t (tests/fuzz/corpus/$t)" >&2; exit 2; }
done

# A clang that links libFuzzer (Debian: clang and libclang-rt-14-dev).
cc=
for c in ${CC_FUZZ:-} clang clang-14; do
	command -v "$c" >/dev/null || continue
	if printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' |
		"$c" -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
		cc=$c
		break
	fi
done
if [ -z "$cc" ]; then
	echo "fuzz: SKIP: no clang with libFuzzer (-fsanitize=fuzzer); scripts/setup.sh installs it"
	exit 77
fi

out=$build/fuzz-out
if [ ! -f "$build/build.ninja" ]; then
	echo "fuzz: setting up $build with $cc"
	CC=$cc meson setup "$build" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
		>"$build.setup.log" 2>&1 || { cat "$build.setup.log"; exit 1; }
fi
start=$(date +%s)
if ! ninja -C "$build" "${targets[@]/#/tests/fuzz/fuzz-}" >"$out.build.log" 2>&1; then
	mkdir -p "$out"
	tail -40 "$out.build.log"
	echo "fuzz: build failed"
	exit 1
fi
echo "fuzz: built ${#targets[@]} targets in $(($(date +%s) - start)) s; $secs s each, $jobs at a time"
rm -rf "$out"
mkdir -p "$out"

run_one() {
	local t=$1 dir=$out/$1
	mkdir -p "$dir/corpus"
	# halt_on_error: UB is a crash; abort_on_error: libFuzzer saves the input.
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1 \
		UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
		timeout -k 10 $((secs + 120)) "$build/tests/fuzz/fuzz-$t" -max_total_time="$secs" -timeout=20 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/" \
		"$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log" 2>&1
	echo $? >"$dir/rc"
}

running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	run_one "$t" &
	running=$((running + 1))
done
wait

failed=0
printf '%-16s %-7s %12s %9s %7s\n' target result runs "runs/s" "new"
for t in "${targets[@]}"; do
	dir=$out/$t
	rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
	new=$(sed -n 's/^stat::new_units_added: *//p' "$dir/log" | tail -1)
	result=ok
	if [ "$rc" != 0 ] || [ -z "$runs" ] || compgen -G "$dir/crash-*" >/dev/null || compgen -G "$dir/leak-*" >/dev/null ||
		compgen -G "$dir/timeout-*" >/dev/null || compgen -G "$dir/oom-*" >/dev/null; then
		result=FAILED
		failed=$((failed + 1))
	fi
	printf '%-16s %-7s %12s %9s %7s\n' "$t" "$result" "${runs:-?}" "${rate:-?}" "${new:-?}"
	echo "$t $result ${runs:-0}" >>"$out/results"
done
for t in "${targets[@]}"; do
	dir=$out/$t
	grep -q "^$t FAILED" "$out/results" || continue
	echo "--- $t (rc $(cat "$dir/rc" 2>/dev/null)): $(ls "$dir" | grep -E '^(crash|leak|timeout|oom)-' | sed "s|^|$dir/|" | tr '\n' ' ')"
	grep -E "ERROR|SUMMARY|runtime error|^    #[0-9] " "$dir/log" | head -25
done
echo "fuzz: ${#targets[@]} targets, $failed failed, $(($(date +%s) - start)) s"
[ "$failed" = 0 ]
