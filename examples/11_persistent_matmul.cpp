// Tutorial 11: persistent matmul.
//
// Triton's tutorial 09, in C++. C = A B in fp16 with f32 accumulation, launched with exactly
// as many programs as the GPU has SMs: each program loops over the output tiles
// start_pid, start_pid + NUM_SMS, ... instead of owning one. A persistent kernel pays the
// launch and prologue costs once per SM rather than once per tile, and its tile order is ours
// to choose: GROUP_SIZE_M ordering walks GROUP_SIZE_M rows of tiles column by column, so the
// programs running at the same time share rows of A and columns of B in the L2 cache.
// Two versions of the kernel, as in the tutorial:
//   * matmul_kernel_persistent: pointer arithmetic and masks;
//   * matmul_kernel_descriptor_persistent: tensor descriptors (A [M, K], B given transposed as
//     [N, K], C [M, N]); out-of-bounds parts of a tile read 0 and are not written.
// You will learn:
//   * tl::range(start_pid, num_tiles, NUM_SMS) as the outer loop of a persistent kernel, with
//     an inner tl::range over K and a fresh accumulator per tile;
//   * {.flatten = true} on the outer loop (Triton's flatten=True): the K loop's pipeline of
//     copies then runs across tiles, so the next tile's first blocks are on their way while
//     this one finishes (on NVIDIA GPUs; elsewhere the option changes nothing);
//   * a helper function computing (pid_m, pid_n) from a tile id (GROUP_SIZE_M ordering);
//   * Device::num_compute_units() for the grid (Triton's NUM_SMS).
//
// Usage: 11_persistent_matmul [--full | --small]
//   Checks both kernels on 1000 x 768 x 520 (100 x 72 x 40 on the interpreter or with --small,
//   400 x 300 x 260 on the CPU without --full) against plain C++, on GPUs also 1000 x 768 x 512
//   (16-byte rows: TMA on sm_90a); where the device is a GPU (or with --full) measures
//   M = N = 8192 with K = 512 and 1024, and 4096^3.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::half;

std::pair<tl::i32, tl::i32> compute_pid(const tl::i32& tile_id, const tl::i32& num_pid_in_group,
                                        const tl::i32& num_pid_m, int GROUP_SIZE_M) {
  auto group_id = tile_id / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + (tile_id % group_size_m);
  auto pid_n = (tile_id % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

void matmul_kernel_persistent(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr,
                              tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                              tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk,
                              tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
                              tl::constexpr_<int> BLOCK_SIZE_M, tl::constexpr_<int> BLOCK_SIZE_N,
                              tl::constexpr_<int> BLOCK_SIZE_K, tl::constexpr_<int> GROUP_SIZE_M,
                              tl::constexpr_<int> NUM_SMS) {
  auto start_pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
  auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
  auto num_tiles = num_pid_m * num_pid_n;

  auto offs_k_for_mask = tl::arange(0, BLOCK_SIZE_K);
  auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

  for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS, {.flatten = true})) {
    auto [pid_m, pid_n] = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
    auto start_m = pid_m * BLOCK_SIZE_M;
    auto start_n = pid_n * BLOCK_SIZE_N;
    auto offs_am = start_m + tl::arange(0, BLOCK_SIZE_M);
    auto offs_bn = start_n + tl::arange(0, BLOCK_SIZE_N);
    // Rows and columns past the edge read row or column 0 (in bounds) instead of being masked;
    // their results are not stored.
    offs_am = tl::where(offs_am < M, offs_am, 0);
    offs_bn = tl::where(offs_bn < N, offs_bn, 0);
    offs_am = tl::max_contiguous(tl::multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
    offs_bn = tl::max_contiguous(tl::multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);

    auto accumulator = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
    for (auto ki : tl::range(0, k_tiles)) {
      auto offs_k = ki * BLOCK_SIZE_K + tl::arange(0, BLOCK_SIZE_K);
      auto a_ptrs =
          a_ptr + (offs_am[{tl::_, tl::None}] * stride_am + offs_k[{tl::None, tl::_}] * stride_ak);
      auto b_ptrs =
          b_ptr + (offs_k[{tl::_, tl::None}] * stride_bk + offs_bn[{tl::None, tl::_}] * stride_bn);
      auto a = tl::load(a_ptrs, offs_k_for_mask[{tl::None, tl::_}] < K - ki * BLOCK_SIZE_K, 0.0);
      auto b = tl::load(b_ptrs, offs_k_for_mask[{tl::_, tl::None}] < K - ki * BLOCK_SIZE_K, 0.0);
      accumulator = tl::dot(a, b, accumulator);
    }

    auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
    auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
    auto c_ptrs =
        c_ptr + stride_cm * offs_cm[{tl::_, tl::None}] + stride_cn * offs_cn[{tl::None, tl::_}];
    auto c_mask = (offs_cm[{tl::_, tl::None}] < M) && (offs_cn[{tl::None, tl::_}] < N);
    tl::store(c_ptrs, accumulator.to<half>(), c_mask);
  }
}

void matmul_kernel_descriptor_persistent(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr,
                                         tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                                         tl::constexpr_<int> BLOCK_SIZE_M,
                                         tl::constexpr_<int> BLOCK_SIZE_N,
                                         tl::constexpr_<int> BLOCK_SIZE_K,
                                         tl::constexpr_<int> GROUP_SIZE_M,
                                         tl::constexpr_<int> NUM_SMS) {
  auto start_pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
  auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
  auto num_tiles = num_pid_m * num_pid_n;

  auto a_desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BLOCK_SIZE_M, BLOCK_SIZE_K});
  auto b_desc = tl::make_tensor_descriptor(b_ptr, {N, K}, {K, 1}, {BLOCK_SIZE_N, BLOCK_SIZE_K});
  auto c_desc = tl::make_tensor_descriptor(c_ptr, {M, N}, {N, 1}, {BLOCK_SIZE_M, BLOCK_SIZE_N});

  auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

  for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS, {.flatten = true})) {
    auto [pid_m, pid_n] = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
    auto offs_am = pid_m * BLOCK_SIZE_M;
    auto offs_bn = pid_n * BLOCK_SIZE_N;

    auto accumulator = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
    for (auto ki : tl::range(0, k_tiles)) {
      auto offs_k = ki * BLOCK_SIZE_K;
      auto a = a_desc.load({offs_am, offs_k});
      auto b = b_desc.load({offs_bn, offs_k});
      accumulator = tl::dot(a, tl::trans(b), accumulator);
    }
    c_desc.store({offs_am, offs_bn}, accumulator.to<half>());
  }
}

