#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build kvrun's guest kernel from Debian's linux-source-6.12 package.
#
#   kernel/build.sh [--prefix DIR | --output DIR] [--cache DIR] [--force]
#                   [--config-only] [--no-install] [--print-key]
#                   [--seed DIR [--seed-only]] [--cached-only]
#                   [--progress | --no-progress]
#
#   --prefix DIR    install into DIR/share/kvrun/kernel (default prefix
#                   /usr/local, where a kvrun built with meson's default
#                   prefix looks for its kernel)
#   --output DIR    install into DIR itself
#   --cache DIR     unpack and build under DIR (default $KVRUN_KERNEL_CACHE
#                   or /var/cache/kvrun/kernel)
#   --force         rebuild even if the cache holds a result for this key
#   --config-only   stop after generating and verifying the .config
#   --no-install    build (or reuse) but do not install
#   --print-key     print the cache key of the current inputs and exit
#   --seed DIR      when the cache has no result for this key, take the
#                   prebuilt kernel in DIR (vmlinux, bzImage, config) as its
#                   result if DIR's config is exactly the configuration these
#                   inputs generate; otherwise build (and say why)
#   --seed-only     with --seed: if the seed does not match, stop there
#                   (exit 0) instead of building
#   --cached-only   never build: install the cached result of this key if
#                   there is one, else say so and exit 0 (meson install)
#   --progress      a progress line on the terminal (default when stdout is
#                   a terminal); --no-progress for none
#
# Steps: unpack the source, apply kernel/patches/*.patch, make tinyconfig,
# merge kernel/kvrun.fragment, make olddefconfig, verify with
# kernel/check-config.py that no fragment option was dropped, then build
# vmlinux and bzImage. The result is cached under a key hashed from the
# fragment, the patches, the source package version and the compiler, so a
# second run only installs. A clean build takes 10-25 minutes on 2 cores
# (docs/kernels.md has the measurements).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fragment=$here/kvrun.fragment
tarball=/usr/src/linux-source-6.12.tar.xz
srcpkg=linux-source-6.12
cache=${KVRUN_KERNEL_CACHE:-/var/cache/kvrun/kernel}
dest=/usr/local/share/kvrun/kernel
force=0 config_only=0 install=1 print_key=0 cached_only=0 seed= seed_only=0
progress=auto
# Objects of a build of this configuration (1,511 for 6.12.117 with the
# fragment of December 2026), for the progress line before any build has
# recorded its own count in build-info.
objects_estimate=1511

die() { echo "kernel/build.sh: $*" >&2; exit 1; }
log() { echo "kernel/build.sh: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) dest=$2/share/kvrun/kernel; shift ;;
	--prefix=*) dest=${1#*=}/share/kvrun/kernel ;;
	--output) dest=$2; shift ;;
	--output=*) dest=${1#*=} ;;
	--cache) cache=$2; shift ;;
	--cache=*) cache=${1#*=} ;;
	--seed) seed=$2; shift ;;
	--seed=*) seed=${1#*=} ;;
	--seed-only) seed_only=1 ;;
	--force) force=1 ;;
	--config-only) config_only=1 ;;
	--no-install) install=0 ;;
	--print-key) print_key=1 ;;
	--cached-only) cached_only=1 ;;
	--progress) progress=1 ;;
	--no-progress) progress=0 ;;
	-h|--help) sed -n '3,37p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
if [ "$progress" = auto ]; then
	progress=0
	[ -t 1 ] && progress=1
fi

start=$(date +%s)

# mm:ss (or h:mm:ss) of a number of seconds.
clock() {
	local s=$1
	if [ "$s" -ge 3600 ]; then
		printf '%d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
	else
		printf '%d:%02d' $((s / 60)) $((s % 60))
	fi
}

