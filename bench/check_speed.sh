#!/usr/bin/env bash
# Speed of `layergate check` as a ratio to `clang-19 -fsyntax-only` on the same
# .cuh, measured in the same run (a benchmark, not a test).
#
#   bench/check_speed.sh [FIXTURE ...]     default: sglang-upstream seed-force-pcie vllm-upstream
#
# Baseline A: clang-19 -fsyntax-only on the .cuh with the same bundled stub
# headers and flags layergate uses (so the ratio measures what layergate
# saves by parsing only what it needs, plus what it adds: Python, Z3, report).
# Baseline B (when /usr/local/cuda exists): the same with the real CUDA SDK.
# Prints medians of $RUNS runs (default 11) and layergate's peak memory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lg=${LAYERGATE:-$here/build/tool/layergate}
[ -x "$lg" ] || { echo "bench: build first (scripts/build.sh); no $lg" >&2; exit 2; }
runs=${RUNS:-11}
stubs=$here/tool/cpp/stubs
fixtures=("$@")
[ ${#fixtures[@]} -gt 0 ] || fixtures=(sglang-upstream seed-force-pcie vllm-upstream)

. "$(dirname "$0")/median.sh"

common=(-x cuda --cuda-host-only -nocudainc -nocudalib -std=c++17 -fsyntax-only -w
        -Wno-unknown-cuda-version -D__restrict__= -fno-delayed-template-parsing -ferror-limit=0)
printf '%-18s %12s %14s %8s %14s %8s %10s\n' fixture layergate_ms clang_stub_ms ratio clang_sdk_ms ratio peak_MB
for f in "${fixtures[@]}"; do
  d=$here/fixtures/$f
  py=$d/custom_all_reduce.py cuh=$d/custom_all_reduce.cuh
  # Missing project headers (utils.h) would stop clang: give it an empty dir of them.
  shim=$(mktemp -d)
  { grep -oE '#include *"[^"]+"' "$cuh" || true; } | sed -E 's/.*"(.*)"/\1/' | while read -r h; do
    [ -e "$d/$h" ] || { mkdir -p "$shim/$(dirname "$h")"; : >"$shim/$h"; }
  done
  lg_ms=$(median_ms "$lg" check --python "$py" --cpp "$cuh" --no-matrix)
  stub_ms=$(median_ms clang-19 "${common[@]}" -isystem "$stubs" -include "$stubs/layergate_cuda_prelude.h" -I "$shim" "$cuh")
  sdk_ms=n/a sdk_ratio=n/a
  if [ -d /usr/local/cuda/include ]; then
    : >"$shim/texture_fetch_functions.h"
    sdk_ms=$(median_ms clang-19 -x cuda --cuda-host-only --cuda-path=/usr/local/cuda -nocudalib -std=c++17 -fsyntax-only -w \
      -Wno-unknown-cuda-version -D__restrict__= -fno-delayed-template-parsing -I "$shim" "$cuh")
    sdk_ratio=$(awk -v a="$lg_ms" -v b="$sdk_ms" 'BEGIN {printf "%.2f", a / b}')
  fi
  /usr/bin/time -f '%M' -o "$shim.peak" "$lg" check --python "$py" --cpp "$cuh" >/dev/null 2>&1 || true
  peak=$(tail -1 "$shim.peak"); rm -f "$shim.peak"
  ratio=$(awk -v a="$lg_ms" -v b="$stub_ms" 'BEGIN {printf "%.2f", a / b}')
  printf '%-18s %12s %14s %8s %14s %8s %10s\n' "$f" "$lg_ms" "$stub_ms" "$ratio" "$sdk_ms" "$sdk_ratio" "$(awk -v k="$peak" 'BEGIN {printf "%.0f", k / 1024}')"
  rm -rf "$shim"
done
