#!/usr/bin/env bash
# The CI recipes in examples/ run as written: extracts the `layergate ...`
# command of each GitHub Actions workflow (built from source, and installed
# from the .deb) and the pre-commit hook's entry, and
# runs them (with the layergate under test first on PATH) in fixture trees laid
# out like an SGLang fork with the seed bug (expects exit 1, SARIF with the
# one LG001 result of three configurations) and like upstream vLLM (expects exit 0).
set -euo pipefail
lg=$1 root=$2
workflow=$root/examples/github-actions/layergate.yml
deb_workflow=$root/examples/github-actions/layergate-deb.yml
hooks=$root/examples/pre-commit-hooks.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
ln -s "$lg" "$tmp/bin/layergate"
export PATH=$tmp/bin:$PATH
fail() { echo "ci_recipes: $*" >&2; exit 1; }

# --- the commands, as the files state them -------------------------------------
mapfile -t wf_cmds < <(sed -nE 's/^[[:space:]]*(-[[:space:]]*)?(run:[[:space:]]*)?(layergate[[:space:]].*)$/\3/p' "$workflow")
[ "${#wf_cmds[@]}" = 1 ] || fail "expected one layergate command in $workflow, found ${#wf_cmds[@]}"
grep -q 'uses: github/codeql-action/upload-sarif@' "$workflow" || fail "$workflow does not upload the SARIF"
grep -q 'scripts/install-deps.sh' "$workflow" || fail "$workflow does not install the dependencies"
# The package variant: builds the .deb once, installs it with apt in the lint job.
mapfile -t deb_cmds < <(sed -nE 's/^[[:space:]]*(-[[:space:]]*)?(run:[[:space:]]*)?(layergate[[:space:]].*)$/\3/p' "$deb_workflow")
[ "${#deb_cmds[@]}" = 1 ] || fail "expected one layergate command in $deb_workflow, found ${#deb_cmds[@]}"
grep -q 'cpack -G DEB' "$deb_workflow" || fail "$deb_workflow does not build the .deb"
grep -qE 'apt-get install .*\./[^ ]*layergate_\*\.deb' "$deb_workflow" || fail "$deb_workflow does not apt-install the .deb"
grep -q 'uses: github/codeql-action/upload-sarif@' "$deb_workflow" || fail "$deb_workflow does not upload the SARIF"
entry=$(sed -nE 's/^[[:space:]]*entry:[[:space:]]*(.*)$/\1/p' "$hooks")
files_re=$(sed -nE 's/^[[:space:]]*files:[[:space:]]*(.*)$/\1/p' "$hooks")
pass_filenames=$(sed -nE 's/^[[:space:]]*pass_filenames:[[:space:]]*(.*)$/\1/p' "$hooks")
[[ "$entry" == layergate\ check* ]] || fail "hook entry is '$entry', expected 'layergate check ...'"
[ -n "$files_re" ] || fail "hook has no files pattern"
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - "$workflow" "$hooks" "$deb_workflow" <<'PY' || fail "the recipes are not the YAML they should be"
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
steps = wf["jobs"]["layergate"]["steps"]
assert any("upload-sarif" in s.get("uses", "") for s in steps), steps
deb = yaml.safe_load(open(sys.argv[3]))
assert deb["jobs"]["layergate"]["needs"] == "package", deb["jobs"]["layergate"]
up = [s for s in deb["jobs"]["package"]["steps"] if "upload-artifact" in s.get("uses", "")]
down = [s for s in deb["jobs"]["layergate"]["steps"] if "download-artifact" in s.get("uses", "")]
assert up and down and up[0]["with"]["name"] == down[0]["with"]["name"], (up, down)
assert any("upload-sarif" in s.get("uses", "") for s in deb["jobs"]["layergate"]["steps"])
hooks = yaml.safe_load(open(sys.argv[2]))
assert isinstance(hooks, list) and hooks[0]["id"] == "layergate", hooks
for k in ("name", "entry", "language"):
    assert k in hooks[0], k
PY
fi

