#!/usr/bin/env bash
# Fail when a C file differs from .clang-format (tests/guest included).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "check-format: $f is not formatted (run: clang-format -i $f)" >&2
		bad=1
	fi
done < <(git ls-files '*.c' '*.h')
exit $bad
