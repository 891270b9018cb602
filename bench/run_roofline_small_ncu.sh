#!/usr/bin/env bash
# Issue 10's small sizes (2^20 elements, rows of 1024) timed by Nsight Compute: each kernel's
# own duration (gpu__time_duration; ncu flushes the caches and fixes the clocks before each),
# tritium's kernels (bench_roofline) beside Triton's of the same source (roofline.py), the
# first LAUNCHES launches of each. A kernel of 5 us timed with events moves by 5-10 % between
# runs of one binary (launch jitter); ncu's numbers do not carry it.
#
#   bench/run_roofline_small_ncu.sh BIN_DIR [LAUNCHES]
# Prints CSV: label,kernel,grid,launches,median_us,min_us.
set -u
bin=${1:?usage: run_roofline_small_ncu.sh BIN_DIR [LAUNCHES]}
count=${2:-100}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ncu=${NCU:-ncu}
export PYTHONUNBUFFERED=1
echo "label,kernel,grid,launches,median_us,min_us"
while read -r workload kernel; do
  for who in tritium triton; do
    if [ $who = tritium ]; then
      run=("$bin/bench_roofline" --device cuda --n 1048576 --cols 1024 "$workload")
    else
      run=(python3 "$here/compare/roofline.py" --n 1048576 --cols 1024 "$workload")
    fi
    "$ncu" --csv --metrics gpu__time_duration.sum -k "regex:^_?$kernel\$" -c "$count" "${run[@]}" \
      2> /dev/null | python3 "$here/compare/ncu_summary.py" "$who $workload"
  done
done << 'LIST'
vector_add_fp32 add_kernel
silu_mul_fp16 silu_mul_kernel
softmax_fp32 softmax_kernel
layer_norm_fp16 layer_norm_fwd_fused
layer_norm_row_fp16 layer_norm_fwd_row
rmsnorm_fp16 rmsnorm_kernel
LIST
