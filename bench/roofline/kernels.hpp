// The memory-bound kernels bench_roofline times, each the same source as its Triton peer in
// bench/compare/roofline.py (line for line). Those a tutorial has are the tutorial's own: its
// file is included here (in a namespace of its own, its main renamed), not copied.
#pragma once

// Every header the included examples include, first and at global scope, so that their own
// #includes are no-ops inside the namespaces below.
#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

// Internal linkage: each translation unit that includes this header has its own copy.
#define main example_main
namespace roofline::ex01 {
namespace {
#include "../../examples/01_vector_add.cpp"
}
} // namespace roofline::ex01
namespace roofline::ex03 {
namespace {
#include "../../examples/03_llama_mlp.cpp"
}
} // namespace roofline::ex03
namespace roofline::ex04 {
namespace {
#include "../../examples/04_fused_softmax.cpp"
}
} // namespace roofline::ex04
namespace roofline::ex05 {
namespace {
#include "../../examples/05_layer_norm.cpp"
}
} // namespace roofline::ex05
#undef main

namespace roofline {

namespace tl = tritium::tl;
using tritium::half;

using ex01::add_kernel;           // Triton's tutorial 01
using ex03::rmsnorm_kernel;       // RMSNorm, one block per row (the Llama MLP, step 2)
using ex03::silu_mul_kernel;      // h = g * sigmoid(g) * u (the Llama MLP, step 1)
using ex04::softmax_kernel;       // Triton's tutorial 02: programs step over the rows
using ex05::layer_norm_fwd_fused; // Triton's tutorial 05

// GeGLU's activation (Gemma's MLP): the gate through GELU in its tanh form (PyTorch's
// approximate="tanh") times the up projection. One tanh per element.
inline void gelu_mul_kernel(tl::ptr<tl::f16> g_ptr, tl::ptr<tl::f16> u_ptr, tl::ptr<tl::f16> h_ptr,
                            tl::i32 n, tl::constexpr_<int> BLOCK_SIZE) {
  auto offs = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offs < n;
  auto g = tl::load(g_ptr + offs, mask).to<float>();
  auto u = tl::load(u_ptr + offs, mask).to<float>();
  auto inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
  auto gelu = 0.5f * g * (1.f + tl::tanh(inner));
  tl::store(h_ptr + offs, (gelu * u).to<half>(), mask);
}

// Layer norm forward with the row in one block: loaded once, kept in registers from the
// statistics to the output.
inline void layer_norm_fwd_row(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y, tl::ptr<tl::f16> W,
                               tl::ptr<tl::f16> B, tl::ptr<float> Mean, tl::ptr<float> Rstd,
                               tl::i32 stride, tl::i32 N, tl::f32 eps,
                               tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK_SIZE);
  auto mask = cols < N;
  auto x = tl::load(X + row * stride + cols, mask, 0.0).to<float>();
  auto mean = tl::sum(x, 0) / N;
  auto xc = tl::where(mask, x - mean, 0.f);
  auto var = tl::sum(xc * xc, 0) / N;
  auto rstd = 1.f / tl::sqrt(var + eps);
  tl::store(Mean + row, mean);
  tl::store(Rstd + row, rstd);
  auto w = tl::load(W + cols, mask).to<float>();
  auto b = tl::load(B + cols, mask).to<float>();
  tl::store(Y + row * stride + cols, xc * rstd * w + b, mask);
}

} // namespace roofline
