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

BenchResult detail::bench(const Device& dev, const std::function<void(int)>& fn,
                          const BenchOptions& options) {
  check(options);
  Backend& backend = dev.backend();
  int run = 0;
  fn(run++); // compiles what is compiled on first use
  dev.synchronize();

  Buffer<unsigned char> flush;
  if (options.flush_l2)
    if (size_t bytes = backend.cache_flush_bytes())
      flush = dev.alloc<unsigned char>(bytes);
  auto clear = [&] {
    if (flush.size())
      backend.fill(flush.data(), 0, flush.size());
  };

  BenchResult r;
  r.warmup = options.warmup;
  int reps = options.reps;
  if (r.warmup < 0 || reps < 0) {
    // Five runs, caches cleared before each, give the time per run for the budgets.
    auto start = backend.new_event(), stop = backend.new_event();
    start->record();
    for (int i = 0; i < 5; ++i) {
      clear();
      fn(run++);
    }
    stop->record();
    double estimate_ms = std::max(stop->ms_since(*start) / 5, 1e-6);
    if (r.warmup < 0)
      r.warmup = std::max(1, static_cast<int>(options.warmup_ms / estimate_ms));
    // At least 10 timed runs, for a median worth the name where clearing the caches costs more
    // than the budget (on the CPU, a memset of twice the last-level cache).
    if (reps < 0)
      reps = std::max(10, static_cast<int>(options.rep_ms / estimate_ms));
  }
  for (int i = 0; i < r.warmup; ++i)
    fn(run++);

  std::vector<std::unique_ptr<DeviceEvent>> starts, stops;
  for (int i = 0; i < reps; ++i) {
    starts.push_back(backend.new_event());
    stops.push_back(backend.new_event());
  }
  for (int i = 0; i < reps; ++i) {
    clear();
    starts[i]->record();
    fn(run++);
    stops[i]->record();
  }
  for (int i = 0; i < reps; ++i)
    r.times_ms.push_back(stops[i]->ms_since(*starts[i]));

  std::vector<double> sorted = r.times_ms;
  std::sort(sorted.begin(), sorted.end());
  r.median_ms = quantile(sorted, 0.5);
  r.min_ms = sorted.front();
  r.max_ms = sorted.back();
  r.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(reps);
  for (double q : options.quantiles)
    r.quantiles_ms.push_back(quantile(sorted, q));
  return r;
}

} // namespace tritium
