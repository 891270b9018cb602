// Tutorial 14: fused attention, backward.
//
// Triton's tutorial 06, backward pass, in C++: the Flash Attention v2 backward (Tri Dao,
// https://tridao.me/publications/flash2/flash2.pdf, Algorithm 2). With S = Q K^T * sm_scale,
// P = softmax(S) row by row and O = P V (the forward pass of tutorial 08, which also writes
// M = the base-2 logsumexp of each row of S), the gradients for dO = dLoss/dO are
//   dV = P^T dO,   dP = dO V^T,   dS = P * (dP - Delta),   Delta[i] = sum_j P[i,j] dP[i,j]
//   dQ = sm_scale * dS K,         dK = sm_scale * dS^T Q
// and Delta[i] = sum_d O[i,d] dO[i,d] (since sum_j P[i,j] V[j,d] = O[i,d]). No N_CTX x N_CTX
// matrix is stored: P is recomputed block by block from Q, K and M,
//   P = 2^(Q K^T * sm_scale * log2(e) - M),
// exactly the exponentials the forward pass summed. Three kernels:
//   1. attn_bwd_preprocess: Delta per row, from O and dO;
//   2. attn_bwd_dkdv: each program owns BLOCK_N1 rows of K and V of one (batch, head) and walks
//      over Q (and dO, M, Delta) in blocks of BLOCK_M1 rows, accumulating dK and dV;
//   3. attn_bwd_dq: each program owns BLOCK_M2 rows of Q and walks over K and V in blocks of
//      BLOCK_N2 rows, accumulating dQ.
// dQ sums over the rows of K, dK and dV over the rows of Q: a kernel of its own for dQ (as
// Triton's tutorial does) instead of atomic adds from the dK/dV programs.
// Causal attention: only Q rows at or below a key row see it, so a dK/dV program skips the Q
// blocks above its diagonal and a dQ program the K blocks right of its diagonal; the diagonal
// blocks, where the mask cuts through, are a stage of their own, as in the forward pass.
// You will learn:
//   * several kernels sharing one forward pass (attention_forward.hpp, tutorial 08's kernel);
//   * tl::dot with transposed operands (tl::trans) both ways round: P^T dO and dS K;
//   * recomputing softmax from a saved logsumexp instead of storing it.
//
// Usage: 14_attention_backward [--full | --small]
//   Checks B = 1, H = 2, N_CTX = 128 (64 on the interpreter, the gpu-emulator or with --small,
//   256 on GPUs), HEAD_DIM 64 and 128, causal and not, against plain C++ in double; where the
//   device is a GPU (or with --full) times forward + backward for B = 4, H = 32, N_CTX {1024,
//   4096} and prints `attention_bwd fp16 Z4 H32 N{n} D{d} {causal|full},tritium,{fwd+bwd us},
//   {bwd us}`.

#include "attention_forward.hpp"

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

// 1. Delta[row] = sum over d of O[row, d] * dO[row, d], in f32, for BLOCK_M rows of one head.
void attn_bwd_preprocess(tl::ptr<tl::f16> O, tl::ptr<tl::f16> DO, tl::ptr<float> Delta,
                         tl::i32 N_CTX, tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> HEAD_DIM) {
  auto off_m = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto off_hz = tl::program_id(1);
  auto off_d = tl::arange(0, HEAD_DIM);
  auto offs =
      off_hz * (N_CTX * HEAD_DIM) + off_m[{tl::_, tl::None}] * HEAD_DIM + off_d[{tl::None, tl::_}];
  auto o = tl::load(O + offs).to<float>();
  auto d_o = tl::load(DO + offs).to<float>();
  auto delta = tl::sum(o * d_o, 1);
  tl::store(Delta + off_hz * N_CTX + off_m, delta);
}

