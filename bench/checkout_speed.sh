#!/usr/bin/env bash
# Speed of `layergate check DIR` on a whole checkout (discovery, every chain
# file, both frontends, imports followed, solver, matrix, report) as a ratio
# to ONE `clang-19 -fsyntax-only` of the dispatch .cuh it analyses, with the
# real CUDA SDK (what a build of that header costs), in the same run.
#
#   bench/checkout_speed.sh DIR [DIR ...]
#
# DIR is a checkout (e.g. a tree written by shared/realcode/export_tree.py).
# The .cuh is the one layergate's JSON names as an input. Headers the
# checkout lacks get empty stand-ins so that clang gets through the file (as
# layergate's overlay does; bench/clang_ref.sh). Medians of $RUNS runs
# (default 7).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lg=${LAYERGATE:-$here/build/tool/layergate}
[ -x "$lg" ] || { echo "bench: build first (scripts/build.sh); no $lg" >&2; exit 2; }
[ -d /usr/local/cuda/include ] || { echo "bench: needs the CUDA SDK at /usr/local/cuda" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: bench/checkout_speed.sh DIR [DIR ...]" >&2; exit 2; }
runs=${RUNS:-7}

. "$(dirname "$0")/median.sh"
. "$(dirname "$0")/clang_ref.sh"

printf '%-28s %6s %12s %14s %8s\n' checkout files layergate_ms clang_sdk_ms ratio
for dir in "$@"; do
  dir=$(cd "$dir" && pwd)
  json=$(cd "$dir" && "$lg" check . --format json 2>/dev/null || true)
  read -r cuh nfiles < <(python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
a = r.get("analyses", [r])[0]
i = a["inputs"]
cpp = [f for f in i["cpp"] if f.endswith(".cuh")]
print(cpp[0], len(i["python"]) + len(i["cpp"]))' <<<"$json")
  lg_ms=$(cd "$dir" && median_ms "$lg" check .)
  sdk_ms=$(clang_sdk_ms "$dir" "$cuh")
  printf '%-28s %6s %12s %14s %8s\n' "$(basename "$dir")" "$nfiles" "$lg_ms" "$sdk_ms" \
    "$(awk -v a="$lg_ms" -v b="$sdk_ms" 'BEGIN {printf "%.2f", a / b}')"
done
