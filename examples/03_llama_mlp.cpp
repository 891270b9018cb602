// Tutorial 03: the MLP block of Llama, with its RMSNorm, in two or three kernels.
//
//   out = (silu(Xn @ G) * (Xn @ U)) @ D,   Xn = RMSNorm(X) = X / sqrt(mean(X^2) + eps) * w
//
// X holds a few tokens (16 here: a decoding batch) of `hidden` features; G and U project to
// `intermediate` features, D back. You will learn:
//   * step 1: an elementwise kernel, the "triple elementwise multiplication"
//     h = g * sigmoid(g) * u (silu(g) = g * sigmoid(g)) on its own;
//   * step 2: a standalone RMSNorm and a plain matmul, which with step 1 make the unfused
//     block: 5 kernels, with Xn, X@G, X@U and h going through memory;
//   * step 3: one kernel that computes both projections in one loop (two accumulators sharing
//     each loaded block of X * w), sums the squares of X in the same loop, scales the rows by
//     their rstd after it (the norm is a per-row factor, so it comes out of the dots) and
//     applies step 1 in its epilogue: only h is written. With the down projection, the block
//     takes 2 kernels;
//   * tile shapes for skinny products (16 rows): tritium::autotune picks BLOCK_N, BLOCK_K,
//     num_warps and num_stages per shape, so that enough programs fill the GPU.
//   * step 4: for a prefill (thousands of tokens) the projections are full GEMMs, fastest
//     with their operands copied by TMA: step 2's RMSNorm, then one GEMM with both
//     accumulators and step 1 in its epilogue (3 kernels).
//
// Usage: 03_llama_mlp [--full | --small] [--tokens N]
//   Shapes: hidden 1024 / intermediate 11008 (a toy Llama) and 4096 / 11008 (Llama-7B), 16
//   tokens (--tokens N for another batch, e.g. 4096 for a prefill). The reference interpreter runs
//   them scaled down (hidden 256 / intermediate 688) by default, to finish in seconds; --full runs
//   the real shapes on any device, --small the scaled-down ones everywhere.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::Buffer;
using tritium::half;

// --- step 1: the triple elementwise multiplication ----------------------------------------
// h = g * sigmoid(g) * u over n elements, in f32, stored as fp16.
void silu_mul_kernel(tl::ptr<tl::f16> g_ptr, tl::ptr<tl::f16> u_ptr, tl::ptr<tl::f16> h_ptr,
                     tl::i32 n, tl::constexpr_<int> BLOCK_SIZE) {
  auto offs = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offs < n;
  auto g = tl::load(g_ptr + offs, mask).to<float>();
  auto u = tl::load(u_ptr + offs, mask).to<float>();
  tl::store(h_ptr + offs, (g * tl::sigmoid(g) * u).to<half>(), mask);
}

// --- step 2: the unfused pieces ------------------------------------------------------------
// One program per row: y = x / sqrt(mean(x^2) + eps) * w, with BLOCK_SIZE >= the row length.
void rmsnorm_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<tl::f16> w_ptr, tl::ptr<tl::f16> y_ptr,
                    tl::i32 n_cols, tl::f32 eps, tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK_SIZE);
  auto mask = cols < n_cols;
  auto x = tl::load(x_ptr + row * n_cols + cols, mask, 0.0).to<float>();
  auto rstd = tl::rsqrt(tl::sum(x * x) / n_cols + eps);
  auto w = tl::load(w_ptr + cols, mask).to<float>();
  tl::store(y_ptr + row * n_cols + cols, (x * rstd * w).to<half>(), mask);
}

