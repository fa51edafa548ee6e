#!/usr/bin/env bash
# Build a small bundle and run it with kvrun.
set -euo pipefail
cd "$(dirname "$0")/.."
kvrun=build/runtime/kvrun
"$kvrun" --version
