// Tutorial 08: fused attention (forward).
//
// Triton's tutorial 06, forward pass, in C++: the Flash Attention v2 algorithm (Tri Dao,
// https://tridao.me/publications/flash2/flash2.pdf). For each batch b and head h,
//   O = softmax(Q K^T * sm_scale) V        (Q, K, V, O: fp16 [B, H, N_CTX, HEAD_DIM])
// without ever storing the N_CTX x N_CTX score matrix: each program owns BLOCK_M rows of Q and
// walks over K and V in blocks of BLOCK_N rows, keeping a running maximum m_i and a running sum
// l_i of the exponentials per row ("online softmax"): when a new block raises the maximum, the
// accumulator and the sum so far are rescaled by 2^(m_old - m_new). The kernel also writes
// M = m_i + log2(l_i), the base-2 logsumexp of each row, which a backward pass needs.
// You will learn:
//   * tensor descriptors (tl::make_tensor_descriptor, desc.load / desc.store) over a 2-D view
//     [B * H * N_CTX, HEAD_DIM] of each tensor;
//   * tl::dot on fp16 blocks with an f32 accumulator, and tl::trans;
//   * exp2 with the scale folded in: 2^(x * sm_scale * log2(e)) = e^(x * sm_scale);
//   * causal attention in two stages (blocks fully below the diagonal, then the diagonal
//     block with a mask), chosen by a constexpr, so each stage compiles to its own loop;
//   * tritium::autotune over BLOCK_M, BLOCK_N, num_warps and num_stages, as the tutorial's
//     @triton.autotune (TRITIUM_AUTOTUNE=print shows each shape's table).
//
// Usage: 08_fused_attention [--full | --small]
//   Checks B = 1, H = 2, N_CTX = 1024 (the tutorial's test; 64 on the interpreter or with
//   --small), HEAD_DIM 64 and 128, causal and not, against plain C++ in double; where the
//   device is a GPU (or with --full) measures B = 4, H = 32, N_CTX {1024, 4096}.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::half;

// One stage of the loop over K and V. STAGE 1: blocks left of the diagonal (causal); 2: the
// diagonal block (causal, masked); 3: every block (not causal).
void attn_fwd_inner(tl::f32& acc, tl::f32& l_i, tl::f32& m_i, const tl::f16& q,
                    const tl::tensor_descriptor<half>& desc_k,
                    const tl::tensor_descriptor<half>& desc_v, const tl::i32& offset_y,
                    const tl::i32& start_m, const tl::f32& qk_scale, int BLOCK_M, int BLOCK_N,
                    int STAGE, const tl::i32& offs_m, const tl::i32& offs_n, const tl::i32& N_CTX) {
  // range of values handled by this stage
  tl::i32 lo, hi;
  if (STAGE == 1) {
    lo = tl::scalar<int32_t>(0);
    hi = start_m * BLOCK_M;
  } else if (STAGE == 2) {
    lo = start_m * BLOCK_M;
    hi = (start_m + 1) * BLOCK_M;
    lo = tl::multiple_of(lo, BLOCK_M);
  } else { // causal = false
    lo = tl::scalar<int32_t>(0);
    hi = N_CTX;
  }
  auto offsetk_y = offset_y + lo;
  auto offsetv_y = offset_y + lo;
  // loop over k, v and update accumulator
  for (auto start_n : tl::range(lo, hi, BLOCK_N)) {
    start_n = tl::multiple_of(start_n, BLOCK_N);
    // -- compute qk ----
    auto k = tl::trans(desc_k.load({offsetk_y, 0}));
    auto qk = tl::dot(q, k);
    tl::f32 m_ij;
    if (STAGE == 2) {
      auto mask = offs_m[{tl::_, tl::None}] >= (start_n + offs_n[{tl::None, tl::_}]);
      qk = qk * qk_scale + tl::where(mask, 0, -1.0e6);
      m_ij = tl::maximum(m_i, tl::max(qk, 1));
      qk -= m_ij[{tl::_, tl::None}];
    } else {
      m_ij = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);
      qk = qk * qk_scale - m_ij[{tl::_, tl::None}];
    }
    auto p = tl::exp2(qk);
    // -- compute correction factor
    auto alpha = tl::exp2(m_i - m_ij);
    auto l_ij = tl::sum(p, 1);
    // -- update output accumulator --
    acc = acc * alpha[{tl::_, tl::None}];
    // prepare p and v for the dot
    auto v = desc_v.load({offsetv_y, 0});
    acc = tl::dot(p.to<half>(), v, acc);
    // update m_i and l_i
    l_i = l_i * alpha + l_ij;
    m_i = m_ij;
    offsetk_y += BLOCK_N;
    offsetv_y += BLOCK_N;
  }
}