# --- fixture trees ------------------------------------------------------------------
fx=$root/fixtures
sg=$tmp/sglang-fork
mkdir -p "$sg/python/sglang/srt/distributed/device_communicators" "$sg/sgl-kernel/csrc/allreduce" "$sg/.git" "$sg/build"
cp "$fx/seed-force-pcie/custom_all_reduce.py" "$sg/python/sglang/srt/distributed/device_communicators/"
cp "$fx/sglang-upstream/custom_all_reduce.cuh" "$sg/sgl-kernel/csrc/allreduce/"
cp "$fx/vllm-fork-pcie/custom_all_reduce.py" "$fx/vllm-fork-pcie/custom_all_reduce.cuh" "$sg/build/"
vl=$tmp/vllm
mkdir -p "$vl/vllm/distributed/device_communicators" "$vl/csrc"
cp "$fx/vllm-upstream/custom_all_reduce.py" "$vl/vllm/distributed/device_communicators/"
cp "$fx/vllm-upstream/custom_all_reduce.cuh" "$vl/csrc/"
echo '#include "custom_all_reduce.cuh"' >"$vl/csrc/custom_all_reduce.cu"

# The hook's files pattern is the one `layergate targets --files-regex` builds
# from the targets, and selects every file an analysis of a fixture reads
# (its gate, dispatch and chain, the modules the gate imports, the selection
# layer; pre-commit uses Python's re.search on repository-relative paths).
generated=$(layergate targets --files-regex)
[ "$files_re" = "$generated" ] ||
  fail "the hook's files pattern is not the generated one; regenerate it with: layergate targets --files-regex"
python3 - "$files_re" <<'PY' || fail "hook files pattern '$files_re' does not select the right files"
import re, sys
r = re.compile(sys.argv[1])
for p in ("python/sglang/srt/distributed/device_communicators/custom_all_reduce.py",
          "sgl-kernel/csrc/allreduce/custom_all_reduce.cuh", "csrc/custom_all_reduce.cuh", "csrc/custom_all_reduce.cu",
          "python/sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py",
          "vllm/distributed/device_communicators/all_reduce_utils.py", "vllm/envs.py", "python/sglang/srt/environ.py",
          "python/sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py",
          "vllm/distributed/device_communicators/quick_all_reduce.py", "csrc/torch_bindings.cpp",
          "sgl-kernel/csrc/common_extension.cc", ".layergate.toml", "sub/pyproject.toml"):
    assert r.search(p), p
for p in ("tests/test_custom_all_reduce.py", "custom_all_reduce.pyc", "README.md", "csrc/attention_kernels.cu",
          "vllm/model_executor/layers/linear.py"):
    assert not r.search(p), p
PY
python3 - "$lg" "$root/fixtures" "$files_re" <<'PY' || fail "hook files pattern misses files the fixtures' analyses read"
import json, os, re, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
lg, fixtures, r = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
def read_by(fx):  # the root-relative files an analysis of fixture fx reads
    d = os.path.join(fixtures, fx)
    if not os.path.isfile(os.path.join(d, "expect.json")):
        return fx, []
    with tempfile.TemporaryDirectory() as t:
        trace = os.path.join(t, "trace.json")
        p = subprocess.run([lg, "check", ".", "--format", "json", "--time-trace", trace], cwd=d,
                           capture_output=True, text=True, timeout=300)
        if p.returncode not in (0, 1):
            return fx, []
        files, routed = set(), set()
        for a in json.loads(p.stdout)["analyses"]:
            if a["layout"].get("dispatch_found", "").startswith("route:"):
                # an op library the gate routes to (its package, its sources): the fork's own names
                routed.update(os.path.dirname(f) for f in a["inputs"]["cpp"])
                continue
            files.update(a["inputs"]["python"] + a["inputs"]["cpp"])
        for s in json.loads(p.stdout).get("selection_layers", []):
            files.add(s["file"])
        for e in json.load(open(trace))["traceEvents"]:
            if e.get("name") in ("Python frontend", "Walk module", "Import", "C++ frontend"):
                files.add(e["args"]["detail"])
    root = os.path.realpath(d)
    rel = {os.path.relpath(os.path.realpath(os.path.join(d, f)), root) for f in files}
    routed = {os.path.relpath(os.path.realpath(os.path.join(d, f)), root) for f in routed}
    return fx, sorted(f for f in rel if not f.startswith("..") and os.path.dirname(f) not in routed)
