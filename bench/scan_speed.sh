#!/usr/bin/env bash
# Cost of discovery: `layergate check TREE` on a tree of $FILES small files
# (default 20,000, in nested source-like directories, plus .git and build/
# trees that the walk skips) holding one SGLang-layout target from
# fixtures/seed-force-pcie, against the same check on a tree holding only the
# target. The difference is what finding the files costs (aim: < 1 s). Also
# prints both as a ratio to `clang-19 -fsyntax-only` on the same .cuh with the
# flags of bench/check_speed.sh. A benchmark, not a test.
#
#   bench/scan_speed.sh            RUNS=11 FILES=20000 LAYERGATE=build/tool/layergate
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lg=${LAYERGATE:-$here/build/tool/layergate}
[ -x "$lg" ] || { echo "bench: build first (scripts/build.sh); no $lg" >&2; exit 2; }
runs=${RUNS:-11}
nfiles=${FILES:-20000}
stubs=$here/tool/cpp/stubs
tmp=$(mktemp -d /tmp/lg_scan_speed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/median.sh"

target() {  # DIR: the SGLang layout with the seed bug
  local d=$1
  mkdir -p "$d/python/sglang/srt/distributed/device_communicators" "$d/sgl-kernel/csrc/allreduce"
  cp "$here/fixtures/seed-force-pcie/custom_all_reduce.py" "$d/python/sglang/srt/distributed/device_communicators/"
  cp "$here/fixtures/seed-force-pcie/custom_all_reduce.cuh" "$d/sgl-kernel/csrc/allreduce/"
}

only=$tmp/only big=$tmp/big
target "$only"
target "$big"
# $nfiles small files: 40 per directory, directories three levels deep, names
# like a source tree's; a tenth of them in .git/ and build/ (skipped trees).
python3 - "$big" "$nfiles" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
exts = [".py", ".cu", ".cuh", ".h", ".cpp", ".md", ".txt", ".json"]
for i in range(n):
    top = ".git/objects" if i % 20 == 0 else "build/tmp" if i % 20 == 1 else "src"
    d = os.path.join(root, top, f"m{i // 4000}", f"p{i // 200}", f"d{i // 40}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"file_{i}{exts[i % len(exts)]}"), "w") as f:
        f.write(f"# {i}\n")
PY
count=$(find "$big" -type f | wc -l)

cuh=$only/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh
shim=$tmp/shim
mkdir -p "$shim"
: >"$shim/utils.h"
common=(-x cuda --cuda-host-only -nocudainc -nocudalib -std=c++17 -fsyntax-only -w
        -Wno-unknown-cuda-version -D__restrict__= -fno-delayed-template-parsing -ferror-limit=0)

# The walk alone: a tree of the same files without the target (exit 2, after walking it all).
walk_only=$tmp/walk
cp -r "$big" "$walk_only"
rm -rf "$walk_only/python" "$walk_only/sgl-kernel"

only_ms=$(median_ms "$lg" check "$only" --no-matrix)
big_ms=$(median_ms "$lg" check "$big" --no-matrix)
walk_ms=$(median_ms "$lg" check "$walk_only")
clang_ms=$(median_ms clang-19 "${common[@]}" -isystem "$stubs" -include "$stubs/layergate_cuda_prelude.h" -I "$shim" "$cuh")
awk -v files="$count" -v only="$only_ms" -v big="$big_ms" -v walk="$walk_ms" -v clang="$clang_ms" 'BEGIN {
  printf "files in the tree:                      %d (2 of them the target; 1 in 10 under .git/ and build/)\n", files
  printf "layergate check TARGET-ONLY-TREE:       %8.1f ms  (%.2f x clang-19 -fsyntax-only)\n", only, only / clang
  printf "layergate check TREE:                   %8.1f ms  (%.2f x clang-19 -fsyntax-only)\n", big, big / clang
  printf "  scan cost (TREE - TARGET-ONLY-TREE):  %8.1f ms\n", big - only
  printf "layergate check TREE-WITHOUT-TARGET:    %8.1f ms  (the walk, then exit 2)\n", walk
  printf "clang-19 -fsyntax-only on the .cuh:     %8.1f ms\n", clang
}'