// One stage of the dK/dV loop over blocks of Q rows [lo, hi). MASK: the diagonal blocks, where
// Q row i sees key row j only if i >= j.
void attn_bwd_dkdv_inner(tl::f32& dk, tl::f32& dv, const tl::f16& k, const tl::f16& v,
                         const tl::tensor_descriptor<half>& desc_q,
                         const tl::tensor_descriptor<half>& desc_do, const tl::ptr<float>& M,
                         const tl::ptr<float>& Delta, const tl::i32& offset_y,
                         const tl::i32& offs_n, const tl::f32& qk_scale, const tl::i32& lo,
                         const tl::i32& hi, int BLOCK_M1, bool MASK) {
  for (auto start_m : tl::range(lo, hi, BLOCK_M1)) {
    start_m = tl::multiple_of(start_m, BLOCK_M1);
    auto offs_m = start_m + tl::arange(0, BLOCK_M1);
    auto q = desc_q.load({offset_y + start_m, 0}); // [BLOCK_M1, HEAD_DIM]
    auto m = tl::load(M + offs_m);                 // [BLOCK_M1]
    // P^T, recomputed: [BLOCK_N1, BLOCK_M1]
    auto qkT = tl::dot(k, tl::trans(q));
    auto pT = tl::exp2(qkT * qk_scale - m[{tl::None, tl::_}]);
    if (MASK) {
      auto mask = offs_m[{tl::None, tl::_}] >= offs_n[{tl::_, tl::None}];
      pT = tl::where(mask, pT, 0.0);
    }
    auto d_o = desc_do.load({offset_y + start_m, 0}); // [BLOCK_M1, HEAD_DIM]
    // dV += P^T dO
    dv = tl::dot(pT.to<half>(), d_o, dv);
    // dP^T = V dO^T, dS^T = P^T * (dP^T - Delta)
    auto delta = tl::load(Delta + offs_m);
    auto dpT = tl::dot(v, tl::trans(d_o));
    auto dsT = pT * (dpT - delta[{tl::None, tl::_}]);
    // dK += dS^T Q (times sm_scale at the end)
    dk = tl::dot(dsT.to<half>(), q, dk);
  }
}

// 2. dK and dV for BLOCK_N1 rows of K and V of one (batch, head).
void attn_bwd_dkdv(tl::f32 sm_scale, tl::ptr<tl::f16> Q, tl::ptr<tl::f16> K, tl::ptr<tl::f16> V,
                   tl::ptr<tl::f16> DO, tl::ptr<tl::f16> DK, tl::ptr<tl::f16> DV, tl::ptr<float> M,
                   tl::ptr<float> Delta, tl::i32 Z, tl::i32 H, tl::i32 N_CTX,
                   tl::constexpr_<int> HEAD_DIM, tl::constexpr_<int> BLOCK_M1,
                   tl::constexpr_<int> BLOCK_N1, tl::constexpr_<int> CAUSAL) {
  tl::static_assert_(BLOCK_N1 % BLOCK_M1 == 0, "BLOCK_N1 must be a multiple of BLOCK_M1");
  auto start_n = tl::program_id(0) * BLOCK_N1;
  auto off_hz = tl::program_id(1);
  auto y_dim = Z * H * N_CTX;
  auto desc_q =
      tl::make_tensor_descriptor(Q, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M1, HEAD_DIM});
  auto desc_do =
      tl::make_tensor_descriptor(DO, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M1, HEAD_DIM});
  auto desc_k =
      tl::make_tensor_descriptor(K, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N1, HEAD_DIM});
  auto desc_v =
      tl::make_tensor_descriptor(V, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N1, HEAD_DIM});
  auto desc_dk =
      tl::make_tensor_descriptor(DK, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N1, HEAD_DIM});
  auto desc_dv =
      tl::make_tensor_descriptor(DV, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N1, HEAD_DIM});
  // [B, H, N_CTX, HEAD_DIM] is contiguous: head (b, h) starts at row (b * H + h) * N_CTX.
  auto offset_y = off_hz * N_CTX;
  auto m_row = M + off_hz * N_CTX;
  auto delta_row = Delta + off_hz * N_CTX;
  auto offs_n = start_n + tl::arange(0, BLOCK_N1);
  auto qk_scale = sm_scale * 1.44269504; // 1/log(2)
  // k and v stay in SRAM throughout
  auto k = desc_k.load({offset_y + start_n, 0});
  auto v = desc_v.load({offset_y + start_n, 0});
  auto dk = tl::zeros<float>({BLOCK_N1, HEAD_DIM});
  auto dv = tl::zeros<float>({BLOCK_N1, HEAD_DIM});
  if (CAUSAL) {
    // the diagonal blocks: Q rows start_n .. start_n + BLOCK_N1, masked
    tl::i32 lo = start_n, hi = start_n + BLOCK_N1;
    attn_bwd_dkdv_inner(dk, dv, k, v, desc_q, desc_do, m_row, delta_row, offset_y, offs_n, qk_scale,
                        lo, hi, BLOCK_M1, true);
    // below the diagonal: every Q row sees every key row of this program
    lo = start_n + BLOCK_N1;
    hi = N_CTX;
    attn_bwd_dkdv_inner(dk, dv, k, v, desc_q, desc_do, m_row, delta_row, offset_y, offs_n, qk_scale,
                        lo, hi, BLOCK_M1, false);
  } else {
    attn_bwd_dkdv_inner(dk, dv, k, v, desc_q, desc_do, m_row, delta_row, offset_y, offs_n, qk_scale,
                        tl::scalar<int32_t>(0), N_CTX, BLOCK_M1, false);
  }
  desc_dv.store({offset_y + start_n, 0}, dv.to<half>());
  dk *= sm_scale;
  desc_dk.store({offset_y + start_n, 0}, dk.to<half>());
}

