// w4a16_gemm: C = A @ dequant(W) with 4-bit weights (GPTQ/AWQ-style, as the Triton GPTQ and
// vLLM kernels do it): W is [K, N] packed two per byte along K (byte [k / 2, n]: the low
// nibble holds the even k, the high nibble the odd one), with an fp16 scale and a 4-bit zero
// point per group of 128 rows of K and per column: w = (q - z) * s. The kernel loads each byte
// once per k it holds and unpacks it with a shift and a mask inside the K loop, then feeds the
// dequantized fp16 tile to the dot.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

constexpr int group_size = 128;

void w4a16_gemm_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<uint8_t> b_ptr, tl::ptr<tl::f16> scale_ptr,
                       tl::ptr<uint8_t> zero_ptr, tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N,
                       tl::i32 K, tl::constexpr_<int> GROUP_SIZE, tl::constexpr_<int> BLOCK_M,
                       tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> BLOCK_K,
                       tl::constexpr_<int> GROUP_M) {
  tl::static_assert_(GROUP_SIZE % BLOCK_K == 0, "a K block must lie within one group");
  auto pid = tl::program_id(0);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto [pid_m, pid_n] =
      tl::swizzle2d(pid / num_pid_n, pid % num_pid_n, tl::cdiv(M, BLOCK_M), num_pid_n, GROUP_M);
  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + offs_am[{_, None}] * K + offs_k[{None, _}];
  // Two consecutive k share a byte: row k / 2 of the packed matrix, nibble k % 2.
  auto b_ptrs = b_ptr + (offs_k / 2)[{_, None}] * N + offs_bn[{None, _}];
  auto shifter = ((offs_k % 2) * 4).to<uint8_t>();
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto k_mask = offs_k < K - k * BLOCK_K;
    auto a = tl::load(a_ptrs, k_mask[{None, _}], 0.0);
    auto packed = tl::load(b_ptrs, k_mask[{_, None}], 0);
    auto q = (packed >> shifter[{_, None}]) & 0xF;
    auto g = (k * BLOCK_K) / GROUP_SIZE;
    auto scale = tl::load(scale_ptr + g * N + offs_bn);
    auto zero = tl::load(zero_ptr + g * N + offs_bn);
    auto w = (q.to<half>() - zero.to<half>()[{None, _}]) * scale[{None, _}];
    acc = tl::dot(a, w, acc);
    a_ptrs += BLOCK_K;
    b_ptrs += (BLOCK_K / 2) * N;
  }
  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  tl::store(c_ptr + offs_cm[{_, None}] * N + offs_cn[{None, _}], acc.to<half>(),
            (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N));
}

struct Tiles {
  int m, n, k, group, warps, stages;
};
Tiles tiles_for(const Device& dev, int M) {
  if (is_gpu(dev))
    return M <= 16 ? Tiles{16, 64, 128, 8, 4, 4} : Tiles{128, 128, 64, 8, 8, 3};
  return {16, 32, 32, 4, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"m16_n4096_k4096", "m4096_n4096_k4096"};
  // K a multiple of 2 (packing) and of the group; 384 = 3 groups, the last K block partial
  // on no device since BLOCK_K divides 128.
  return {"m16_n64_k256", "m33_n48_k384"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int M = d["m"], N = d["n"], K = d["k"];
  const int groups = K / group_size;
  Rng rng("w4a16_gemm " + shape);
  auto ha = rng.uniform_vec<half>(size_t(M) * K, -1, 1);
  std::vector<uint8_t> q(size_t(K) * N), hz(size_t(groups) * N), hb(size_t(K / 2) * N);
  for (auto& v : q)
    v = uint8_t(rng.integer(0, 15));
  for (auto& v : hz)
    v = uint8_t(rng.integer(6, 9));
  for (int k = 0; k < K; k += 2)
    for (int n = 0; n < N; ++n)
      hb[size_t(k / 2) * N + n] = uint8_t(q[size_t(k) * N + n] | (q[size_t(k + 1) * N + n] << 4));
  auto hs = rng.uniform_vec<half>(size_t(groups) * N, 0.5 / 8, 1.5 / 8);
  auto a = ctx.dev.from_host(ha);
  auto b = ctx.dev.from_host(hb);
  auto s = ctx.dev.from_host(hs);
  auto z = ctx.dev.from_host(hz);
  auto c = ctx.dev.alloc<half>(size_t(M) * N);

  auto kernel = tritium::jit(w4a16_gemm_kernel, "w4a16_gemm_kernel");
  Tiles t = tiles_for(ctx.dev, M);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  int grid = tritium::cdiv(M, t.m) * tritium::cdiv(N, t.n);
  ctx.launch([&] { kernel[{grid}](a, b, s, z, c, M, N, K, group_size, t.m, t.n, t.k, t.group); });

  auto got = c.to_host();
  // (q - z) is exact in fp16 and its product with s exact in f32: the kernel's weight is that
  // product rounded once to fp16, as here.
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(size_t(M) * N, 4096, rng)) {
    size_t i = idx / N, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k) {
      size_t g = size_t(k / group_size) * N + j;
      float w = float(int(q[size_t(k) * N + j]) - int(hz[g])) * float(hs[g]);
      acc += to_d(ha[i * K + k]) * to_d(half(w));
    }
    chk.add(to_d(got[idx]), acc, "c", idx);
  }
  double bytes = 2.0 * M * K + 0.5 * K * N + 3.0 * groups * N + 2.0 * M * N;
  return outcome(chk, bytes, 2.0 * M * N * K);
}

[[maybe_unused]] const int registered = zoo::add({"w4a16_gemm", "gemm", shapes, run});
} // namespace