# with_progress WHAT COUNT_FN TOTAL CMD...: run CMD; on a terminal, redraw
# one line every 2 s with WHAT, COUNT_FN's count of TOTAL (when TOTAL > 0),
# the time so far and an estimate of the time left.
with_progress() {
	local what=$1 count_fn=$2 total=$3 pid rc=0 t0 el n line
	shift 3
	if [ "$progress" = 0 ]; then
		"$@"
		return
	fi
	t0=$(date +%s)
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 2
		el=$(($(date +%s) - t0))
		line="kernel/build.sh: $what, $(clock "$el")"
		if [ "$total" -gt 0 ]; then
			n=$("$count_fn")
			[ "$n" -gt "$total" ] && total=$n
			line="kernel/build.sh: $what: $n of ~$total ($((n * 100 / total))%), $(clock "$el")"
			if [ "$n" -gt 20 ] && [ "$el" -gt 30 ]; then
				line="$line, ~$(clock $(((total - n) * el / n))) left"
			fi
		fi
		printf '\r\033[K%s' "$line"
	done
	wait "$pid" || rc=$?
	printf '\r\033[K'
	return "$rc"
}

count_objects() { find "$tree" -name '*.o' 2>/dev/null | wc -l; }

# The install directory for --output relative to meson's destdir/prefix.
install_result() {
	mkdir -p "$dest"
	for f in vmlinux bzImage config System.map build-info; do
		[ -f "$out/$f" ] || continue
		install -m 0644 "$out/$f" "$dest/$f.tmp"
		mv "$dest/$f.tmp" "$dest/$f"
	done
	log "installed to $dest"
}

# The key of the current inputs: the source package's version (or the
# tarball's hash), the compiler, the fragment and the patches.
srcver=$(dpkg-query -W -f='${Version}' "$srcpkg" 2>/dev/null || true)
if [ -z "$srcver" ] && [ -f "$tarball" ]; then
	srcver=sha256:$(sha256sum "$tarball" | cut -d' ' -f1)
fi
if [ "$cached_only" = 1 ]; then
	if [ -z "$srcver" ] || ! command -v gcc >/dev/null; then
		log "no kernel installed: $srcpkg or gcc missing, so no build of these inputs can be cached"
		exit 0
	fi
fi

# Build dependencies and the source package (Debian): only when a build may
# be needed.
need=()
[ "$cached_only" = 1 ] || [ "$print_key" = 1 ] || {
	[ -f "$tarball" ] || need+=("$srcpkg")
	for tool in gcc:gcc make:make flex:flex bison:bison bc:bc xz:xz-utils cpio:cpio; do
		command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
	done
	for dev in libelf-dev libssl-dev; do
		dpkg-query -W -f='${Status}' "$dev" 2>/dev/null | grep -q 'install ok installed' || need+=("$dev")
	done
}
if [ "${#need[@]}" -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	srcver=$(dpkg-query -W -f='${Version}' "$srcpkg" 2>/dev/null || true)
fi
[ -f "$tarball" ] || [ "$cached_only" = 1 ] || die "$tarball missing after installing $srcpkg"
[ -n "$srcver" ] || srcver=sha256:$(sha256sum "$tarball" | cut -d' ' -f1)

key=$({
	echo "source $srcpkg $srcver"
	echo "compiler $(gcc --version | head -n1)"
	cat "$fragment"
	for p in "$here"/patches/*.patch; do [ -f "$p" ] && { echo "patch ${p##*/}"; cat "$p"; }; done
} | sha256sum | cut -c1-16)
if [ "$print_key" = 1 ]; then
	echo "$key"
	exit 0
fi
work=$cache/$key
tree=$work/linux
out=$work/out

if [ "$cached_only" = 1 ]; then
	if [ -f "$out/vmlinux" ]; then
		install_result
	else
		log "no kernel installed: the cache $cache has no build of key $key (kernel/build.sh builds it)"
	fi
	exit 0
fi
log "source $srcpkg $srcver, key $key, cache $work"

if [ "$force" = 1 ]; then
	rm -rf "$out"
fi

unpack() {
	if [ ! -f "$work/.unpacked" ]; then
		rm -rf "$tree" "$work/.patched"
		log "unpacking $tarball (about 1.5 GB)"
		mkdir -p "$tree"
		with_progress "unpacking" count_objects 0 tar -xf "$tarball" -C "$tree" --strip-components=1
		touch "$work/.unpacked"
	fi
	if [ ! -f "$work/.patched" ]; then
		for p in "$here"/patches/*.patch; do
			[ -f "$p" ] || continue
			log "applying ${p##*/}"
			patch -d "$tree" -p1 --forward --quiet <"$p"
		done
		touch "$work/.patched"
	fi
}

