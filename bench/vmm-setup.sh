#!/usr/bin/env bash
# VMM setup time (exec to first KVM_RUN) and monitor memory (RSS minus guest
# RAM) of kvrun and of qemu-system-x86_64 -M microvm on the same kernel,
# measured side by side; results under bench/results/<date>/.
#   bench/vmm-setup.sh [RUNS]
# Needs: a built ./build/runtime/kvrun, /dev/kvm, qemu-system-x86
# (scripts/setup.sh --bench), cc, cpio, busybox-static.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
kdir=${KVRUN_GUEST_KERNEL_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared/guest-kernel}
kvrun=${KVRUN:-build/runtime/kvrun}
for f in "$kvrun" "$kdir/vmlinux" "$kdir/bzImage" "$kdir/cmdline.txt" "$kdir/mkinitramfs.sh"; do
	[ -e "$f" ] || { echo "vmm-setup: missing $f" >&2; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null || { echo "vmm-setup: qemu-system-x86_64 missing (scripts/setup.sh --bench)" >&2; exit 1; }
[ -r /dev/kvm ] || { echo "vmm-setup: no /dev/kvm" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC -o "$tmp/shim.so" bench/vmm-setup-shim.c -ldl
sh "$kdir/mkinitramfs.sh" "$tmp/initramfs.cpio" >/dev/null
out=bench/results/$(date -u +%Y-%m-%d)
mkdir -p "$out"
python3 bench/vmm-setup.py --kvrun "$kvrun" --shim "$tmp/shim.so" \
	--vmlinux "$kdir/vmlinux" --bzimage "$kdir/bzImage" --initrd "$tmp/initramfs.cpio" \
	--cmdline "$(cat "$kdir/cmdline.txt")" --runs "$runs" --out "$out"
echo "vmm-setup: results in $out/vmm-setup.json and $out/vmm-setup.md"
