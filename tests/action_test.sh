#!/usr/bin/env bash
# The GitHub Action (action.yml) as far as it runs outside GitHub: its check
# step, scripts/action-run.sh, with the layergate under test, on a copy of
# the seed fixture (exit 1, one LG001 result in a SARIF file that is valid
# JSON and validates against the 2.1.0 schema, the outputs written to
# $GITHUB_OUTPUT), on upstream vLLM (exit 0), on a tree with no gate (exit 2,
# and a SARIF that says why), with each input (format, args, diff-base, the
# cache folder); then action.yml's shape and the workflow docs/ci.md shows.
set -euo pipefail
lg=$1 root=$2
run_sh=$root/scripts/action-run.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "action_test: $*" >&2; exit 1; }

# act DIR EXPECTED_STATUS [VAR=VALUE...]: action-run.sh in DIR with the
# inputs given; its stdout in $tmp/out, stderr in $tmp/err, outputs in $tmp/gh.
act() {
  local dir=$1 want=$2 status=0
  shift 2
  : >"$tmp/gh"
  (cd "$dir" && env -u LG_PATHS -u LG_FORMAT -u LG_SARIF -u LG_DIFF_BASE -u LG_ARGS \
     LAYERGATE="$lg" GITHUB_OUTPUT="$tmp/gh" LAYERGATE_CACHE_DIR="$tmp/cache" "$@" timeout 300 "$run_sh") \
    >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = "$want" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "action-run.sh in $(basename "$dir") ($*): exit $status, expected $want"; }
  grep -qx "exit-code=$want" "$tmp/gh" || fail "exit-code output: $(cat "$tmp/gh")"
}

seed=$tmp/seed
cp -r "$root/fixtures/seed-force-pcie" "$seed"
rm -f "$seed"/expect.json "$seed"/golden*
vllm=$tmp/vllm
cp -r "$root/fixtures/vllm-upstream" "$vllm"

