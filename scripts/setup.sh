#!/usr/bin/env bash
# Install every Debian package kvrun's build, tests and demo need (idempotent),
# then configure and build into ./build. Run as root on Debian 12.
#   scripts/setup.sh            packages + build
#   scripts/setup.sh --bench    also the benchmark yardsticks (qemu, gnuplot, ...)
#   scripts/setup.sh --no-build packages only
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0 build=1
for a in "$@"; do
	case "$a" in
	--bench) bench=1 ;;
	--no-build) build=0 ;;
	*) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

pkgs=(
	build-essential meson ninja-build pkg-config git clang-format
	libseccomp-dev libcap-dev libjansson-dev libkmod-dev zlib1g-dev
	busybox-static cpio e2fsprogs util-linux iproute2 kmod
	runc crun tmux python3
)
if [ "$bench" = 1 ]; then
	pkgs+=(qemu-system-x86 gnuplot-nox hyperfine postgresql-15 nginx-light wrk fio bc)
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$build" = 1 ]; then
	if [ ! -d build ]; then
		meson setup build -Dwerror=true
	fi
	meson compile -C build
fi
