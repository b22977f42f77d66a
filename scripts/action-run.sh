#!/usr/bin/env bash
# The check step of the GitHub Action (action.yml), runnable anywhere:
# `layergate check` with the action's inputs, from the environment:
#   LG_PATHS       what to check, space-separated (default: .)
#   LG_FORMAT      the report printed here: text, concise, github, gitlab or none (default: concise)
#   LG_SARIF       the SARIF file to write (default: layergate.sarif; empty: none)
#   LG_DIFF_BASE   --diff-base REF, when set
#   LG_ARGS        more arguments, space-separated
#   LAYERGATE      the binary (default: layergate on PATH)
#   LAYERGATE_CACHE_DIR  the precompiled headers' folder; a relative one is
#                  taken from the working directory
# Exits with layergate's status (the SARIF run's, when one was written: the
# verdict code scanning shows). Under GitHub Actions, writes exit-code and
# sarif-file to $GITHUB_OUTPUT. The SARIF is written with -o, not a redirect,
# so that a check that stops (exit 2 or 3) still leaves a report that says why.
set -uo pipefail
lg=${LAYERGATE:-layergate}
format=${LG_FORMAT:-concise}
sarif=${LG_SARIF-layergate.sarif}
read -ra paths <<<"${LG_PATHS:-.}"
read -ra extra <<<"${LG_ARGS:-}"
((${#paths[@]})) || paths=(.)
[ -n "${LG_DIFF_BASE:-}" ] && extra=(--diff-base "$LG_DIFF_BASE" "${extra[@]}")
if [ -n "${LAYERGATE_CACHE_DIR:-}" ] && [ "${LAYERGATE_CACHE_DIR:0:1}" != / ]; then
  export LAYERGATE_CACHE_DIR=$PWD/$LAYERGATE_CACHE_DIR
fi
output() { [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1=$2" >>"$GITHUB_OUTPUT"; return 0; }
usage() { echo "action-run: $*" >&2; output exit-code 2; exit 2; }
case $format in
  text|concise|github|gitlab|none) ;;
  *) usage "format '$format' is not one of text, concise, github, gitlab, none" ;;
esac
command -v "$lg" >/dev/null 2>&1 || usage "$lg not found (install it first: scripts/action-install.sh)"

status=
if [ -n "$sarif" ]; then
  rm -f "$sarif"
  echo "action-run: $lg check ${paths[*]} --format sarif -o $sarif ${extra[*]}" >&2
  "$lg" check "${paths[@]}" --format sarif -o "$sarif" "${extra[@]}"
  status=$?
  [ -s "$sarif" ] && output sarif-file "$sarif" || output sarif-file ""
fi
# The log's report: a second run, whose analyses load the precompiled
# headers the first one wrote. (GitHub's log shows colour.)
if [ "$format" != none ]; then
  case $format in
    text) args=(--color always) ;;
    concise) args=(--output-format concise --color always) ;;
    github) args=(--output-format github) ;;
    gitlab) args=(--output-format gitlab -o gl-code-quality-report.json) ;;
  esac
  "$lg" check "${paths[@]}" "${args[@]}" "${extra[@]}"
  second=$?
  [ -n "$status" ] || status=$second
fi
[ -n "$status" ] || usage "nothing to do (format none and no SARIF file)"
output exit-code "$status"
exit "$status"
