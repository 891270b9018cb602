// acc_plus_dot_gemm: a plain fp16 GEMM whose K loop is written `acc += tl.dot(a, b)`, the way
// vLLM's fused MoE kernel and Inductor's generated GEMMs write it (rather than
// `acc = tl.dot(a, b, acc)`, as Triton's tutorial does). Triton folds the add into the dot's
// accumulator; this entry checks that tritium does as well as with the three-operand form.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void acc_plus_dot_gemm_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr,
                              tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                              tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk,
                              tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
                              tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                              tl::constexpr_<int> BLOCK_K, tl::constexpr_<int> GROUP_M) {
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto num_pid_in_group = GROUP_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + (offs_am[{_, None}] * stride_am + offs_k[{None, _}] * stride_ak);
  auto b_ptrs = b_ptr + (offs_k[{_, None}] * stride_bk + offs_bn[{None, _}] * stride_bn);
  auto accumulator = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto a = tl::load(a_ptrs, offs_k[{None, _}] < K - k * BLOCK_K, 0.0);
    auto b = tl::load(b_ptrs, offs_k[{_, None}] < K - k * BLOCK_K, 0.0);
    accumulator += tl::dot(a, b);
    a_ptrs += BLOCK_K * stride_ak;
    b_ptrs += BLOCK_K * stride_bk;
  }
  auto c = accumulator.to<half>();
  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  tl::store(c_ptr + stride_cm * offs_cm[{_, None}] + stride_cn * offs_cn[{None, _}], c,
            (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N));
}

struct Tiles {
  int m, n, k, group, warps, stages;
};
// Triton's tutorial configuration for fp16 on Hopper-class GPUs (the twin uses the same).
Tiles tiles_for(const Device& dev) {
  if (is_gpu(dev))
    return {128, 256, 64, 8, 8, 3};
  return {32, 32, 32, 8, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"m1024_n1024_k1024", "m4096_n4096_k4096"};
  return {"m64_n64_k64", "m80_n96_k72"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int M = d["m"], N = d["n"], K = d["k"];
  Rng rng("acc_plus_dot_gemm " + shape);
  auto ha = rng.uniform_vec<half>(size_t(M) * K, -1, 1);
  auto hb = rng.uniform_vec<half>(size_t(K) * N, -1, 1);
  auto a = ctx.dev.from_host(ha);
  auto b = ctx.dev.from_host(hb);
  auto c = ctx.dev.alloc<half>(size_t(M) * N);

  auto kernel = tritium::jit(acc_plus_dot_gemm_kernel, "acc_plus_dot_gemm_kernel");
  Tiles t = tiles_for(ctx.dev);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  int grid = tritium::cdiv(M, t.m) * tritium::cdiv(N, t.n);
  ctx.launch([&] { kernel[{grid}](a, b, c, M, N, K, K, 1, N, 1, N, 1, t.m, t.n, t.k, t.group); });

  auto got = c.to_host();
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(size_t(M) * N, 4096, rng)) {
    size_t i = idx / N, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += to_d(ha[i * K + k]) * to_d(hb[size_t(k) * N + j]);
    chk.add(to_d(got[idx]), acc, "c", idx);
  }
  return outcome(chk, 2.0 * (double(M) * K + double(K) * N + double(M) * N), 2.0 * M * N * K);
}

[[maybe_unused]] const int registered = zoo::add({"acc_plus_dot_gemm", "gemm", shapes, run});
} // namespace
