#!/usr/bin/env bash
# Validates layergate's SARIF output against the official SARIF 2.1.0 JSON
# schema (python3-jsonschema) and with Microsoft's SARIF Multitool, both from
# the npm package pinned in third_party/sarif. Exit 77 (skipped) if absent.
set -euo pipefail
lg=$1 root=$2
pkg=$root/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux
[ -f "$pkg/sarif-2.1.0.json" ] || { echo "SKIP: $pkg missing (scripts/install-deps.sh installs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/fixtures"
status=0
"$lg" check --python seed-force-pcie/custom_all_reduce.py --cpp seed-force-pcie/custom_all_reduce.cuh --format sarif >"$tmp/seed.sarif" || status=$?
[ "$status" = 1 ] || { echo "expected exit 1 from the seed scenario, got $status"; exit 1; }
"$lg" check --python sglang-upstream/custom_all_reduce.py --cpp sglang-upstream/custom_all_reduce.cuh --format sarif >"$tmp/clean.sarif"
for f in "$tmp/seed.sarif" "$tmp/clean.sarif"; do
  python3 - "$pkg/sarif-2.1.0.json" "$f" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
run = doc["runs"][0]
ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
assert "LG001" in ids and "LG002" in ids, ids
for res in run["results"]:
    assert res["ruleId"] in ids
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".py"), res
    assert res["partialFingerprints"], res
print("schema ok:", sys.argv[2], len(run["results"]), "results")
PY
done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"][0]["results"])==3, "seed: 3 results"' "$tmp/seed.sarif"
mt=$pkg/Sarif.Multitool
chmod +x "$mt" 2>/dev/null || true
if [ -x "$mt" ]; then
  timeout 300 "$mt" validate "$tmp/seed.sarif" -o "$tmp/validation.sarif" >"$tmp/mt.log" 2>&1 || { cat "$tmp/mt.log"; exit 1; }
  python3 - "$tmp/validation.sarif" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
errors = [r for run in d["runs"] for r in run.get("results", []) if r.get("level", "warning") == "error"]
for e in errors:
    print("Multitool:", e.get("ruleId"), e.get("message"))
sys.exit(1 if errors else 0)
PY
  echo "Multitool validate: no errors"
fi
