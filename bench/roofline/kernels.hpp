// The memory-bound kernels bench_roofline times, each the same source as its Triton peer in
// bench/compare/roofline.py (line for line) and as the tutorial it comes from.
#pragma once

#include <tritium/tritium.hpp>

#include <limits>

namespace roofline {

namespace tl = tritium::tl;
using tritium::half;

// Triton's tutorial 01 (examples/01_vector_add.cpp).
inline void add_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::ptr<float> output_ptr,
                       tl::i32 n_elements, tl::constexpr_<int> BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto offsets = pid * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  tl::store(output_ptr + offsets, x + y, mask);
}

// The seeds' fused elementwise chain, the "triple multiplication" h = g * sigmoid(g) * u
// (examples/03_llama_mlp.cpp, step 1).
inline void silu_mul_kernel(tl::ptr<tl::f16> g_ptr, tl::ptr<tl::f16> u_ptr, tl::ptr<tl::f16> h_ptr,
                            tl::i32 n, tl::constexpr_<int> BLOCK_SIZE) {
  auto offs = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offs < n;
  auto g = tl::load(g_ptr + offs, mask).to<float>();
  auto u = tl::load(u_ptr + offs, mask).to<float>();
  tl::store(h_ptr + offs, (g * tl::sigmoid(g) * u).to<half>(), mask);
}

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

// Triton's tutorial 02 (examples/04_fused_softmax.cpp): programs step over the rows.
inline void softmax_kernel(tl::ptr<float> output_ptr, tl::ptr<float> input_ptr,
                           tl::i32 input_row_stride, tl::i32 output_row_stride, tl::i32 n_rows,
                           tl::i32 n_cols, tl::constexpr_<int> BLOCK_SIZE) {
  auto row_start = tl::program_id(0);
  auto row_step = tl::num_programs(0);
  for (auto row_idx : tl::range(row_start, n_rows, row_step)) {
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    auto col_offsets = tl::arange(0, BLOCK_SIZE);
    auto input_ptrs = row_start_ptr + col_offsets;
    auto mask = col_offsets < n_cols;
    auto row = tl::load(input_ptrs, mask, -std::numeric_limits<float>::infinity());
    auto row_minus_max = row - tl::max(row, 0);
    auto numerator = tl::exp(row_minus_max);
    auto denominator = tl::sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    auto output_ptrs = output_ptr + row_idx * output_row_stride + col_offsets;
    tl::store(output_ptrs, softmax_output, mask);
  }
}

// Triton's tutorial 05, forward (examples/05_layer_norm.cpp): three loops over the row in
// blocks (one iteration each when BLOCK_SIZE covers the row).
inline void layer_norm_fwd_fused(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y, tl::ptr<tl::f16> W,
                                 tl::ptr<tl::f16> B, tl::ptr<float> Mean, tl::ptr<float> Rstd,
                                 tl::i32 stride, tl::i32 N, tl::f32 eps,
                                 tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  Y += row * stride;
  X += row * stride;
  auto _mean = tl::zeros<float>({BLOCK_SIZE});
  for (auto off : tl::range(0, N, BLOCK_SIZE)) {
    auto cols = off + tl::arange(0, BLOCK_SIZE);
    auto a = tl::load(X + cols, cols < N, 0.0).to<float>();
    _mean += a;
  }
  auto mean = tl::sum(_mean, 0) / N;
  auto _var = tl::zeros<float>({BLOCK_SIZE});
  for (auto off : tl::range(0, N, BLOCK_SIZE)) {
    auto cols = off + tl::arange(0, BLOCK_SIZE);
    auto x = tl::load(X + cols, cols < N, 0.0).to<float>();
    x = tl::where(cols < N, x - mean, 0.f);
    _var += x * x;
  }
  auto var = tl::sum(_var, 0) / N;
  auto rstd = 1.f / tl::sqrt(var + eps);
  tl::store(Mean + row, mean);
  tl::store(Rstd + row, rstd);
  for (auto off : tl::range(0, N, BLOCK_SIZE)) {
    auto cols = off + tl::arange(0, BLOCK_SIZE);
    auto mask = cols < N;
    auto w = tl::load(W + cols, mask).to<float>();
    auto b = tl::load(B + cols, mask).to<float>();
    auto x = tl::load(X + cols, mask, 0.0).to<float>();
    auto x_hat = (x - mean) * rstd;
    auto y = x_hat * w + b;
    tl::store(Y + cols, y, mask);
  }
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

// RMSNorm, one block per row (examples/03_llama_mlp.cpp, step 2).
inline void rmsnorm_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<tl::f16> w_ptr, tl::ptr<tl::f16> y_ptr,
                           tl::i32 n_cols, tl::f32 eps, tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  auto x = tl::load(x_ptr + row * n_cols + cols, mask, 0.0).to<float>();
  auto rstd = tl::rsqrt(tl::sum(x * x) / n_cols + eps);
  auto w = tl::load(w_ptr + cols, mask).to<float>();
  tl::store(y_ptr + row * n_cols + cols, (x * rstd * w).to<half>(), mask);
}

} // namespace roofline
