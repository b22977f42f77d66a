#!/usr/bin/env bash
# What ran on the 2xH200 device machine for kernels/README.md. Builds there
# unless build-kernels/ holds binaries that run; writes logs under $OUT.
#   kernels/tools/device_run.sh [quick|check|bench|all]
set -u
what=${1:-all}
OUT=${OUT:-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=build-kernels; mkdir -p $B
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -4
$B/allreduce_check --help >/dev/null 2>&1
if [ $? -ne 2 ]; then  # missing, or built here against another libc
  echo "building on the device"
  $NVCC -std=c++17 -O3 -arch=sm_90 -o $B/allreduce_check kernels/test/allreduce_check.cu &
  $NVCC -std=c++17 -O3 -arch=sm_90 -o $B/allreduce_bench bench/kernels/allreduce_bench.cu -ldl &
  wait
fi
if [ -z "${LAYERGATE_NCCL_LIB:-}" ]; then
  LAYERGATE_NCCL_LIB=$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | head -1)
  export LAYERGATE_NCCL_LIB
fi
echo "NCCL: $LAYERGATE_NCCL_LIB"
case $what in quick|all)
  timeout 120 $B/allreduce_check --quick --timeout-ms 500 > "$OUT/check_quick.log" 2>&1; echo "check --quick rc=$?"
  grep -E "^(FAIL|group|note|SKIP)|passed," "$OUT/check_quick.log" | head -40 ;; esac
case $what in bench|all)
  timeout 180 $B/allreduce_bench 2>&1 | tee "$OUT/bench.log"; echo "bench rc=${PIPESTATUS[0]}" ;; esac
case $what in check|all)
  timeout 240 $B/allreduce_check --timeout-ms 500 > "$OUT/check_full.log" 2>&1; echo "check full rc=$?"
  grep -E "^(FAIL|group|note|SKIP)|passed," "$OUT/check_full.log" | head -60 ;; esac
