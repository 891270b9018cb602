// Row kernels, one row per program, that the reload, prefetch and streaming-store tests compile.
#pragma once

#include <tritium/tritium.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace tritium::testing {

// Triton's tutorial softmax (in place when out == in).
inline void softmax_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n,
                           tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto x = tl::load(in + row * n + cols, mask, -std::numeric_limits<float>::infinity());
  auto num = tl::exp(x - tl::max(x, 0));
  tl::store(out + row * n + cols, num / tl::sum(num, 0), mask);
}

// RMSNorm's shape: a light reduction, then the scaled row (div_rn: the tests compare it bit for
// bit, and the CPU's `/` by an invariant is a product with the reciprocal).
inline void rms_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n,
                       tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto x = tl::load(in + row * n + cols, mask, 0.f);
  auto scaled = x * tl::div_rn(x, tl::sum(x * x, 0));
  tl::store(out + row * n + cols, scaled, mask);
}

// Two softmax outputs agree: exp is within a few ulp of the interpreter's (docs/cpu-backend.md).
inline bool softmax_close(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= 1e-6f * std::fabs(a[i]) + 1e-12f))
      return false;
  return true;
}

} // namespace tritium::testing
