#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Time the root disk build (mke2fs -d, as `kvrun create` runs it) for
# directories of about 10, 100 and 600 MB: a tree of small files (a third
# of the bytes, 8 KiB each) plus larger files (the rest, 4 MiB each),
# roughly the mix of a distribution image. Prints one line per size.
# Usage: bench/rootfs-image.sh [KVRUN] (default build/runtime/kvrun).
set -eu
tmp=$(mktemp -d /var/tmp/kvrun-rootfs-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for mb in 10 100 600; do
	d="$tmp/rootfs-$mb"
	mkdir -p "$d/small" "$d/big"
	small=$((mb * 1024 / 3 / 8))
	i=0
	while [ $i -lt $small ]; do
		[ $((i % 200)) -eq 0 ] && mkdir -p "$d/small/$((i / 200))"
		head -c 8192 /dev/urandom > "$d/small/$((i / 200))/f$i"
		i=$((i + 1))
	done
	big=$(((mb - mb / 3) / 4))
	i=0
	while [ $i -lt $big ]; do
		head -c 4194304 /dev/urandom > "$d/big/f$i"
		i=$((i + 1))
	done
	sync
	used=$(du -sm "$d" | cut -f1)
	files=$(find "$d" | wc -l)
	# Same command line as runtime/host/rootfs-image.c, sized the same way.
	img="$tmp/img-$mb"
	size=$(( (used + used / 16 + 16 + (used > 256 ? used : 256)) ))
	truncate -s "${size}M" "$img"
	t0=$(date +%s%N)
	mke2fs -q -F -t ext4 -O ^has_journal -N $((files * 2 + 4096)) -E lazy_itable_init=1,nodiscard -d "$d" "$img"
	t1=$(date +%s%N)
	alloc=$(du -sm "$img" | cut -f1)
	# The mount points create adds to a rootfs that lacks them (the
	# default spec's, a cwd and /etc/resolv.conf), as runtime/host/rootfs-image.c.
	t2=$(date +%s%N)
	printf '%s\n' 'mkdir "/proc"' 'mkdir "/sys"' 'mkdir "/dev"' 'mkdir "/work"' 'mkdir "/etc"' 'cd "/etc"' \
		'write /dev/null "resolv.conf"' 'sif "/etc/resolv.conf" mode 0100755' | debugfs -w -f - "$img" >/dev/null 2>&1
	t3=$(date +%s%N)
	echo "${used} MB in ${files} files: image ${size} MB (${alloc} MB allocated), mke2fs -d $(( (t1 - t0) / 1000000 )) ms, mount points $(( (t3 - t2) / 1000000 )) ms"
	rm -f "$img"
	rm -rf "$d"
done
