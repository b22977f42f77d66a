#!/usr/bin/env bash
# The install step of the GitHub Action (action.yml): layergate from its
# Debian package, or built from source. From the environment:
#   LG_DEB_URL     the .deb: an https:// or file:// URL, or a path
#   LG_VERSION     else the release asset layergate_<version>_<arch>.deb of
#   LG_REPOSITORY  this GitHub repository (owner/name)
#   LG_SOURCE_DIR  else build this source tree (scripts/build.sh, into
#                  $RUNNER_TEMP/layergate-build or LG_BUILD_DIR) and put it on PATH
# Installing packages needs root, or sudo.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
fail() { echo "action-install: $*" >&2; exit 2; }

url=${LG_DEB_URL:-}
if [ -z "$url" ] && [ -n "${LG_VERSION:-}" ]; then
  [ -n "${LG_REPOSITORY:-}" ] || fail "version ${LG_VERSION} given without the repository to download it from"
  v=${LG_VERSION#v}
  url=https://github.com/$LG_REPOSITORY/releases/download/v$v/layergate_${v}_$(dpkg --print-architecture).deb
fi

if [ -n "$url" ]; then
  tmp=$(mktemp -d)
  deb=$tmp/layergate.deb
  case $url in
    file://*) cp "${url#file://}" "$deb" ;;
    http://*|https://*)
      command -v curl >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends curl ca-certificates >/dev/null; }
      curl -fsSL --retry 3 -o "$deb" "$url" || fail "cannot download $url" ;;
    *) cp "$url" "$deb" ;;
  esac
  echo "action-install: installing $url" >&2
  $SUDO apt-get update -qq
  # The package's Depends (clang's headers, libz3, ...) come from the distribution.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
  rm -rf "$tmp"
else
  src=${LG_SOURCE_DIR:-$here}
  build=${LG_BUILD_DIR:-${RUNNER_TEMP:-/tmp}/layergate-build}
  echo "action-install: no .deb given; building $src into $build" >&2
  LAYERGATE_BUILD_ONLY=1 BUILD_DIR=$build "$src/scripts/build.sh" -DCMAKE_BUILD_TYPE=Release -DLAYERGATE_TESTS=OFF -DLAYERGATE_CUDA=OFF
  [ -n "${GITHUB_PATH:-}" ] && echo "$build/tool" >>"$GITHUB_PATH"
  export PATH=$build/tool:$PATH
fi
layergate --version
