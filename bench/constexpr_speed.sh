#!/usr/bin/env bash
# Solver time against the number of `if constexpr` launch blocks in one
# dispatch (a benchmark, not a test): the fixture vllm-if-constexpr-launch with
# its one block repeated N times, each for another message size and element
# type, checked against the fixture's gate.
#
#   bench/constexpr_speed.sh [N ...]     default: 12 24 36 48
#
# Prints the median of $RUNS runs (default 3) per N, and the verdict line.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lg=${LAYERGATE:-$here/build/tool/layergate}
[ -x "$lg" ] || { echo "bench: build first (scripts/build.sh); no $lg" >&2; exit 2; }
runs=${RUNS:-3}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(12 24 36 48)

. "$(dirname "$0")/median.sh"

src=$here/fixtures/vllm-if-constexpr-launch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/custom_all_reduce.py" "$tmp/"
printf '%-6s %10s  %s\n' blocks median_ms verdict
for n in "${counts[@]}"; do
  # The lines before the fixture's block, N blocks, the lines after it.
  awk -v n="$n" '
    /if constexpr \(std::is_same_v<T, half>\)/ { inblock = 1; depth = 0 }
    inblock {
      block = block $0 "\n"
      depth += gsub(/\{/, "{") - gsub(/\}/, "}")
      if (depth == 0) {
        split("half __nv_bfloat16 float", types, " ")
        for (i = 0; i < n; i++) {
          b = block
          gsub(/std::is_same_v<T, half>/, "std::is_same_v<T, " types[i % 3 + 1] ">", b)
          gsub(/bytes == 43008/, "bytes == " (43008 + 1024 * i), b)
          printf "%s", b
        }
        inblock = 0
      }
      next
    }
    { print }' "$src/custom_all_reduce.cuh" >"$tmp/custom_all_reduce.cuh"
  ms=$(median_ms "$lg" check --python "$tmp/custom_all_reduce.py" --cpp "$tmp/custom_all_reduce.cuh" --no-matrix)
  verdict=$("$lg" check --python "$tmp/custom_all_reduce.py" --cpp "$tmp/custom_all_reduce.cuh" --no-matrix 2>/dev/null | head -1)
  printf '%-6s %10s  %s\n' "$n" "$ms" "$verdict"
done