struct Config {
  int m, n, k, group_m, num_warps;
};
// The tutorial's fp16 configuration on GPUs; small tiles for the interpreter and the CPU.
Config config_for(const tritium::Device& dev) {
  if (dev.name() == "cuda" || dev.name() == "hip")
    return {128, 256, 64, 8, 8};
  if (dev.name() == "interpreter")
    return {16, 16, 16, 8, 4};
  return {32, 32, 32, 8, 4};
}

// c = a b with a [M, K], b [K, N] row-major.
void matmul_persistent(const Buffer<half>& a, const Buffer<half>& b, Buffer<half>& c, int M, int N,
                       int K) {
  static auto kernel = tritium::jit(matmul_kernel_persistent, "matmul_kernel_persistent");
  tritium::Device dev = a.device();
  Config cfg = config_for(dev);
  const int num_sms = dev.num_compute_units();
  const int tiles = tritium::cdiv(M, cfg.m) * tritium::cdiv(N, cfg.n);
  kernel.options({.num_warps = cfg.num_warps, .num_stages = 3});
  kernel[{std::min(num_sms, tiles)}](a, b, c, M, N, K, K, 1, N, 1, N, 1, cfg.m, cfg.n, cfg.k,
                                     cfg.group_m, num_sms);
}

// c = a b^T with a [M, K], bt [N, K] row-major (the tutorial passes B transposed here).
void matmul_descriptor_persistent(const Buffer<half>& a, const Buffer<half>& bt, Buffer<half>& c,
                                  int M, int N, int K) {
  static auto kernel =
      tritium::jit(matmul_kernel_descriptor_persistent, "matmul_kernel_descriptor_persistent");
  tritium::Device dev = a.device();
  Config cfg = config_for(dev);
  const int num_sms = dev.num_compute_units();
  const int tiles = tritium::cdiv(M, cfg.m) * tritium::cdiv(N, cfg.n);
  kernel.options({.num_warps = cfg.num_warps, .num_stages = 3});
  kernel[{std::min(num_sms, tiles)}](a, bt, c, M, N, K, cfg.m, cfg.n, cfg.k, cfg.group_m, num_sms);
}

