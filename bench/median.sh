# Sourced by the bench scripts: median_ms COMMAND... prints the median wall
# time in ms (one decimal) of $runs runs of COMMAND, output discarded.
median_ms() {
  local ts=()
  for ((i = 0; i < runs; i++)); do
    local t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    ts+=($(( ($(date +%s%N) - t0) / 1000 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
