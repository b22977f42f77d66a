#!/usr/bin/env bash
# What ran on the device for kernels/README.md "Multi-process use": builds the
# layergate_ops torch extension and allreduce_check (in parallel), runs the
# runner's IPC group (or, CHECK=full, the runner's whole correctness run),
# then the torch test at each rank count given.
#   kernels/tools/device_run_torch.sh [quick|full] [ranks...]     (default: quick 2)
# Environment: TORCH_TIMEOUT (s, per rank count; default 380), KTIMEOUT_MS
# (kernel deadline, default 5000), CHECK=quick|full|none (default quick),
# MPS=1: start the CUDA MPS control daemon first (so that ranks in different
# processes sharing the GPU can run at the same time) and stop it at the end,
# BENCH=1: the torch test also times eager calls (--bench), TAG: suffix of
# the torch log's name ($OUT/torch_<what><TAG>.log, every rank count in it).
set -u
what=${1:-quick}; shift || true
ranks=${*:-2}
OUT=${OUT:-out}; mkdir -p "$OUT"
export MAX_JOBS=${MAX_JOBS:-16} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda/bin:$PATH
TT=${TORCH_TIMEOUT:-380}; KT=${KTIMEOUT_MS:-5000}; CHECK=${CHECK:-quick}
B=build-kernels; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "GPUs", torch.cuda.device_count())'
t0=$(date +%s)
( nvcc -std=c++17 -O3 -arch=sm_90 -o $B/allreduce_check kernels/test/allreduce_check.cu > "$OUT/build_check.log" 2>&1; echo "allreduce_check build rc=$? ($(( $(date +%s) - t0 )) s)" ) &
python3 kernels/torch/build.py --build-dir $B/torch_ext --arch sm_90 > "$OUT/build_ext.log" 2>&1
echo "extension build rc=$? ($(( $(date +%s) - t0 )) s)"; tail -3 "$OUT/build_ext.log"
wait
echo "builds done ($(( $(date +%s) - t0 )) s)"
case $CHECK in
  quick) cargs="--quick --max-ranks 2 --timeout-ms 2000";;
  full) cargs="--timeout-ms 500";;
  *) cargs=;;
esac
if [ -n "$cargs" ]; then
  t1=$(date +%s)
  timeout 200 $B/allreduce_check $cargs > "$OUT/check_$CHECK.log" 2>&1
  echo "allreduce_check $cargs rc=$? ($(( $(date +%s) - t1 )) s)"
  grep -E "^(FAIL|group|note|SKIP)|ipc|passed," "$OUT/check_$CHECK.log" | head -30
fi
if [ "${MPS:-0}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d && echo "MPS control daemon started" || echo "MPS: could not start the daemon"
fi
for n in $ranks; do
  flag=; [ "$what" = quick ] && flag=--quick
  [ "${BENCH:-0}" = 1 ] && flag="$flag --bench"
  log="$OUT/torch_${what}${TAG:-}.log"; one="$OUT/.ranks$n.log"
  t1=$(date +%s)
  timeout $((TT + 20)) python3 kernels/torch/test_torch_allreduce.py --ranks $n $flag --timeout $TT \
    --kernel-timeout-ms $KT --build-dir $B/torch_ext > "$one" 2>&1
  echo "torch test ranks=$n $what rc=$? ($(( $(date +%s) - t1 )) s)"
  grep -E "^(FAIL|CRASH|TIMEOUT|#|BENCH)|passed," "$one" | head -25
  grep -A12 "^CRASH" "$one" | head -30
  cat "$one" >> "$log"; rm -f "$one"
done
if [ "${MPS:-0}" = 1 ]; then echo quit | nvidia-cuda-mps-control; echo "MPS daemon stopped"; fi