// C (M x N) = A (M x K) @ B (K x N), row-major, fp16 in and out, f32 accumulation.
// Program (pid_n, pid_m) of a 2-D grid computes one BLOCK_M x BLOCK_N block.
void matmul_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr, tl::ptr<tl::f16> c_ptr,
                   tl::i32 M, tl::i32 N, tl::i32 K, tl::constexpr_<int> BLOCK_M,
                   tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> BLOCK_K) {
  // Grouped ordering (tl::swizzle2d, as in tutorial 02): programs launched together walk 8
  // rows of blocks column by column, so that they share rows of A and columns of B in L2.
  auto [pid_m, pid_n] = tl::swizzle2d(tl::program_id(1), tl::program_id(0), tl::cdiv(M, BLOCK_M),
                                      tl::cdiv(N, BLOCK_N), 8);
  // A and B through tensor descriptors (tutorial 09's Hopper idiom): a block is loaded by its
  // offsets, zeros past the edges; where the GPU has TMA (sm_90a) and the rows are 16-byte
  // aligned, the pipeliner copies the blocks with it (measured on an H200 with bench_gemm
  // --descriptor: the GEMM at cuBLAS's speed, 5-8 % faster than through pointers).
  auto a_desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K});
  auto b_desc = tl::make_tensor_descriptor(b_ptr, {K, N}, {N, 1}, {BLOCK_K, BLOCK_N});
  auto c_desc = tl::make_tensor_descriptor(c_ptr, {M, N}, {N, 1}, {BLOCK_M, BLOCK_N});
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto a = a_desc.load({pid_m * BLOCK_M, k * BLOCK_K});
    auto b = b_desc.load({k * BLOCK_K, pid_n * BLOCK_N});
    acc = tl::dot(a, b, acc);
  }
  c_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, acc.to<half>());
}

// --- step 3: RMSNorm, gate and up projections, and step 1, in one kernel ---------------------
// H (M x N) = silu(Xn @ G) * (Xn @ U) with Xn = RMSNorm(X): X is M x K, G and U are K x N.
void rmsnorm_gate_up_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<tl::f16> norm_w_ptr,
                            tl::ptr<tl::f16> g_ptr, tl::ptr<tl::f16> u_ptr, tl::ptr<tl::f16> h_ptr,
                            tl::i32 M, tl::i32 N, tl::i32 K, tl::f32 eps,
                            tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                            tl::constexpr_<int> BLOCK_K) {
  auto [pid_m, pid_n] = tl::swizzle2d(tl::program_id(1), tl::program_id(0), tl::cdiv(M, BLOCK_M),
                                      tl::cdiv(N, BLOCK_N), 8);
  auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto offs_k = tl::arange(0, BLOCK_K);
  auto m_mask = offs_m[{_, None}] < M;
  auto n_mask = offs_n[{None, _}] < N;

  // One pass over X. RMSNorm scales each row by its rstd, a per-row factor, so it comes out of
  // the dots: Xn @ G = diag(rstd) ((X * w) @ G). The loop feeds X * w to both dots and sums the
  // squares of the same X tile; the rows are scaled after the loop, once the sums are
  // complete. (A first pass to find rstd, then the dots, reads X twice with a loop of
  // dependent loads before any matrix work.)
  auto sum_sq = tl::zeros<float>({BLOCK_M});
  auto acc_g = tl::zeros<float>({BLOCK_M, BLOCK_N});
  auto acc_u = tl::zeros<float>({BLOCK_M, BLOCK_N});
  // Rows and columns past the edge wrap around (% M, % N, as tutorial 02 does) and compute
  // values the masked store drops: only K is masked.
  auto x_ptrs = x_ptr + (offs_m % M)[{_, None}] * K + offs_k[{None, _}];
  auto w_ptrs = norm_w_ptr + offs_k;
  auto b_offs = offs_k[{_, None}] * N + (offs_n % N)[{None, _}];
  auto g_ptrs = g_ptr + b_offs;
  auto u_ptrs = u_ptr + b_offs;
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto k_mask = offs_k < K - k * BLOCK_K;
    auto x = tl::load(x_ptrs, k_mask[{None, _}], 0.0).to<float>();
    sum_sq += tl::sum(x * x, 1);
    auto w = tl::load(w_ptrs, k_mask, 0.0).to<float>();
    auto xw = (x * w[{None, _}]).to<half>();
    acc_g = tl::dot(xw, tl::load(g_ptrs, k_mask[{_, None}], 0.0), acc_g);
    acc_u = tl::dot(xw, tl::load(u_ptrs, k_mask[{_, None}], 0.0), acc_u);
    x_ptrs += BLOCK_K;
    w_ptrs += BLOCK_K;
    g_ptrs += BLOCK_K * N;
    u_ptrs += BLOCK_K * N;
  }
  auto rstd = tl::rsqrt(sum_sq / K + eps)[{_, None}];
  acc_g = acc_g * rstd;
  acc_u = acc_u * rstd;

  // The epilogue is step 1, on the accumulators: silu(g) * u = g * sigmoid(g) * u.
  auto h = acc_g * tl::sigmoid(acc_g) * acc_u;
  tl::store(h_ptr + offs_m[{_, None}] * N + offs_n[{None, _}], h.to<half>(), m_mask && n_mask);
}

