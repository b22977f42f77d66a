#!/usr/bin/env bash
# The --header harness for each fixture header compiles with nvcc, and the
# reference dispatch reads the thresholds JSON the self-test writes. Needs no
# GPU; skipped (77) where /usr/local/cuda/bin/nvcc is absent (CI without CUDA).
#   selftest_harness_nvcc.sh LAYERGATE SOURCE_DIR [LAYERGATE_SELFTEST_GPU]
set -eu
lg=$1 src=$2 gpu=${3:-}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ ! -x "$nvcc" ]; then echo "SKIP: no $nvcc"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# Each build runs in the background (a subshell): it says a failure by its
# exit status, which `wait PID` collects; fail=1 inside it would be lost.
build() {  # name header python [target]
  local out="$tmp/$1"
  "$lg" selftest --header "$2" --python "$3" ${4:+--target "$4"} --emit-harness "$out" > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: $1: no harness"; return 1; }
  if "$nvcc" -std=c++17 -arch=sm_90 --expt-relaxed-constexpr --expt-extended-lambda -c -I"$out/include" -I"$(dirname "$2")" -o "$out/harness.o" "$out/harness.cu" > "$out.nvcc" 2>&1; then
    echo "ok: $1 harness compiles"
  else
    head -40 "$out.nvcc"; echo "FAIL: $1: the harness does not compile"; return 1
  fi
}
pids=()
waitAll() {
  local p
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  pids=()
}
build sglang-upstream "$src/fixtures/sglang-upstream/custom_all_reduce.cuh" "$src/fixtures/sglang-upstream/custom_all_reduce.py" & pids+=($!)
build vllm-upstream "$src/fixtures/vllm-upstream/custom_all_reduce.cuh" "$src/fixtures/vllm-upstream/custom_all_reduce.py" & pids+=($!)
waitAll
build reference "$src/kernels/layergate_allreduce.cuh" "$src/kernels/python/custom_all_reduce.py" & pids+=($!)
# A dispatch called with the values a launch policy hands down (the entry harness).
fi=$src/fixtures/flashinfer-pcie-ipc-flat4
build flashinfer-pcie-ipc "$fi/include/flashinfer/comm/pcie_ipc_all_reduce.cuh" "$fi/flashinfer/comm/pcie_ipc_policy.py" flashinfer-pcie-ipc & pids+=($!)
waitAll

# A plan saved from a checkout (two gates: FlashInfer's entry, SGLang's
# class), moved to another directory with the checkout deleted: the GPU side
# writes each harness and the nvcc command it runs, which compiles from the
# headers carried in the plan's folder.
if [ -n "$gpu" ]; then
  ck="$tmp/checkout"
  mkdir -p "$ck/sgl" "$tmp/lint"
  cp -r "$fi/flashinfer" "$fi/include" "$ck/"
  cp "$src/fixtures/sglang-upstream/custom_all_reduce.py" "$src/fixtures/sglang-upstream/custom_all_reduce.cuh" "$ck/sgl/"
  CUDA_VISIBLE_DEVICES= "$lg" selftest --check "$ck" --save-plan "$tmp/lint/plan.json" > "$tmp/save.log" 2>&1 || true
  rm -rf "$ck"
  mv "$tmp/lint" "$tmp/box"
  if "$gpu" --plan "$tmp/box/plan.json" --nvcc "$nvcc" --emit-harness "$tmp/planned" > "$tmp/commands" 2> "$tmp/emit.log" &&
      [ "$(wc -l < "$tmp/commands")" -eq 2 ]; then
    n=0
    while IFS= read -r cmd; do
      n=$((n + 1))
      if bash -c "$cmd" > "$tmp/plan-nvcc-$n.log" 2>&1; then
        echo "ok: moved plan, harness $n compiles from $tmp/box/plan.d"
      else
        head -40 "$tmp/plan-nvcc-$n.log"; echo "FAIL: moved plan: harness $n does not compile"; fail=1
      fi
    done < "$tmp/commands"
  else
    cat "$tmp/save.log" "$tmp/emit.log" "$tmp/commands"; echo "FAIL: moved plan: no harness commands"; fail=1
  fi
