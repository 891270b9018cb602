// bmm: a batched fp16 GEMM, C[b] = A[b] @ B[b] with A [BATCH, M, K], B [BATCH, K, N] (torch.bmm
// as Inductor and FlagGems lower it to Triton): the GEMM tile loop with the batch as the grid's
// second axis.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void bmm_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr, tl::ptr<tl::f16> c_ptr, tl::i32 M,
                tl::i32 N, tl::i32 K, tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                tl::constexpr_<int> BLOCK_K, tl::constexpr_<int> GROUP_M) {
  auto pid = tl::program_id(0);
  auto batch = tl::program_id(1);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto [pid_m, pid_n] =
      tl::swizzle2d(pid / num_pid_n, pid % num_pid_n, tl::cdiv(M, BLOCK_M), num_pid_n, GROUP_M);
  a_ptr += batch * M * K;
  b_ptr += batch * K * N;
  c_ptr += batch * M * N;
  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + offs_am[{_, None}] * K + offs_k[{None, _}];
  auto b_ptrs = b_ptr + offs_k[{_, None}] * N + offs_bn[{None, _}];
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto a = tl::load(a_ptrs, offs_k[{None, _}] < K - k * BLOCK_K, 0.0);
    auto b = tl::load(b_ptrs, offs_k[{_, None}] < K - k * BLOCK_K, 0.0);
    acc = tl::dot(a, b, acc);
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
Tiles tiles_for(const Device& dev) {
  if (is_gpu(dev))
    return {128, 128, 64, 8, 8, 3};
  return {32, 32, 32, 4, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"b16_m1024_n1024_k1024", "b64_m512_n512_k128"};
  return {"b3_m48_n40_k56", "b2_m64_n64_k32"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int BATCH = d["b"], M = d["m"], N = d["n"], K = d["k"];
  Rng rng("bmm " + shape);
  auto ha = rng.uniform_vec<half>(size_t(BATCH) * M * K, -1, 1);
  auto hb = rng.uniform_vec<half>(size_t(BATCH) * K * N, -1, 1);
  auto a = ctx.dev.from_host(ha);
  auto b = ctx.dev.from_host(hb);
  auto c = ctx.dev.alloc<half>(size_t(BATCH) * M * N);

  auto kernel = tritium::jit(bmm_kernel, "bmm_kernel");
  Tiles t = tiles_for(ctx.dev);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  const int tiles = tritium::cdiv(M, t.m) * tritium::cdiv(N, t.n);
  ctx.launch([&] { kernel[{tiles, BATCH}](a, b, c, M, N, K, t.m, t.n, t.k, t.group); });

  auto got = c.to_host();
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(got.size(), 4096, rng)) {
    size_t bt = idx / (size_t(M) * N), i = idx / N % M, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += to_d(ha[(bt * M + i) * K + k]) * to_d(hb[(bt * K + k) * N + j]);
    chk.add(to_d(got[idx]), acc, "c", idx);
  }
  return outcome(chk, 2.0 * (ha.size() + hb.size() + got.size()), 2.0 * BATCH * double(M) * N * K);
}

[[maybe_unused]] const int registered = zoo::add({"bmm", "gemm", shapes, run});
} // namespace
