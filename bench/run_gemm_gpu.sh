#!/usr/bin/env bash
# Issue 9 on the GPU machine, in one command: tensor-core correctness (test_gpu, test_lang on
# cuda), the examples at full size, then GEMM / GEMM+bias+ReLU (fp16, bf16), issue 40's decode
# shapes paired with Triton and cuBLAS in one process, and the Llama MLP
# beside Triton, cuBLAS and PyTorch, and Triton's AMD ISA for the golden numbers.
#
#   bash bench/run_gemm_gpu.sh BIN_DIR [OUT_DIR]     (BIN_DIR: the unpacked .device/bin)
set -u
bin=$1
out=${2:-${OUT:-/tmp/gemm_out}}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export TRITIUM_CACHE_DIR=/tmp/tritium_cache
step() { echo; echo "=== $*"; }

step "tests on the GPU"
"$bin/test_gpu" > "$out/test_gpu.log" 2>&1; tail -3 "$out/test_gpu.log"
TRITIUM_TEST_DEVICES=cuda "$bin/test_lang" > "$out/test_lang.log" 2>&1; tail -3 "$out/test_lang.log"

step "examples"
"$bin/02_fused_gemm_bias_relu" --full 2>&1 | tail -8
TRITIUM_AUTOTUNE=print "$bin/03_llama_mlp" --full > "$out/mlp16.log" 2>&1
grep -E "^tokens|host time|OK|WRONG|error|^  \*|autotune" "$out/mlp16.log"
"$bin/03_llama_mlp" --full --tokens 4096 2>&1 | tail -5

step "GEMM: tritium (autotuned), then Triton / cuBLAS / PyTorch; pointers, then descriptors (TMA)"
for dt in f16 bf16; do
  "$bin/bench_gemm" --dtype $dt --autotune --csv "$out/gemm_tritium_$dt.csv" 2>&1
  python3 "$here/compare/gemm.py" --dtype $dt 2>&1 | tee "$out/gemm_peers_$dt.csv"
  "$bin/bench_gemm" --dtype $dt --autotune --descriptor --csv "$out/gemm_desc_tritium_$dt.csv" 2>&1
  python3 "$here/compare/gemm.py" --dtype $dt --descriptor 2>&1 | tee "$out/gemm_desc_peers_$dt.csv"
done

step "GEMM at decode shapes and 1024^3-2048^3 (split-K, small-M tiles), paired with Triton and cuBLAS"
S=1x4096x4096,16x4096x11008,16x11008x4096,64x4096x14336,128x4096x4096,1024x1024x1024,2048x2048x2048
for dt in f16 bf16; do
  # The kernel each shape's autotuner picks, dumped (a cached kernel would not compile again),
  # then launched beside Triton's and cuBLAS's round by round in one process.
  TRITIUM_CACHE_DIR=off "$bin/bench_gemm" --dtype $dt --autotune --only gemm --shapes $S \
    --dump "$out/gemm_ptx_$dt" --csv "$out/gemm_decode_tritium_$dt.csv" 2>&1
  python3 "$here/compare/gemm.py" --dtype $dt --shapes $S --tritium-ptx "$out/gemm_ptx_$dt" 2>&1 |
    tee "$out/gemm_decode_paired_$dt.csv"
done

step "Llama MLP: PyTorch eager and torch.compile"
python3 "$here/compare/llama_mlp.py" 2>&1 | tee "$out/llama_mlp_peers.csv"

step "Triton's AMD ISA for the golden numbers"
python3 "$here/compare/amd_golden.py" 2>&1 | tee "$out/amd_golden.csv"
