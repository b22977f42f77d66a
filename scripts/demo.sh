#!/usr/bin/env bash
# README command 1: install, build, and check the bundled seed scenario — an
# SGLang-style gate patched with SGLANG_FORCE_CUSTOM_AR_PCIE=1 so that 8 PCIe
# GPUs get the custom all-reduce, against the unpatched C++ dispatch.
# layergate exits 1 here: it finds the configurations with no kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
LAYERGATE_BUILD_ONLY=1 "$here/scripts/build.sh" -DLAYERGATE_TESTS=OFF
ex="$here/fixtures/seed-force-pcie"
set -x
"${BUILD_DIR:-$here/build}/tool/layergate" check --python "$ex/custom_all_reduce.py" --cpp "$ex/custom_all_reduce.cuh" || status=$?
{ set +x; } 2>/dev/null
echo "layergate exit status: ${status:-0} (1 = findings of error severity; see README)"
