#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build kvrun's guest kernel from Debian's linux-source-6.12 package.
#
#   kernel/build.sh [--prefix DIR | --output DIR] [--cache DIR] [--force]
#                   [--config-only] [--no-install] [--print-key]
#
#   --prefix DIR    install into DIR/share/kvrun/kernel (default prefix
#                   /usr/local, where kvrun looks for a kernel by default)
#   --output DIR    install into DIR itself
#   --cache DIR     unpack and build under DIR (default $KVRUN_KERNEL_CACHE
#                   or /var/cache/kvrun/kernel)
#   --force         rebuild even if the cache holds a result for this key
#   --config-only   stop after generating and verifying the .config
#   --no-install    build (or reuse) but do not install
#   --print-key     print the cache key of the current inputs and exit
#
# Steps: unpack the source, apply kernel/patches/*.patch, make tinyconfig,
# merge kernel/kvrun.fragment, make olddefconfig, verify with
# kernel/check-config.py that no fragment option was dropped, then build
# vmlinux and bzImage. The result is cached under a key hashed from the
# fragment, the patches, the source package version and the compiler, so a
# second run only installs. A clean build takes about 10-20 minutes on 2
# cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fragment=$here/kvrun.fragment
tarball=/usr/src/linux-source-6.12.tar.xz
srcpkg=linux-source-6.12
cache=${KVRUN_KERNEL_CACHE:-/var/cache/kvrun/kernel}
dest=/usr/local/share/kvrun/kernel
force=0 config_only=0 install=1 print_key=0

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
	--force) force=1 ;;
	--config-only) config_only=1 ;;
	--no-install) install=0 ;;
	--print-key) print_key=1 ;;
	-h|--help) sed -n '3,26p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done

start=$(date +%s)

# Build dependencies and the source package (Debian).
need=()
[ -f "$tarball" ] || need+=("$srcpkg")
for tool in gcc:gcc make:make flex:flex bison:bison bc:bc xz:xz-utils cpio:cpio; do
	command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
for dev in libelf-dev libssl-dev; do
	dpkg-query -W -f='${Status}' "$dev" 2>/dev/null | grep -q 'install ok installed' || need+=("$dev")
done
if [ "${#need[@]}" -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ -f "$tarball" ] || die "$tarball missing after installing $srcpkg"

srcver=$(dpkg-query -W -f='${Version}' "$srcpkg" 2>/dev/null || true)
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
log "source $srcpkg $srcver, key $key, cache $work"

if [ "$force" = 1 ]; then
	rm -rf "$out"
fi

if [ ! -f "$out/vmlinux" ] || [ "$config_only" = 1 ]; then
	mkdir -p "$work"
	if [ ! -f "$work/.unpacked" ]; then
		rm -rf "$tree" "$work/.patched"
		log "unpacking $tarball"
		mkdir -p "$tree"
		tar -xf "$tarball" -C "$tree" --strip-components=1
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

	log "configuring: tinyconfig + ${fragment##*/} + olddefconfig"
	make -C "$tree" -s tinyconfig >/dev/null
	(cd "$tree" && scripts/kconfig/merge_config.sh -m -O . .config "$fragment" >/dev/null)
	make -C "$tree" -s olddefconfig
	if ! "$here/check-config.py" "$fragment" "$tree/.config"; then
		die "the fragment does not survive olddefconfig (see the list above)"
	fi
	if [ "$config_only" = 1 ]; then
		log "config verified in $(($(date +%s) - start)) s: $tree/.config"
		exit 0
	fi

	log "building vmlinux and bzImage with -j$(nproc)"
	build_start=$(date +%s)
	nice make -C "$tree" -s -j"$(nproc)" vmlinux bzImage
	mkdir -p "$out.tmp"
	cp "$tree/vmlinux" "$tree/arch/x86/boot/bzImage" "$tree/System.map" "$out.tmp/"
	cp "$tree/.config" "$out.tmp/config"
	{
		echo "source=$srcpkg $srcver"
		echo "key=$key"
		echo "compiler=$(gcc --version | head -n1)"
		echo "build_seconds=$(($(date +%s) - build_start))"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$out.tmp/build-info"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	# Other keys' source trees are 2+ GB each; keep only their results.
	for d in "$cache"/*/linux; do
		[ "$d" = "$tree" ] || rm -rf "$d" "${d%/linux}/.unpacked" "${d%/linux}/.patched"
	done
else
	log "cached build found ($(grep build_seconds "$out/build-info" || true))"
fi

if [ "$install" = 1 ]; then
	mkdir -p "$dest"
	for f in vmlinux bzImage config System.map build-info; do
		install -m 0644 "$out/$f" "$dest/$f.tmp"
		mv "$dest/$f.tmp" "$dest/$f"
	done
	log "installed to $dest"
fi
log "vmlinux $(stat -c %s "$out/vmlinux") bytes, bzImage $(stat -c %s "$out/bzImage") bytes"
log "done in $(($(date +%s) - start)) s"
