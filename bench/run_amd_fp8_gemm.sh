#!/usr/bin/env bash
# tritium's side of bench/compare/amd_fp8_gemm.py: bench_gemm's fp8 kernel traced on the
# interpreter (B column-major, as the Triton twin's specialization), its element type made
# float8e4b8 (gfx942's fnuz e4m3, which its MFMA multiplies), compiled for gfx942 at each case's
# configuration; then both compilers' statistics side by side.
#   bench/run_amd_fp8_gemm.sh BUILD_DIR OUT_DIR [TRITON_CSV]
set -euo pipefail
build=$1 out=$2 triton_csv=${3:-}
mkdir -p "$out"
for cfg in 128x128x64:4:2 128x128x128:8:2 256x256x64:8:2; do
  IFS=: read -r tile warps stages <<<"$cfg"
  case=fp8_gemm_${tile}_w${warps}
  dump=$(mktemp -d)
  TRITIUM_DEVICE=interpreter TRITIUM_DUMP=$dump "$build/bench/gemm/bench_gemm" --dtype f8e4nv \
    --shapes 256x256x256 --config "$tile:$warps:$stages" --only gemm --reps 1 --warmup 0 >/dev/null 2>&1
  sed 's/f8e4nv/f8e4b8/g' "$dump/matmul_kernel.ir" >"$dump/fnuz.ir"
  "$build/tools/tritium" compile --target gfx942 --num-warps "$warps" --num-stages "$stages" \
    --dump "$dump/out" "$dump/fnuz.ir" >/dev/null
  cp "$dump/out/matmul_kernel.amdgcn" "$out/$case.amdgcn"
  rm -rf "$dump"
done
python3 "$(dirname "$0")/compare/amd_fp8_gemm.py" tritium "$out" >"$out/tritium.csv"
cat "$out/tritium.csv"
[ -n "$triton_csv" ] && tail -n +2 "$triton_csv" || true
