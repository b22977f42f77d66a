#!/usr/bin/env bash
# What ran on the device for kernels/README.md "Multi-process use": builds the
# layergate_ops torch extension and allreduce_check (in parallel), runs the
# runner's IPC group, then the torch test at each rank count given.
#   kernels/tools/device_run_torch.sh [quick|full] [ranks...]     (default: quick 2)
set -u
what=${1:-quick}; shift || true
ranks=${*:-2}
OUT=${OUT:-out}; mkdir -p "$OUT"
export MAX_JOBS=${MAX_JOBS:-16} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH=/usr/local/cuda/bin:$PATH
B=build-kernels; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "GPUs", torch.cuda.device_count())'
t0=$(date +%s)
( nvcc -std=c++17 -O3 -arch=sm_90 -o $B/allreduce_check kernels/test/allreduce_check.cu > "$OUT/build_check.log" 2>&1; echo "allreduce_check build rc=$?" ) &
python3 kernels/torch/build.py --build-dir $B/torch_ext --arch sm_90 > "$OUT/build_ext.log" 2>&1
echo "extension build rc=$? ($(( $(date +%s) - t0 )) s)"; tail -3 "$OUT/build_ext.log"
wait
echo "builds done ($(( $(date +%s) - t0 )) s)"
timeout 120 $B/allreduce_check --quick --max-ranks 2 --timeout-ms 2000 > "$OUT/check_quick.log" 2>&1
echo "allreduce_check --quick --max-ranks 2 rc=$?"
grep -E "^(FAIL|group|note|SKIP)|ipc|passed," "$OUT/check_quick.log" | head -20
for n in $ranks; do
  flag=; [ "$what" = quick ] && flag=--quick
  log="$OUT/torch_${what}_ranks$n.log"
  timeout 400 python3 kernels/torch/test_torch_allreduce.py --ranks $n $flag --timeout 380 --build-dir $B/torch_ext > "$log" 2>&1
  echo "torch test ranks=$n $what rc=$?"
  grep -E "^(FAIL|CRASH|TIMEOUT|#)|passed," "$log" | head -25
  grep -A12 "^CRASH" "$log" | head -30
done
