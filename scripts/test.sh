#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite with CTest.
# The tests are built with clang-19 under AddressSanitizer and
# UndefinedBehaviorSanitizer (in build-test/, apart from the demo's build/),
# together with the libFuzzer targets that .ci/run exercises.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$here/build-test}
# use_sigaltstack=0: the C++ frontend parses on a thread with a large stack of
# its own (deep ASTs), whose alternate signal stack ASan fails to unmap at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:use_sigaltstack=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# -O1 with line tables only: what ASan recommends, and much faster to compile
# than -O2 -g against the LLVM headers on a 2-core machine.
CC=clang-19 CXX=clang++-19 "$here/scripts/build.sh" -DLAYERGATE_SANITIZE=ON -DLAYERGATE_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" "$@"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"${JOBS:-$(nproc)}"