void attn_fwd(tl::f32 sm_scale, tl::ptr<float> M, tl::i32 Z, tl::i32 H, tl::ptr<tl::f16> Q,
              tl::ptr<tl::f16> K, tl::ptr<tl::f16> V, tl::ptr<tl::f16> Out, tl::i32 N_CTX,
              tl::constexpr_<int> HEAD_DIM, tl::constexpr_<int> BLOCK_M,
              tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> STAGE) {
  tl::static_assert_(BLOCK_N <= HEAD_DIM, "BLOCK_N must not exceed HEAD_DIM");
  auto start_m = tl::program_id(0);
  auto off_hz = tl::program_id(1);
  auto off_z = off_hz / H;
  auto off_h = off_hz % H;

  auto y_dim = Z * H * N_CTX;
  auto desc_q =
      tl::make_tensor_descriptor(Q, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M, HEAD_DIM});
  auto desc_v =
      tl::make_tensor_descriptor(V, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N, HEAD_DIM});
  auto desc_k =
      tl::make_tensor_descriptor(K, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N, HEAD_DIM});
  auto desc_o =
      tl::make_tensor_descriptor(Out, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M, HEAD_DIM});

  auto offset_y = off_z * (N_CTX * H) + off_h * N_CTX;
  auto qo_offset_y = offset_y + start_m * BLOCK_M;
  // initialize offsets
  auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = tl::arange(0, BLOCK_N);
  // initialize pointer to m and l
  auto m_i = tl::zeros<float>({BLOCK_M}) - std::numeric_limits<float>::infinity();
  auto l_i = tl::zeros<float>({BLOCK_M}) + 1.0;
  auto acc = tl::zeros<float>({BLOCK_M, HEAD_DIM});
  // load scales
  auto qk_scale = sm_scale;
  qk_scale *= 1.44269504; // 1/log(2)
  // load q: it will stay in SRAM throughout
  auto q = desc_q.load({qo_offset_y, 0});
  // stage 1: off-band
  // For causal = true, STAGE = 3 and attn_fwd_inner gets 1 as its STAGE
  // For causal = false, STAGE = 1, and attn_fwd_inner gets 3 as its STAGE
  if (STAGE & 1)
    attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M, BLOCK_N,
                   4 - STAGE, offs_m, offs_n, N_CTX);
  // stage 2: on-band
  if (STAGE & 2)
    attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M, BLOCK_N,
                   2, offs_m, offs_n, N_CTX);
  // epilogue
  m_i += tl::log2(l_i);
  acc = acc / l_i[{tl::_, tl::None}];
  auto m_ptrs = M + off_hz * N_CTX + offs_m;
  tl::store(m_ptrs, m_i);
  desc_o.store({qo_offset_y, 0}, acc.to<half>());
}

// The configurations the autotuner tries (the tutorial's @triton.autotune over BLOCK_M,
// BLOCK_N, num_stages and num_warps, with its rule that BLOCK_N not exceed HEAD_DIM): on a GPU,
// tiles that feed the matrix units; the interpreter and the CPU run one small tile.
std::vector<tritium::Config> configs_for(const tritium::Device& dev, int head_dim) {
  auto tile = [](int m, int n, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M", m}, {"BLOCK_N", n}}, warps, stages};
  };
  if (dev.name() == "interpreter")
    return {tile(16, 16, 4, 1)};
  if (dev.name() != "cuda" && dev.name() != "hip")
    return {tile(32, std::min(32, head_dim), 4, 1)};
  std::vector<tritium::Config> out;
  for (auto c : {tile(128, 64, 8, 3), tile(128, 128, 8, 3), tile(128, 64, 4, 3),
                 tile(128, 32, 8, 3), tile(64, 64, 4, 3), tile(128, 64, 8, 2), tile(128, 128, 8, 2),
                 tile(128, 64, 8, 4), tile(128, 64, 4, 4), tile(64, 64, 4, 4)})
    if (c["BLOCK_N"] <= head_dim)
      out.push_back(c);
  return out;
}

// out = attention(q, k, v) and lse = M, for [Z, H, N_CTX, HEAD_DIM] fp16 tensors.
void attention(const Buffer<half>& q, const Buffer<half>& k, const Buffer<half>& v,
               Buffer<half>& out, Buffer<float>& lse, int Z, int H, int N_CTX, int HEAD_DIM,
               bool causal, float sm_scale) {
  // One autotuned kernel per head size: the configurations differ.
  using Tuner = decltype(tritium::autotune(attn_fwd, "attn_fwd", {}));
  static std::map<int, Tuner> kernels;
  auto it = kernels.find(HEAD_DIM);
  if (it == kernels.end())
    it = kernels.try_emplace(HEAD_DIM, attn_fwd, "attn_fwd", configs_for(q.device(), HEAD_DIM))
             .first;
  for (const tritium::Config& c : configs_for(q.device(), HEAD_DIM))
    if (N_CTX % c["BLOCK_M"] != 0)
      throw tritium::Error(fmt::format("attention: N_CTX = {} must be a multiple of BLOCK_M = {}",
                                       N_CTX, c["BLOCK_M"]));
  const int stage = causal ? 3 : 1;
  it->second(
      fmt::format("Z={} H={} N_CTX={} HEAD_DIM={} causal={}", Z, H, N_CTX, HEAD_DIM, causal),
      [&](auto& kernel, const tritium::Config& cfg) {
        const int block_m = static_cast<int>(cfg["BLOCK_M"]);
        kernel[{tritium::cdiv(N_CTX, block_m), Z * H, 1}](sm_scale, lse, Z, H, q, k, v, out, N_CTX,
                                                          HEAD_DIM, block_m, cfg["BLOCK_N"], stage);
      },
      q.device());
}

