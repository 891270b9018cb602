#!/usr/bin/env bash
# The GEMM and GEMM+bias+ReLU at the seed's small shapes, each kernel timed by Nsight Compute
# (gpu__time_duration: the kernel alone, caches flushed, clocks at base), beside cuBLAS's
# plain GEMM in the same command. At 6 us a kernel, events around each call carry the launch's
# jitter (0.3-0.8 us between runs of one binary); ncu does not, which is what issue 9's "the
# fusion is free" (fused no slower than cuBLAS's plain GEMM) needs.
#
#   bench/run_gemm_small_ncu.sh BIN_DIR [CONFIG]     (CONFIG: BMxBNxBK:warps:stages, default
#                                                     64x64x64:4:3, the autotuner's usual pick)
# Prints CSV: label,kernel,grid,launches,median_us,min_us.
set -u
bin=${1:?usage: run_gemm_small_ncu.sh BIN_DIR [CONFIG]}
cfg=${2:-64x64x64:4:3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ncu=${NCU:-ncu}
prof() { "$ncu" --csv --metrics gpu__time_duration.sum "$@" 2> /dev/null; }
echo "label,kernel,grid,launches,median_us,min_us"
for shape in 64x256x128 128x256x256; do
  for w in gemm gemm_bias_relu; do
    prof "$bin/bench_gemm" --dtype f16 --shapes "$shape" --config "$cfg" --only "$w" \
      --warmup 2 --reps 10 | python3 "$here/compare/ncu_summary.py" "tritium $w $shape $cfg"
  done
done
prof python3 - << 'PY' | python3 "$here/compare/ncu_summary.py" "cublas (M,K,N) (64,256,128) then (128,256,256)"
import torch
for m, k, n in ((64, 256, 128), (128, 256, 256)):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    for _ in range(30):
        torch.matmul(a, b)
torch.cuda.synchronize()
PY
