// w8a16_gemm: C = A @ dequant(W), the weight-only int8 GEMM of LLM serving (vLLM's and
// FlagGems' w8a16 Triton kernels): A is fp16 [M, K] activations, W int8 [K, N] with one fp16
// scale per output channel. The weights are dequantized to fp16 inside the K loop, right
// before the dot, so they cross memory at one byte each.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void w8a16_gemm_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<int8_t> b_ptr, tl::ptr<tl::f16> scale_ptr,
                       tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                       tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                       tl::constexpr_<int> BLOCK_K, tl::constexpr_<int> GROUP_M) {
  auto pid = tl::program_id(0);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto [pid_m, pid_n] =
      tl::swizzle2d(pid / num_pid_n, pid % num_pid_n, tl::cdiv(M, BLOCK_M), num_pid_n, GROUP_M);
  // Rows past M and columns past N wrap: their results are dropped by the masked store.
  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + offs_am[{_, None}] * K + offs_k[{None, _}];
  auto b_ptrs = b_ptr + offs_k[{_, None}] * N + offs_bn[{None, _}];
  auto scale = tl::load(scale_ptr + offs_bn);
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto k_mask = offs_k < K - k * BLOCK_K;
    auto a = tl::load(a_ptrs, k_mask[{None, _}], 0.0);
    auto b = tl::load(b_ptrs, k_mask[{_, None}], 0);
    auto w = b.to<half>() * scale[{None, _}];
    acc = tl::dot(a, w, acc);
    a_ptrs += BLOCK_K;
    b_ptrs += BLOCK_K * N;
  }
  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  tl::store(c_ptr + offs_cm[{_, None}] * N + offs_cn[{None, _}], acc.to<half>(),
            (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N));
}

struct Tiles {
  int m, n, k, group, warps, stages;
};
// The twin's configuration (bench/compare/zoo_twins_b.py): a 16-row tile for decoding
// batches, where the weights dominate; square tiles for prefill.
Tiles tiles_for(const Device& dev, int M) {
  if (is_gpu(dev))
    return M <= 16 ? Tiles{16, 64, 128, 8, 4, 4} : Tiles{128, 128, 64, 8, 8, 3};
  return {16, 32, 32, 4, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"m16_n4096_k4096", "m4096_n4096_k4096"};
  return {"m16_n64_k256", "m33_n48_k80"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int M = d["m"], N = d["n"], K = d["k"];
  Rng rng("w8a16_gemm " + shape);
  auto ha = rng.uniform_vec<half>(size_t(M) * K, -1, 1);
  std::vector<int8_t> hb(size_t(K) * N);
  for (auto& v : hb)
    v = int8_t(rng.integer(-127, 127));
  // Per-channel scales of a symmetric quantization of weights of magnitude ~1.
  auto hs = rng.uniform_vec<half>(N, 0.5 / 127, 1.5 / 127);
  auto a = ctx.dev.from_host(ha);
  auto b = ctx.dev.from_host(hb);
  auto s = ctx.dev.from_host(hs);
  auto c = ctx.dev.alloc<half>(size_t(M) * N);

  auto kernel = tritium::jit(w8a16_gemm_kernel, "w8a16_gemm_kernel");
  Tiles t = tiles_for(ctx.dev, M);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  int grid = tritium::cdiv(M, t.m) * tritium::cdiv(N, t.n);
  ctx.launch([&] { kernel[{grid}](a, b, s, c, M, N, K, t.m, t.n, t.k, t.group); });

  auto got = c.to_host();
  // The reference multiplies by the weights as the kernel dequantizes them (q * s rounded to
  // fp16: exact in f32, rounded once), accumulating in double.
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(size_t(M) * N, 4096, rng)) {
    size_t i = idx / N, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += to_d(ha[i * K + k]) * to_d(half(float(hb[size_t(k) * N + j]) * float(hs[j])));
    chk.add(to_d(got[idx]), acc, "c", idx);
  }
  double bytes = 2.0 * M * K + 1.0 * K * N + 2.0 * N + 2.0 * M * N;
  return outcome(chk, bytes, 2.0 * M * N * K);
}

[[maybe_unused]] const int registered = zoo::add({"w8a16_gemm", "gemm", shapes, run});
} // namespace
