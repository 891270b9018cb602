// tritium::bench: Triton's triton.testing.do_bench for C++. Times a function that launches
// work on a device and returns the median and quantiles of its device time.
//
//   auto r = tritium::bench([&] { kernel[grid](x, y, n, 1024); });
//   fmt::print("{:.3f} ms, {:.0f} GB/s\n", r.median_ms, r.gbps(bytes_moved));
//
// As do_bench: one call first (compiles, warms up), then a short estimate of the time per
// run, then warm-up runs and timed runs, each timed run on its own between two device events
// (CUDA/HIP events on GPUs, the host clock where a launch returns when the kernel is done: the
// CPU and the interpreter). With flush_l2 the device's caches are overwritten before every
// timed run (a memset of 256 MB on GPUs, twice the last-level cache on the CPU), outside the
// timed interval, so each run reads its inputs from memory. Alternatively the function may
// take the run's index and rotate through enough copies of its inputs itself.
#pragma once

#include <tritium/runtime/device.hpp>

#include <concepts>
#include <functional>
#include <utility>
#include <vector>

namespace tritium {

struct BenchOptions {
  // Warm-up runs (0 or more) and timed runs (1 or more). -1, the default, picks each from a
  // time budget instead, warmup_ms and rep_ms below, as do_bench's warmup=25, rep=100 do (the
  // budget counts the cache clearing too, as there; but at least 10 timed runs).
  int warmup = -1;
  int reps = -1;
  // Overwrite the caches before every timed run (do_bench always does).
  bool flush_l2 = true;
  // Quantiles of the run times to report, each in [0, 1] (do_bench's quantiles).
  std::vector<double> quantiles = {0.5, 0.2, 0.8};
  double warmup_ms = 25;
  double rep_ms = 100;
};

struct BenchResult {
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  std::vector<double> quantiles_ms; // one per BenchOptions::quantiles, in that order
  std::vector<double> times_ms;     // every timed run, in order
  int warmup = 0;                   // warm-up runs done

  // Bandwidth at the median time for `bytes` moved per run, in GB/s (10^9 bytes per second).
  double gbps(double bytes) const { return bytes / (median_ms * 1e-3) / 1e9; }
  // Throughput at the median time for `flops` per run, in TFLOP/s.
  double tflops(double flops) const { return flops / (median_ms * 1e-3) / 1e12; }
};

namespace detail {
BenchResult bench(const Device& dev, const std::function<void(int)>& fn,
                  const BenchOptions& options);
} // namespace detail

// Times fn() on `dev`. A function taking an int is called with the index of the run (0, 1,
// 2, … over every call, timed or not), to pick which copy of its inputs to use.
template <class F>
requires std::invocable<F&> || std::invocable<F&, int>
    BenchResult bench(const Device& dev, F&& fn, const BenchOptions& options = {}) {
  if constexpr (std::invocable<F&, int>)
    return detail::bench(dev, std::function<void(int)>(std::ref(fn)), options);
  else
    return detail::bench(dev, std::function<void(int)>([&fn](int) { fn(); }), options);
}

// Times several functions on `dev` under the same conditions, to compare them: each is called
// once and warmed up as bench() does, then the timed runs go round by round, every function
// once a round (caches cleared before each run, the order rotating), so that a drift in the
// machine's speed while they run (another tenant, the clock, a shared memory bus) lands on all
// of them alike. Run i of every result's times_ms is from round i: times_ms[i] of two results
// make a pair. The budgets are bench()'s per function.
std::vector<BenchResult> bench_interleaved(const Device& dev,
                                           const std::vector<std::function<void()>>& fns,
                                           const BenchOptions& options = {});

// On default_device().
template <class F>
requires std::invocable<F&> || std::invocable<F&, int>
    BenchResult bench(F&& fn, const BenchOptions& options = {}) {
  return bench(default_device(), std::forward<F>(fn), options);
}

} // namespace tritium