fi

# A JIT entry over tvm-ffi objects (the CustomAllReduceV2 shape): the harness
# is planned here always; it compiles and links only against tvm-ffi's headers
# and library, which a lint box has when $LAYERGATE_TVM_FFI names them.
v2=$src/fixtures/sglang-custom-ar-v2/python/sglang
out="$tmp/v2"
if "$lg" selftest --header "$v2/kernels/jit/csrc/distributed/custom_all_reduce.cuh" \
    --python "$v2/srt/distributed/device_communicators/custom_all_reduce_v2.py" --target sglang-custom-ar-v2 \
    --emit-harness "$out" > "$out.log" 2>&1 && grep -q 'make_object<host::distributed::WorkspaceObj>' "$out/harness.cu"; then
  echo "ok: sglang-custom-ar-v2 harness planned"
  if [ -n "${LAYERGATE_TVM_FFI:-}" ]; then
    t=$LAYERGATE_TVM_FFI
    if "$nvcc" -std=c++20 -arch=sm_90 --expt-relaxed-constexpr -I"$out/include" -I"$v2/kernels/jit/include" \
        -I"$t/include" -I"$t/3rdparty/dlpack/include" -o "$out/harness" "$out/harness.cu" -L"$t/lib" -ltvm_ffi > "$out.nvcc" 2>&1; then
      echo "ok: sglang-custom-ar-v2 harness compiles and links against $t"
    else
      head -40 "$out.nvcc"; echo "FAIL: sglang-custom-ar-v2: the harness does not compile"; fail=1
    fi
  else
    echo "note: sglang-custom-ar-v2 harness not compiled (set LAYERGATE_TVM_FFI to a tvm-ffi prefix)"
  fi
else
  cat "$out.log"; echo "FAIL: sglang-custom-ar-v2: no tvm-ffi harness"; fail=1
fi

# Thresholds::from_file on the JSON the self-test writes (host code only: runs without a GPU).
cat > "$tmp/th.json" <<'JSON'
{
  "format": "layergate-thresholds/1",
  "machine": "2 x NVIDIA H200, NVLink",
  "entries": [
    {"key": "nvlink_one_shot_max", "world_size": 2, "bytes": 524288},
    {"world_size": 2, "bytes": 18446744073709551615, "key": "nvlink_one_stage_max"},
    {"key": "pcie_one_shot_max", "world_size": 4, "bytes": 65536}
  ]
}
JSON
printf '{"entries": [{"key": "bogus", "world_size": 2, "bytes": 1}]}\n' > "$tmp/bad.json"
printf '# text form\nnvlink_one_shot_max 8 4096\n' > "$tmp/th.txt"
cat > "$tmp/th.cu" <<'CU'
#include <cstdio>
#include "layergate_allreduce.cuh"
int main(int, char** argv) {
  using layergate::Thresholds;
  Thresholds t = Thresholds::from_file(argv[1]);
  Thresholds d = Thresholds::defaults();
  bool ok = t.nvlink_one_shot_max[2] == 524288 && t.nvlink_one_stage_max[2] == ~size_t(0) &&
            t.pcie_one_shot_max[4] == 65536 && t.pcie_one_shot_max[2] == d.pcie_one_shot_max[2];
  Thresholds x = Thresholds::from_file(argv[3]);
  ok = ok && x.nvlink_one_shot_max[8] == 4096;
  try { Thresholds::from_file(argv[2]); ok = false; } catch (const std::exception& e) { std::printf("bad file refused: %s\n", e.what()); }
  std::printf("%s\n", ok ? "thresholds json ok" : "thresholds json WRONG");
  return ok ? 0 : 1;
}
CU
if "$nvcc" -std=c++17 -I"$src/kernels" -o "$tmp/th" "$tmp/th.cu" > "$tmp/th.log" 2>&1; then
  "$tmp/th" "$tmp/th.json" "$tmp/bad.json" "$tmp/th.txt" || fail=1
else
  cat "$tmp/th.log"; echo "FAIL: thresholds reader does not compile"; fail=1
fi
exit $fail