# --- the seed: exit 1, the SARIF with its one result ----------------------------
act "$seed" 1
grep -qx "sarif-file=layergate.sarif" "$tmp/gh" || fail "sarif-file output: $(cat "$tmp/gh")"
python3 - "$seed/layergate.sarif" <<'PY' || fail "seed: bad SARIF"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == "2.1.0", d["version"]
res = d["runs"][0]["results"]
assert len(res) == 1 and res[0]["ruleId"] == "LG001" and res[0]["level"] == "error", res
assert [c["world_size"] for c in res[0]["properties"]["configurations"]] == [4, 6, 8], res[0]["properties"]
assert res[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "custom_all_reduce.py"
assert d["runs"][0].get("invocations", [{"executionSuccessful": True}])[0]["executionSuccessful"] is True
PY
schema=$root/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux/sarif-2.1.0.json
if [ -f "$schema" ] && python3 -c 'import jsonschema' 2>/dev/null; then
  python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
    "$schema" "$seed/layergate.sarif" || fail "seed: SARIF does not validate against the 2.1.0 schema"
fi
# The log's report (concise by default), and the precompiled headers in LAYERGATE_CACHE_DIR.
grep -q 'custom_all_reduce.py:[0-9]*:[0-9]*: .*LG001 world sizes 4, 6, 8' "$tmp/out" || fail "no concise LG001 line in the log: $(cat "$tmp/out")"
ls "$tmp"/cache/prelude-*.pch >/dev/null 2>&1 || fail "no precompiled header in LAYERGATE_CACHE_DIR"

# --- the inputs ------------------------------------------------------------------
act "$seed" 1 LG_FORMAT=github
grep -q '^::error file=custom_all_reduce.py,line=[0-9]*' "$tmp/out" || fail "format github: $(cat "$tmp/out")"
act "$seed" 1 LG_FORMAT=none LG_SARIF=report.sarif LG_PATHS="custom_all_reduce.py custom_all_reduce.cuh"
[ ! -s "$tmp/out" ] || fail "format none printed: $(cat "$tmp/out")"
grep -q '"ruleId": "LG001"' "$seed/report.sarif" || fail "sarif-file report.sarif not written"
act "$seed" 0 LG_ARGS="--fail-on never"
act "$seed" 1 LG_SARIF= LG_FORMAT=text
grep -qx "sarif-file=" "$tmp/gh" || ! grep -q "sarif-file" "$tmp/gh" || fail "no SARIF asked for, one named: $(cat "$tmp/gh")"
grep -q 'world sizes 4, 6, 8 without NVLink: .*\[LG001\]' "$tmp/out" || fail "format text: $(cat "$tmp/out")"
act "$seed" 2 LG_FORMAT=xml
grep -q "format 'xml'" "$tmp/err" || fail "bad format: $(cat "$tmp/err")"
# A relative cache folder is the working directory's.
act "$seed" 1 LAYERGATE_CACHE_DIR=.lg-cache LG_FORMAT=none
ls "$seed"/.lg-cache/prelude-*.pch >/dev/null 2>&1 || fail "relative LAYERGATE_CACHE_DIR not used"
# diff-base: in a checkout whose findings are all older than REF, nothing is new.
if command -v git >/dev/null; then
  rm -rf "$seed/.lg-cache" "$seed"/*.sarif
  git -C "$seed" init -q && git -C "$seed" add -A &&
    git -C "$seed" -c user.name=t -c user.email=t@t commit -qm seed || fail "git"
  act "$seed" 0 LG_DIFF_BASE=HEAD
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["runs"][0]["results"] == []' "$seed/layergate.sarif" ||
    fail "diff-base: the SARIF lists findings older than the base"
  act "$seed" 2 LG_DIFF_BASE=no-such-ref
fi

# --- upstream vLLM: exit 0; no gate: exit 2 with a SARIF that says why ----------
act "$vllm" 0
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not [r for r in d["runs"][0]["results"] if r["level"]=="error"]' \
  "$vllm/layergate.sarif" || fail "vllm-upstream: error results"
mkdir -p "$tmp/empty"
act "$tmp/empty" 2
python3 - "$tmp/empty/layergate.sarif" <<'PY' || fail "no gate: the SARIF must say the run failed"
import json, sys
inv = json.load(open(sys.argv[1]))["runs"][0]["invocations"][0]
assert inv["executionSuccessful"] is False, inv
assert "no layered gate found" in inv["toolExecutionNotifications"][0]["message"]["text"], inv
PY
grep -qx "sarif-file=layergate.sarif" "$tmp/gh" || fail "a stopped check's SARIF is not handed to the upload: $(cat "$tmp/gh")"
act "$tmp/empty" 2 LAYERGATE="$tmp/none/layergate"
grep -q "not found" "$tmp/err" || fail "missing binary: $(cat "$tmp/err")"

# --- action.yml, and the workflow docs/ci.md shows ---------------------------------
python3 - "$root/action.yml" "$root/docs/ci.md" <<'PY' || fail "action.yml or the documented workflow is not what it should be"
import re, sys, yaml
a = yaml.safe_load(open(sys.argv[1]))
assert a["runs"]["using"] == "composite", a["runs"]
steps = a["runs"]["steps"]
runs = " ".join(s.get("run", "") for s in steps)
assert "scripts/action-install.sh" in runs and "scripts/action-run.sh" in runs, runs
uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
assert uses["actions/cache"]["with"]["path"] == "${{ inputs.cache-dir }}", uses["actions/cache"]
run = next(s for s in steps if s.get("id") == "run")
assert run["env"]["LAYERGATE_CACHE_DIR"] == "${{ inputs.cache-dir }}", run["env"]
up = uses["github/codeql-action/upload-sarif"]
assert up["if"].startswith("always()") and "steps.run.outputs.sarif-file" in up["with"]["sarif_file"], up
for k in ("deb-url", "version", "paths", "format", "diff-base", "args", "sarif-file", "cache-dir"):
    assert k in a["inputs"], k
# Every input a step reads is declared, and every declared one is read.
text = open(sys.argv[1]).read()
read = set(re.findall(r"inputs\.([\w-]+)", text))
assert read == set(a["inputs"]), (read ^ set(a["inputs"]))
# docs/ci.md: a workflow that uses the action with inputs it has.
doc = open(sys.argv[2]).read()
blocks = [b for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "/layergate@" in b]
assert blocks, "no workflow using the action in docs/ci.md"
wf = yaml.safe_load(blocks[0])
steps = wf["jobs"]["layergate"]["steps"]
step = next(s for s in steps if "/layergate@" in s.get("uses", ""))
assert step["uses"] == "<owner>/layergate@v0", step["uses"]
assert set(step.get("with", {})) <= set(a["inputs"]), step["with"]
assert wf["permissions"]["security-events"] == "write", wf["permissions"]
PY
echo "action_test: ok"
