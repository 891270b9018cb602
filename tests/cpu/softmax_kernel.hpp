// Triton's tutorial softmax, one row per program (in place when out == in): the row kernel the
// reload and prefetch tests compile.
#pragma once

#include <tritium/tritium.hpp>

#include <limits>

namespace tritium::testing {

inline void softmax_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n,
                           tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto x = tl::load(in + row * n + cols, mask, -std::numeric_limits<float>::infinity());
  auto num = tl::exp(x - tl::max(x, 0));
  tl::store(out + row * n + cols, num / tl::sum(num, 0), mask);
}

} // namespace tritium::testing
