#!/usr/bin/env bash
# Installs everything layergate needs to build and test on Debian 12, from
# Debian's packages and the npm registry (the tree-sitter-python grammar, pinned
# by third_party/tree-sitter-python/package-lock.json). Idempotent.
# --build-only (or LAYERGATE_BUILD_ONLY=1): leave out what only the tests use,
# headless Chromium (renders the HTML report in tests/html_report.sh; about
# 350 MB, 50 s to install here).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(cmake ninja-build g++ clang-19 libclang-19-dev libclang-cpp19-dev llvm-19-dev libclang-rt-19-dev
      libtree-sitter-dev libtomlplusplus-dev nlohmann-json3-dev libz3-dev libgtest-dev libcli11-dev libfmt-dev
      python3-jsonschema dpkg-dev libzstd-dev zlib1g-dev libjemalloc-dev)
[ "${1:-}" = --build-only ] || [ -n "${LAYERGATE_BUILD_ONLY:-}" ] || pkgs+=(chromium)
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The grammar's C sources; --ignore-scripts: we compile parser.c ourselves, no node addon.
if [ ! -f "$here/third_party/tree-sitter-python/node_modules/tree-sitter-python/src/parser.c" ]; then
  (cd "$here/third_party/tree-sitter-python" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
# SARIF validation for the tests: the official schema and Microsoft's Multitool.
if [ ! -f "$here/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux/sarif-2.1.0.json" ]; then
  (cd "$here/third_party/sarif" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
chmod +x "$here/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool" 2>/dev/null || true
if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: CUDA toolkit found at /usr/local/cuda (kernels will be compiled)" >&2
else
  echo "install-deps: no CUDA toolkit at /usr/local/cuda (kernels and GPU tests are skipped)" >&2
fi
