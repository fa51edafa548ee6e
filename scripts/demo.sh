#!/usr/bin/env bash
# Show kvrun's command line: its version, and `kvrun spec` writing the
# example config.json into a temporary bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
kvrun=${KVRUN:-build/runtime/kvrun}
bundle=$(mktemp -d)
trap 'rm -rf "$bundle"' EXIT

"$kvrun" --version
echo
echo "+ kvrun spec --bundle $bundle"
"$kvrun" spec --bundle "$bundle"
ls -l "$bundle"
head -n 20 "$bundle/config.json"
echo "..."
echo
echo "+ kvrun --root $bundle/state list"
"$kvrun" --root "$bundle/state" list
