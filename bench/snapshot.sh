#!/usr/bin/env bash
# Snapshot and restore of the test guest (tests/guest, test=snapshot) at
# several guest RAM sizes: snapshot time and file size, and restore time
# (p50 of RUNS restores of one file, each in a fresh process), with and
# without the guest-memory checksum. Results under bench/results/<date>/.
#   bench/snapshot.sh [RUNS] [SIZES...]      (default: 10 64M 256M 1G)
# Needs: a built ./build (kvrun and the test guest), /dev/kvm.
# The guest is the small freestanding test guest, not Linux: it writes
# about 16 MiB of RAM (its image, and two qwords in every page of a 16 MiB
# pattern region); a Linux guest's snapshot holds every page it ever wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64M 256M 1G)
kvrun=${KVRUN:-build/runtime/kvrun}
guest=${KVRUN_TEST_GUEST:-build/tests/guest/kvrun-test-guest}
for f in "$kvrun" "$guest"; do
	[ -e "$f" ] || { echo "snapshot: missing $f (build first)" >&2; exit 1; }
done
[ -r /dev/kvm ] || { echo "snapshot: no /dev/kvm" >&2; exit 1; }
out=bench/results/$(date -u +%Y-%m-%d)
mkdir -p "$out"
python3 bench/snapshot.py --kvrun "$kvrun" --guest "$guest" --runs "$runs" --out "$out" "${sizes[@]}"
echo "snapshot: results in $out/snapshot.json and $out/snapshot.md"
