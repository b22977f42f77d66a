#!/usr/bin/env bash
# What ran on the device machine for README.md's "Self-test" section.
# Builds the CUDA programs (kernels/) with nvcc and, where layergate's own
# build dependencies (clang-19/LLVM 19, Z3, tree-sitter) are missing, the GPU
# half of the self-test (layergate_selftest_gpu) with g++, then runs it on
# plans saved by `layergate selftest --save-plan` on a lint box (each plan
# with its folder of headers beside it: plan-ref.json and plan-ref.d/).
#   tool/selftest/device_run.sh PLAN_DIR   (plans: plan-ref.json, plan-seed.json)
#   tool/selftest/device_run.sh PLAN_DIR NAME...   (only the harness of PLAN_DIR/plan-NAME.json each)
set -u
plans=${1:-.lgst}
shift || true
OUT=${OUT:-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
echo "== build dependencies here:"; which cmake ninja g++ nvcc clang-19 2>&1; ls -d /usr/lib/llvm-19 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvidia-smi topo -m 2>/dev/null | head -4
B=build-device; mkdir -p $B
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
t0=$(date +%s)
$NVCC -std=c++17 -O3 -arch=sm_90 -o $B/layergate_allreduce_check kernels/test/allreduce_check.cu &
$NVCC -std=c++17 -O3 -arch=sm_90 -o $B/layergate_allreduce_bench bench/kernels/allreduce_bench.cu -ldl &
g++ -std=c++17 -O2 -Itool -I"$plans/include" -DLAYERGATE_KERNELS_BUILD_DIR="\"$PWD/$B\"" -o $B/layergate_selftest_gpu \
  tool/selftest/{Process,Topology,Static,Bench,HeaderScan,FfiObjects,Harness,EntryHarness,PlanFile,Selftest,core_main}.cpp tool/model/{Expr,Model}.cpp -ldl &
wait
echo "== built in $(( $(date +%s) - t0 )) s:"; ls $B
if [ -z "${LAYERGATE_NCCL_LIB:-}" ]; then
  LAYERGATE_NCCL_LIB=$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | head -1); export LAYERGATE_NCCL_LIB
fi
echo "NCCL: $LAYERGATE_NCCL_LIB"
run() {  # name args...
  local name=$1; shift
  local s=$(date +%s)
  $B/layergate_selftest_gpu "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  echo "== $name: exit $? in $(( $(date +%s) - s )) s ($*)"
}
if [ $# -gt 0 ]; then
  for n in "$@"; do
    run "harness-$n" --plan "$plans/plan-$n.json" --work-dir "/tmp/h-$n" --skip proof --skip standin --skip speed
    cat "$OUT/harness-$n.out"
  done
  exit 0
fi
run full --plan "$plans/plan-ref.json" --work-dir /tmp/h-ref --thresholds-out "$OUT/thresholds.json"
run seed --plan "$plans/plan-seed.json" --work-dir /tmp/h-seed --skip proof --skip standin --skip speed
run quick_json --quick --format json --plan "$plans/plan-seed.json" --work-dir /tmp/h-seed2 --skip harness --thresholds-out /tmp/th.json
CUDA_VISIBLE_DEVICES=0 $B/layergate_selftest_gpu --quick --skip speed --skip standin --plan "$plans/plan-ref.json" --work-dir /tmp/h-1 > "$OUT/one_gpu.out" 2>&1; echo "== one_gpu: exit $?"
CUDA_VISIBLE_DEVICES= $B/layergate_selftest_gpu > "$OUT/no_gpu.out" 2>&1; echo "== no_gpu: exit $?"
cat "$OUT/full.out"