// --- step 4: a prefill's gate and up projections, and step 1, in one GEMM -------------------
// H (M x N) = silu(A @ G) * (A @ U), A = RMSNorm(X) from step 2's kernel. With thousands of
// tokens the projections are GEMMs like step 2's, and step 3's kernel is slow at them: it
// computes its a operand (X * w) in registers, so each block goes from the load's layout to the
// dot's through shared memory, and no TMA copy can fill it. Here A, G and U are tensor
// descriptors (TMA copies on sm_90a), the two accumulators share each block of A, and only H is
// written: g and u never go through memory.
void gate_up_silu_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> g_ptr, tl::ptr<tl::f16> u_ptr,
                         tl::ptr<tl::f16> h_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                         tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                         tl::constexpr_<int> BLOCK_K) {
  auto [pid_m, pid_n] = tl::swizzle2d(tl::program_id(1), tl::program_id(0), tl::cdiv(M, BLOCK_M),
                                      tl::cdiv(N, BLOCK_N), 8);
  auto a_desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K});
  auto g_desc = tl::make_tensor_descriptor(g_ptr, {K, N}, {N, 1}, {BLOCK_K, BLOCK_N});
  auto u_desc = tl::make_tensor_descriptor(u_ptr, {K, N}, {N, 1}, {BLOCK_K, BLOCK_N});
  auto h_desc = tl::make_tensor_descriptor(h_ptr, {M, N}, {N, 1}, {BLOCK_M, BLOCK_N});
  auto acc_g = tl::zeros<float>({BLOCK_M, BLOCK_N});
  auto acc_u = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto a = a_desc.load({pid_m * BLOCK_M, k * BLOCK_K});
    acc_g = tl::dot(a, g_desc.load({k * BLOCK_K, pid_n * BLOCK_N}), acc_g);
    acc_u = tl::dot(a, u_desc.load({k * BLOCK_K, pid_n * BLOCK_N}), acc_u);
  }
  h_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, (acc_g * tl::sigmoid(acc_g) * acc_u).to<half>());
}

// --- host side -------------------------------------------------------------------------------
constexpr float EPS = 1e-6f;

int next_pow2(int n) {
  int b = 1;
  while (b < n)
    b *= 2;
  return b;
}

// The tiles the autotuner tries for both kernels. A decoding batch (16 tokens) takes 16-row
// tiles, and its grid has N / BLOCK_N programs: narrow tiles fill a GPU's SMs when N is 4096,
// wide ones cost fewer loads of X when N is 11008. A prefill batch (thousands of tokens) takes
// the GEMM tiles of example 02. Tiles taller than the batch are pruned (the launch throws, and
// the autotuner records why). The interpreter and the CPU run one configuration.
std::vector<tritium::Config> configs_for(const tritium::Device& dev) {
  auto tile = [](int m, int n, int k, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M", m}, {"BLOCK_N", n}, {"BLOCK_K", k}}, warps, stages};
  };
  if (dev.name() == "cuda" || dev.name() == "hip")
    return {tile(16, 32, 128, 4, 4),  tile(16, 32, 256, 4, 3),  tile(16, 64, 64, 4, 4),
            tile(16, 64, 128, 4, 4),  tile(16, 64, 256, 4, 3),  tile(16, 128, 64, 4, 4),
            tile(16, 128, 128, 4, 3), tile(64, 128, 64, 4, 4),  tile(128, 128, 64, 8, 4),
            tile(128, 256, 64, 8, 3), tile(128, 256, 64, 8, 4), tile(128, 128, 32, 4, 4),
            tile(64, 64, 64, 4, 3)};
  return {tile(16, 64, 64, 4, 3)};
}