// One stage of the dQ loop over blocks of K and V rows [lo, hi); MASK as above.
void attn_bwd_dq_inner(tl::f32& dq, const tl::f16& q, const tl::f16& d_o, const tl::f32& m,
                       const tl::f32& delta, const tl::tensor_descriptor<half>& desc_k,
                       const tl::tensor_descriptor<half>& desc_v, const tl::i32& offset_y,
                       const tl::i32& offs_m, const tl::f32& qk_scale, const tl::i32& lo,
                       const tl::i32& hi, int BLOCK_N2, bool MASK) {
  for (auto start_n : tl::range(lo, hi, BLOCK_N2)) {
    start_n = tl::multiple_of(start_n, BLOCK_N2);
    auto k = desc_k.load({offset_y + start_n, 0}); // [BLOCK_N2, HEAD_DIM]
    auto v = desc_v.load({offset_y + start_n, 0});
    // P, recomputed: [BLOCK_M2, BLOCK_N2]
    auto qk = tl::dot(q, tl::trans(k));
    auto p = tl::exp2(qk * qk_scale - m[{tl::_, tl::None}]);
    if (MASK) {
      auto offs_n = start_n + tl::arange(0, BLOCK_N2);
      auto mask = offs_m[{tl::_, tl::None}] >= offs_n[{tl::None, tl::_}];
      p = tl::where(mask, p, 0.0);
    }
    // dP = dO V^T, dS = P * (dP - Delta)
    auto dp = tl::dot(d_o, tl::trans(v));
    auto ds = p * (dp - delta[{tl::_, tl::None}]);
    // dQ += dS K (times sm_scale at the end)
    dq = tl::dot(ds.to<half>(), k, dq);
  }
}

// 3. dQ for BLOCK_M2 rows of Q of one (batch, head).
void attn_bwd_dq(tl::f32 sm_scale, tl::ptr<tl::f16> Q, tl::ptr<tl::f16> K, tl::ptr<tl::f16> V,
                 tl::ptr<tl::f16> DO, tl::ptr<tl::f16> DQ, tl::ptr<float> M, tl::ptr<float> Delta,
                 tl::i32 Z, tl::i32 H, tl::i32 N_CTX, tl::constexpr_<int> HEAD_DIM,
                 tl::constexpr_<int> BLOCK_M2, tl::constexpr_<int> BLOCK_N2,
                 tl::constexpr_<int> CAUSAL) {
  tl::static_assert_(BLOCK_M2 % BLOCK_N2 == 0, "BLOCK_M2 must be a multiple of BLOCK_N2");
  auto start_m = tl::program_id(0) * BLOCK_M2;
  auto off_hz = tl::program_id(1);
  auto y_dim = Z * H * N_CTX;
  auto desc_q =
      tl::make_tensor_descriptor(Q, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M2, HEAD_DIM});
  auto desc_do =
      tl::make_tensor_descriptor(DO, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M2, HEAD_DIM});
  auto desc_dq =
      tl::make_tensor_descriptor(DQ, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_M2, HEAD_DIM});
  auto desc_k =
      tl::make_tensor_descriptor(K, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N2, HEAD_DIM});
  auto desc_v =
      tl::make_tensor_descriptor(V, {y_dim, HEAD_DIM}, {HEAD_DIM, 1}, {BLOCK_N2, HEAD_DIM});
  auto offset_y = off_hz * N_CTX;
  auto offs_m = start_m + tl::arange(0, BLOCK_M2);
  auto qk_scale = sm_scale * 1.44269504; // 1/log(2)
  // q, dO, M and Delta of these rows stay in SRAM throughout
  auto q = desc_q.load({offset_y + start_m, 0});
  auto d_o = desc_do.load({offset_y + start_m, 0});
  auto m = tl::load(M + off_hz * N_CTX + offs_m);
  auto delta = tl::load(Delta + off_hz * N_CTX + offs_m);
  auto dq = tl::zeros<float>({BLOCK_M2, HEAD_DIM});
  if (CAUSAL) {
    // the diagonal blocks: key rows start_m .. start_m + BLOCK_M2, masked
    tl::i32 lo = start_m, hi = start_m + BLOCK_M2;
    attn_bwd_dq_inner(dq, q, d_o, m, delta, desc_k, desc_v, offset_y, offs_m, qk_scale, lo, hi,
                      BLOCK_N2, true);
    // left of the diagonal: every key row is seen by every Q row of this program
    lo = tl::scalar<int32_t>(0);
    hi = start_m;
    attn_bwd_dq_inner(dq, q, d_o, m, delta, desc_k, desc_v, offset_y, offs_m, qk_scale, lo, hi,
                      BLOCK_N2, false);
  } else {
    attn_bwd_dq_inner(dq, q, d_o, m, delta, desc_k, desc_v, offset_y, offs_m, qk_scale,
                      tl::scalar<int32_t>(0), N_CTX, BLOCK_N2, false);
  }
  dq *= sm_scale;
  desc_dq.store({offset_y + start_m, 0}, dq.to<half>());
}

