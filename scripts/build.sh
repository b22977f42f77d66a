#!/usr/bin/env bash
# Installs the dependencies (scripts/install-deps.sh) and builds layergate
# into ${BUILD_DIR:-build}. Extra arguments go to CMake's configure step.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh"
build=${BUILD_DIR:-$here/build}
cmake -S "$here" -B "$build" -G Ninja "$@" >/dev/null
ninja -C "$build" -j"${JOBS:-$(nproc)}"