// The configuration's BLOCK_M, unless it is taller than the batch (then the configuration is
// pruned: the autotuner records the error and tries the next).
int block_m(const tritium::Config& cfg, int tokens) {
  const int m = static_cast<int>(cfg["BLOCK_M"]);
  if (m > 16 && m > tokens)
    throw tritium::Error(
        fmt::format("BLOCK_M = {} is taller than the batch ({} tokens)", m, tokens));
  return m;
}

std::string shape_key(int M, int N, int K) {
  return fmt::format("M={} N={} K={}", M, N, K);
}

void matmul(const Buffer<half>& a, const Buffer<half>& b, Buffer<half>& c, int M, int N, int K) {
  static auto kernel = tritium::autotune(matmul_kernel, "matmul_kernel", configs_for(a.device()));
  kernel(
      shape_key(M, N, K),
      [&](auto& k, const tritium::Config& cfg) {
        const int bm = block_m(cfg, M);
        k[{tritium::cdiv(N, int(cfg["BLOCK_N"])), tritium::cdiv(M, bm)}](
            a, b, c, M, N, K, bm, cfg["BLOCK_N"], cfg["BLOCK_K"]);
      },
      a.device());
}

struct Weights {
  Buffer<half> norm_w, g, u, d;
};

// A prefill batch's tiles for step 4 (two accumulators: 128 x 128 each at most).
std::vector<tritium::Config> prefill_configs_for(const tritium::Device& dev) {
  auto tile = [](int m, int n, int k, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M", m}, {"BLOCK_N", n}, {"BLOCK_K", k}}, warps, stages};
  };
  if (dev.name() == "cuda" || dev.name() == "hip")
    return {tile(128, 128, 64, 8, 3), tile(128, 128, 64, 8, 4), tile(128, 64, 64, 4, 4),
            tile(128, 64, 64, 8, 4),  tile(64, 128, 64, 4, 4),  tile(128, 128, 32, 8, 4)};
  return {tile(16, 64, 64, 4, 3)};
}

// From this many tokens on (a prefill), the fused block is steps 2's RMSNorm and step 4; below
// it (decoding), step 3's one kernel.
constexpr int kPrefillTokens = 128;

// The fused block: 2 kernels when decoding, 3 for a prefill.
void mlp_fused(const Buffer<half>& x, const Weights& w, Buffer<half>& xn, Buffer<half>& h,
               Buffer<half>& out, int tokens, int hidden, int inter) {
  if (tokens >= kPrefillTokens) {
    static auto norm = tritium::jit(rmsnorm_kernel, "rmsnorm_kernel");
    static auto gate_up = tritium::autotune(gate_up_silu_kernel, "gate_up_silu_kernel",
                                            prefill_configs_for(x.device()));
    norm[{tokens}](x, w.norm_w, xn, hidden, EPS, next_pow2(hidden));
    gate_up(
        shape_key(tokens, inter, hidden),
        [&](auto& k, const tritium::Config& cfg) {
          const int bm = block_m(cfg, tokens);
          k[{tritium::cdiv(inter, int(cfg["BLOCK_N"])), tritium::cdiv(tokens, bm)}](
              xn, w.g, w.u, h, tokens, inter, hidden, bm, cfg["BLOCK_N"], cfg["BLOCK_K"]);
        },
        x.device());
  } else {
    static auto kernel = tritium::autotune(rmsnorm_gate_up_kernel, "rmsnorm_gate_up_kernel",
                                           configs_for(x.device()));
    kernel(
        shape_key(tokens, inter, hidden),
        [&](auto& k, const tritium::Config& cfg) {
          const int bm = block_m(cfg, tokens);
          k[{tritium::cdiv(inter, int(cfg["BLOCK_N"])), tritium::cdiv(tokens, bm)}](
              x, w.norm_w, w.g, w.u, h, tokens, inter, hidden, EPS, bm, cfg["BLOCK_N"],
              cfg["BLOCK_K"]);
        },
        x.device());
  }
  matmul(h, w.d, out, tokens, hidden, inter);
}

