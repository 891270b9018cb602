// The forward pass of fused attention (Flash Attention v2), shared by tutorial 08 (which
// explains and measures it) and tutorial 14 (whose backward pass reads the O and M it writes).
//   attention(q, k, v, out, lse, ...): out = softmax(q k^T * sm_scale) v and lse = M, the
//   base-2 logsumexp of each row of q k^T * sm_scale, for fp16 [Z, H, N_CTX, HEAD_DIM] tensors.
#pragma once

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
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
