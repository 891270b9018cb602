// Tutorial 13: tutorial 03's Llama MLP in fp8 (W8A8), as LLM serving runs it.
//
//   out = (silu(Xn @ Gᵀ) * (Xn @ Uᵀ)) @ Dᵀ,   Xn = RMSNorm(X) = X / sqrt(mean(X^2) + eps) * w
//
// The weights G, U (intermediate x hidden) and D (hidden x intermediate) are stored in fp8
// (float8e4nv) with one scale per output channel, as linear layers keep them (N x K rows), so
// each GEMM reads both operands with K contiguous: the order fp8 matrix instructions take.
// Activations are quantized per token on the way into each GEMM. You will learn:
//   * a prologue that fuses RMSNorm with the per-token quantization (the row's max|Xn| is the
//     scale), one program per token;
//   * both projections in one K loop of fp8 dots, their scales and SwiGLU in the epilogue;
//   * `tl::trans` of a weight tile loaded as stored: the dot's B without a copy;
//   * tiles per shape from tritium::autotune: 16-row tiles that stream the weights when
//     decoding, 128-row ones for a prefill.
//
// Usage: 13_llama_mlp_fp8 [--full | --small] [--tokens N]
//   Llama-7B's hidden 4096 / intermediate 11008 with --full (and on GPUs by default), 4096
//   tokens unless --tokens; the interpreter and --small run hidden 256 / intermediate 512.
//   Compare its time with `03_llama_mlp --full --tokens 4096` (fp16) on the same GPU.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::float8e4nv;
using tritium::half;

constexpr float kFp8Max = 448.f; // the largest finite float8e4nv
constexpr float kEps = 1e-6f;

// One program per token: Xn = RMSNorm(x) * w, then q = Xn / s in fp8 with s = max|Xn| / 448
// (stored). NORM = false quantizes the row as it is (the down projection's input h).
void norm_quant_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<tl::f16> w_ptr, tl::ptr<float8e4nv> q_ptr,
                       tl::ptr<float> s_ptr, tl::i32 K, tl::constexpr_<int> BLOCK,
                       tl::constexpr_<bool> NORM) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < K;
  auto x = tl::load(x_ptr + row * K + cols, mask, 0.0).to<float>();
  if (NORM)
    x = x * tl::rsqrt(tl::sum(x * x) / K + kEps) * tl::load(w_ptr + cols, mask, 0.0).to<float>();
  auto absmax = tl::maximum(tl::max(tl::abs(x)), 1e-10f);
  tl::store(q_ptr + row * K + cols, (x * (kFp8Max / absmax)).to<float8e4nv>(), mask);
  tl::store(s_ptr + row, absmax / kFp8Max);
}

// C = epilogue(A @ W1ᵀ [, A @ W2ᵀ]) for A (M x K) and W1, W2 (N x K) in fp8 with per-row scales
// sa (M) and per-channel scales s1, s2 (N). GLU: h = silu(A W1ᵀ) * (A W2ᵀ) (gate and up in one
// loop); otherwise the product itself. Rows past M and columns past N wrap around (computed,
// never stored).
void fp8_linear_kernel(tl::ptr<float8e4nv> a_ptr, tl::ptr<float> sa_ptr, tl::ptr<float8e4nv> w1_ptr,
                       tl::ptr<float> s1_ptr, tl::ptr<float8e4nv> w2_ptr, tl::ptr<float> s2_ptr,
                       tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                       tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                       tl::constexpr_<int> BLOCK_K, tl::constexpr_<bool> GLU) {
  auto offs_m = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N);
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + ((offs_m % M)[{_, None}] * K + offs_k[{None, _}]);
  // A [BLOCK_N, BLOCK_K] tile of each weight as stored; its transpose is the dot's B.
  auto w_offs = (offs_n % N)[{_, None}] * K + offs_k[{None, _}];
  auto w1_ptrs = w1_ptr + w_offs, w2_ptrs = w2_ptr + w_offs;
  auto acc1 = tl::zeros<float>({BLOCK_M, BLOCK_N});
  auto acc2 = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto k_mask = offs_k < K - k * BLOCK_K;
    auto a = tl::load(a_ptrs, k_mask[{None, _}], 0.0);
    acc1 = tl::dot(a, tl::trans(tl::load(w1_ptrs, k_mask[{None, _}], 0.0)), acc1);
    if (GLU)
      acc2 = tl::dot(a, tl::trans(tl::load(w2_ptrs, k_mask[{None, _}], 0.0)), acc2);
    a_ptrs += BLOCK_K;
    w1_ptrs += BLOCK_K;
    w2_ptrs += BLOCK_K;
  }
  // The scales factor out of the sums over K: applied once, to the f32 accumulators.
  auto sa = tl::load(sa_ptr + offs_m, offs_m < M, 0.f)[{_, None}];
  tl::tensor<float> out = acc1 * sa * tl::load(s1_ptr + offs_n, offs_n < N, 0.f)[{None, _}];
  if (GLU)
    out = out * tl::sigmoid(out) *
          (acc2 * sa * tl::load(s2_ptr + offs_n, offs_n < N, 0.f)[{None, _}]);
  auto mask = (offs_m[{_, None}] < M) && (offs_n[{None, _}] < N);
  tl::store(c_ptr + offs_m[{_, None}] * N + offs_n[{None, _}], out.to<half>(), mask);
}

