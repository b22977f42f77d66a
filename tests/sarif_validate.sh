#!/usr/bin/env bash
# Validates layergate's SARIF output against the official SARIF 2.1.0 JSON
# schema (python3-jsonschema) and with Microsoft's SARIF Multitool, both from
# the npm package pinned in third_party/sarif. Exit 77 (skipped) if absent.
# And what GitHub code scanning reads: each rule's helpUri and help (no
# relative link), each related location linked from the message ([text](id)),
# the flag trace as a codeFlow, every artifact URI resolvable through
# originalUriBaseIds to a file that exists.
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
# A checkout scanned from its parent: the 11-hop flag trace from the Python
# probe through sgl_kernel's wrapper to the C++ branch.
status=0
"$lg" check trace-cpp-env-algo --format sarif >"$tmp/chain.sarif" || status=$?
[ "$status" = 1 ] || { echo "expected exit 1 from trace-cpp-env-algo, got $status"; exit 1; }
# A check that stops (exit 2: a Python syntax error in the gate) still writes
# a valid log, which says the run failed and why: what code scanning shows
# instead of rejecting an empty file.
status=0
"$lg" check --python bad/syntax_error.py --cpp sglang-upstream/custom_all_reduce.cuh --format sarif -o "$tmp/failed.sarif" \
  2>"$tmp/failed.err" || status=$?
[ "$status" = 2 ] || { echo "expected exit 2 from a gate with a syntax error, got $status"; exit 1; }
python3 - "$tmp/failed.sarif" "$tmp/failed.err" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
err = open(sys.argv[2]).read()
assert err.startswith("layergate: error: ") and err.count("\n") == 1, err
assert run["results"] == [], run["results"]
inv = run["invocations"][0]
assert inv["executionSuccessful"] is False and inv["exitCode"] == 2, inv
notes = inv["toolExecutionNotifications"]
assert len(notes) == 1 and notes[0]["level"] == "error", notes
assert notes[0]["message"]["text"] == err[len("layergate: error: "):-1], (notes, err)
print("failed run ok:", notes[0]["message"]["text"])
PY
for f in "$tmp/seed.sarif" "$tmp/clean.sarif" "$tmp/chain.sarif" "$tmp/failed.sarif"; do
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
  python3 - "$f" <<'PY'
import json, os, re, sys
from urllib.parse import unquote, urlparse
doc = json.load(open(sys.argv[1]))
run = doc["runs"][0]
# Rules: a page to link (helpUri), help that stands outside the repository.
for rule in run["tool"]["driver"]["rules"]:
    assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith("/docs/rules/%s.md" % rule["id"]), rule["helpUri"]
    assert rule["help"]["text"] and rule["help"]["markdown"], rule["id"]
    for target in re.findall(r"\]\(([^)]*)\)", rule["help"]["markdown"]):
        assert target.startswith(("https://", "http://", "#")), (rule["id"], target)
    assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"], rule["id"]
# Results: what code scanning requires, related locations linked from the message.
for res in run["results"]:
    assert res["level"] in ("error", "warning", "note") and res["message"]["text"] and res["locations"], res
    text = res["message"]["text"]
    related = res.get("relatedLocations", [])
    rel_ids = [r["id"] for r in related]
    assert len(set(rel_ids)) == len(rel_ids), rel_ids
    linked = [int(x) for x in re.findall(r"(?<!\\)\]\((\d+)\)", text)]
    assert sorted(linked) == sorted(rel_ids), (linked, rel_ids, text)
    for r in related:
        assert r["message"]["text"], r
    for flow in res.get("codeFlows", []):
        for tf in flow["threadFlows"]:
            assert tf["locations"], flow
            for step in tf["locations"]:
                assert step["location"]["message"]["text"] and step["location"]["physicalLocation"], step
# Every artifact location resolves through originalUriBaseIds to a file.
bases = {k: v["uri"] for k, v in run.get("originalUriBaseIds", {}).items()}
for k, v in bases.items():
    assert v.startswith("file:///") and v.endswith("/"), (k, v)
n = 0
def walk(x):
    global n
    if isinstance(x, dict):
        a = x.get("artifactLocation")
        if a is not None:
            uri = a["uri"]
            if "uriBaseId" in a:
                assert not urlparse(uri).scheme and not uri.startswith("/"), a
                path = unquote(urlparse(bases[a["uriBaseId"]]).path) + unquote(uri)
            else:
                assert uri.startswith("file:///"), a
                path = unquote(urlparse(uri).path)
            assert os.path.isfile(path), (a, path)
            n += 1
        for v in x.values():
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(run)
print("code scanning ok:", sys.argv[1], n, "artifact locations resolved")
PY
done
# The checkout scanned from its parent: URIs relative to the checkout, not
# to the working directory; one result for the one diagnostic (its three
# configurations in properties), with the flag trace's 11 hops.
python3 - "$tmp/chain.sarif" "$root/fixtures/trace-cpp-env-algo" <<'PY'
import json, os, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file://" + os.path.normpath(sys.argv[2]) + "/", run["originalUriBaseIds"]
assert len(run["results"]) == 1, len(run["results"])
for res in run["results"]:
    assert [c["world_size"] for c in res["properties"]["configurations"]] == [4, 6, 8], res["properties"]
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("python/sglang/"), uri
    steps = res["codeFlows"][0]["threadFlows"][0]["locations"]
    assert len(steps) == 11, len(steps)
    assert steps[0]["location"]["message"]["text"] == "1. probe", steps[0]
    assert steps[-1]["location"]["message"]["text"] == "11. branch condition", steps[-1]
    assert steps[-1]["location"]["physicalLocation"]["artifactLocation"]["uri"].startswith("sgl-kernel/"), steps[-1]
print("trace ok: 1 result of 3 configurations with an 11-step code flow")
PY
# One result per diagnostic: the seed's text report says "1 error (3 configurations)".
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"][0]["results"])==1, "seed: 1 result"' "$tmp/seed.sarif"
mt=$pkg/Sarif.Multitool
chmod +x "$mt" 2>/dev/null || true
if [ -x "$mt" ]; then
  for f in seed chain failed; do
    timeout 300 "$mt" validate "$tmp/$f.sarif" -o "$tmp/validation-$f.sarif" >"$tmp/mt.log" 2>&1 || { cat "$tmp/mt.log"; exit 1; }
    python3 - "$tmp/validation-$f.sarif" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
errors = [r for run in d["runs"] for r in run.get("results", []) if r.get("level", "warning") == "error"]
for e in errors:
    print("Multitool:", e.get("ruleId"), e.get("message"))
sys.exit(1 if errors else 0)
PY
    echo "Multitool validate $f: no errors"
  done
fi
