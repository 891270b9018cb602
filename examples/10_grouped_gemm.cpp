// Tutorial 10: grouped GEMM.
//
// Triton's tutorial 08, in C++. A group of independent matrix products C_g = A_g B_g of
// different sizes, in one launch of a fixed number of programs (NUM_SM): the tiles of all the
// products are numbered one after another, and program p computes tiles p, p + NUM_SM, ...
// The kernel learns where each product lives from tables in device memory: the sizes
// <M, N, K> and leading dimensions <lda, ldb, ldc> as i32, and the addresses of A_g, B_g and
// C_g as 64-bit integers, which it turns back into pointers. You will learn:
//   * pointers stored in memory: tl::load(group_a_ptrs + g).to<tl::ptr<tl::f16>>() (Triton:
//     tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16)));
//   * a static schedule on the device: a tl::range over the problems around a tl::while_ over
//     the tiles of this program, both carrying values (tile_idx, last_problem_end);
//   * tl::dot on fp16 tiles with an f32 accumulator.
// As in the tutorial, every size is a multiple of the tile sizes ("assume full tile").
//
// Usage: 10_grouped_gemm [--full | --small]
//   Checks the tutorial's group {1024, 512, 256, 128}^3 (each size / 8 on the interpreter or
//   with --small; the CPU runs {256, 128, 64, 32}^3 without --full) against plain C++; where
//   the device is a GPU (or with --full) measures groups of 4 products N^3, N = 128 ... 1024.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::half;

void grouped_matmul_kernel(
    // device tensor of matrices pointers
    tl::ptr<int64_t> group_a_ptrs, tl::ptr<int64_t> group_b_ptrs, tl::ptr<int64_t> group_c_ptrs,
    // device tensor of gemm sizes. its shape is [group_size, 3]
    // dim 0 is group_size, dim 1 is the values of <M, N, K> of each gemm
    tl::ptr<int32_t> group_gemm_sizes,
    // device tensor of leading dimension sizes. its shape is [group_size, 3]
    // dim 0 is group_size, dim 1 is the values of <lda, ldb, ldc> of each gemm
    tl::ptr<int32_t> g_lds,
    // number of gemms
    tl::i32 group_size,
    // number of virtual SM
    tl::constexpr_<int> NUM_SM,
    // tile sizes
    tl::constexpr_<int> BLOCK_SIZE_M, tl::constexpr_<int> BLOCK_SIZE_N,
    tl::constexpr_<int> BLOCK_SIZE_K) {
  auto tile_idx = tl::program_id(0);
  auto last_problem_end = tl::scalar<int32_t>(0);
  for (auto g : tl::range(0, group_size)) {
    // get the gemm size of the current problem
    auto gm = tl::load(group_gemm_sizes + g * 3);
    auto gn = tl::load(group_gemm_sizes + g * 3 + 1);
    auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
    auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
    auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
    auto num_tiles = num_m_tiles * num_n_tiles;
    // iterate through the tiles in the current gemm problem
    tl::while_(
        [&] { return tile_idx >= last_problem_end && tile_idx < last_problem_end + num_tiles; },
        [&] {
          // pick up a tile from the current gemm problem
          auto k = gk;
          auto lda = tl::load(g_lds + g * 3);
          auto ldb = tl::load(g_lds + g * 3 + 1);
          auto ldc = tl::load(g_lds + g * 3 + 2);
          auto a_ptr = tl::load(group_a_ptrs + g).to<tl::ptr<tl::f16>>();
          auto b_ptr = tl::load(group_b_ptrs + g).to<tl::ptr<tl::f16>>();
          auto c_ptr = tl::load(group_c_ptrs + g).to<tl::ptr<tl::f16>>();
          // figure out tile coordinates
          auto tile_idx_in_gemm = tile_idx - last_problem_end;
          auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
          auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;

          // do regular gemm here
          auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto offs_k = tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + offs_am[{tl::_, tl::None}] * lda + offs_k[{tl::None, tl::_}];
          auto b_ptrs = b_ptr + offs_k[{tl::_, tl::None}] * ldb + offs_bn[{tl::None, tl::_}];
          auto accumulator = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
          for (auto kk : tl::range(0, tl::cdiv(k, BLOCK_SIZE_K))) {
            (void)kk;
            // hint: each row of the tiles starts 16-byte aligned (as the tutorial's
            // tl.multiple_of(a_ptrs, [16, 16]), which Triton applies in place)
            a_ptrs = tl::multiple_of(a_ptrs, 16);
            b_ptrs = tl::multiple_of(b_ptrs, 16);
            // assume full tile for now
            auto a = tl::load(a_ptrs);
            auto b = tl::load(b_ptrs);
            // Triton's `accumulator += tl.dot(a, b)`, which its compiler folds into this form.
            accumulator = tl::dot(a, b, accumulator);
            a_ptrs += BLOCK_SIZE_K;
            b_ptrs += BLOCK_SIZE_K * ldb;
          }
          auto c = accumulator.to<half>();

          auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + ldc * offs_cm[{tl::_, tl::None}] + offs_cn[{tl::None, tl::_}];

          // assumes full tile for now
          tl::store(c_ptrs, c);

          // go to the next tile by advancing NUM_SM
          tile_idx += NUM_SM;
        });
    // get ready to go to the next gemm problem
    last_problem_end = last_problem_end + num_tiles;
  }
}