// The backward's tiles. On a GPU, tritium::autotune chooses per shape among the tutorial's
// (BLOCK_M1 32, BLOCK_N1 128 for dK/dV; BLOCK_M2 128, BLOCK_N2 32 for dQ) at several warp and
// stage counts and a few other tiles, as the peer's autotuning does; the interpreter and the CPU
// run one small tile.
std::vector<tritium::Config> dkdv_configs(const tritium::Device& dev) {
  auto tile = [](int m, int n, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M1", m}, {"BLOCK_N1", n}}, warps, stages};
  };
  if (dev.name() == "interpreter")
    return {tile(16, 16, 4, 1)};
  if (dev.name() != "cuda" && dev.name() != "hip")
    return {tile(16, 32, 4, 1)};
  return {tile(32, 128, 4, 3), tile(32, 128, 4, 5), tile(32, 128, 8, 2), tile(32, 128, 8, 3),
          tile(64, 128, 8, 3), tile(64, 128, 4, 3), tile(32, 64, 4, 3),  tile(64, 64, 4, 3)};
}
std::vector<tritium::Config> dq_configs(const tritium::Device& dev) {
  auto tile = [](int m, int n, int warps, int stages) {
    return tritium::Config{{{"BLOCK_M2", m}, {"BLOCK_N2", n}}, warps, stages};
  };
  if (dev.name() == "interpreter")
    return {tile(16, 16, 4, 1)};
  if (dev.name() != "cuda" && dev.name() != "hip")
    return {tile(32, 16, 4, 1)};
  return {tile(128, 32, 4, 3), tile(128, 32, 4, 5), tile(128, 32, 8, 2), tile(128, 32, 8, 3),
          tile(128, 64, 8, 3), tile(128, 64, 4, 3), tile(64, 32, 4, 3),  tile(64, 64, 4, 3)};
}
constexpr int pre_block = 16; // rows of the preprocess kernel's program

// The gradients and the scratch the backward pass needs.
struct Grads {
  Buffer<half> dq, dk, dv;
  Buffer<float> delta; // [Z, H, N_CTX]
};

Grads alloc_grads(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM) {
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  return {dev.alloc<half>(n), dev.alloc<half>(n), dev.alloc<half>(n),
          dev.alloc<float>(size_t(Z) * H * N_CTX)};
}

