// What rmsnorm_bwd and layernorm_bwd share (Liger's backward passes): a grid of one program per
// multiprocessor, each taking a contiguous range of rows, writing every row's dx and keeping
// its own partial dw (and db) in registers; then sum_partials_kernel adds the programs'
// partial rows, [programs, n_cols] -> [n_cols].
#pragma once

#include "check.hpp"

namespace zoo::norm_bwd {

inline void sum_partials_kernel(tl::ptr<float> P, tl::ptr<float> Out, tl::i32 n_rows,
                                tl::i32 n_cols, tl::constexpr_<int> BLOCK_M,
                                tl::constexpr_<int> BLOCK_N) {
  auto cols = tl::program_id(0) * BLOCK_N + tl::arange(0, BLOCK_N);
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto i : tl::range(0, n_rows, BLOCK_M)) {
    auto rows = i + tl::arange(0, BLOCK_M);
    auto mask = (rows[{tl::_, tl::None}] < n_rows) && (cols[{tl::None, tl::_}] < n_cols);
    acc += tl::load(P + rows[{tl::_, tl::None}] * n_cols + cols[{tl::None, tl::_}], mask, 0.f);
  }
  tl::store(Out + cols, tl::sum(acc, 0), cols < n_cols);
}

constexpr int sum_block_m = 32, sum_block_n = 128;

// The programs of the row kernel: one per compute unit, at most one per row.
inline int programs(const tritium::Device& dev, int rows) {
  return std::min(dev.num_compute_units(), rows);
}

// Inputs of a normalization's backward pass over [rows, cols] fp16, with the forward pass's
// statistics (mean 0 for RMSNorm) as the kernel reads them.
struct Inputs {
  std::vector<half> dy, x, w;
  std::vector<float> mean, rstd;
};

inline Inputs inputs(int rows, int cols, bool centered, uint64_t seed) {
  Inputs in{random_vector<half>(size_t(rows) * cols, seed),
            random_vector<half>(size_t(rows) * cols, seed + 1, -2, 3),
            random_vector<half>(cols, seed + 2, 0.5, 1.5),
            {},
            {}};
  for (int r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < cols; ++c)
      m += to_double(in.x[size_t(r) * cols + c]);
    m = centered ? m / cols : 0;
    for (int c = 0; c < cols; ++c)
      v += std::pow(to_double(in.x[size_t(r) * cols + c]) - m, 2);
    in.mean.push_back(float(m));
    in.rstd.push_back(float(1 / std::sqrt(v / cols + 1e-6)));
  }
  return in;
}

} // namespace zoo::norm_bwd