bool check(const tritium::Device& dev, int M, int N, int K) {
  std::mt19937 rng(M + N + K);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<half> ha(size_t(M) * K), hb(size_t(K) * N), hbt(size_t(N) * K);
  for (auto& x : ha)
    x = half(dist(rng));
  for (auto& x : hb)
    x = half(dist(rng));
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      hbt[size_t(n) * K + k] = hb[size_t(k) * N + n];
  auto a = dev.from_host(ha), b = dev.from_host(hb), bt = dev.from_host(hbt);
  auto c1 = dev.alloc<half>(size_t(M) * N), c2 = dev.alloc<half>(size_t(M) * N);
  matmul_persistent(a, b, c1, M, N, K);
  matmul_descriptor_persistent(a, bt, c2, M, N, K);
  auto r1 = c1.to_host(), r2 = c2.to_host();
  // Plain C++ in double. Entries are sums of K products of N(0, 1) values (about sqrt(K) in
  // size); the result is rounded to fp16 (half an ulp: 2^-11 |c|) after f32 accumulation in some
  // order (K 2^-24 sum |a b| at worst).
  double worst1 = 0, worst2 = 0;
  std::vector<double> row(N), mag(N);
  for (int i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int k = 0; k < K; ++k) {
      double av = float(ha[size_t(i) * K + k]);
      const half* brow = &hb[size_t(k) * N];
      for (int j = 0; j < N; ++j) {
        row[j] += av * float(brow[j]);
        mag[j] += std::fabs(av * float(brow[j]));
      }
    }
    for (int j = 0; j < N; ++j) {
      double bound = std::ldexp(std::fabs(row[j]), -11) + K * std::ldexp(mag[j], -24) + 1e-6;
      worst1 = std::max(worst1, std::fabs(float(r1[size_t(i) * N + j]) - row[j]) / bound);
      worst2 = std::max(worst2, std::fabs(float(r2[size_t(i) * N + j]) - row[j]) / bound);
    }
  }
  bool ok = worst1 <= 1.0 && worst2 <= 1.0;
  fmt::print("{} x {} x {} on {} programs: persistent at {:.2f}, descriptor persistent at {:.2f} "
             "of the fp16 rounding bound  {}\n",
             M, N, K,
             std::min(dev.num_compute_units(),
                      tritium::cdiv(M, config_for(dev).m) * tritium::cdiv(N, config_for(dev).n)),
             worst1, worst2, ok ? "ok" : "WRONG");
  return ok;
}

template <class F>
double best_time(const tritium::Device& dev, F run) {
  run();
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    run();
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  return best;
}

void benchmark(const tritium::Device& dev, int M, int N, int K) {
  std::vector<half> ha(size_t(M) * K), hb(size_t(K) * N);
  for (size_t i = 0; i < ha.size(); ++i)
    ha[i] = half(float(int(i % 7) - 3) * 0.25f);
  for (size_t i = 0; i < hb.size(); ++i)
    hb[i] = half(float(int(i % 5) - 2) * 0.25f);
  auto a = dev.from_host(ha), b = dev.from_host(hb), bt = dev.from_host(hb);
  auto c = dev.alloc<half>(size_t(M) * N);
  double t1 = best_time(dev, [&] { matmul_persistent(a, b, c, M, N, K); });
  double t2 = best_time(dev, [&] { matmul_descriptor_persistent(a, bt, c, M, N, K); });
  double flops = 2.0 * M * double(N) * K;
  fmt::print("{} x {} x {}: persistent {:.3f} ms ({:.1f} TFLOP/s), descriptor persistent {:.3f} ms "
             "({:.1f} TFLOP/s)\n",
             M, N, K, t1 * 1e3, flops / t1 / 1e12, t2 * 1e3, flops / t2 / 1e12);
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
    fmt::print("device: {} ({}), {} compute units\n", dev.name(), dev.target(),
               dev.num_compute_units());
    // 1000 x 768 x 520 on GPUs (and with --full); less on the interpreter and the CPU.
    if (reduced)
      fmt::print("checking 100 x 72 x 40 instead of 1000 x 768 x 520 ({}); pass --full for it\n",
                 small ? "--small" : "the interpreter runs one element at a time");
    else if (!gpu && !full)
      fmt::print("checking 400 x 300 x 260 instead of 1000 x 768 x 520 on the CPU; pass --full "
                 "for it\n");
    // On GPUs also K = 512: rows of 16-byte multiples, which sm_90a copies with TMA (K = 520's
    // rows are 8-byte aligned: pointers).
    bool ok = reduced         ? check(dev, 100, 72, 40)
              : (gpu || full) ? check(dev, 1000, 768, 520) && (!gpu || check(dev, 1000, 768, 512))
                              : check(dev, 400, 300, 260);
    if (gpu || full) {
      benchmark(dev, 8192, 8192, 512);
      benchmark(dev, 8192, 8192, 1024);
      benchmark(dev, 4096, 4096, 4096);
    } else {
      fmt::print("benchmark shapes 8192 x 8192 x {{512, 1024}} and 4096^3 run on GPUs (or with "
                 "--full)\n");
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
