#!/usr/bin/env bash
# Install every Debian package kvrun's build, tests and demo need (idempotent),
# then configure and build into ./build. Run as root on Debian 12.
#   scripts/setup.sh            packages + build
#   scripts/setup.sh --bench    also the benchmark yardsticks (qemu, gnuplot, ...)
#   scripts/setup.sh --no-build packages only
#   scripts/setup.sh --kernel   also build and install kvrun's guest kernel
#                               (kernel/build.sh: ~10-20 min on 2 cores)
#   scripts/setup.sh --distro-kernel
#                               also fetch Debian's cloud kernel into a cache,
#                               unpacked, not installed (tests of the
#                               distro-kernel path; docs/kernels.md)
#   scripts/setup.sh --engines  also docker, podman and containerd (and what
#                               they need), for the engines test suite
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0 build=1 kernel=0 distro=0 engines=0
for a in "$@"; do
	case "$a" in
	--bench) bench=1 ;;
	--no-build) build=0 ;;
	--kernel) kernel=1 ;;
	--distro-kernel) distro=1 ;;
	--engines) engines=1 ;;
	*) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

pkgs=(
	build-essential meson ninja-build pkg-config git clang-format
	libseccomp-dev libcap-dev libjansson-dev libkmod-dev zlib1g-dev
	busybox-static cpio e2fsprogs util-linux iproute2 kmod
	runc crun tmux python3
)
pkgs+=(acpica-tools)         # iasl, for the ACPI table tests
pkgs+=(xz-utils zstd)        # decompressing distro-kernel modules (runtime/host/kmod-resolve.c) and its test
pkgs+=(linux-source-6.12 flex bison) # the kernel config check (tests/integration/test_kernel_config.py)
if [ "$bench" = 1 ]; then
	pkgs+=(qemu-system-x86 gnuplot-nox hyperfine postgresql-15 nginx-light wrk iperf3 fio bc liburing-dev)
fi
if [ "$engines" = 1 ]; then
	# The engines' own daemons are started by the tests (tests/integration/
	# test_engines_*.py); podman uses CNI (containernetworking-plugins).
	pkgs+=(containerd docker.io podman conmon containernetworking-plugins slirp4netns uidmap iptables catatonit)
fi
if [ "$kernel" = 1 ]; then
	pkgs+=(linux-source-6.12 flex bison bc libelf-dev libssl-dev xz-utils)
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

# --- guest kernel (only with --kernel) ---
# Builds kernel/kvrun.fragment on Debian's linux-source-6.12 and installs
# vmlinux and bzImage to /usr/local/share/kvrun/kernel; cached, so a rerun
# with unchanged inputs only reinstalls. See docs/kernels.md.
if [ "$kernel" = 1 ]; then
	kernel/build.sh
fi

# --- Debian's cloud kernel, unpacked into a cache (only with --distro-kernel) ---
# apt-get download + dpkg-deb -x + depmod -b: a 27 MB download, 132 MB unpacked; the
# distro-kernel tests skip, naming the reason, when it is missing.
if [ "$distro" = 1 ]; then
	python3 tests/integration/distro_kernel.py || echo "setup.sh: distro kernel not fetched (its tests will skip)" >&2
fi
