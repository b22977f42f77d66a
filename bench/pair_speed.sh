#!/usr/bin/env bash
# Speed of one analysis given its two files, as a ratio to ONE
# `clang-19 -fsyntax-only` of its C++ file with the real CUDA SDK (what a
# build of that file's host side costs), in the same run.
#
#   bench/pair_speed.sh DIR TARGET PY CPP [CLANG_ARG...]
#
# DIR is a checkout; PY and CPP are relative to it (the gate and the
# dispatch, as `layergate check --target TARGET --python PY --cpp CPP`
# takes them). CLANG_ARG: macros the build defines (-DUSE_ROCM). Headers the
# checkout lacks get empty stand-ins so that clang gets through the file (as
# layergate's overlay does; bench/clang_ref.sh). Medians of $RUNS runs
# (default 7).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lg=${LAYERGATE:-$here/build/tool/layergate}
[ -x "$lg" ] || { echo "bench: build first (scripts/build.sh); no $lg" >&2; exit 2; }
[ -d /usr/local/cuda/include ] || { echo "bench: needs the CUDA SDK at /usr/local/cuda" >&2; exit 2; }
[ $# -ge 4 ] || { echo "usage: bench/pair_speed.sh DIR TARGET PY CPP [CLANG_ARG...]" >&2; exit 2; }
dir=$(cd "$1" && pwd) target=$2 py=$3 cpp=$4
shift 4
runs=${RUNS:-7}

. "$(dirname "$0")/median.sh"
. "$(dirname "$0")/clang_ref.sh"

lg_ms=$(cd "$dir" && median_ms "$lg" check --target "$target" --python "$py" --cpp "$cpp")
sdk_ms=$(clang_sdk_ms "$dir" "$cpp" "$@")
printf '%-28s %12s %14s %8s\n' file layergate_ms clang_sdk_ms ratio
printf '%-28s %12s %14s %8s\n' "$(basename "$cpp")" "$lg_ms" "$sdk_ms" \
  "$(awk -v a="$lg_ms" -v b="$sdk_ms" 'BEGIN {printf "%.2f", a / b}')"
