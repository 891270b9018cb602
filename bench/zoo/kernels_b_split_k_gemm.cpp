// split_k_gemm: a GEMM with a long reduction and a small output (M = N = 512, K = 16384, as the
// weight-gradient GEMMs of training and the small-batch projections of serving have), split
// along K over SPLIT_K programs per output tile so that enough programs fill the GPU; each adds
// its f32 partial product into C with tl::atomic_add (Triton's split-K matmul, the
// "SPLIT_K > 1" path of its ops). C must be zeroed before each launch.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void split_k_gemm_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr, tl::ptr<float> c_ptr,
                         tl::i32 M, tl::i32 N, tl::i32 K, tl::constexpr_<int> BLOCK_M,
                         tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> BLOCK_K,
                         tl::constexpr_<int> SPLIT_K, tl::constexpr_<int> GROUP_M) {
  auto pid = tl::program_id(0);
  auto pid_k = tl::program_id(1);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto [pid_m, pid_n] =
      tl::swizzle2d(pid / num_pid_n, pid % num_pid_n, tl::cdiv(M, BLOCK_M), num_pid_n, GROUP_M);
  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  // Program pid_k takes K blocks pid_k, pid_k + SPLIT_K, ...
  auto offs_k = pid_k * BLOCK_K + tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + offs_am[{_, None}] * K + offs_k[{None, _}];
  auto b_ptrs = b_ptr + offs_k[{_, None}] * N + offs_bn[{None, _}];
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K * SPLIT_K))) {
    auto k_remaining = K - k * (BLOCK_K * SPLIT_K);
    auto a = tl::load(a_ptrs, offs_k[{None, _}] < k_remaining, 0.0);
    auto b = tl::load(b_ptrs, offs_k[{_, None}] < k_remaining, 0.0);
    acc = tl::dot(a, b, acc);
    a_ptrs += BLOCK_K * SPLIT_K;
    b_ptrs += BLOCK_K * SPLIT_K * N;
  }
  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  tl::atomic_add(c_ptr + offs_cm[{_, None}] * N + offs_cn[{None, _}], acc,
                 (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N), "relaxed");
}

struct Tiles {
  int m, n, k, group, warps, stages;
};
Tiles tiles_for(const Device& dev) {
  if (is_gpu(dev))
    return {64, 64, 64, 8, 4, 4};
  return {32, 16, 32, 4, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"m512_n512_k16384_split16", "m1024_n1024_k32768_split8"};
  return {"m64_n32_k512_split4", "m40_n24_k300_split3"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int M = d["m"], N = d["n"], K = d["k"], split = d["split"];
  Rng rng("split_k_gemm " + shape);
  auto ha = rng.uniform_vec<half>(size_t(M) * K, -1, 1);
  auto hb = rng.uniform_vec<half>(size_t(K) * N, -1, 1);
  auto a = ctx.dev.from_host(ha);
  auto b = ctx.dev.from_host(hb);
  auto c = ctx.dev.alloc<float>(size_t(M) * N);

  auto kernel = tritium::jit(split_k_gemm_kernel, "split_k_gemm_kernel");
  Tiles t = tiles_for(ctx.dev);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  const int tiles = tritium::cdiv(M, t.m) * tritium::cdiv(N, t.n);
  Zero zero;
  ctx.launch([&] {
    zero(c);
    kernel[{tiles, split}](a, b, c, M, N, K, t.m, t.n, t.k, split, t.group);
  });

  auto got = c.to_host();
  // f32 partial sums added in any order: a few f32 ulps of the sum of |a b|.
  Check chk{1e-3, 1e-5};
  for (size_t idx : sample(got.size(), 4096, rng)) {
    size_t i = idx / N, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += to_d(ha[i * K + k]) * to_d(hb[size_t(k) * N + j]);
    chk.add(got[idx], acc, "c", idx);
  }
  return outcome(chk, 2.0 * (ha.size() + hb.size()) + 4.0 * 2 * got.size(),
                 2.0 * M * double(N) * K);
}

[[maybe_unused]] const int registered = zoo::add({"split_k_gemm", "gemm", shapes, run});
} // namespace