struct Tiles {
  int m, n, k, num_warps;
};
// The tutorial's 128 x 128 x 32 tiles on GPUs; smaller ones for the interpreter and the CPU.
Tiles tiles_for(const tritium::Device& dev) {
  if (dev.name() == "cuda" || dev.name() == "hip")
    return {128, 128, 32, 4};
  return {16, 16, 16, 4};
}

// The device-side tables of one group: addresses as 64-bit integers, sizes and strides as i32.
struct GroupTables {
  Buffer<int64_t> a_ptrs, b_ptrs, c_ptrs;
  Buffer<int32_t> sizes, lds;
  int group_size;
};

// Addresses of device buffers, as the kernel's tables hold them (torch's data_ptr()).
int64_t address_of(const Buffer<half>& b) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.data()));
}

GroupTables make_tables(const std::vector<Buffer<half>>& A, const std::vector<Buffer<half>>& B,
                        const std::vector<Buffer<half>>& C, const std::vector<int>& ms,
                        const std::vector<int>& ns, const std::vector<int>& ks, Tiles t) {
  tritium::Device dev = A[0].device();
  std::vector<int64_t> a, b, c;
  std::vector<int32_t> sizes, lds;
  for (size_t g = 0; g < A.size(); ++g) {
    if (ms[g] % t.m || ns[g] % t.n || ks[g] % t.k)
      throw tritium::Error(fmt::format("grouped GEMM: problem {} ({} x {} x {}) is not a multiple "
                                       "of the {} x {} x {} tiles (the kernel assumes full tiles)",
                                       g, ms[g], ns[g], ks[g], t.m, t.n, t.k));
    a.push_back(address_of(A[g]));
    b.push_back(address_of(B[g]));
    c.push_back(address_of(C[g]));
    sizes.insert(sizes.end(), {ms[g], ns[g], ks[g]});
    lds.insert(lds.end(), {ks[g], ns[g], ns[g]}); // row-major: lda = K, ldb = N, ldc = N
  }
  return {dev.from_host(a),     dev.from_host(b),   dev.from_host(c),
          dev.from_host(sizes), dev.from_host(lds), int(A.size())};
}

void group_gemm(const GroupTables& t, Tiles tiles, int num_sm) {
  static auto kernel = tritium::jit(grouped_matmul_kernel, "grouped_matmul_kernel");
  kernel.options({.num_warps = tiles.num_warps});
  // we use a fixed number of programs
  kernel[{num_sm}](t.a_ptrs, t.b_ptrs, t.c_ptrs, t.sizes, t.lds, t.group_size, num_sm, tiles.m,
                   tiles.n, tiles.k);
}