with ThreadPoolExecutor(2) as ex:
    read = list(ex.map(read_by, sorted(os.listdir(fixtures))))
assert sum(len(f) for _, f in read) > 200, read  # the fixtures were analysed
missed = [f"{fx}: {f}" for fx, files in read for f in files if not r.search(f)]
assert not missed, "\n".join(missed)
PY

run() {  # run DIR EXPECTED_STATUS COMMAND -> output in $tmp/out
  local dir=$1 want=$2 cmd=$3 status=0
  (cd "$dir" && timeout 300 bash -c "$cmd") >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = "$want" ] || { cat "$tmp/err" >&2; fail "'$cmd' in $(basename "$dir"): exit $status, expected $want"; }
}

hook_cmd() {  # the command pre-commit runs in DIR
  local dir=$1
  if [ "$pass_filenames" = false ]; then
    echo "$entry"
  else
    local files
    files=$(cd "$dir" && find . -type f | sed 's|^\./||' | python3 -c 'import re,sys; r=re.compile(sys.argv[1]); print(" ".join(l.strip() for l in sys.stdin if r.search(l.strip())))' "$files_re")
    echo "$entry $files"
  fi
}

# GitHub Actions: the seed bug gives exit 1 and a SARIF file with its one result (three configurations).
run "$sg" 1 "${wf_cmds[0]}"
python3 - "$sg/layergate.sarif" <<'PY' || fail "workflow: bad SARIF"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == "2.1.0"
res = d["runs"][0]["results"]
assert len(res) == 1 and res[0]["ruleId"] == "LG001", res
assert [c["world_size"] for c in res[0]["properties"]["configurations"]] == [4, 6, 8], res[0]["properties"]
uri = res[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
assert uri == "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py", uri
PY
schema=$root/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux/sarif-2.1.0.json
if [ -f "$schema" ] && python3 -c 'import jsonschema' 2>/dev/null; then
  python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
    "$schema" "$sg/layergate.sarif" || fail "workflow: SARIF does not validate against the 2.1.0 schema"
fi
run "$vl" 0 "${wf_cmds[0]}"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not [r for r in d["runs"][0]["results"] if r["level"]=="error"], d["runs"][0]["results"]' "$vl/layergate.sarif" ||
  fail "workflow: upstream vLLM should give no error results"

# A tree with no gate: exit 2, and a SARIF that says the run failed and why.
mkdir -p "$tmp/empty"
run "$tmp/empty" 2 "${wf_cmds[0]}"
python3 - "$tmp/empty/layergate.sarif" <<'PY' || fail "workflow: a stopped check must leave a SARIF that says so"
import json, sys
inv = json.load(open(sys.argv[1]))["runs"][0]["invocations"][0]
assert inv["executionSuccessful"] is False, inv
assert "no layered gate found" in inv["toolExecutionNotifications"][0]["message"]["text"], inv
PY

# The package workflow's command: the same verdicts.
if [ "${deb_cmds[0]}" != "${wf_cmds[0]}" ]; then
  run "$sg" 1 "${deb_cmds[0]}"
  grep -q '"ruleId": "LG001"' "$sg/layergate.sarif" || fail "package workflow: no LG001 in the SARIF"
  run "$vl" 0 "${deb_cmds[0]}"
fi

# pre-commit: the same verdicts, as clang-style text.
run "$sg" 1 "$(hook_cmd "$sg")"
grep -q 'custom_all_reduce.py:[0-9]*:[0-9]*: error: .*\[LG001\]' "$tmp/out" || fail "hook: no LG001 diagnostic"
run "$vl" 0 "$(hook_cmd "$vl")"
echo "ci_recipes: ok (workflows: '${wf_cmds[0]}', package: '${deb_cmds[0]}'; hook: '$entry')"
