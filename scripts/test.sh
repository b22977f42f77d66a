#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite with CTest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/build.sh" "$@"
ctest --test-dir "${BUILD_DIR:-$here/build}" --output-on-failure -j"${JOBS:-$(nproc)}"
