#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `meson install` step: install kvrun's guest kernel from kernel/build.sh's
# cache into DATADIR/kvrun/kernel (below $DESTDIR), when the cache holds a
# build of the current inputs; otherwise say so and install nothing.
#   kernel/meson-install.sh DATADIR [CACHE]
set -eu
datadir=$1 cache=${2:-}
case "$datadir" in
/*) dir=${DESTDIR:-}$datadir/kvrun/kernel ;;
*) dir=$MESON_INSTALL_DESTDIR_PREFIX/$datadir/kvrun/kernel ;;
esac
set -- --cached-only --no-progress --output "$dir"
[ -n "$cache" ] && set -- "$@" --cache "$cache"
exec "$(dirname "$0")/build.sh" "$@"
