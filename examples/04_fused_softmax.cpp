// Tutorial 04: fused softmax.
//
// Triton's tutorial 02, in C++. The row-wise softmax of a matrix, y = exp(x - max(x)) /
// sum(exp(x - max(x))), read once and written once: each program keeps whole rows in
// registers, where a naive implementation (one kernel per step) reads and writes the matrix
// several times. You will learn:
//   * reductions (tl::max, tl::sum) inside a program;
//   * loads with `other` (-inf, so that padding lanes never win the max and add exp(-inf) = 0);
//   * a persistent kernel: fewer programs than rows, each looping with tl::range over rows
//     start, start + num_programs, ...
//
// Usage: 04_fused_softmax [--full | --small]
//   Checks the tutorial's 1823 x 781 matrix against plain C++ and, where the device is not the
//   interpreter (or with --full), measures 4096 x {1024, 4096, 12288}.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tl = tritium::tl;

void softmax_kernel(tl::ptr<float> output_ptr, tl::ptr<float> input_ptr, tl::i32 input_row_stride,
                    tl::i32 output_row_stride, tl::i32 n_rows, tl::i32 n_cols,
                    tl::constexpr_<int> BLOCK_SIZE) {
  // Programs start at their own row and step over the grid.
  auto row_start = tl::program_id(0);
  auto row_step = tl::num_programs(0);
  for (auto row_idx : tl::range(row_start, n_rows, row_step)) {
    // The stride is how much to add to a pointer to move one row on.
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    // BLOCK_SIZE is the next power of two at least n_cols, so one block holds a row.
    auto col_offsets = tl::arange(0, BLOCK_SIZE);
    auto input_ptrs = row_start_ptr + col_offsets;
    auto mask = col_offsets < n_cols;
    auto row = tl::load(input_ptrs, mask, -std::numeric_limits<float>::infinity());
    // Subtract the maximum for numerical stability.
    auto row_minus_max = row - tl::max(row, 0);
    // Exponentiation is fast on GPUs (and approximate, as in CUDA's __expf).
    auto numerator = tl::exp(row_minus_max);
    auto denominator = tl::sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    auto output_ptrs = output_ptr + row_idx * output_row_stride + col_offsets;
    tl::store(output_ptrs, softmax_output, mask);
  }
}

// y = softmax(x) row by row, into a preallocated y (so that timings measure the kernel).
void softmax(const tritium::Buffer<float>& x, tritium::Buffer<float>& y, int n_rows, int n_cols) {
  static auto kernel = tritium::jit(softmax_kernel, "softmax_kernel");
  int block = 1;
  while (block < n_cols)
    block *= 2;
  auto dev = x.device();
  // A persistent grid: at most a few programs per core on CPUs and GPUs, one row each on the
  // interpreter (which runs programs one after another anyway).
  int programs = std::min(n_rows, dev.name() == "interpreter" ? n_rows : 1024);
  kernel[{programs}](y, x, n_cols, n_cols, n_rows, n_cols, block);
}

bool check(const tritium::Device& dev, int n_rows, int n_cols) {
  std::mt19937 rng(n_rows * 31 + n_cols);
  std::normal_distribution<float> dist(0.f, 3.f);
  std::vector<float> hx(size_t(n_rows) * n_cols);
  for (auto& v : hx)
    v = dist(rng);
  auto x = dev.from_host(hx);
  auto out = dev.alloc<float>(hx.size());
  softmax(x, out, n_rows, n_cols);
  auto y = out.to_host();
  // Plain C++, in double.
  // torch.allclose's default tolerances, as the tutorial's check: |y - ref| <= atol + rtol |ref|.
  const double rtol = 1e-5, atol = 1e-8;
  double max_err = 0, worst = 0; // worst: the largest |y - ref| / (atol + rtol |ref|)
  for (int r = 0; r < n_rows; ++r) {
    const float* row = &hx[size_t(r) * n_cols];
    double m = *std::max_element(row, row + n_cols), sum = 0;
    for (int c = 0; c < n_cols; ++c)
      sum += std::exp(double(row[c]) - m);
    for (int c = 0; c < n_cols; ++c) {
      double ref = std::exp(double(row[c]) - m) / sum;
      double err = std::fabs(y[size_t(r) * n_cols + c] - ref);
      max_err = std::max(max_err, err);
      worst = std::max(worst, err / (atol + rtol * ref));
    }
  }
  bool ok = worst <= 1.0;
  fmt::print("{} x {}: max difference from plain C++ {:.2e}, {:.2f} of the tolerance (rtol {:.0e}, "
             "atol {:.0e})  {}\n",
             n_rows, n_cols, max_err, worst, rtol, atol, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int n_rows, int n_cols) {
  std::vector<float> hx(size_t(n_rows) * n_cols, 1.f);
  auto x = dev.from_host(hx);
  auto y = dev.alloc<float>(hx.size());
  // Triton's do_bench in C++: the median of device times, caches flushed before each run.
  auto r = tritium::bench(dev, [&] { softmax(x, y, n_rows, n_cols); });
  double gbps = r.gbps(2.0 * hx.size() * sizeof(float)); // x read once, y written once
  fmt::print("{} x {}: {:.3f} ms, {:.1f} GB/s\n", n_rows, n_cols, r.median_ms, gbps);
}

int main(int argc, char** argv) {
  try {
    bool full = false, small = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--full") == 0)
        full = true;
      else if (std::strcmp(argv[i], "--small") == 0)
        small = true;
      else {
        fmt::print(stderr, "usage: {} [--full | --small]\n", argv[0]);
        return 2;
      }
    }
    auto dev = tritium::default_device();
    const bool interpreter = dev.name() == "interpreter";
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    // The tutorial's shape: neither dimension a power of two.
    bool ok = check(dev, 1823, 781) && check(dev, 3, 4);
    if ((!interpreter && !small) || full) {
      for (int n : {1024, 4096, 12288})
        benchmark(dev, 4096, n);
    } else {
      fmt::print("benchmark shapes 4096 x {{1024, 4096, 12288}} skipped ({}); pass --full to run "
                 "them\n",
                 small ? "--small" : "the interpreter runs one element at a time");
    }
    if (!ok) {
      fmt::print("FAILED: results differ from the plain C++ reference\n");
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
