// What a hand-written C++ softmax reaches on this CPU: issue 10 asks the CPU backend's row
// kernels for 0.8 x the bandwidth of a plain loop moving the same bytes (bench_roofline's
// "cpp_loop"), and softmax computes an exp per element besides. This is the same softmax as
// tutorial 02's kernel (max, exp and sum, scale), written as three loops per row, compiled -O3
// -ffast-math -march=native so that GCC calls glibc's vector expf, on oneTBB threads over rows
// as bench_roofline's roofs are; beside it the scale loop of the same traffic. Their ratio
// bounds what tritium's softmax can reach against cpp_loop here.
//
//   bench_cpp_softmax [ELEMENTS]     prints: cols, softmax GB/s, scale GB/s, ratio (best of 7)
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

[[gnu::noinline]] void softmax_rows(const float* __restrict x, float* __restrict y, int64_t n,
                                    int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* a = x + r * n;
    float* o = y + r * n;
    float m = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
      m = std::max(m, a[i]);
    float s = 0;
    for (int64_t i = 0; i < n; ++i) {
      float e = std::exp(a[i] - m);
      o[i] = e;
      s += e;
    }
    const float inv = 1.f / s;
    for (int64_t i = 0; i < n; ++i)
      o[i] *= inv;
  }
}

[[gnu::noinline]] void scale_rows(const float* __restrict x, float* __restrict y, int64_t n,
                                  int64_t lo, int64_t hi) {
  for (int64_t i = lo * n; i < hi * n; ++i)
    y[i] = x[i] * 2.f;
}

template <class F>
double best_seconds(int64_t rows, F body) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows),
                      [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  // By default 16M elements (64 MB read, 64 MB written) for every width: more than the caches.
  const int64_t elements = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 24;
  std::printf("cols,softmax_gbps,scale_gbps,ratio\n");
  for (int64_t n : {1024, 4096, 12288}) {
    const int64_t rows = std::max<int64_t>(1, elements / n);
    std::vector<float> x(rows * n), y(rows * n);
    for (int64_t i = 0; i < rows * n; ++i)
      x[i] = static_cast<float>(i % 97) * 0.01f;
    const double bytes = 8.0 * static_cast<double>(rows * n);
    const double tc = best_seconds(
        rows, [&](int64_t lo, int64_t hi) { scale_rows(x.data(), y.data(), n, lo, hi); });
    const double ts = best_seconds(
        rows, [&](int64_t lo, int64_t hi) { softmax_rows(x.data(), y.data(), n, lo, hi); });
    // A softmax row sums to 1: a wrong reference would bound nothing.
    for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 16)) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += y[r * n + i];
      if (std::abs(sum - 1.0) > 1e-3) {
        std::fprintf(stderr, "bench_cpp_softmax: row %lld sums to %g\n", static_cast<long long>(r),
                     sum);
        return 1;
      }
    }
    std::printf("%lld,%.1f,%.1f,%.2f\n", static_cast<long long>(n), bytes / ts / 1e9,
                bytes / tc / 1e9, tc / ts);
  }
}
