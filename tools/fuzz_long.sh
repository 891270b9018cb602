#!/usr/bin/env bash
# A long libFuzzer run spread over the cores of a bigger machine (the GPU machine has 16): JOBS
# workers, each RUNS inputs, all starting from and adding to one copy of the kept corpus; prints
# the total number of inputs run and every finding. The ASan+UBSan fuzz targets come from
# tools/sanitize.sh's build (build-asan/tests/fuzz_<target>).
#
#   tools/fuzz_long.sh FUZZER CORPUS_DIR JOBS RUNS_PER_JOB [OUT_DIR]
#
# Exit status: 0 when no worker found anything, 1 otherwise (the inputs are in OUT_DIR).
set -uo pipefail
fuzzer=${1:?usage: tools/fuzz_long.sh FUZZER CORPUS_DIR JOBS RUNS_PER_JOB [OUT_DIR]}
corpus_src=${2:?corpus dir}
jobs=${3:?jobs}
runs=${4:?runs per job}
out=${5:-$(mktemp -d)}
mkdir -p "$out/corpus"
cp "$corpus_src"/* "$out/corpus/" 2> /dev/null || true
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
pids=()
for ((j = 0; j < jobs; ++j)); do
  (cd "$out" && "$fuzzer" -runs="$runs" -max_len=4096 -seed=$((j + 1)) -print_final_stats=1 \
     -artifact_prefix="$out/finding_${j}_" corpus > "$out/worker_$j.log" 2>&1) &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
total=0
for ((j = 0; j < jobs; ++j)); do
  n=$(grep -E "^stat::number_of_executed_units" "$out/worker_$j.log" | awk '{print $2}')
  total=$((total + ${n:-0}))
done
echo "$(basename "$fuzzer"): $total inputs in $jobs workers; corpus $(ls "$out/corpus" | wc -l) inputs"
if ls "$out"/finding_* > /dev/null 2>&1; then
  status=1
  echo "findings:"
  ls "$out"/finding_*
  for ((j = 0; j < jobs; ++j)); do
    grep -q "ERROR\|runtime error\|deadly signal" "$out/worker_$j.log" && tail -30 "$out/worker_$j.log"
  done
fi
exit $status
