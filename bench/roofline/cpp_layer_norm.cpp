// The layer norm of tutorial 05 written by hand for x86 with F16C, as a competent C++ programmer
// would: the same three passes over each row (mean, variance, normalize) with 32 partial sums,
// the next row prefetched into L2 during the variance pass (the placement that moved the most
// bytes of those tried, bench/RESULTS.md), and the output written with non-temporal stores. It
// converts with 8-lane instructions: on a Zen 4, 16-lane conversions are no faster per element
// (cpp_f16_passes.cpp).
#include "cpp_layer_norm.hpp"

#if defined(__x86_64__) && defined(__F16C__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cmath>

namespace roofline {

namespace {

__m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
float load1(const uint16_t* p) {
  return _cvtsh_ss(*p);
}
__m128i to_half8(__m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
}
float total(__m256 a, __m256 b, __m256 c, __m256 d) {
  __m256 s = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

} // namespace

bool cpp_layer_norm_available() {
  return true;
}

void cpp_layer_norm_rows(const uint16_t* x_all, const uint16_t* w, const uint16_t* b,
                         uint16_t* y_all, float* mean_out, float* rstd_out, int64_t n, float eps,
                         int64_t lo, int64_t hi) {
  const int64_t n32 = n / 32 * 32, n8 = n / 8 * 8;
  for (int64_t r = lo; r < hi; ++r) {
    const uint16_t* x = x_all + r * n;
    uint16_t* y = y_all + r * n;
    const char* next = reinterpret_cast<const char*>(x + n);
    const bool prefetch = r + 1 < hi;

    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i < n32; i += 32) {
      s0 = _mm256_add_ps(s0, load8(x + i));
      s1 = _mm256_add_ps(s1, load8(x + i + 8));
      s2 = _mm256_add_ps(s2, load8(x + i + 16));
      s3 = _mm256_add_ps(s3, load8(x + i + 24));
    }
    for (; i < n8; i += 8)
      s0 = _mm256_add_ps(s0, load8(x + i));
    float sum = total(s0, s1, s2, s3);
    for (; i < n; ++i)
      sum += load1(x + i);
    const float mean = sum / static_cast<float>(n);

    // 32 f16 elements are one 64-byte line: one line of the next row per step.
    const __m256 m = _mm256_set1_ps(mean);
    s0 = s1 = s2 = s3 = _mm256_setzero_ps();
    for (i = 0; i < n32; i += 32) {
      if (prefetch)
        _mm_prefetch(next + i * 2, _MM_HINT_T1);
      __m256 d0 = _mm256_sub_ps(load8(x + i), m), d1 = _mm256_sub_ps(load8(x + i + 8), m);
      __m256 d2 = _mm256_sub_ps(load8(x + i + 16), m), d3 = _mm256_sub_ps(load8(x + i + 24), m);
      s0 = _mm256_fmadd_ps(d0, d0, s0);
      s1 = _mm256_fmadd_ps(d1, d1, s1);
      s2 = _mm256_fmadd_ps(d2, d2, s2);
      s3 = _mm256_fmadd_ps(d3, d3, s3);
    }
    for (; i < n8; i += 8) {
      __m256 d = _mm256_sub_ps(load8(x + i), m);
      s0 = _mm256_fmadd_ps(d, d, s0);
    }
    float var = total(s0, s1, s2, s3);
    for (; i < n; ++i)
      var += (load1(x + i) - mean) * (load1(x + i) - mean);
    const float rstd = 1.f / std::sqrt(var / static_cast<float>(n) + eps);
    mean_out[r] = mean;
    rstd_out[r] = rstd;

    const __m256 rs = _mm256_set1_ps(rstd);
    auto out8 = [&](int64_t k) {
      __m256 v = _mm256_mul_ps(_mm256_sub_ps(load8(x + k), m), rs);
      return to_half8(_mm256_fmadd_ps(v, load8(w + k), load8(b + k)));
    };
    i = 0;
    if (reinterpret_cast<uintptr_t>(y) % 16 == 0)
      for (; i < n8; i += 8)
        _mm_stream_si128(reinterpret_cast<__m128i*>(y + i), out8(i));
    for (; i < n8; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), out8(i));
    for (; i < n; ++i)
      y[i] = _cvtss_sh((load1(x + i) - mean) * rstd * load1(w + i) + load1(b + i),
                       _MM_FROUND_TO_NEAREST_INT);
  }
  _mm_sfence(); // the streaming stores, visible before the caller's threads join
}

} // namespace roofline

#else

namespace roofline {

bool cpp_layer_norm_available() {
  return false;
}
void cpp_layer_norm_rows(const uint16_t*, const uint16_t*, const uint16_t*, uint16_t*, float*,
                         float*, int64_t, float, int64_t, int64_t) {}

} // namespace roofline

#endif
