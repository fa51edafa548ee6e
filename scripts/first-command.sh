#!/usr/bin/env bash
# The README's first command as a new user runs it: clone this repository
# into a directory with nothing beside it (no ../shared), run
# `scripts/setup.sh && scripts/demo.sh` there, and pass only if the demo's
# container greets ("Hello from a kvrun microVM").
#
# The guest kernel cache lives outside the clone ($KVRUN_KERNEL_CACHE, else
# /var/cache/kvrun/kernel). First, from this checkout, it is seeded from
# ../shared/guest-kernel when that kernel's configuration is exactly the one
# this tree's kernel inputs generate (kernel/build.sh --seed --seed-only);
# the clone's setup then only installs the kernel. When the seed does not
# match (kernel/build.sh lists the options that differ) and the cache is
# cold, the clone's setup builds the kernel: the cold path, 10-25 min on 2
# cores. The demo's guest boot runs under /tmp/kvrun-guest.lock.
#   scripts/first-command.sh [--keep]   --keep: leave the clone in place
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
[ "${1:-}" = --keep ] && keep=1
t0=$(date +%s)
if [ -f ../shared/guest-kernel/config ]; then
	echo "first-command: seeding the kernel cache from ../shared/guest-kernel if it matches"
	kernel/build.sh --no-install --no-progress --seed ../shared/guest-kernel --seed-only
fi
work=$(mktemp -d /tmp/kvrun-first-command-XXXXXX)
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
git clone -q "$PWD" "$work/kvrun"
cd "$work/kvrun"
[ ! -e ../shared ] || { echo "first-command: $work/shared exists" >&2; exit 1; }
echo "first-command: in $work/kvrun: scripts/setup.sh && scripts/demo.sh"
rc=0
{ scripts/setup.sh && flock /tmp/kvrun-guest.lock scripts/demo.sh; } 2>&1 | tee "$work/log" || rc=$?
el=$(($(date +%s) - t0))
if [ "$rc" = 0 ] && grep -q "^Hello from a kvrun microVM" "$work/log"; then
	echo "first-command: passed in $((el / 60)) min $((el % 60)) s"
	exit 0
fi
echo "first-command: FAILED after $((el / 60)) min $((el % 60)) s (exit status $rc, or no greeting)" >&2
exit 1
