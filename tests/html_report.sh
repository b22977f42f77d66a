#!/usr/bin/env bash
# The HTML report (--format html) rendered by a real browser: headless
# Chromium loads the page written for the seed fixture (copied under a folder
# whose name holds '<', '>' and '&'), and the test reads back
#  - the DOM Chromium built (--dump-dom): the 16 matrix cells, the LG001 gap
#    cells for world sizes 4, 6, 8 without NVLink (and no other gap cell), the
#    one diagnostic card for those three cells, the flag trace from the Python probe to the C++ branch,
#    relative file:line links, the folder name escaped as text;
#  - a screenshot (--screenshot, 1400x1000): a PNG of that size with content.
# Exit 77 (skipped) where Chromium is not installed.
# Usage: html_report.sh LAYERGATE SOURCE_DIR
set -euo pipefail
lg=$1 root=$2
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "SKIP: chromium not installed (scripts/install-deps.sh installs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "html_report: $*" >&2; exit 1; }
dir='seed <x> & co'
mkdir -p "$tmp/$dir"
cp "$root/fixtures/seed-force-pcie/custom_all_reduce.py" "$root/fixtures/seed-force-pcie/custom_all_reduce.cuh" "$tmp/$dir/"
status=0
(cd "$tmp" && "$lg" check "$dir/custom_all_reduce.py" "$dir/custom_all_reduce.cuh" --format html -o report.html) || status=$?
[ "$status" = 1 ] || fail "exit $status, expected 1"
browse() { timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" "$@" 2>>"$tmp/chromium.err"; }
browse --dump-dom "file://$tmp/report.html" >"$tmp/dom.html" || { tail -5 "$tmp/chromium.err" >&2; fail "chromium --dump-dom failed"; }
dom=$tmp/dom.html
count() { grep -oE "$1" "$dom" | wc -l; }
[ "$(count '<td id="u1-ws[0-9]+-(pcie|nvlink)"')" = 16 ] || fail "expected 16 matrix cells in the DOM"
for ws in 4 6 8; do
  grep -qE "<td id=\"u1-ws$ws-pcie\" class=\"cell gate-admitted-when gap rule-LG001\" data-ws=\"$ws\" data-nvlink=\"no\"" "$dom" ||
    fail "cell ws $ws without NVLink is not an LG001 gap: $(grep -o "<td id=\"u1-ws$ws-pcie\"[^>]*>" "$dom")"
done
[ "$(count 'class="cell [^"]*gap')" = 3 ] || fail "expected exactly 3 gap cells"
grep -qE '<td id="u1-ws8-nvlink" class="cell gate-admitted" ' "$dom" || fail "ws 8 NVLink cell not admitted without a gap"
grep -qE '<td id="u1-ws1-pcie" class="cell gate-blocked" ' "$dom" || fail "ws 1 cell not blocked"
grep -q '<li class="kind-launch admitted"><span class="kind">kernel</span> cross_device_reduce_1stage' "$dom" || fail "no admitted kernel part"
grep -q '<li class="kind-none admitted gap"><span class="kind">no kernel</span>' "$dom" || fail "no gap part"
[ "$(count '<article class="finding sev-error rule-LG001"')" = 1 ] || fail "expected 1 LG001 diagnostic"
grep -q "error</span><span class=\"badge error\">LG001</span> <span class=\"message\">world sizes 4, 6, 8 without NVLink: the Python gate admits" "$dom" ||
  fail "diagnostic text for world sizes 4, 6, 8 missing"
grep -q 'counterexample</b> <code>world_size=4 full_nvlink=false nbytes=16 SGLANG_FORCE_CUSTOM_AR_PCIE=1</code>' "$dom" || fail "counterexample missing"
# file:line links relative to the page, the folder name percent-encoded
grep -q 'href="seed%20%3Cx%3E%20%26%20co/custom_all_reduce.cuh#L176">seed &lt;x&gt; &amp; co/custom_all_reduce.cuh:176:12</a>' "$dom" ||
  fail "dispatch location link missing or not escaped"
# the trace: Python probe first, C++ branch last, one crossing arrow
grep -q '<li class="hop py"><span class="step">Python probe</span><span class="name">probe</span><a class="loc" href="seed%20%3Cx%3E%20%26%20co/custom_all_reduce.py#L93" title="seed &lt;x&gt; &amp; co/custom_all_reduce.py">custom_all_reduce.py:93</a>' "$dom" ||
  fail "trace does not start at the Python probe"
grep -q '<li class="hop cpp"><span class="step">C++ branch</span><span class="name">branch condition</span>' "$dom" || fail "trace does not end at the C++ branch"
[ "$(count 'class="arrow cross"')" = 1 ] || fail "expected one Python-to-C++ arrow"
# nothing the escaping missed became markup: no element named x
! grep -q '<x>\|<x ' "$dom" || fail "unescaped '<x>' became an element"

browse --screenshot="$tmp/out.png" --window-size=1400,1000 "file://$tmp/report.html" >/dev/null || fail "chromium --screenshot failed"
python3 - "$tmp/out.png" <<'PY' || fail "screenshot is not a 1400x1000 PNG with content"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1400, 1000), (w, h)
idat, i = b"", 8
while i < len(data):
    n, kind = struct.unpack(">I4s", data[i:i + 8])
    if kind == b"IDAT": idat += data[i + 8:i + 8 + n]
    i += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw))
assert len(data) > 20000 and distinct > 64, (len(data), distinct)
print("screenshot ok:", len(data), "bytes,", distinct, "distinct byte values")
PY
echo "html_report: ok"
