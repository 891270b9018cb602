#!/usr/bin/env bash
# The sanitizer builds, run by `quickstart.sh test` after the ordinary test suite (and on their
# own: `bash tools/sanitize.sh`). Both use clang-19 (Debian's clang-19, libclang-rt-19-dev).
#
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer): the library
#               and the test programs that exercise host-side code a user can misuse or that
#               parses outside input (ASAN_TESTS: the bad-input catalogue, the fuzz corpus
#               replay, the IR, the runtime with its concurrency tests, the interpreter), a
#               slice of the random-kernel differential test through the CPU JIT and the GPU
#               lowering (ASAN_RANDOM_KERNELS each), and the libFuzzer targets (tests/fuzz):
#               their kept corpus replays, then a short fuzzing run of each from it
#               (FUZZ_SECONDS). ASAN_TESTS=all builds and runs the whole CTest suite instead.
#   build-tsan  ThreadSanitizer: the library and the runtime tests (test_runtime: threads
#               launching kernels on every device, first launches racing).
#
# CI runs this on 2 cores after the ordinary build and suite, in the same 40-minute budget:
# hence -O1, a subset of the test programs under ASan, and only the runtime under TSan. Each
# phase prints how long it took.
#
# Any finding stops the program that made it (-fno-sanitize-recover, halt_on_error), so the
# test fails. ASAN_BUILD_DIR, TSAN_BUILD_DIR, JOBS, FUZZ_SECONDS, ASAN_TESTS and
# ASAN_RANDOM_KERNELS may be set.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${JOBS:-$(nproc)}
asan=${ASAN_BUILD_DIR:-$root/build-asan}
tsan=${TSAN_BUILD_DIR:-$root/build-tsan}
fuzz_seconds=${FUZZ_SECONDS:-20}
asan_tests=${ASAN_TESTS:-bad_inputs fuzz ir runtime interpreter cpu}
random_kernels=${ASAN_RANDOM_KERNELS:-100}
# The bounds-check corpus (tests/bad_inputs/bounds_corpus.cpp): a slice of its 1,000 kernels.
corpus_cases=${ASAN_CORPUS_CASES:-100}

# -O1: the usual level for sanitizers, and compiles the template-heavy tests far faster than
# -O3; the time the tests take is spent in LLVM and JIT-compiled kernels, not instrumented.
configure=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
           -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DTRITIUM_BUILD_BENCH=OFF
           -DTRITIUM_BUILD_EXAMPLES=OFF)
if command -v ccache > /dev/null; then
  configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# allocator_may_return_null: tests ask for more memory than exists and expect an Error.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tools/tsan-suppressions.txt
status=0
phase_start=$SECONDS
phase() { # phase NAME: prints the time of the phase that ends and starts the next
  echo "   ($((SECONDS - phase_start)) s)"
  phase_start=$SECONDS
  echo "== $1"
}
echo "== sanitizers: ASan+UBSan tests: $asan_tests; fuzzing ${fuzz_seconds} s per target"

phase "AddressSanitizer + UndefinedBehaviorSanitizer: building in $asan"
cmake -S "$root" -B "$asan" "${configure[@]}" -DTRITIUM_SANITIZE=address,undefined \
  -DTRITIUM_BUILD_FUZZERS=ON > /dev/null
if [ "$asan_tests" = all ]; then
  cmake --build "$asan" -j "$jobs"
else
  targets=(fuzz_ir_text fuzz_tracer)
  for t in $asan_tests; do targets+=("test_$t"); done
  cmake --build "$asan" -j "$jobs" --target "${targets[@]}"
fi

phase "AddressSanitizer + UndefinedBehaviorSanitizer: the tests"
if [ "$asan_tests" = all ]; then
  # compile_fail tests run the compiler, not tritium: the ordinary build covers them.
  (cd "$asan" && ctest --output-on-failure --timeout 1500 -j "$jobs" -E '^compile_fail\.' \
    > ctest.log 2>&1) || status=1
  grep -E "tests passed|tests failed out of|Total Test time|\*\*\*|Failed|Timeout" \
    "$asan/ctest.log" || true
else
  # The doctest programs run in parallel (their cases run one after another inside each).
  pids=()
  for t in $asan_tests; do
    args=()
    # test_cpu: the random-kernel slice only (its other cases are the same code on fixed
    # kernels); the emulator's slice runs below.
    [ "$t" = cpu ] && args=("--test-case=random kernels*")
    (cd "$asan/tests" && TRITIUM_RANDOM_KERNELS=$random_kernels TRITIUM_CORPUS_CASES=$corpus_cases \
      "./test_$t" "${args[@]}" \
      > "$asan/test_$t.log" 2>&1) &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || status=1
      pids=("${pids[@]:1}")
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  if [[ " $asan_tests " == *" cpu "* ]]; then
    (cd "$asan/tests" && TRITIUM_RANDOM_DEVICES=gpu-emulator TRITIUM_RANDOM_KERNELS=$((random_kernels / 4)) \
      ./test_cpu "--test-case=random kernels: every device*" > "$asan/test_cpu_emulator.log" 2>&1) ||
      status=1
  fi
  for log in "$asan"/test_*.log; do
    if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Status: FAILURE" "$log" ||
       ! grep -q "Status: SUCCESS" "$log"; then
      status=1
      echo "-- $(basename "$log" .log) FAILED:"
      tail -40 "$log"
    else
      echo "$(basename "$log" .log): $(grep -E '^\[doctest\] test cases' "$log")"
    fi
  done
fi

phase "libFuzzer: ${fuzz_seconds} s per target from the kept corpus"
for target in ir_text tracer; do
  work=$(mktemp -d)
  cp "$root/tests/fuzz/corpus/$target"/* "$work"/ 2> /dev/null || true
  if "$asan/tests/fuzz_$target" -max_total_time="$fuzz_seconds" -max_len=4096 \
      -artifact_prefix="$work/" -print_final_stats=1 "$work" > "$asan/fuzz_$target.log" 2>&1; then
    grep -E "^stat::number_of_executed_units" "$asan/fuzz_$target.log" | sed "s/^/$target: /"
  else
    status=1
    tail -40 "$asan/fuzz_$target.log"
    mkdir -p "$asan/fuzz-findings/$target"
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* \
      "$asan/fuzz-findings/$target/" 2> /dev/null || true
    echo "fuzz_$target found a bug; fix it and keep the input (in $asan/fuzz-findings/$target)"
    echo "as a regression test under tests/fuzz/crashes/$target/"
  fi
  rm -rf "$work"
done

phase "ThreadSanitizer: building the runtime tests in $tsan"
cmake -S "$root" -B "$tsan" "${configure[@]}" -DTRITIUM_SANITIZE=thread > /dev/null
cmake --build "$tsan" -j "$jobs" --target test_runtime
phase "ThreadSanitizer: test_runtime"
(cd "$tsan/tests" && ./test_runtime > "$tsan/test_runtime.log" 2>&1) || status=1
if grep -q "Status: SUCCESS" "$tsan/test_runtime.log"; then
  grep -E '^\[doctest\] test cases' "$tsan/test_runtime.log"
else
  status=1
  tail -60 "$tsan/test_runtime.log"
fi
phase "sanitizers done (status $status)"
exit $status
