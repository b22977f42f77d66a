#!/usr/bin/env bash
# `cmake --install` and the Debian package, used the way a CI runner would:
#  1. install into a temporary prefix, move the prefix elsewhere (the binary
#     must find share/layergate relative to itself, not the source tree), and
#     from a directory outside the source tree check a copy of the seed
#     fixture (exit 1, LG001 for world sizes 4, 6, 8 without NVLink), then
#     `explain LG001`, `targets` and `--version` (which names the data dirs);
#  2. where dpkg-deb is available: `cpack -G DEB`, then the package's Depends
#     (every linked library's Debian package, plus the header packages the C++
#     frontend parses with) and file list, and the binary run from the package
#     unpacked with `dpkg -x` into a fresh root; the binary there is stripped,
#     its debug info in the -dbgsym package when the build has any.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

# check_prefix PREFIX: the installed layergate at PREFIX/bin works from a
# directory that is not the source tree.
check_prefix() {
  local prefix=$1 lg=$1/bin/layergate work status=0
  work=$(mktemp -d "$tmp/work.XXXX")
  cp -r "$root/fixtures/seed-force-pcie" "$work/seed"
  [ -x "$lg" ] || fail "$lg missing"
  for f in share/layergate/rules/targets/sglang-sgl-kernel.json share/layergate/stubs/layergate_cuda_prelude.h \
           share/layergate/stubs/torch/torch/all.h share/doc/layergate/README.md share/doc/layergate/rules/LG001.md; do
    [ -e "$prefix/$f" ] || fail "$prefix/$f not installed"
  done
  (cd "$work/seed" && env -u LAYERGATE_RULES -u LAYERGATE_STUBS "$lg" --version) >"$tmp/version"
  grep -qx "rules: $prefix/share/layergate/rules" "$tmp/version" || fail "rules not found in the prefix: $(cat "$tmp/version")"
  grep -qx "stubs: $prefix/share/layergate/stubs" "$tmp/version" || fail "stubs not found in the prefix: $(cat "$tmp/version")"
  (cd "$work/seed" && env -u LAYERGATE_RULES -u LAYERGATE_STUBS XDG_CACHE_HOME="$work/cache" \
     "$lg" check custom_all_reduce.py custom_all_reduce.cuh --color never) >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = 1 ] || fail "check in $work/seed: exit $status, expected 1: $(cat "$tmp/err")"
  [ "$(grep -c ': error: .*\[LG001\]$' "$tmp/out")" = 1 ] || fail "expected one LG001 error: $(cat "$tmp/out")"
  grep -q "^custom_all_reduce.py:[0-9]*:[0-9]*: error: world sizes 4, 6, 8 without NVLink" "$tmp/out" ||
    fail "no LG001 for world sizes 4, 6, 8: $(cat "$tmp/out")"
  # the checkout form too: discovery reads the installed target descriptions
  status=0
  (cd "$work/seed" && env -u LAYERGATE_RULES XDG_CACHE_HOME="$work/cache" "$lg" check . --color never) >"$tmp/out" 2>&1 || status=$?
  [ "$status" = 1 ] && grep -q '\[LG001\]' "$tmp/out" || fail "check . in $work/seed: exit $status: $(cat "$tmp/out")"
  (cd "$work" && "$lg" explain LG001) >"$tmp/out" || fail "explain LG001 failed"
  grep -q '^# LG001' "$tmp/out" || fail "explain LG001: $(head -3 "$tmp/out")"
  (cd "$work" && env -u LAYERGATE_RULES "$lg" targets) >"$tmp/out" || fail "targets failed"
  for t in sglang-sgl-kernel vllm-csrc custom-allreduce; do
    grep -q "^$t " "$tmp/out" || fail "targets does not list $t: $(cat "$tmp/out")"
  done
  # the environment override still wins
  status=0
  (cd "$work" && LAYERGATE_RULES="$work/none" "$lg" targets) >/dev/null 2>"$tmp/err" || status=$?
  [ "$status" = 2 ] && grep -q "^layergate: error: $work/none: no targets/ folder" "$tmp/err" || fail "LAYERGATE_RULES ignored ($status): $(cat "$tmp/err")"
}

# --- 1. cmake --install, then moved ------------------------------------------------
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"
check_prefix "$tmp/moved"
echo "install_test: cmake --install ok"

# --- 2. the .deb -----------------------------------------------------------------
if ! command -v dpkg-deb >/dev/null || ! command -v cpack >/dev/null; then
  echo "install_test: no dpkg-deb/cpack here, .deb not checked"
  exit 0
fi
(cd "$build" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$(ls "$tmp"/pkg/layergate_*.deb)
[ "$(dpkg-deb -f "$deb" Package)" = layergate ] || fail "package name"
depends=$(dpkg-deb -f "$deb" Depends)
has_dep() { tr ',' '\n' <<<"$depends" | sed -E 's/^ *//; s/ *\(.*//; s/ *$//' | grep -qx "$1"; }
# every library the binary links comes from a package named in Depends
while read -r lib; do
  real=$(readlink -f "$lib")
  pkg=$(dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null) ||
    fail "no package owns $real"
  pkg=${pkg%%:*}
  has_dep "$pkg" || fail "$lib (package $pkg) is not in Depends: $depends"
done < <(ldd "$build/tool/layergate" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
         grep -E "/($(readelf -d "$build/tool/layergate" | sed -nE 's/.*Shared library: \[(.*)\]/\1/p' | sed 's/[.+]/\\&/g' | paste -sd'|'))$")
# (clang and LLVM are linked statically where their archives are installed;
# when shared, the loop above holds their packages to Depends)
for p in libz3-4 libtree-sitter0 libfmt9 libclang-common-19-dev libstdc++-12-dev; do
  has_dep "$p" || fail "$p not in Depends: $depends"
done
dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/files"
for f in ./usr/bin/layergate ./usr/share/layergate/rules/targets/vllm-csrc.json ./usr/share/layergate/stubs/cuda/cuda_runtime.h \
         ./usr/share/doc/layergate/README.md ./usr/share/doc/layergate/rules/LG001.md; do
  grep -qx "$f" "$tmp/files" || fail "$f not in the package: $(head -20 "$tmp/files")"
done
! grep -q '/build\|fixtures/\|\.git/' "$tmp/files" || fail "build outputs or fixtures in the package"
dpkg -x "$deb" "$tmp/root"
# Stripped, its debug info (for a build that has some) in the -dbgsym package
# under the binary's build ID.
# (Each listing is taken whole before it is searched: `grep -q` stops reading
# at its match, and under pipefail the writer's broken pipe fails the test.)
packaged=$(readelf -S "$tmp/root/usr/bin/layergate")
! grep -qE '\.(symtab|debug_info)' <<<"$packaged" || fail "the .deb's binary is not stripped"
built=$(readelf -S "$build/tool/layergate")
if grep -q '\.debug_info' <<<"$built"; then
  dbg=$(ls "$tmp"/pkg/layergate-dbgsym_*.ddeb 2>/dev/null) || fail "no -dbgsym package for a build with debug info: $(ls "$tmp/pkg")"
  id=$(readelf -n "$tmp/root/usr/bin/layergate" | sed -nE 's/.*Build ID: ([0-9a-f]+).*/\1/p')
  [ -n "$id" ] || fail "the binary has no build ID"
  contents=$(dpkg-deb -c "$dbg")
  grep -q "usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" <<<"$contents" || fail "$dbg has no debug info for build ID $id"
fi
check_prefix "$tmp/root/usr"
echo "install_test: $(basename "$deb") ok (Depends: $depends)"
