#!/usr/bin/env bash
# Tutorials 06-11 and 14 (Triton's 04-09, 06's backward) on one GPU, next to Triton's own tutorial kernels: runs every
# example with --full (each checks itself against plain C++ and exits non-zero when wrong), then
# bench/compare/tutorials.py (Triton's kernels on the same shapes, checked against PyTorch), and
# prints one table of tritium and Triton times side by side.
#
#   bench/run_tutorials_gpu.sh BIN_DIR
#
# BIN_DIR holds the example binaries 06_low_memory_dropout … 11_persistent_matmul (build/examples
# here, or the unpacked .device/ bin folder on the GPU machine). Logs and CSV go to $OUT (default:
# a temp dir). About 3 minutes on an H200 (the examples' checks on the CPU take most of it).
set -uo pipefail
bin=${1:?usage: bench/run_tutorials_gpu.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
status=0
logs=()
for ex in 06_low_memory_dropout 07_layer_norm_backward 08_fused_attention 09_extern_functions \
          10_grouped_gemm 11_persistent_matmul 14_attention_backward; do
  echo "== $ex --full"
  start=$SECONDS
  if ! "$bin/$ex" --full 2>&1 | tee "$out/$ex.log"; then
    echo "== $ex FAILED"
    status=1
  fi
  echo "== $ex: $((SECONDS - start)) s"
  logs+=("$out/$ex.log")
done
echo "== Triton's tutorial kernels (bench/compare/tutorials.py)"
python3 "$here/compare/tutorials.py" > "$out/triton.csv" || status=1
cat "$out/triton.csv"
python3 "$here/compare/tutorials_report.py" "$out/triton.csv" "${logs[@]}" | tee "$out/table.md"
echo "== attention backward: Triton's kernels of the same algorithm and torch SDPA (attention_bwd.py)"
python3 "$here/compare/attention_bwd.py" > "$out/attention_bwd.csv" || status=1
cat "$out/attention_bwd.csv"
echo "logs and CSV in $out"
exit $status