bool check(const tritium::Device& dev, const std::vector<int>& dims) {
  Tiles tiles = tiles_for(dev);
  std::mt19937 rng(dims[0]);
  std::uniform_real_distribution<float> uni(0.f, 1.f); // torch.rand, as the tutorial
  std::vector<std::vector<half>> ha, hb;
  std::vector<Buffer<half>> A, B, C;
  for (int d : dims) {
    std::vector<half> a(size_t(d) * d), b(size_t(d) * d);
    for (auto& x : a)
      x = half(uni(rng));
    for (auto& x : b)
      x = half(uni(rng));
    A.push_back(dev.from_host(a));
    B.push_back(dev.from_host(b));
    C.push_back(dev.alloc<half>(size_t(d) * d));
    ha.push_back(std::move(a));
    hb.push_back(std::move(b));
  }
  auto tables = make_tables(A, B, C, dims, dims, dims, tiles);
  group_gemm(tables, tiles, dev.num_compute_units());
  // Plain C++: f32 accumulation in double, then the fp16 rounding of the result. The tutorial
  // allows atol 1e-2 against torch.matmul; C holds sums of K products in [0, 1), up to ~256
  // for K = 1024, where half an fp16 ulp is 0.125: the bound is relative, 2^-10 of |c| (half an
  // ulp, and as much again for f32 accumulation in another order), plus 1e-2.
  double worst = 0;
  for (size_t g = 0; g < dims.size(); ++g) {
    int d = dims[g];
    auto c = C[g].to_host();
    std::vector<double> row(d);
    for (int i = 0; i < d; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int kk = 0; kk < d; ++kk) {
        double a = float(ha[g][size_t(i) * d + kk]);
        const half* brow = &hb[g][size_t(kk) * d];
        for (int j = 0; j < d; ++j)
          row[j] += a * float(brow[j]);
      }
      for (int j = 0; j < d; ++j) {
        double err = std::fabs(float(c[size_t(i) * d + j]) - row[j]);
        worst = std::max(worst, err / (1e-2 + std::ldexp(std::fabs(row[j]), -10)));
      }
    }
  }
  bool ok = worst <= 1.0;
  std::string names;
  for (int d : dims)
    names += fmt::format("{}{}^3", names.empty() ? "" : ", ", d);
  fmt::print("group of {} on {} programs: {:.2f} of the tolerance (1e-2 + 2^-10 |c|)  {}\n", names,
             dev.num_compute_units(), worst, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int N) {
  Tiles tiles = tiles_for(dev);
  std::vector<half> h(size_t(N) * N);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = half(float(i % 17) / 17.f);
  std::vector<Buffer<half>> A, B, C;
  for (int g = 0; g < 4; ++g) {
    A.push_back(dev.from_host(h));
    B.push_back(dev.from_host(h));
    C.push_back(dev.alloc<half>(h.size()));
  }
  std::vector<int> d(4, N);
  auto tables = make_tables(A, B, C, d, d, d, tiles);
  const int num_sm = dev.num_compute_units();
  // only launch the kernel, no tensor preparation here to remove all overhead
  group_gemm(tables, tiles, num_sm);
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    group_gemm(tables, tiles, num_sm);
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  double flops = 4 * 2.0 * N * double(N) * N;
  fmt::print("group of 4 x {}^3: {:.3f} ms, {:.1f} TFLOP/s\n", N, best * 1e3, flops / best / 1e12);
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
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    const bool reduced = small || (interpreter && !full);
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    // The tutorial's group; divided by 8 (interpreter, --small) or 4 (CPU) to stay in seconds.
    const int div = reduced ? 8 : (gpu || full) ? 1 : 4;
    std::vector<int> dims;
    for (int d : {1024, 512, 256, 128})
      dims.push_back(d / div);
    if (div != 1)
      fmt::print("checking the tutorial's group with sizes divided by {} ({}); pass --full for "
                 "them\n",
                 div,
                 small         ? "--small"
                 : interpreter ? "the interpreter"
                               : "the CPU");
    bool ok = check(dev, dims);
    if (gpu || full) {
      for (int n : {128, 256, 512, 1024})
        benchmark(dev, n);
    } else {
      fmt::print("benchmark groups of 4 x N^3, N = 128 ... 1024, run on GPUs (or with --full)\n");
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
