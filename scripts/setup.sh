#!/usr/bin/env bash
# Install every Debian package kvrun's build, tests and demo need (idempotent),
# configure and build into ./build, and build and install kvrun's guest
# kernel. Run as root on Debian 12.
#   scripts/setup.sh            packages + build + guest kernel
#   scripts/setup.sh --no-kernel
#                               no guest kernel (a machine that has one:
#                               ../shared/guest-kernel beside the checkout,
#                               $KVRUN_KERNEL, or a config file naming one)
#   scripts/setup.sh --no-build packages only (and the kernel, unless
#                               --no-kernel)
#   scripts/setup.sh --bench    also the benchmark yardsticks (qemu, gnuplot, ...)
#   scripts/setup.sh --distro-kernel
#                               also fetch Debian's cloud kernel into a cache,
#                               unpacked, not installed (tests of the
#                               distro-kernel path; docs/kernels.md)
#   scripts/setup.sh --engines  also docker, podman and containerd (and what
#                               they need), for the engines test suite
#   scripts/setup.sh --deb      also what building and checking the Debian
#                               package needs (debhelper, lintian)
#
# The guest kernel is kvrun's own (kernel/build.sh: Debian's
# linux-source-6.12 with kernel/kvrun.fragment), cached by its inputs in
# $KVRUN_KERNEL_CACHE or /var/cache/kvrun/kernel, so a second run only
# installs it. A cold build takes 10-25 minutes on 2 cores (README.md has
# the measured figure). When ../shared/guest-kernel beside the checkout was
# built from the same configuration, it seeds the cache instead.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0 build=1 kernel=1 distro=0 engines=0 deb=0
for a in "$@"; do
	case "$a" in
	--bench) bench=1 ;;
	--no-build) build=0 ;;
	--kernel) kernel=1 ;; # the default; kept for older instructions
	--no-kernel) kernel=0 ;;
	--distro-kernel) distro=1 ;;
	--engines) engines=1 ;;
	--deb) deb=1 ;;
	-h | --help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

t_all=$(date +%s)
clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
step_start=0
step() {
	step_start=$(date +%s)
	echo "setup.sh: $*"
}
step_done() { echo "setup.sh: ... $1 in $(clock $(($(date +%s) - step_start)))"; }

pkgs=(
	build-essential meson ninja-build pkg-config git clang-format
	libseccomp-dev libcap-dev libjansson-dev libkmod-dev zlib1g-dev
	busybox-static cpio e2fsprogs util-linux iproute2 kmod
	runc crun tmux python3
)
pkgs+=(acpica-tools)         # iasl, for the ACPI table tests
pkgs+=(clang libclang-rt-14-dev) # libFuzzer, for the fuzz targets (tests/fuzz/run.sh)
pkgs+=(xz-utils zstd)        # decompressing distro-kernel modules (runtime/host/kmod-resolve.c) and its test
pkgs+=(linux-source-6.12 flex bison) # the kernel config check (tests/integration/test_kernel_config.py)
pkgs+=(bindfs)               # pjdfstest and the fs benchmark beside kvrun's virtio-fs server (docs/virtio-fs.md)
pkgs+=(man-db bash-completion zsh)   # the manual pages and completion tests
if [ "$bench" = 1 ]; then
	pkgs+=(qemu-system-x86 qemu-utils gnuplot-nox hyperfine postgresql-15 nginx-light wrk iperf3 fio bc liburing-dev)
fi
if [ "$engines" = 1 ]; then
	# The engines' own daemons are started by the tests (tests/integration/
	# test_engines_*.py); podman uses CNI (containernetworking-plugins).
	pkgs+=(containerd docker.io podman conmon containernetworking-plugins slirp4netns uidmap iptables catatonit)
fi
if [ "$kernel" = 1 ]; then
	pkgs+=(linux-source-6.12 flex bison bc libelf-dev libssl-dev xz-utils)
fi
if [ "$deb" = 1 ]; then
	pkgs+=(debhelper dpkg-dev fakeroot lintian)
fi

step "[1/3] packages"
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Wait for another apt or dpkg (unattended upgrades on a fresh machine).
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
step_done "packages"

if [ "$build" = 1 ]; then
	step "[2/3] build (meson, ninja) into ./build"
	if [ ! -d build ]; then
		meson setup build -Dwerror=true >/dev/null
	fi
	# On a terminal ninja keeps its progress ("[120/310] Compiling ...") on one line.
	meson compile -C build
	step_done "build"
else
	echo "setup.sh: [2/3] build skipped (--no-build)"
fi

# --- guest kernel: kvrun's own, where the build's kvrun looks for it ---
if [ "$kernel" = 1 ]; then
	prefix=/usr/local datadir=share
	if [ -d build/meson-info ]; then
		eval "$(meson introspect --buildoptions build | python3 -c '
import json, shlex, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print("prefix=%s datadir=%s" % (shlex.quote(o["prefix"]), shlex.quote(o["datadir"])))')"
	fi
	case "$datadir" in /*) ;; *) datadir=$prefix/$datadir ;; esac
	seed=()
	[ -f ../shared/guest-kernel/config ] && seed=(--seed ../shared/guest-kernel)
	step "[3/3] guest kernel: kernel/build.sh, cached by its inputs (a cold build takes 10-25 min on 2 cores, longer on a busy machine; --no-kernel skips it)"
	kernel/build.sh --output "$datadir/kvrun/kernel" "${seed[@]}"
	step_done "guest kernel in $datadir/kvrun/kernel"
else
	echo "setup.sh: [3/3] guest kernel skipped (--no-kernel)"
fi

# --- Debian's cloud kernel, unpacked into a cache (only with --distro-kernel) ---
# apt-get download + dpkg-deb -x + depmod -b: a 27 MB download, 132 MB unpacked; the
# distro-kernel tests skip, naming the reason, when it is missing.
if [ "$distro" = 1 ]; then
	python3 tests/integration/distro_kernel.py || echo "setup.sh: distro kernel not fetched (its tests will skip)" >&2
fi
echo "setup.sh: done in $(clock $(($(date +%s) - t_all)))"
