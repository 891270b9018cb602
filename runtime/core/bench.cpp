// tritium::bench (Triton's do_bench), and the backends' default timing and fill.
#include <tritium/runtime/bench.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>

namespace tritium {

namespace {

// The q-quantile of sorted values, interpolating linearly between neighbours (as
// torch.quantile, which do_bench uses).
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

void check(const BenchOptions& o) {
  auto bad = [](const std::string& what) { throw Error("tritium::bench: " + what); };
  if (o.warmup < -1 || o.reps < -1 || o.reps == 0)
    bad(fmt::format("warmup = {} must be >= 0 and reps = {} >= 1 (or -1 for each: from the time "
                    "budget)",
                    o.warmup, o.reps));
  if (!(o.warmup_ms >= 0) || !(o.rep_ms > 0))
    bad(fmt::format("warmup_ms = {} must be >= 0 and rep_ms = {} > 0", o.warmup_ms, o.rep_ms));
  for (double q : o.quantiles)
    if (!(q >= 0 && q <= 1))
      bad(fmt::format("quantile {} is not in [0, 1]", q));
}

} // namespace

void Backend::fill(void* dst, unsigned char byte, size_t bytes) {
  constexpr size_t chunk = size_t{16} << 20;
  std::vector<unsigned char> src(std::min(bytes, chunk), byte);
  for (size_t done = 0; done < bytes; done += chunk)
    copy_to_device(static_cast<char*>(dst) + done, src.data(), std::min(chunk, bytes - done));
}

namespace {

BenchResult summarize(std::vector<double> times, int warmup, const BenchOptions& options) {
  BenchResult r;
  r.warmup = warmup;
  r.times_ms = times;
  std::sort(times.begin(), times.end());
  r.median_ms = quantile(times, 0.5);
  r.min_ms = times.front();
  r.max_ms = times.back();
  r.mean_ms = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
  for (double q : options.quantiles)
    r.quantiles_ms.push_back(quantile(times, q));
  return r;
}

// do_bench's protocol for one function or several: with several, the timed runs go round by
// round, each function once per round, the order rotating, so that a change in the machine's
// speed while they run lands on all of them alike.
std::vector<BenchResult> run_bench(const Device& dev,
                                   const std::vector<std::function<void(int)>>& fns,
                                   const BenchOptions& options) {
  check(options);
  Backend& backend = dev.backend();
  const size_t n = fns.size();
  std::vector<int> run(n, 0);
  for (size_t f = 0; f < n; ++f)
    fns[f](run[f]++); // compiles what is compiled on first use
  dev.synchronize();

  Buffer<unsigned char> flush;
  if (options.flush_l2)
    if (size_t bytes = backend.cache_flush_bytes())
      flush = dev.alloc<unsigned char>(bytes);
  auto clear = [&] {
    if (flush.size())
      backend.fill(flush.data(), 0, flush.size());
  };

  int warmup = options.warmup, reps = options.reps;
  std::vector<int> warmups(n, warmup);
  if (warmup < 0 || reps < 0) {
    // Five runs each, caches cleared before each, give the time per run for the budgets.
    double round_ms = 0;
    for (size_t f = 0; f < n; ++f) {
      auto start = backend.new_event(), stop = backend.new_event();
      start->record();
      for (int i = 0; i < 5; ++i) {
        clear();
        fns[f](run[f]++);
      }
      stop->record();
      double estimate_ms = std::max(stop->ms_since(*start) / 5, 1e-6);
      round_ms += estimate_ms;
      if (warmup < 0)
        warmups[f] = std::max(1, static_cast<int>(options.warmup_ms / estimate_ms));
    }
    // At least 10 timed runs, for a median worth the name where clearing the caches costs more
    // than the budget (on the CPU, a memset of twice the last-level cache). Several functions
    // share n budgets.
    if (reps < 0)
      reps = std::max(10, static_cast<int>(options.rep_ms * static_cast<double>(n) / round_ms));
  }
  for (size_t f = 0; f < n; ++f)
    for (int i = 0; i < warmups[f]; ++i)
      fns[f](run[f]++);

  std::vector<std::vector<std::unique_ptr<DeviceEvent>>> starts(n), stops(n);
  for (size_t f = 0; f < n; ++f)
    for (int i = 0; i < reps; ++i) {
      starts[f].push_back(backend.new_event());
      stops[f].push_back(backend.new_event());
    }
  for (int i = 0; i < reps; ++i)
    for (size_t k = 0; k < n; ++k) {
      size_t f = (k + static_cast<size_t>(i)) % n;
      clear();
      starts[f][i]->record();
      fns[f](run[f]++);
      stops[f][i]->record();
    }
  std::vector<BenchResult> out;
  for (size_t f = 0; f < n; ++f) {
    std::vector<double> times;
    for (int i = 0; i < reps; ++i)
      times.push_back(stops[f][i]->ms_since(*starts[f][i]));
    out.push_back(summarize(std::move(times), warmups[f], options));
  }
  return out;
}

} // namespace

BenchResult detail::bench(const Device& dev, const std::function<void(int)>& fn,
                          const BenchOptions& options) {
  return run_bench(dev, {fn}, options).front();
}

std::vector<BenchResult> bench_interleaved(const Device& dev,
                                           const std::vector<std::function<void()>>& fns,
                                           const BenchOptions& options) {
  if (fns.empty())
    throw Error("tritium::bench_interleaved: no function to time");
  std::vector<std::function<void(int)>> each;
  for (size_t f = 0; f < fns.size(); ++f) {
    if (!fns[f])
      throw Error(fmt::format("tritium::bench_interleaved: function {} is empty", f));
    each.push_back([&fn = fns[f]](int) { fn(); });
  }
  return run_bench(dev, each, options);
}

} // namespace tritium