struct Scratch {
  Buffer<half> xn, g, u, h;
};

// The unfused block: 5 kernels.
void mlp_unfused(const Buffer<half>& x, const Weights& w, Scratch& s, Buffer<half>& out, int tokens,
                 int hidden, int inter) {
  static auto norm = tritium::jit(rmsnorm_kernel, "rmsnorm_kernel");
  static auto silu_mul = tritium::jit(silu_mul_kernel, "silu_mul_kernel");
  norm[{tokens}](x, w.norm_w, s.xn, hidden, EPS, next_pow2(hidden));
  matmul(s.xn, w.g, s.g, tokens, inter, hidden);
  matmul(s.xn, w.u, s.u, tokens, inter, hidden);
  int n = tokens * inter;
  silu_mul[{tritium::cdiv(n, 1024)}](s.g, s.u, s.h, n, 1024);
  matmul(s.h, w.d, out, tokens, hidden, inter);
}

// Median time of `reps` runs after one that compiles, in milliseconds (tritium::bench: device
// events on GPUs, the caches flushed before each run).
double time_ms(const tritium::Device& dev, const std::function<void()>& fn, int reps) {
  return tritium::bench(dev, fn, {.warmup = 0, .reps = reps}).median_ms;
}

std::vector<half> random_halves(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<half> v(n);
  for (auto& x : v)
    x = half(dist(rng));
  return v;
}

