# Sourced by the bench scripts (after median.sh): the reference they divide
# by, ONE `clang-19 -fsyntax-only` of a C++ file with the real CUDA SDK, host
# side, as a build of that file's host code would parse it.
#
#   clang_sdk_ms DIR FILE [CLANG_ARG...]   prints the median ms of $runs runs
#
# FILE is relative to DIR. Headers the checkout does not hold (torch, HIP, a
# project header of another tree) get empty stand-ins, found by running clang
# until no include is missing: clang stops at the first missing header, and a
# reference that stopped there would time the SDK's preamble, not the file.
# No error limit (-ferror-limit=0): past 20 errors clang stops parsing too. The
# run's error count goes to stderr, so a reader knows what clang got through.
clang_sdk_ms() {
  local dir=$1 file=$2
  shift 2
  local shim
  shim=$(mktemp -d)
  : >"$shim/texture_fetch_functions.h"
  local cmd=(clang-19 -x cuda --cuda-host-only --cuda-path=/usr/local/cuda -nocudalib -std=c++17 -fsyntax-only -w
             -Wno-unknown-cuda-version -D__restrict__= -fno-delayed-template-parsing -ferror-limit=0 -I "$shim" "$@" "$file")
  local i h
  for ((i = 0; i < 64; i++)); do
    h=$(cd "$dir" && "${cmd[@]}" 2>&1 | sed -nE "s/.*fatal error: '([^']+)' file not found.*/\1/p" | head -1)
    [ -n "$h" ] || break
    mkdir -p "$shim/$(dirname "$h")"
    : >"$shim/$h"
  done
  local errors
  errors=$(cd "$dir" && "${cmd[@]}" 2>&1 | grep -c 'error:' || true)
  echo "clang reference: $file, $i headers stood in for, $errors errors" >&2
  (cd "$dir" && median_ms "${cmd[@]}")
  rm -rf "$shim"
}
