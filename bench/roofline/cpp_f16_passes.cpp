// What an f16 layer norm's passes cost in compute on this CPU, with the row in L1: the floor
// under tritium's layer norm that no scheduling of memory removes. Issue 10 asks the row
// kernels for 0.8 x a plain loop of the same traffic (bench_roofline's "cpp_loop", which
// converts nothing); a layer norm converts each element f16 -> f32 five times (x in each of its
// three passes, w and b) and f32 -> f16 once. Each loop below runs one pass of a 1024-column
// row many times over, written with 8-lane F16C conversions (on a Zen 4, 16-lane ones convert
// no faster per element), and prints nanoseconds per 16 elements and the bandwidth two threads
// would reach if that were the only cost (4 bytes of traffic per element: x read, y written).
//
//   bench_cpp_f16_passes [REPS]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <immintrin.h>
#include <iterator>
#include <vector>

namespace {

constexpr int64_t kCols = 1024; // every array of the passes below fits L1 together

// 8 f16 <-> 8 f32 with F16C: GCC 12 converts _Float16 through libgcc calls, element by element.
__m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
void store8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
float total(const __m256* p, int n) {
  __m256 s = p[0];
  for (int k = 1; k < n; ++k)
    s = _mm256_add_ps(s, p[k]);
  alignas(32) float l[8];
  _mm256_store_ps(l, s);
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}

struct Row {
  std::vector<uint16_t> x, w, b, y;
  std::vector<float> xf, wf, bf, yf;
  Row() : x(kCols), w(kCols), b(kCols), y(kCols), xf(kCols), wf(kCols), bf(kCols), yf(kCols) {
    for (int64_t i = 0; i < kCols; ++i) {
      xf[i] = 0.001f * static_cast<float>(i % 977) - 0.4f;
      wf[i] = 1.f + 0.0001f * static_cast<float>(i % 311);
      bf[i] = 0.01f * static_cast<float>(i % 7);
    }
    for (int64_t i = 0; i < kCols; i += 8) {
      store8(&x[i], _mm256_loadu_ps(&xf[i]));
      store8(&w[i], _mm256_loadu_ps(&wf[i]));
      store8(&b[i], _mm256_loadu_ps(&bf[i]));
    }
  }
};

// The sums keep 32 partials (four registers), as tritium's reductions do, so that the adds'
// latency does not bound the loop.
[[gnu::noinline]] float sum_f16(const uint16_t* x) {
  __m256 p[4] = {};
  for (int64_t i = 0; i < kCols; i += 32)
    for (int k = 0; k < 4; ++k)
      p[k] = _mm256_add_ps(p[k], load8(x + i + 8 * k));
  return total(p, 4);
}

[[gnu::noinline]] float var_f16(const uint16_t* x, float mean) {
  const __m256 m = _mm256_set1_ps(mean);
  __m256 p[4] = {};
  for (int64_t i = 0; i < kCols; i += 32)
    for (int k = 0; k < 4; ++k) {
      __m256 d = _mm256_sub_ps(load8(x + i + 8 * k), m);
      p[k] = _mm256_add_ps(p[k], _mm256_mul_ps(d, d));
    }
  return total(p, 4);
}

__m256 normalize(__m256 x, __m256 w, __m256 b, float mean, float rstd) {
  __m256 c = _mm256_mul_ps(_mm256_sub_ps(x, _mm256_set1_ps(mean)), _mm256_set1_ps(rstd));
  return _mm256_add_ps(_mm256_mul_ps(c, w), b);
}

[[gnu::noinline]] void out_f16(const uint16_t* x, const uint16_t* w, const uint16_t* b, uint16_t* y,
                               float mean, float rstd) {
  for (int64_t i = 0; i < kCols; i += 8)
    store8(y + i, normalize(load8(x + i), load8(w + i), load8(b + i), mean, rstd));
}

// The output pass with x already in f32 (a row converted once), and with everything in f32.
[[gnu::noinline]] void out_x32(const float* x, const uint16_t* w, const uint16_t* b, uint16_t* y,
                               float mean, float rstd) {
  for (int64_t i = 0; i < kCols; i += 8)
    store8(y + i, normalize(_mm256_loadu_ps(x + i), load8(w + i), load8(b + i), mean, rstd));
}

[[gnu::noinline]] void out_f32(const float* x, const float* w, const float* b, float* y, float mean,
                               float rstd) {
  for (int64_t i = 0; i < kCols; i += 8)
    _mm256_storeu_ps(y + i, normalize(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i),
                                      _mm256_loadu_ps(b + i), mean, rstd));
}

double ns_per_16(int64_t reps, const std::function<void()>& pass) {
  double best = 1e30;
  for (int round = 0; round < 9; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r)
      pass();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s * 1e9 / (static_cast<double>(reps) * kCols / 16));
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  const int64_t reps = argc > 1 ? std::atoll(argv[1]) : 20000;
  if (reps <= 0) {
    std::fprintf(stderr, "bench_cpp_f16_passes: REPS must be positive\n");
    return 2;
  }
  Row r;
  volatile float sink = 0;
  struct Pass {
    const char* name;
    std::function<void()> run;
  };
  const Pass passes[] = {
      {"sum of x (f16)", [&] { sink = sink + sum_f16(r.x.data()); }},
      {"variance of x (f16)", [&] { sink = sink + var_f16(r.x.data(), 0.1f); }},
      {"output, x w b f16",
       [&] { out_f16(r.x.data(), r.w.data(), r.b.data(), r.y.data(), .1f, 2.f); }},
      {"output, x f32",
       [&] { out_x32(r.xf.data(), r.w.data(), r.b.data(), r.y.data(), .1f, 2.f); }},
      {"output, all f32",
       [&] { out_f32(r.xf.data(), r.wf.data(), r.bf.data(), r.yf.data(), .1f, 2.f); }},
  };
  double layer_norm = 0; // the first three passes
  for (size_t i = 0; i < std::size(passes); ++i) {
    double ns = ns_per_16(reps, passes[i].run);
    if (i < 3)
      layer_norm += ns;
    std::printf("%-22s %6.2f ns per 16 elements\n", passes[i].name, ns);
  }
  // Two threads, 16 elements = 64 bytes of traffic (32 read, 32 written).
  std::printf("layer norm (three f16 passes) %6.2f ns per 16 elements: at most %.1f GB/s on two "
              "threads\n",
              layer_norm, 2 * 64 / layer_norm);
  return 0;
}
