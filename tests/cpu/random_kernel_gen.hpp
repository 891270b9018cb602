// A generator of random well-typed kernels, built directly with ir::Builder: random op graphs
// over random shapes and dtypes, with masked loads and stores, loops, branches, reductions,
// scans, shape ops, atomics and dots. Every kernel has the same signature, so one harness
// runs any of them on any device:
//   (ptr<f32> in_f, ptr<i32> in_i, ptr<i32> atom, ptr<T0> out0, ptr<T1> out1, ptr<T2> out2, i32 n)
// Each program works on `numel(shape)` elements at offset pid * numel.
#pragma once

#include <tritium/ir/builder.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace tritium::testing {

struct RandomKernel {
  std::shared_ptr<ir::Function> f;
  std::vector<int64_t> shape;
  std::vector<ir::DType> out_types; // of out0..out2
  int64_t grid = 1;
  int64_t n = 0; // elements in bounds (the rest are masked off)
};

// `portable`: only ops whose results every backend computes bit for bit the same (for GPUs,
// whose math functions are approximations and whose reductions and dots add in another
// order): no transcendental functions or pow; floating-point reductions and scans only by
// max and min; dot operands quantized to a few bits, so every partial sum is exact.
RandomKernel random_kernel(uint64_t seed, bool portable = false);

} // namespace tritium::testing