// Returns false if a result is wrong.
bool run(const tritium::Device& dev, int tokens, int hidden, int inter, bool interpreter) {
  std::mt19937 rng(hidden + inter);
  // Weights scaled by 1/sqrt(fan-in) keep every intermediate value near 1.
  float sg = 1.f / std::sqrt(float(hidden)), sd = 1.f / std::sqrt(float(inter));
  auto hx = random_halves(rng, size_t(tokens) * hidden, -1.f, 1.f);
  auto hw = random_halves(rng, hidden, 0.5f, 1.5f);
  auto hg = random_halves(rng, size_t(hidden) * inter, -sg, sg);
  auto hu = random_halves(rng, size_t(hidden) * inter, -sg, sg);
  auto hd = random_halves(rng, size_t(inter) * hidden, -sd, sd);
  auto x = dev.from_host(hx);
  Weights w{dev.from_host(hw), dev.from_host(hg), dev.from_host(hu), dev.from_host(hd)};
  auto h = dev.alloc<half>(size_t(tokens) * inter);
  auto out = dev.alloc<half>(size_t(tokens) * hidden);
  auto out_unfused = dev.alloc<half>(size_t(tokens) * hidden);
  Scratch s{dev.alloc<half>(size_t(tokens) * hidden), dev.alloc<half>(size_t(tokens) * inter),
            dev.alloc<half>(size_t(tokens) * inter), dev.alloc<half>(size_t(tokens) * inter)};

  // The first runs trace and compile the kernels; on the interpreter and the gpu-emulator (a
  // check of the GPU lowering on the CPU, not a GPU) a second one is the timing.
  const bool simulated = interpreter || dev.name() == "gpu-emulator";
  const int reps = simulated ? 1 : 20;
  double fused = time_ms(
      dev, [&] { mlp_fused(x, w, s.xn, h, out, tokens, hidden, inter); }, reps);
  double unfused = time_ms(
      dev, [&] { mlp_unfused(x, w, s, out_unfused, tokens, hidden, inter); }, reps);
  auto got = out.to_host(), got_unfused = out_unfused.to_host();

  // Plain C++ reference, in double, on every token of a decoding batch and 16 sampled tokens of
  // a larger one.
  auto f = [](half v) { return double(float(v)); };
  double max_err = 0, max_err_unfused = 0, max_ref = 0;
  std::vector<double> xn(hidden), gate(inter), up(inter);
  std::vector<int> checked;
  for (int t = 0; t < tokens; t += std::max(1, tokens / 16))
    checked.push_back(t);
  for (int t : checked) {
    double ss = 0;
    for (int k = 0; k < hidden; ++k)
      ss += f(hx[size_t(t) * hidden + k]) * f(hx[size_t(t) * hidden + k]);
    double rstd = 1.0 / std::sqrt(ss / hidden + EPS);
    for (int k = 0; k < hidden; ++k)
      xn[k] = f(hx[size_t(t) * hidden + k]) * rstd * f(hw[k]);
    std::fill(gate.begin(), gate.end(), 0.0);
    std::fill(up.begin(), up.end(), 0.0);
    for (int k = 0; k < hidden; ++k)
      for (int n = 0; n < inter; ++n) {
        gate[n] += xn[k] * f(hg[size_t(k) * inter + n]);
        up[n] += xn[k] * f(hu[size_t(k) * inter + n]);
      }
    for (int n = 0; n < inter; ++n)
      gate[n] = gate[n] / (1.0 + std::exp(-gate[n])) * up[n]; // silu(g) * u
    for (int j = 0; j < hidden; ++j) {
      double o = 0;
      for (int n = 0; n < inter; ++n)
        o += gate[n] * f(hd[size_t(n) * hidden + j]);
      size_t idx = size_t(t) * hidden + j;
      max_ref = std::max(max_ref, std::fabs(o));
      max_err = std::max(max_err, std::fabs(f(got[idx]) - o));
      max_err_unfused = std::max(max_err_unfused, std::fabs(f(got_unfused[idx]) - o));
    }
  }
  // fp16 intermediates (Xn, h) and output: a few units of 2^-11 relative to the output scale.
  const double bound = 1e-2;
  double rel = max_err / max_ref, rel_unfused = max_err_unfused / max_ref;
  bool ok = rel <= bound && rel_unfused <= bound;

  fmt::print(
      "tokens {:3}, hidden {:5}, intermediate {:5}: max relative error {:.2e} (unfused "
      "{:.2e}, bound {:.0e})  fused ({} kernels) {:9.3f} ms, unfused (5 kernels) {:9.3f} ms  "
      "{}\n",
      tokens, hidden, inter, rel, rel_unfused, bound, tokens >= kPrefillTokens ? 3 : 2, fused,
      unfused, ok ? "ok" : "WRONG");
  if (!simulated) {
    // What a decoding loop sees: one call and its synchronization, launch cost included.
    auto host_ms = [&](const std::function<void()>& fn) {
      std::vector<double> t;
      for (int i = 0; i < 21; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        dev.synchronize();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    fmt::print("    host time per call (launch + synchronize, median of 21): fused {:.3f} ms, "
               "unfused {:.3f} ms\n",
               host_ms([&] { mlp_fused(x, w, s.xn, h, out, tokens, hidden, inter); }),
               host_ms([&] { mlp_unfused(x, w, s, out_unfused, tokens, hidden, inter); }));
  }
  return ok;
}

int main(int argc, char** argv) {
  try {
    bool full = false, small = false;
    int tokens = 16;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--full") == 0)
        full = true;
      else if (std::strcmp(argv[i], "--small") == 0)
        small = true;
      else if (std::strcmp(argv[i], "--tokens") == 0 && i + 1 < argc &&
               (tokens = std::atoi(argv[i + 1])) > 0)
        ++i;
      else {
        fmt::print(stderr, "usage: {} [--full | --small] [--tokens N (N > 0, default 16)]\n",
                   argv[0]);
        return 2;
      }
    }
    auto dev = tritium::default_device();
    const bool interpreter = dev.name() == "interpreter";
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    fmt::print("out = (silu(Xn @ G) * (Xn @ U)) @ D, Xn = RMSNorm(X); fp16 data, f32 "
               "accumulation\n");
    struct Case {
      int hidden, inter;
    };
    std::vector<Case> cases{{1024, 11008}, {4096, 11008}};
    if (small || (interpreter && !full)) {
      fmt::print("running scaled-down shapes ({}); pass --full for hidden 1024 and 4096 / "
                 "intermediate 11008\n",
                 small ? "--small" : "the interpreter runs one element at a time");
      cases = {{256, 688}, {512, 1376}};
    }
    if (interpreter)
      fmt::print("note: interpreter timings measure the reference interpreter, not a GPU\n");
    bool ok = true;
    for (auto c : cases)
      ok = run(dev, tokens, c.hidden, c.inter, interpreter) && ok;
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
