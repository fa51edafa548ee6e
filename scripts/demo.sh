#!/usr/bin/env bash
# Run a small container in a kvrun microVM: check the host (`kvrun check`),
# build a busybox bundle, write its config.json with `kvrun spec`, and
# `kvrun run` it.
#
# The guest kernel: $KVRUN_KERNEL, else the prebuilt kernel in
# ../shared/guest-kernel/ beside this checkout, else kvrun's own kernel
# where kvrun looks for it (scripts/setup.sh installs it there:
# <prefix>/share/kvrun/kernel/vmlinux, /usr/local by default). Where KVM is
# nested and the guest kernel's code is emulated, the boot takes minutes
# instead of milliseconds (docs/kernels.md).
set -euo pipefail
cd "$(dirname "$0")/.."
kvrun=${KVRUN:-$PWD/build/runtime/kvrun}

if [ -z "${KVRUN_KERNEL:-}" ] && [ -e ../shared/guest-kernel/vmlinux ]; then
	export KVRUN_KERNEL=$PWD/../shared/guest-kernel/vmlinux
fi
if ! "$kvrun" check; then
	echo "demo.sh: kvrun cannot run here (see the FAIL lines above); without a kernel: scripts/setup.sh builds and installs one" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bundle=$work/bundle
# The mount points of the default config.json, as any image has them (the
# root file system is read-only by default, so they cannot be made later).
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/proc" "$bundle/rootfs/sys" "$bundle/rootfs/dev" "$bundle/rootfs/tmp"
cp /bin/busybox "$bundle/rootfs/bin/busybox"
for applet in sh echo cat uname hostname id ls; do
	ln -s busybox "$bundle/rootfs/bin/$applet"
done

"$kvrun" --version
"$kvrun" spec --bundle "$bundle"
python3 - "$bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/sh", "-c",
    "echo Hello from a kvrun microVM; uname -sr; hostname; id; "
    "echo kernel command line: $(cat /proc/cmdline | cut -c1-60)..."]
spec["hostname"] = "kvrun-demo"
json.dump(spec, open(path, "w"), indent=2)
PY

echo "+ kvrun run --bundle $bundle demo (kernel: ${KVRUN_KERNEL:-the default kvrun check names above})"
start=$(date +%s)
rc=0
"$kvrun" --root "$work/state" run --bundle "$bundle" "demo-$$" </dev/null || rc=$?
echo "+ exit status $rc after $(($(date +%s) - start)) s"
exit "$rc"
