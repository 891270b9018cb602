#!/usr/bin/env bash
# Runs the GPU benchmarks and their Triton/PyTorch peers in one go, on one GPU, and prints the
# side-by-side table of bench/RESULTS.md.
#
#   bench/run_gpu.sh BIN_DIR COMPARE_DIR [OUT_DIR]
#
# BIN_DIR holds bench_gpu (built here, e.g. build/bench, or unpacked from .device/ on the GPU
# machine); COMPARE_DIR holds bench/compare/*.py; CSV files go to OUT_DIR (default: a temp dir).
set -euo pipefail
bin=$1 compare=$2 out=${3:-$(mktemp -d)}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# Cold then warm process: the second loads its cubin from the disk cache.
cache=$(mktemp -d)
TRITIUM_CACHE_DIR=$cache "$bin/bench_gpu" first
TRITIUM_CACHE_DIR=$cache "$bin/bench_gpu" first
"$bin/bench_gpu" launch vadd --csv "$out/tritium.csv"
python3 "$compare/launch_overhead.py" > "$out/peers.csv"
python3 "$compare/vector_add.py" >> "$out/peers.csv"
python3 "$compare/report.py" "$out/tritium.csv" "$out/peers.csv"