// dq, dk, dv from q, k, v, the forward's o and lse (M), and do, for [Z, H, N_CTX, HEAD_DIM].
void attention_backward(const Buffer<half>& q, const Buffer<half>& k, const Buffer<half>& v,
                        const Buffer<half>& o, const Buffer<float>& lse, const Buffer<half>& d_o,
                        Grads& g, int Z, int H, int N_CTX, int HEAD_DIM, bool causal,
                        float sm_scale) {
  static auto pre = tritium::jit(attn_bwd_preprocess, "attn_bwd_preprocess");
  static auto dkdv = tritium::autotune(attn_bwd_dkdv, "attn_bwd_dkdv", dkdv_configs(q.device()));
  static auto dq = tritium::autotune(attn_bwd_dq, "attn_bwd_dq", dq_configs(q.device()));
  for (const auto& [configs, name] : {std::pair{dkdv_configs(q.device()), "BLOCK_N1"},
                                      std::pair{dq_configs(q.device()), "BLOCK_M2"}})
    for (const tritium::Config& c : configs)
      if (N_CTX % c[name] != 0)
        throw tritium::Error(fmt::format("attention_backward: N_CTX = {} must be a multiple of {} "
                                         "= {}",
                                         N_CTX, name, c[name]));
  if (N_CTX % pre_block != 0)
    throw tritium::Error(
        fmt::format("attention_backward: N_CTX = {} must be a multiple of {}", N_CTX, pre_block));
  pre[{N_CTX / pre_block, Z * H, 1}](o, d_o, g.delta, N_CTX, pre_block, HEAD_DIM);
  const std::string key =
      fmt::format("Z={} H={} N_CTX={} HEAD_DIM={} causal={}", Z, H, N_CTX, HEAD_DIM, causal);
  dkdv(
      key,
      [&](auto& kernel, const tritium::Config& c) {
        const int n1 = static_cast<int>(c["BLOCK_N1"]);
        kernel[{N_CTX / n1, Z * H, 1}](sm_scale, q, k, v, d_o, g.dk, g.dv, lse, g.delta, Z, H,
                                       N_CTX, HEAD_DIM, c["BLOCK_M1"], n1, int(causal));
      },
      q.device());
  dq(
      key,
      [&](auto& kernel, const tritium::Config& c) {
        const int m2 = static_cast<int>(c["BLOCK_M2"]);
        kernel[{N_CTX / m2, Z * H, 1}](sm_scale, q, k, v, d_o, g.dq, lse, g.delta, Z, H, N_CTX,
                                       HEAD_DIM, m2, c["BLOCK_N2"], int(causal));
      },
      q.device());
}

