#!/usr/bin/env bash
# Issue 35's zoo on one GPU: every zoo kernel checked and timed by tritium (zoo --full --bench),
# then its Triton twin, tritium's own PTX (as zoo dumped it) and PyTorch timed round by round
# under one harness (bench/compare/zoo.py), then a table of both.
#
#   bench/run_zoo_gpu.sh BIN_DIR [KERNEL...]
#
# BIN_DIR holds the zoo program (built here, or unpacked on the GPU machine). Run from the
# repository root. Files go to $OUT (default ./zoo_out): device.txt, tritium.csv and
# tritium.log (zoo's checks and times), ptx/ (each case's kernels, DIR/<kernel>.<shape>),
# peers.csv (zoo.py: kernel,shape,provider,median_ms,q20_ms,q80_ms, with the paired
# tritium/triton ratios and their geometric mean), peers.log (with each kernel's registers and
# shared memory on both sides) and triton_asm/ (Triton's PTX of each case).
set -euo pipefail
bin=${1:?usage: run_zoo_gpu.sh BIN_DIR [KERNEL...]}
shift
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-zoo_out}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
rm -rf "$out/ptx" "$out/triton_asm"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$out/device.txt"
date -u '+%Y-%m-%d %H:%M UTC' | tee -a "$out/device.txt"

status=0
filter=()
if [ $# -eq 1 ]; then filter=(--filter "$1"); fi
# No binary cache, so that every kernel is compiled cold (zoo's compile_ms), and dumped for
# zoo.py; Triton's cache starts empty for the same reason. Nor the driver's own cache of what
# its JIT assembled: a second shape with the same PTX would find it there (19.8 ms against 172
# for SwiGLU forward's, H200, 2026-12-03), and Triton's ptxas keeps none.
CUDA_CACHE_DISABLE=1 TRITIUM_CACHE_DIR=off "$bin/zoo" --device cuda --full --bench --dump "$out/ptx" \
  --csv "$out/tritium.csv" "${filter[@]}" 2>&1 | tee "$out/tritium.log" || status=1
TRITON_CACHE_DIR=$(mktemp -d) python3 "$bench/compare/zoo.py" --tritium-ptx "$out/ptx" --cases "$out/tritium.csv" \
  --triton-asm "$out/triton_asm" ${ZOO_JIT_AB:+--jit-ab} "$@" \
  > "$out/peers.csv" 2> >(tee "$out/peers.log" >&2) || status=1

# kernel, shape, zoo's own time, then each provider's median under zoo.py's harness, the
# paired ratio (below 1: tritium faster than Triton), and both cold compile times: the log alone
# then holds the whole run (a machine that returns few files may drop the CSVs).
python3 - "$out/tritium.csv" "$out/peers.csv" <<'PY'
import csv, sys
own = {(r["kernel"], r["shape"]): r for r in csv.DictReader(open(sys.argv[1]))}
peers = {}
for r in csv.DictReader(open(sys.argv[2])):
    peers.setdefault((r["kernel"], r["shape"]), {})[r["provider"]] = r["median_ms"]
print(f"{'kernel':<24}{'shape':<20}{'ok':>3}{'zoo ms':>10}{'triton':>10}{'tritium_ptx':>12}"
      f"{'torch':>10}{'tritium/triton':>15}{'compile ms':>11}{'triton':>8}")
for key in sorted(set(own) | set(peers)):
    if key[0] == "geomean":
        continue
    o, p = own.get(key, {}), peers.get(key, {})
    f = lambda v: f"{float(v):.4f}" if v else "-"
    c = lambda v: f"{float(v):.1f}" if v else "-"
    print(f"{key[0]:<24}{key[1]:<20}{o.get('ok', '-'):>3}{f(o.get('median_ms')):>10}"
          f"{f(p.get('triton')):>10}{f(p.get('tritium_ptx')):>12}{f(p.get('torch')):>10}"
          f"{f(p.get('tritium/triton')):>15}{c(p.get('tritium_compile')):>11}"
          f"{c(p.get('triton_compile')):>8}")
g = peers.get(("geomean", "all"), {}).get("tritium/triton")
print(f"geometric mean of tritium/triton: {float(g):.3f}" if g else "no paired ratios")
# Compile times (ms), where Triton compiled the case's kernels in it.
slower = [(k, p) for k, p in sorted(peers.items()) if k[0] != "geomean" and "triton_compile" in p and "tritium_compile" in p
          and float(p["tritium_compile"]) > float(p["triton_compile"])]
g = peers.get(("geomean", "all"), {}).get("compile tritium/triton")
if g:
    print(f"compile time, geometric mean of tritium/triton: {float(g):.3f}; "
          f"{len(slower)} cases where tritium compiles slower:")
    for (kernel, shape), p in slower:
        print(f"  {kernel:<24}{shape:<20} tritium {float(p['tritium_compile']):8.1f} ms  "
              f"triton {float(p['triton_compile']):8.1f} ms")
PY
exit $status
