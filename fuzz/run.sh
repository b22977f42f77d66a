#!/usr/bin/env bash
# Runs each fuzzer for a bounded time on a seed corpus made from our fixtures.
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_FUZZER]
# Exit 1 if any fuzzer finds a crash (the reproducer is left in BUILD_DIR/fuzz-artifacts).
set -euo pipefail
build=$1 secs=${2:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$build/fuzz-work
art=$build/fuzz-artifacts
rm -rf "$work" && mkdir -p "$work"/{py,cpp,targets,settings} "$art"
cp "$here"/fixtures/*/*.py "$here"/fixtures/bad/*.py "$work/py/" 2>/dev/null || true
find "$here/fixtures" -name '*.cuh' -size -20k -exec cp {} "$work/cpp/" \;
cp "$here"/rules/targets/*.json "$work/targets/"
find "$here/fuzz/regressions" -maxdepth 1 -type f ! -name README.md -exec cp {} "$work/py/" \;
cp "$here"/fuzz/regressions/cpp/* "$work/cpp/" 2>/dev/null || true
cp "$here"/fuzz/regressions/targets/* "$work/targets/" 2>/dev/null || true
# configuration and baseline seeds: the tests' TOML and a report of a fixture
find "$here/tests" "$here/examples" -name '*.toml' -exec cp {} "$work/settings/" \; 2>/dev/null || true
for f in "$here"/fixtures/*/expect.json; do cp "$f" "$work/settings/$(basename "$(dirname "$f")").json"; done
# saved selftest plans (static side only; exit 4 here, no GPU): one with a matrix, one with examples and a harness
"$build/tool/layergate" selftest --check "$here/fixtures/seed-force-pcie" --save-plan "$work/settings/plan-seed.json" >/dev/null 2>&1 || true
fi4=$here/fixtures/flashinfer-pcie-ipc-flat4
"$build/tool/layergate" selftest --header "$fi4/include/flashinfer/comm/pcie_ipc_all_reduce.cuh" \
  --python "$fi4/flashinfer/comm/pcie_ipc_policy.py" --target flashinfer-pcie-ipc \
  --save-plan "$work/settings/plan-flat4.json" >/dev/null 2>&1 || true
printf '[tool.layergate]\nselect = ["LG"]\nignore = ["LG007"]\nfail-on = "warning"\nmax-world-size = 8\n[tool.layergate.severity]\nLG008 = "error"\n' > "$work/settings/seed.toml"
status=0
run() {
  local bin=$1 corpus=$2 extra=$3
  echo "== $bin for ${secs}s on $(ls "$corpus" | wc -l) seeds"
  if ! "$build/fuzz/$bin" "$corpus" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
      -artifact_prefix="$art/$bin-" $extra -print_final_stats=1 >"$work/$bin.log" 2>&1; then
    tail -40 "$work/$bin.log"
    status=1
  else
    grep -E 'stat::number_of_executed_units|Done' "$work/$bin.log" | tail -2 || true
  fi
}
run python_gate_fuzz "$work/py" "-max_len=65536"
run targets_fuzz "$work/targets" "-max_len=16384"
run cpp_dispatch_fuzz "$work/cpp" "-max_len=32768"
run settings_fuzz "$work/settings" "-max_len=16384"
exit $status
