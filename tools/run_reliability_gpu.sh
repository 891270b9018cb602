#!/usr/bin/env bash
# Issue 12's checks on a real NVIDIA GPU, in one command (at most about 4 minutes):
#   1. the random-kernel differential test on cuda: >= 10,000 portable random kernels
#      (RELIABILITY_KERNELS), each compiled through the GPU lowering and compared with the
#      interpreter, in chunks of 1,000 seeds run one after another; no new chunk starts after
#      RELIABILITY_SECONDS (default 150), so the run fits and says how far it got;
#   2. the concurrency tests on every device, cuda included (test_runtime);
#   3. the fault and recovery tests (test_gpu: an out-of-bounds store, the lost context, the
#      fresh device; the register limit at load) and the bad-input catalogue with a GPU
#      present (test_bad_inputs);
#   4. the peer: what PyTorch and Triton do after the same fault (bench/compare/fault_recovery.py).
#
# usage: tools/run_reliability_gpu.sh BIN_DIR   (BIN_DIR holds test_cpu, test_runtime, test_gpu,
# test_bad_inputs; their libraries in BIN_DIR/../lib). Logs and reliability_gpu.csv go to $OUT
# if set (else ./reliability-out). Exit status 0 only if every part passed.
set -uo pipefail
bin=${1:?usage: run_reliability_gpu.sh BIN_DIR}
bin=$(cd "$bin" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$PWD/reliability-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TRITIUM_CACHE_DIR=off # every kernel compiled for real, nothing written to $HOME
kernels=${RELIABILITY_KERNELS:-10000}
budget=${RELIABILITY_SECONDS:-150}
threads=${RELIABILITY_THREADS:-$(nproc)}
csv="$out/reliability_gpu.csv"
echo "part,what,count,failures,seconds,status" > "$csv"
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | sed 's/^/GPU: /'

echo "== 1. random kernels on cuda vs the interpreter ($kernels kernels, $threads threads)"
start=$SECONDS
done_kernels=0
failed_chunks=0
for ((first = 1; first <= kernels; first += 1000)); do
  if ((SECONDS - start >= budget)); then
    echo "stopped after $done_kernels kernels: the ${budget} s budget is spent"
    break
  fi
  n=$((kernels - first + 1 < 1000 ? kernels - first + 1 : 1000))
  t0=$SECONDS
  if TRITIUM_RANDOM_DEVICES=cuda TRITIUM_RANDOM_SEED=$first TRITIUM_RANDOM_KERNELS=$n \
     TRITIUM_RANDOM_THREADS=$threads "$bin/test_cpu" "--test-case=random kernels: every device*" \
     > "$out/random_$first.log" 2>&1; then
    echo "seeds $first..$((first + n - 1)): ok ($((SECONDS - t0)) s)"
  else
    failed_chunks=$((failed_chunks + 1))
    status=1
    echo "seeds $first..$((first + n - 1)): FAILED ($((SECONDS - t0)) s); see random_$first.log:"
    grep -E "seed [0-9]+:|reproduce:|ERROR|error" "$out/random_$first.log" | head -20
  fi
  done_kernels=$((done_kernels + n))
done
rk_seconds=$((SECONDS - start))
rk_status=$([ $failed_chunks = 0 ] && [ $done_kernels -ge "$kernels" ] && echo ok || echo FAIL)
[ "$done_kernels" -lt "$kernels" ] && status=1
echo "random,kernels on cuda vs interpreter,$done_kernels,$failed_chunks chunks,$rk_seconds,$rk_status" >> "$csv"

run_part() { # run_part NAME WHAT PROGRAM ARGS...: one doctest program, its summary in the csv
  local name=$1 what=$2 prog=$3
  shift 3
  local t0=$SECONDS st=ok
  echo "== $name: $what"
  "$bin/$prog" "$@" > "$out/$name.log" 2>&1 || { st=FAIL; status=1; }
  grep -E '^\[doctest\] (test cases|assertions)' "$out/$name.log" | head -2
  grep -E 'MESSAGE: skipped' "$out/$name.log" | head -3
  [ $st = FAIL ] && tail -40 "$out/$name.log"
  local cases
  cases=$(grep -E '^\[doctest\] test cases' "$out/$name.log" | grep -oE '[0-9]+ passed \| +[0-9]+ failed' | tr -s ' ')
  echo "$name,$what,${cases%% passed*},${cases##*| },$((SECONDS - t0)),$st" >> "$csv"
}

run_part concurrency "threads launching on every device incl. cuda" test_runtime \
  "--test-case=concurrency*"
run_part fault "out-of-bounds fault / lost context / fresh device / register limit" test_gpu \
  "--test-case=*out-of-bounds*,*registers allow*,cuda: a device fault*"
run_part bad_inputs "bad-input catalogue with a GPU present" test_bad_inputs

echo "== 4. peer: PyTorch and Triton after the same fault"
t0=$SECONDS
if python3 "$here/bench/compare/fault_recovery.py" > "$out/peer_fault.log" 2>&1; then :; fi
cat "$out/peer_fault.log" | grep -E '^(BEFORE|FAULT|AFTER|RELAUNCH)' || tail -5 "$out/peer_fault.log"
after=$(grep -oE '^AFTER (works|fails)' "$out/peer_fault.log" | cut -d' ' -f2)
echo "peer,pytorch+triton: a torch op after the fault,1,,$((SECONDS - t0)),${after:-unknown}" >> "$csv"
# tritium's answer to the same question, from the fault test's child output
fresh=$(grep -oE '^(FRESH-WORKS [01]|FRESH-REFUSED)' "$out/fault.log" | head -1)
echo "== tritium after the fault: ${fresh:-see fault.log}"

echo "== summary ($csv)"
column -s, -t < "$csv" 2> /dev/null || cat "$csv"
exit $status