bool check(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  std::mt19937 rng(Z * 1000 + H * 100 + N_CTX + HEAD_DIM + causal);
  std::normal_distribution<float> dist(0.f, 0.5f); // as the tutorial: normal(0, 0.5)
  std::normal_distribution<float> unit(0.f, 1.f);  // dO: randn
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> hq(n), hk(n), hv(n), hdo(n);
  for (auto* t : {&hq, &hk, &hv})
    for (auto& x : *t)
      x = half(dist(rng));
  for (auto& x : hdo)
    x = half(unit(rng));
  const float sm_scale = 0.5f;
  auto q = dev.from_host(hq), k = dev.from_host(hk), v = dev.from_host(hv);
  auto d_o = dev.from_host(hdo);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  Grads g = alloc_grads(dev, Z, H, N_CTX, HEAD_DIM);
  attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  attention_backward(q, k, v, out, lse, d_o, g, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  auto o = out.to_host();
  auto dq = g.dq.to_host(), dk = g.dk.to_host(), dv = g.dv.to_host();

  // Plain C++, in double: softmax attention and its gradient.
  auto at = [&](const std::vector<half>& t, size_t base, int row, int c) {
    return double(float(t[base + size_t(row) * HEAD_DIM + c]));
  };
  double err_o = 0, err_dq = 0, err_dk = 0, err_dv = 0;
  std::vector<double> p(size_t(N_CTX) * N_CTX), ds(size_t(N_CTX) * N_CTX);
  for (int zh = 0; zh < Z * H; ++zh) {
    const size_t base = size_t(zh) * N_CTX * HEAD_DIM;
    for (int i = 0; i < N_CTX; ++i) {
      const int last = causal ? i : N_CTX - 1;
      double* pi = &p[size_t(i) * N_CTX];
      double mx = -INFINITY;
      for (int j = 0; j < N_CTX; ++j) {
        pi[j] = 0;
        if (j > last)
          continue;
        double d = 0;
        for (int c = 0; c < HEAD_DIM; ++c)
          d += at(hq, base, i, c) * at(hk, base, j, c);
        pi[j] = d * sm_scale;
        mx = std::max(mx, pi[j]);
      }
      double sum = 0;
      for (int j = 0; j <= last; ++j)
        sum += (pi[j] = std::exp(pi[j] - mx));
      for (int j = 0; j <= last; ++j)
        pi[j] /= sum;
      // O = P V; dP = dO V^T; dS = P * (dP - sum_j P dP)
      for (int c = 0; c < HEAD_DIM; ++c) {
        double acc = 0;
        for (int j = 0; j <= last; ++j)
          acc += pi[j] * at(hv, base, j, c);
        err_o = std::max(err_o, std::fabs(at(o, base, i, c) - acc));
      }
      double delta = 0;
      double* dsi = &ds[size_t(i) * N_CTX];
      for (int j = 0; j < N_CTX; ++j) {
        dsi[j] = 0;
        if (j > last)
          continue;
        double dp = 0;
        for (int c = 0; c < HEAD_DIM; ++c)
          dp += at(hdo, base, i, c) * at(hv, base, j, c);
        dsi[j] = dp;
        delta += pi[j] * dp;
      }
      for (int j = 0; j <= last; ++j)
        dsi[j] = pi[j] * (dsi[j] - delta);
    }
    // dQ = sm_scale dS K, dK = sm_scale dS^T Q, dV = P^T dO
    for (int i = 0; i < N_CTX; ++i)
      for (int c = 0; c < HEAD_DIM; ++c) {
        double rq = 0, rk = 0, rv = 0;
        for (int j = 0; j < N_CTX; ++j) {
          rq += ds[size_t(i) * N_CTX + j] * at(hk, base, j, c);
          rk += ds[size_t(j) * N_CTX + i] * at(hq, base, j, c);
          rv += p[size_t(j) * N_CTX + i] * at(hdo, base, j, c);
        }
        err_dq = std::max(err_dq, std::fabs(at(dq, base, i, c) - rq * sm_scale));
        err_dk = std::max(err_dk, std::fabs(at(dk, base, i, c) - rk * sm_scale));
        err_dv = std::max(err_dv, std::fabs(at(dv, base, i, c) - rv));
      }
  }
  // The tutorial's tolerance (atol 1e-2) for the output and each gradient.
  const double bound = 1e-2;
  bool ok = err_o <= bound && err_dq <= bound && err_dk <= bound && err_dv <= bound;
  fmt::print("Z {} H {} N_CTX {} HEAD_DIM {} {}: max error o {:.1e}, dq {:.1e}, dk {:.1e}, dv "
             "{:.1e} (bound {:.0e})  {}\n",
             Z, H, N_CTX, HEAD_DIM, causal ? "causal" : "non-causal", err_o, err_dq, err_dk, err_dv,
             bound, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> h(n);
  for (size_t i = 0; i < n; ++i)
    h[i] = half(float(int(i % 13) - 6) * 0.05f);
  auto q = dev.from_host(h), k = dev.from_host(h), v = dev.from_host(h), d_o = dev.from_host(h);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  Grads g = alloc_grads(dev, Z, H, N_CTX, HEAD_DIM);
  const float sm_scale = 0.5f;
  auto fwd_bwd = [&] {
    attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
    attention_backward(q, k, v, out, lse, d_o, g, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  };
  auto bwd = [&] {
    attention_backward(q, k, v, out, lse, d_o, g, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  };
  // Triton's do_bench in C++: the median of device times, caches flushed before each run (the
  // first call of fwd_bwd autotunes the forward pass and compiles the backward's kernels).
  auto t_all = tritium::bench(dev, fwd_bwd);
  auto t_bwd = tritium::bench(dev, bwd);
  fmt::print("attention_bwd fp16 Z{} H{} N{} D{} {},tritium,{:.1f},{:.1f}\n", Z, H, N_CTX, HEAD_DIM,
             causal ? "causal" : "full", t_all.median_ms * 1e3, t_bwd.median_ms * 1e3);
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
    const bool slow = dev.name() == "interpreter" || dev.name() == "gpu-emulator";
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    const bool reduced = small || (slow && !full);
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    // B 1, H 2; N_CTX 256 on GPUs (two blocks of the dK/dV kernel's 128 rows), 128 on the CPU,
    // 64 where the check must stay within seconds.
    const int n_ctx = reduced ? 64 : gpu ? 256 : 128;
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
      fmt::print("FAILED: gradients differ from the plain C++ reference\n");
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
