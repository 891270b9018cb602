#!/usr/bin/env bash
# Issue 10's GPU checks and benchmarks in one command, on one GPU: tritium's bench_roofline,
# then bench/compare/roofline.py (Triton's kernels of the same source, and PyTorch) on the same
# shapes, then the side-by-side tables for bench/RESULTS.md and, where gnuplot is installed,
# the plots.
#
#   bench/run_roofline_gpu.sh BIN_DIR [WORKLOAD...]
#
# BIN_DIR holds bench_roofline (built here, or unpacked on the GPU machine, e.g. /tmp/d/bin).
# Run from the repository root (bench/ is read from beside this script). Files go to $OUT
# (default ./roofline_out): device.txt, tritium.csv, peers.csv, report.md, the Triton PTX
# and registers (ptx/, ptx/triton_regs.csv), tritium's kernels (tritium_ptx/), and the SVGs
# (svg/) when gnuplot is there. peers.csv also times tritium's PTX and Triton's, both through
# the driver's JIT linker as tritium's runtime assembles PTX, under Triton's harness, round by
# round with Triton's own launch (roofline.py --tritium-ptx); paired.csv holds the median over
# those rounds of Triton's time over tritium's, the report's last column.
#
# Shapes (issue 10): softmax fp32 4096 x {1024, 4096, 12288}; layer norm forward fp16 (the
# looped and the row-in-one-block form) and RMSNorm fp16 4096 x {1024, 4096, 8192}; the
# fused triple multiply (silu_mul fp16), GeGLU's activation (gelu_mul fp16, one tanh an
# element) and vector add fp32 at 2^20 and 2^22 elements. Every
# size runs for every row-wise workload ({1024, 4096, 8192, 12288}), so each plot has the same
# x axis. tritium's lines carry the registers and local (spill) bytes of each kernel; Triton's
# are in ptx/triton_regs.csv, printed at the end. About 2 minutes on an H200.
set -euo pipefail
bin=${1:?usage: run_roofline_gpu.sh BIN_DIR [WORKLOAD...]}
shift
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-roofline_out}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
sizes=(--n 1048576,4194304 --cols 1024,4096,8192,12288)

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$out/device.txt"
date -u '+%Y-%m-%d %H:%M UTC' | tee -a "$out/device.txt"

status=0
# An empty kernel cache, so that every kernel is compiled, and dumped for roofline.py.
TRITIUM_CACHE_DIR=$(mktemp -d) "$bin/bench_roofline" --device cuda --csv "$out/tritium.csv" \
  --dump "$out/tritium_ptx" "${sizes[@]}" "$@" 2>&1 | tee "$out/tritium.log" || status=1
rm -f "$out/paired.csv"
python3 "$bench/compare/roofline.py" --ptx "$out/ptx" --tritium-ptx "$out/tritium_ptx" --paired "$out/paired.csv" \
  "${sizes[@]}" "$@" > "$out/peers.csv" || status=1
python3 "$bench/report.py" "$out/tritium.csv" "$out/peers.csv" --paired "$out/paired.csv" | tee "$out/report.md"
echo "Triton registers and spills (workload,size,registers,spills):"
cat "$out/ptx/triton_regs.csv" 2>/dev/null || true
if command -v gnuplot > /dev/null; then
  python3 "$bench/plot.py" --out "$out/svg/h200_" "$out/tritium.csv" "$out/peers.csv" || true
fi
exit $status
