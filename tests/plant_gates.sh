#!/usr/bin/env bash
# scripts/plant-gates.py on a copy of fixtures/gates-inventory: the one gate
# whose entry serves all it admits gets a planted rejection of each served
# head size; both must be found exactly, and the tree must give its own
# output again once restored.
set -euo pipefail
lg=$(realpath "$1") root=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/fixtures/gates-inventory" "$tmp/tree"
before=$(cd "$tmp/tree" && find . -type f -exec sha256sum {} + | sort)
out=$(python3 "$root/scripts/plant-gates.py" "$tmp/tree" --layergate "$lg" --repo fixture --tsv "$tmp/plants.tsv")
echo "$out"
grep -q '^fixture: 2 plants over 1 ops: 2 found exactly (100.0%); 0 skipped; 3 gates with an error before planting; reversal clean' <<<"$out" \
  || { echo "plant_gates: unexpected summary" >&2; exit 1; }
grep -q $'head_size == 64\tfound' "$tmp/plants.tsv" || { echo "plant_gates: head size 64 not found" >&2; exit 1; }
grep -q $'head_size == 128\tfound' "$tmp/plants.tsv" || { echo "plant_gates: head size 128 not found" >&2; exit 1; }
after=$(cd "$tmp/tree" && find . -type f -exec sha256sum {} + | sort)
[ "$before" = "$after" ] || { echo "plant_gates: the tree was not restored" >&2; exit 1; }
echo "plant_gates: ok"