// A weight (rows x cols, one row per output channel) in fp8 with its per-row scales.
struct Fp8Weight {
  std::vector<float8e4nv> q;
  std::vector<float> scale;
};

Fp8Weight quantize_rows(const std::vector<float>& w, int rows, int cols) {
  Fp8Weight r{std::vector<float8e4nv>(w.size()), std::vector<float>(rows)};
  for (int i = 0; i < rows; ++i) {
    float m = 1e-10f;
    for (int j = 0; j < cols; ++j)
      m = std::max(m, std::fabs(w[size_t(i) * cols + j]));
    r.scale[i] = m / kFp8Max;
    for (int j = 0; j < cols; ++j)
      r.q[size_t(i) * cols + j] = float8e4nv(w[size_t(i) * cols + j] / r.scale[i]);
  }
  return r;
}

int pow2_at_least(int n) {
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

// The tiles the autotuner tries for each projection (fp8: 128 K is 128 bytes a row). Decoding
// (16 tokens) streams the weights: 16-row tiles, narrow enough that the grid fills the GPU. A
// prefill batch: 128 x 128 tiles of two accumulators (gate and up), 128 x 256 of one (down);
// 64-row and 128-row tiles taller than the batch are pruned (the launch throws, the autotuner
// records why). The interpreter and the CPU run one configuration.
std::vector<tritium::Config> configs_for(const tritium::Device& dev, bool glu) {
  auto tile = [](int m, int n, int k, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M", m}, {"BLOCK_N", n}, {"BLOCK_K", k}}, warps, stages};
  };
  if (dev.name() != "cuda" && dev.name() != "hip")
    return {tile(64, 64, 64, 4, 3)};
  std::vector<tritium::Config> c{tile(16, 32, 256, 4, 3), tile(16, 64, 128, 4, 4),
                                 tile(16, 64, 256, 4, 3), tile(16, 128, 128, 4, 3),
                                 tile(64, 64, 128, 4, 4)};
  if (glu)
    c.insert(c.end(), {tile(128, 128, 128, 8, 4), tile(128, 128, 128, 8, 3)});
  else
    c.insert(c.end(), {tile(128, 256, 128, 8, 3), tile(128, 256, 128, 8, 4)});
  return c;
}

bool run(const tritium::Device& dev, int tokens, int hidden, int inter) {
  std::mt19937 rng(tokens * 31 + hidden);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<half> hx(size_t(tokens) * hidden), hnw(hidden);
  for (auto& v : hx)
    v = half(dist(rng));
  for (auto& v : hnw)
    v = half(1.f + 0.1f * dist(rng));
  auto weight = [&](int rows, int cols, float amp) {
    std::vector<float> w(size_t(rows) * cols);
    for (auto& v : w)
      v = amp * dist(rng);
    return quantize_rows(w, rows, cols);
  };
  const Fp8Weight G = weight(inter, hidden, 0.05f), U = weight(inter, hidden, 0.05f),
                  D = weight(hidden, inter, 0.02f);

  auto x = dev.from_host(hx);
  auto nw = dev.from_host(hnw);
  auto gq = dev.from_host(G.q), uq = dev.from_host(U.q), dq = dev.from_host(D.q);
  auto gs = dev.from_host(G.scale), us = dev.from_host(U.scale), ds = dev.from_host(D.scale);
  auto xq = dev.alloc<float8e4nv>(size_t(tokens) * hidden);
  auto hq = dev.alloc<float8e4nv>(size_t(tokens) * inter);
  auto xs = dev.alloc<float>(tokens), hs = dev.alloc<float>(tokens);
  auto h = dev.alloc<half>(size_t(tokens) * inter);
  auto out = dev.alloc<half>(size_t(tokens) * hidden);

  static auto quant = tritium::jit(norm_quant_kernel, "norm_quant_kernel");
  static auto gate_up =
      tritium::autotune(fp8_linear_kernel, "fp8_linear_kernel", configs_for(dev, true));
  static auto down =
      tritium::autotune(fp8_linear_kernel, "fp8_linear_kernel", configs_for(dev, false));
  const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
  const int bx = pow2_at_least(hidden), bh = pow2_at_least(inter);
  // A quantizing program reads its row at once: 32-64 elements a thread ran fastest on an H200
  // (x: 16 us on 2 warps against 23 on 16; h: 32 us on 8 warps against 38 on 16).
  auto quant_warps = [](int block) { return std::clamp(block / 2048, 1, 8); };
  // C (M x N) = the projection of A (M x K) by W1 [and W2] (N x K), tiled as the autotuner picks.
  auto linear = [&](auto& tuner, const auto& a, const auto& sa, const auto& w1, const auto& s1,
                    const auto& w2, const auto& s2, auto& c, int M, int N, int K, bool glu) {
    tuner(
        fmt::format("M={} N={} K={}", M, N, K),
        [&](auto& k, const tritium::Config& cfg) {
          const int bm = static_cast<int>(cfg["BLOCK_M"]), bn = static_cast<int>(cfg["BLOCK_N"]);
          if (gpu && bm > 16 && bm > M) // (elsewhere it is the one configuration)
            throw tritium::Error(
                fmt::format("BLOCK_M = {} is taller than the batch ({} tokens)", bm, M));
          k[{tritium::cdiv(M, bm), tritium::cdiv(N, bn)}](a, sa, w1, s1, w2, s2, c, M, N, K, bm, bn,
                                                          cfg["BLOCK_K"], glu);
        },
        dev);
  };
  auto forward = [&] {
    quant.options({.num_warps = quant_warps(bx)});
    quant[{tokens}](x, nw, xq, xs, hidden, bx, true);
    linear(gate_up, xq, xs, gq, gs, uq, us, h, tokens, inter, hidden, true);
    quant.options({.num_warps = quant_warps(bh)});
    quant[{tokens}](h, nw, hq, hs, inter, bh, false);
    linear(down, hq, hs, dq, ds, dq, ds, out, tokens, hidden, inter, false);
  };
  forward();
  dev.synchronize();

  // Each GEMM against a double-precision product of the fp8 operands the kernels were given
  // (their quantization is the rounding of x / s, checked in tutorial 12), on sampled entries.
  const auto gxq = xq.to_host(), ghq = hq.to_host();
  const auto gxs = xs.to_host(), ghs = hs.to_host();
  const auto gh = h.to_host(), gout = out.to_host();
  std::uniform_int_distribution<int> pick_t(0, tokens - 1), pick_f(0, inter - 1),
      pick_h(0, hidden - 1);
  double h_err = 0, h_max = 1e-30, o_err = 0, o_max = 1e-30;
  for (int s = 0; s < 512; ++s) {
    const int t = pick_t(rng), f = pick_f(rng), o = pick_h(rng);
    double g = 0, u = 0, y = 0;
    for (int k = 0; k < hidden; ++k) {
      const double a = float(gxq[size_t(t) * hidden + k]);
      g += a * float(G.q[size_t(f) * hidden + k]);
      u += a * float(U.q[size_t(f) * hidden + k]);
    }
    g *= double(gxs[t]) * G.scale[f];
    u *= double(gxs[t]) * U.scale[f];
    const double href = g / (1 + std::exp(-g)) * u;
    h_max = std::max(h_max, std::fabs(href));
    h_err = std::max(h_err, std::fabs(double(float(gh[size_t(t) * inter + f])) - href));
    for (int k = 0; k < inter; ++k)
      y += double(float(ghq[size_t(t) * inter + k])) * float(D.q[size_t(o) * inter + k]);
    y *= double(ghs[t]) * D.scale[o];
    o_max = std::max(o_max, std::fabs(y));
    o_err = std::max(o_err, std::fabs(double(float(gout[size_t(t) * hidden + o])) - y));
  }
  // fp16 results of f32 sums; fp8 matrix units with their own accumulation (bench/RESULTS.md).
  const double bound = 1e-2;
  const bool ok = h_err / h_max <= bound && o_err / o_max <= bound;
  const int reps = dev.name() == "interpreter" || dev.name() == "gpu-emulator" ? 1 : 10;
  const double ms = tritium::bench(dev, forward, {.warmup = 0, .reps = reps}).median_ms;
  const double flops = 2.0 * tokens * hidden * inter * 3;
  fmt::print("tokens {:5}, hidden {:5}, intermediate {:5}: largest error of h {:.2e}, of out "
             "{:.2e} (bound {:.0e}); {:9.3f} ms ({:.0f} TFLOP/s)  {}\n",
             tokens, hidden, inter, h_err / h_max, o_err / o_max, bound, ms,
             flops / (ms * 1e-3) / 1e12, ok ? "ok" : "WRONG");
  return ok;
}

int main(int argc, char** argv) {
  try {
    bool full = false, small = false;
    int tokens = 0;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--full") == 0)
        full = true;
      else if (std::strcmp(argv[i], "--small") == 0)
        small = true;
      else if (std::strcmp(argv[i], "--tokens") == 0 && i + 1 < argc &&
               (tokens = std::atoi(argv[i + 1])) > 0)
        ++i;
      else {
        fmt::print(stderr, "usage: {} [--full | --small] [--tokens N (N > 0)]\n", argv[0]);
        return 2;
      }
    }
    tritium::Device dev = tritium::default_device();
    fmt::print("device: {}\n", dev.str());
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    const bool big = full || (gpu && !small);
    std::vector<int> batches = tokens ? std::vector<int>{tokens}
                               : big  ? std::vector<int>{16, 4096}
                                      : std::vector<int>{16, 100};
    bool ok = true;
    for (int t : batches)
      ok = (big ? run(dev, t, 4096, 11008) : run(dev, t, 256, 512)) && ok;
    fmt::print("{}\n", ok ? "all shapes ok" : "SOME SHAPES WRONG");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
