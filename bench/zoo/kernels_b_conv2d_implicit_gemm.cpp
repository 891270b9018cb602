// conv2d_implicit_gemm: a 3x3 convolution (stride 1, padding 1) of an NHWC fp16 image as an
// implicit GEMM (the Triton convolutions of Inductor and FlagGems): the output pixels are the
// GEMM's rows (N * P * Q), the output channels its columns, and its reduction runs over
// (r, s, c) = R * S * C. No im2col matrix is written: each K block of A is gathered from the
// image with the window offsets and a bounds mask (the padding reads zeros).
//   x: [N, H, W, C]; w: [R, S, C, KO] (row-major, i.e. the GEMM's B as [R * S * C, KO]);
//   y: [N, P, Q, KO] with P = H, Q = W.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

constexpr int R = 3, S = 3, PAD = 1;

void conv2d_implicit_gemm_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<tl::f16> w_ptr,
                                 tl::ptr<tl::f16> y_ptr, tl::i32 N, tl::i32 H, tl::i32 W, tl::i32 C,
                                 tl::i32 KO, tl::constexpr_<int> KR, tl::constexpr_<int> KS,
                                 tl::constexpr_<int> PADDING, tl::constexpr_<int> BLOCK_M,
                                 tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> BLOCK_K) {
  auto P = H, Q = W; // stride 1, "same" padding
  auto gemm_m = N * P * Q;
  auto gemm_k = C * (KR * KS);
  auto pid_m = tl::program_id(0);
  auto pid_n = tl::program_id(1);
  auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto m_mask = offs_m < gemm_m;
  auto n_img = offs_m / (P * Q);
  auto pq = offs_m % (P * Q);
  auto oh = pq / Q;
  auto ow = pq % Q;
  auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto n_mask = offs_n < KO;

  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(gemm_k, BLOCK_K))) {
    auto offs_k = k * BLOCK_K + tl::arange(0, BLOCK_K);
    auto k_mask = offs_k < gemm_k;
    // Reduction index -> (r, s, c), c fastest, as the weights and the NHWC image store them.
    auto r = offs_k / (KS * C);
    auto s = (offs_k / C) % KS;
    auto c = offs_k % C;
    auto ih = oh[{_, None}] + r[{None, _}] - PADDING;
    auto iw = ow[{_, None}] + s[{None, _}] - PADDING;
    auto a_mask =
        m_mask[{_, None}] && k_mask[{None, _}] && (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
    auto a =
        tl::load(x_ptr + ((n_img[{_, None}] * H + ih) * W + iw) * C + c[{None, _}], a_mask, 0.0);
    auto b = tl::load(w_ptr + offs_k[{_, None}] * KO + offs_n[{None, _}],
                      k_mask[{_, None}] && n_mask[{None, _}], 0.0);
    acc = tl::dot(a, b, acc);
  }
  tl::store(y_ptr + offs_m[{_, None}] * KO + offs_n[{None, _}], acc.to<half>(),
            m_mask[{_, None}] && n_mask[{None, _}]);
}

struct Tiles {
  int m, n, k, warps, stages;
};
Tiles tiles_for(const Device& dev, int KO) {
  if (is_gpu(dev))
    return KO <= 64 ? Tiles{128, 64, 32, 4, 3} : Tiles{128, 128, 32, 8, 3};
  return {32, 16, 16, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  // ResNet-50's 3x3 convolutions of stages 2 and 3, batch 32.
  if (full)
    return {"n32_h56_w56_c64_k64", "n32_h28_w28_c128_k128"};
  return {"n2_h8_w8_c16_k16", "n1_h5_w7_c8_k24"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int N = d["n"], H = d["h"], W = d["w"], C = d["c"], KO = d["k"];
  Rng rng("conv2d_implicit_gemm " + shape);
  auto hx = rng.uniform_vec<half>(size_t(N) * H * W * C, -1, 1);
  const double wr = 1 / std::sqrt(double(R * S * C));
  auto hw = rng.uniform_vec<half>(size_t(R) * S * C * KO, -wr, wr);
  auto x = ctx.dev.from_host(hx);
  auto w = ctx.dev.from_host(hw);
  auto y = ctx.dev.alloc<half>(size_t(N) * H * W * KO);

  auto kernel = tritium::jit(conv2d_implicit_gemm_kernel, "conv2d_implicit_gemm_kernel");
  Tiles t = tiles_for(ctx.dev, KO);
  kernel.options({.num_warps = t.warps, .num_stages = t.stages});
  const int gemm_m = N * H * W;
  ctx.launch([&] {
    kernel[{tritium::cdiv(gemm_m, t.m), tritium::cdiv(KO, t.n)}](x, w, y, N, H, W, C, KO, R, S, PAD,
                                                                 t.m, t.n, t.k);
  });

  auto got = y.to_host();
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(size_t(gemm_m) * KO, 4096, rng)) {
    size_t m = idx / KO, ko = idx % KO;
    int n = int(m / (H * W)), oh = int(m % (H * W)) / W, ow = int(m % W);
    double acc = 0;
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s) {
        int ih = oh + r - PAD, iw = ow + s - PAD;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
          continue;
        for (int c = 0; c < C; ++c)
          acc += to_d(hx[((size_t(n) * H + ih) * W + iw) * C + c]) *
                 to_d(hw[((size_t(r) * S + s) * C + c) * KO + ko]);
      }
    chk.add(to_d(got[idx]), acc, "y", idx);
  }
  double bytes = 2.0 * (hx.size() + hw.size() + double(gemm_m) * KO);
  return outcome(chk, bytes, 2.0 * gemm_m * double(KO) * R * S * C);
}

[[maybe_unused]] const int registered = zoo::add({"conv2d_implicit_gemm", "conv", shapes, run});
} // namespace