configure() {
	log "configuring: tinyconfig + ${fragment##*/} + olddefconfig"
	make -C "$tree" -s tinyconfig >/dev/null
	(cd "$tree" && scripts/kconfig/merge_config.sh -m -O . .config "$fragment" >/dev/null)
	make -C "$tree" -s olddefconfig
	if ! "$here/check-config.py" "$fragment" "$tree/.config"; then
		die "the fragment does not survive olddefconfig (see the list above)"
	fi
}

# The option lines of a .config, sorted (comments and blank lines left out).
config_lines() { grep '^CONFIG_' "$1" | sort; }

# Take the prebuilt kernel in $seed as this key's result when its config
# is the one configure() generated. Returns 1 (and says why) when not.
try_seed() {
	local f diff
	for f in vmlinux bzImage config; do
		if [ ! -f "$seed/$f" ]; then
			log "seed $seed not used: it has no $f"
			return 1
		fi
	done
	diff=$(diff <(config_lines "$seed/config") <(config_lines "$tree/.config") | grep '^[<>]' || true)
	if [ -n "$diff" ]; then
		log "seed $seed not used: its configuration differs from what these inputs generate in $(echo "$diff" | wc -l) line(s) (< seed, > these inputs):"
		echo "$diff" | head -n 20 | sed 's/^/    /'
		return 1
	fi
	mkdir -p "$out.tmp"
	for f in vmlinux bzImage config System.map; do
		[ -f "$seed/$f" ] && cp "$seed/$f" "$out.tmp/$f"
	done
	{
		echo "source=$srcpkg $srcver"
		echo "key=$key"
		echo "compiler=$(gcc --version | head -n1)"
		echo "seeded_from=$(cd "$seed" && pwd) (its config equals this key's; kernel/patches are not compared)"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$out.tmp/build-info"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	log "seeded the cache from $seed: its configuration is the one these inputs generate"
}

build() {
	local build_start total=$objects_estimate prev
	prev=$(grep -h '^objects=' "$cache"/*/out/build-info 2>/dev/null | tail -n1 | cut -d= -f2 || true)
	[ -n "$prev" ] && total=$prev
	log "building vmlinux and bzImage with -j$(nproc) (a clean build takes 10-25 min on 2 cores)"
	build_start=$(date +%s)
	with_progress "compiling objects" count_objects "$total" nice make -C "$tree" -s -j"$(nproc)" vmlinux bzImage
	mkdir -p "$out.tmp"
	cp "$tree/vmlinux" "$tree/arch/x86/boot/bzImage" "$tree/System.map" "$out.tmp/"
	cp "$tree/.config" "$out.tmp/config"
	{
		echo "source=$srcpkg $srcver"
		echo "key=$key"
		echo "compiler=$(gcc --version | head -n1)"
		echo "build_seconds=$(($(date +%s) - build_start))"
		echo "objects=$(count_objects)"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$out.tmp/build-info"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	# Other keys' source trees are 2+ GB each; keep only their results.
	for d in "$cache"/*/linux; do
		[ "$d" = "$tree" ] || rm -rf "$d" "${d%/linux}/.unpacked" "${d%/linux}/.patched"
	done
}

if [ ! -f "$out/vmlinux" ] || [ "$config_only" = 1 ]; then
	mkdir -p "$work"
	unpack
	configure
	if [ "$config_only" = 1 ]; then
		log "config verified in $(($(date +%s) - start)) s: $tree/.config"
		exit 0
	fi
	if [ -n "$seed" ] && try_seed; then
		# The source tree is not needed for a seeded result.
		rm -rf "$tree" "$work/.unpacked" "$work/.patched"
	elif [ "$seed_only" = 1 ]; then
		log "not building (--seed-only): the cache has no result for key $key"
		exit 0
	else
		build
	fi
else
	log "cached build found ($(grep -E '^(build_seconds|seeded_from)' "$out/build-info" | head -n1 || true))"
fi

if [ "$install" = 1 ]; then
	install_result
fi
log "vmlinux $(stat -c %s "$out/vmlinux") bytes, bzImage $(stat -c %s "$out/bzImage") bytes"
log "done in $(clock $(($(date +%s) - start)))"