bool check(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  std::mt19937 rng(Z * 1000 + H * 100 + N_CTX + HEAD_DIM + causal);
  std::normal_distribution<float> dist(0.f, 0.5f); // as the tutorial: normal(0, 0.5)
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> hq(n), hk(n), hv(n);
  for (auto* t : {&hq, &hk, &hv})
    for (auto& x : *t)
      x = half(dist(rng));
  const float sm_scale = 0.5f;
  auto q = dev.from_host(hq), k = dev.from_host(hk), v = dev.from_host(hv);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  auto o = out.to_host();
  auto m = lse.to_host();

  // Plain C++, in double, as the tutorial's reference: p = softmax(q k^T * sm_scale), rounded
  // to fp16, times v.
  double err_o = 0, err_m = 0;
  std::vector<double> s(N_CTX);
  for (int zh = 0; zh < Z * H; ++zh) {
    const size_t base = size_t(zh) * N_CTX * HEAD_DIM;
    for (int i = 0; i < N_CTX; ++i) {
      int last = causal ? i : N_CTX - 1;
      double mx = -INFINITY;
      for (int j = 0; j <= last; ++j) {
        double d = 0;
        for (int c = 0; c < HEAD_DIM; ++c)
          d += double(float(hq[base + size_t(i) * HEAD_DIM + c])) *
               float(hk[base + size_t(j) * HEAD_DIM + c]);
        s[j] = d * sm_scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j <= last; ++j)
        sum += std::exp(s[j] - mx);
      double ref_m = (mx + std::log(sum)) / std::log(2.0);
      err_m = std::max(err_m, std::fabs(m[size_t(zh) * N_CTX + i] - ref_m));
      for (int c = 0; c < HEAD_DIM; ++c) {
        double acc = 0;
        for (int j = 0; j <= last; ++j)
          acc += double(float(half(float(std::exp(s[j] - mx) / sum)))) *
                 float(hv[base + size_t(j) * HEAD_DIM + c]);
        err_o = std::max(err_o, std::fabs(float(o[base + size_t(i) * HEAD_DIM + c]) - acc));
      }
    }
  }
  // The tutorial's tolerance for the output (atol 1e-2); the logsumexp is f32 arithmetic.
  const double bound_o = 1e-2, bound_m = 1e-3;
  bool ok = err_o <= bound_o && err_m <= bound_m;
  fmt::print("Z {} H {} N_CTX {} HEAD_DIM {} {}: output within {:.1e} (bound {:.0e}), logsumexp "
             "within {:.1e} (bound {:.0e})  {}\n",
             Z, H, N_CTX, HEAD_DIM, causal ? "causal" : "non-causal", err_o, bound_o, err_m,
             bound_m, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> h(n);
  for (size_t i = 0; i < n; ++i)
    h[i] = half(float(int(i % 13) - 6) * 0.05f);
  auto q = dev.from_host(h), k = dev.from_host(h), v = dev.from_host(h);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, 0.5f);
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, 0.5f);
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  // As the tutorial counts it: two matmuls of 2 N_CTX^2 HEAD_DIM flops per head, half of them
  // when causal.
  double flops = 4.0 * Z * H * double(N_CTX) * N_CTX * HEAD_DIM * (causal ? 0.5 : 1.0);
  fmt::print("Z {} H {} N_CTX {} HEAD_DIM {} {}: {:.3f} ms, {:.1f} TFLOP/s\n", Z, H, N_CTX,
             HEAD_DIM, causal ? "causal" : "non-causal", best * 1e3, flops / best / 1e12);
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
    // The tutorial's test: Z 1, H 2, N_CTX 1024; the CPU checks 256 to stay within seconds.
    const int n_ctx = reduced ? 64 : (gpu || full) ? 1024 : 256;
    if (n_ctx != 1024)
      fmt::print("checking N_CTX {} instead of the tutorial's 1024 ({}); pass --full for it\n",
                 n_ctx,
                 small         ? "--small"
                 : interpreter ? "the interpreter"
                               : "the CPU");
    bool ok = true;
    for (int d : {64, 128})
      for (bool causal : {false, true})
        ok = check(dev, 1, 2, n_ctx, d, causal) && ok;
    if (gpu || full) {
      for (int n : {1024, 4096})
        for (int d : {64, 128})
          for (bool causal : {false, true})
            benchmark(dev, 4, 32, n, d, causal);
    } else {
      fmt::print("benchmark shapes Z 4 H 32 N_CTX {{1024, 4096}} run on GPUs (or with --full)\n");
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
