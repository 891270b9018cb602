// Kernels that together use every op of the IR, for the "every op compiles for every GPU
// target" tests. Shapes are small so that compiling all of them for four targets stays fast.
#pragma once

#include "../../tools/sample_kernels.hpp"

#include <tritium/tritium.hpp>

#include <cmath>

namespace gpu_test {

namespace tl = tritium::tl;

// Triton's fast and correctly rounded forms of / and sqrt, side by side.
inline void fast_and_rn(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto a = tl::load(x + offs, mask, 1.0f);
  tl::store(out + offs,
            tl::sqrt(a) + tl::sqrt_rn(a + 1.0f) + a / (a + 2.0f) + tl::div_rn(a, a + 3.0f), mask);
}

// Atomic adds whose old values nobody reads (split-K's partial tiles), beside one that is read.
inline void unread_atomics(tl::ptr<float> acc, tl::ptr<tl::f16> h, tl::ptr<int32_t> count,
                           tl::ptr<float> x, tl::i32 n) {
  auto rows = tl::arange(0, 16);
  auto cols = tl::arange(0, 64);
  auto offs = rows[{tl::_, tl::None}] * 64 + cols[{tl::None, tl::_}];
  auto v = tl::load(x + offs);
  tl::atomic_add(acc + offs, v, cols[{tl::None, tl::_}] < n, "relaxed");
  tl::atomic_add(h + offs, v.to<tl::f16>(), "relaxed");
  tl::atomic_add(count + rows, 1, "relaxed");
  tl::store(x + offs, tl::atomic_add(acc + offs, v, "relaxed"));
}

// f32 -> int8 casts (saturating, NaN to 0) of libdevice's round, as per-token quantization does.
inline void quantize(tl::ptr<float> x, tl::ptr<int8_t> q, tl::constexpr_<int> B) {
  auto offs = tl::arange(0, B);
  tl::store(q + offs, tl::libdevice::round(tl::load(x + offs) * 127.f).to<int8_t>());
}

inline void float_math(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto a = tl::load(x + offs, mask, 1.0f);
  auto r = a + a * a - a / (a + 2.0f);
  r = r + a % 3.0f + tl::minimum(a, a * 0.5f) + tl::maximum(a, r) + tl::pow(a, r);
  r = r + (-a) + tl::abs(a) + tl::exp(a) + tl::exp2(a) + tl::log(tl::abs(a) + 1.0f);
  r = r + tl::log2(a + 4.0f) + tl::sqrt(tl::abs(a)) + tl::rsqrt(a + 8.0f) + tl::sin(a) + tl::cos(a);
  r = r + tl::tanh(a) + tl::erf(a) + tl::floor(a) + tl::ceil(a) + tl::fma(a, a, a);
  r = r + tl::log1p(tl::abs(a));
  r = tl::where(a > 0.0f, r, -r);
  r = r + tl::cast<float>(tl::cast<tl::f16>(a)) + tl::cast<float>(tl::cast<int32_t>(a));
  r = r + tl::bitcast<float>(tl::bitcast<int32_t>(a));
  r = r + tl::cast<float>(tl::num_programs(0));
  tl::store(out + offs, r, mask);
}

inline void int_math(tl::ptr<int32_t> x, tl::ptr<uint32_t> out, tl::i32 n, tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto a = tl::load(x + offs, mask);
  auto r = a + a * 3 - a / 7 + a % 5;
  r = (r & 0xff) | (r ^ a) | (a << 3) | (a >> 2) | ~a;
  r = r + tl::minimum(a, r) + tl::maximum(a, a * 9) + tl::abs(a) + (-a);
  auto u = tl::cast<uint32_t>(r);
  u = u + tl::umulhi(u, tl::cast<uint32_t>(a)) + (u >> 3) + u / 3u;
  auto wide = tl::cast<int64_t>(a) * 1000000007;
  u = u + tl::cast<uint32_t>(wide >> 20);
  tl::store(out + offs, u, mask & (a != 0));
}

inline void shapes(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> M,
                   tl::constexpr_<int> N) {
  auto rm = tl::arange(0, M);
  auto rn = tl::arange(0, N);
  auto offs = tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
  auto a = tl::load(x + offs);     // [M, N]
  auto t = tl::trans(a);           // [N, M]
  auto r = tl::reshape(t, {M, N}); // [M, N]
  auto j = tl::join(a, r);         // [M, N, 2]
  auto [p, q] = tl::split(j);
  auto c = tl::cat(p, q); // [2M, N]
  auto back = tl::reshape(c, {2, M, N});
  auto s = tl::sum(back, 0); // [M, N]
  auto row = tl::broadcast_to(tl::expand_dims(tl::max(s, 1), 1), {M, N});
  tl::store(out + offs, s - row);
}

inline void reductions(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> idx,
                       tl::constexpr_<int> M, tl::constexpr_<int> N) {
  auto rm = tl::arange(0, M);
  auto rn = tl::arange(0, N);
  auto a = tl::load(x + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0));
  auto rows = tl::sum(a, 1) + tl::min(a, 1) + tl::xor_sum(tl::cast<int32_t>(a), 1);
  auto cols = tl::cumsum(tl::max(a, 0), 0) + tl::cumsum(tl::max(a, 0), 0, true);
  tl::store(out + rm, rows);
  tl::store(out + M + rn, cols);
  tl::store(idx + rm, tl::argmax(a, 1));
  // Counts in bins 0..15: values out of range (negative, or 16 and up) and masked-off lanes
  // are not counted.
  tl::store(idx + M + tl::arange(0, 16),
            tl::histogram(rm * 5 % 16 - 2, 16) + tl::histogram(rm % 20, 16, rm < 25));
  auto custom = tl::reduce(a, 0, [](auto p, auto q) { return p * q; });
  tl::store(out + M + N + rn, custom);
  tl::store(out + 2 * M + 2 * N, tl::sum(tl::sum(a, 0), 0));
}

// Two block reductions, whose shared scratch the lowering guards with barriers, after a barrier
// the user wrote.
inline void barriers(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> B) {
  tl::debug_barrier();
  auto v = tl::load(x + tl::arange(0, B));
  auto s = tl::sum(v);
  tl::store(out, tl::max(v * s));
}

// A scalar read, then an atomic update of it: every thread must have read it first.
inline void read_then_count(tl::ptr<int32_t> count, tl::ptr<int32_t> out) {
  tl::store(out + tl::program_id(0), tl::load(count));
  tl::atomic_add(count, 1);
}

inline void dots(tl::ptr<tl::f16> a, tl::ptr<float> fa, tl::ptr<int8_t> ia, tl::ptr<float> out,
                 tl::ptr<int32_t> iout, tl::constexpr_<int> M) {
  auto r = tl::arange(0, M);
  auto offs = tl::expand_dims(r, 1) * M + tl::expand_dims(r, 0);
  auto x = tl::load(a + offs);
  auto acc = tl::dot(x, x, tl::zeros<float>({M, M}));
  auto y = tl::load(fa + offs);
  acc = tl::dot(y, y, acc, "tf32");
  acc = tl::dot(y, y, acc, "ieee");
  auto h = tl::dot(x, x, tl::zeros<tritium::half>({M, M}));
  tl::store(out + offs, acc + tl::cast<float>(h));
  auto i = tl::load(ia + offs);
  tl::store(iout + offs, tl::dot(i, i, tl::zeros<int32_t>({M, M})));
}

// One dot of whole blocks read from memory: c = a @ b + c.
template <class In, class Acc>
void dot_tile(tl::ptr<In> a, tl::ptr<In> b, tl::ptr<Acc> c, tl::constexpr_<int> M,
              tl::constexpr_<int> N, tl::constexpr_<int> K, tl::constexpr_<int> TF32) {
  auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
  auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
  auto y = tl::load(b + tl::expand_dims(rk, 1) * N + tl::expand_dims(rn, 0));
  auto cp = c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
  tl::store(cp, tl::dot(x, y, tl::load(cp), TF32 ? "tf32" : "ieee"));
}

// Two dots in a chain, as attention's softmax(Q K) V: the first's result, exponentiated and cast
// to f16, is the second's a (read from registers by wgmma).
inline void chained_dots(tl::ptr<tl::f16> q, tl::ptr<tl::f16> k, tl::ptr<tl::f16> v,
                         tl::ptr<float> o, tl::constexpr_<int> M, tl::constexpr_<int> N,
                         tl::constexpr_<int> D) {
  auto rm = tl::arange(0, M);
  auto rn = tl::arange(0, N);
  auto rd = tl::arange(0, D);
  auto qt = tl::load(q + rm[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}]);
  auto kt = tl::load(k + rd[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}]);
  auto p = tl::exp2(tl::dot(qt, kt) * 0.25f).to<tritium::half>();
  auto vt = tl::load(v + rn[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}]);
  tl::store(o + rm[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}], tl::dot(p, vt));
}

// Attention's inner loop (Flash Attention v2's online softmax) for one block of rows against
// every K and V block: the second dot's accumulator is rescaled by each iteration's softmax
// before it is accumulated into again. n_ctx is a multiple of BN.
inline void attention_loop(tl::ptr<tl::f16> q, tl::ptr<tl::f16> k, tl::ptr<tl::f16> v,
                           tl::ptr<float> o, tl::i32 n_ctx, tl::constexpr_<int> BM,
                           tl::constexpr_<int> BN, tl::constexpr_<int> D) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::arange(0, BN);
  auto rd = tl::arange(0, D);
  auto qt = tl::load(q + rm[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}]);
  auto m_i = tl::zeros<float>({BM}) - 1.0e30f;
  auto l_i = tl::zeros<float>({BM});
  auto acc = tl::zeros<float>({BM, D});
  for (auto start : tl::range(0, n_ctx, BN)) {
    auto kt = tl::load(k + rd[{tl::_, tl::None}] + (start + rn)[{tl::None, tl::_}] * D);
    auto qk = tl::dot(qt, kt);
    auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
    auto p = tl::exp2(qk - m_ij[{tl::_, tl::None}]);
    auto alpha = tl::exp2(m_i - m_ij);
    acc = acc * alpha[{tl::_, tl::None}];
    auto vt = tl::load(v + (start + rn)[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}]);
    acc = tl::dot(p.to<tritium::half>(), vt, acc);
    l_i = l_i * alpha + tl::sum(p, 1);
    m_i = m_ij;
  }
  tl::store(o + rm[{tl::_, tl::None}] * D + rd[{tl::None, tl::_}], acc / l_i[{tl::_, tl::None}]);
}

// GEMM with a K loop and the fused epilogue of the seeds: relu(a @ b + bias), masked.
inline void gemm_bias_relu(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<float> bias,
                           tl::ptr<tl::f16> c, tl::i32 M, tl::i32 N, tl::i32 K,
                           tl::constexpr_<int> BM, tl::constexpr_<int> BN, tl::constexpr_<int> BK) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    auto a_mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rk + k, 0) < K);
    auto b_mask = (tl::expand_dims(rk + k, 1) < K) & (tl::expand_dims(rn, 0) < N);
    auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk + k, 0), a_mask, 0.0f);
    auto y = tl::load(b + tl::expand_dims(rk + k, 1) * N + tl::expand_dims(rn, 0), b_mask, 0.0f);
    acc = tl::dot(x, y, acc);
  }
  auto bv = tl::load(bias + rn, rn < N, 0.0f);
  auto out = tl::maximum(acc + tl::expand_dims(bv, 0), 0.0f);
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), tl::cast<tl::f16>(out), mask);
}

// A gated MLP's first layer as it is written for linear layers' weights (N x K, row-major): two
// products of one a tile, each weight's [BN, BK] tile read through its transpose, and
// silu(a w1ᵀ) * (a w2ᵀ), masked.
inline void gated_gemm(tl::ptr<tl::f16> a, tl::ptr<tl::f16> w1, tl::ptr<tl::f16> w2,
                       tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K, tl::constexpr_<int> BM,
                       tl::constexpr_<int> BN, tl::constexpr_<int> BK) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto acc1 = tl::zeros<float>({BM, BN});
  auto acc2 = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    auto k_ok = tl::expand_dims(rk + k, 0) < K;
    auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk + k, 0),
                      (tl::expand_dims(rm, 1) < M) & k_ok, 0.0f);
    auto w_offs = tl::expand_dims(rn, 1) * K + tl::expand_dims(rk + k, 0);
    auto w_mask = (tl::expand_dims(rn, 1) < N) & k_ok;
    acc1 = tl::dot(x, tl::trans(tl::load(w1 + w_offs, w_mask, 0.0f)), acc1);
    acc2 = tl::dot(x, tl::trans(tl::load(w2 + w_offs, w_mask, 0.0f)), acc2);
  }
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0),
            acc1 * tl::sigmoid(acc1) * acc2, mask);
}

// An fp8 GEMM as Triton's tutorial writes it for fp8: A row-major, B column-major (K
// contiguous in both, what wgmma's 8-bit form reads); B_ROWS 1: B row-major; 2: W = Bᵀ held as
// a linear layer's weight (N x K, row-major), its [BN, BK] tile loaded and transposed.
template <class A, class B>
void fp8_gemm(tl::ptr<A> a, tl::ptr<B> b, tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K,
              tl::constexpr_<int> BM, tl::constexpr_<int> BN, tl::constexpr_<int> BK,
              tl::constexpr_<int> B_ROWS) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    auto kk = rk + k;
    auto a_mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(kk, 0) < K);
    auto b_mask = (tl::expand_dims(kk, 1) < K) & (tl::expand_dims(rn, 0) < N);
    auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(kk, 0), a_mask);
    if (B_ROWS == 2) {
      auto w_mask = (tl::expand_dims(rn, 1) < N) & (tl::expand_dims(kk, 0) < K);
      auto w = tl::load(b + tl::expand_dims(rn, 1) * K + tl::expand_dims(kk, 0), w_mask);
      acc = tl::dot(x, tl::trans(w), acc);
      continue;
    }
    auto b_offs = tl::expand_dims(kk, 1) + tl::expand_dims(rn, 0) * K;
    if (B_ROWS)
      b_offs = tl::expand_dims(kk, 1) * N + tl::expand_dims(rn, 0);
    acc = tl::dot(x, tl::load(b + b_offs, b_mask), acc);
  }
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), acc, mask);
}

// Weight-only quantization: int8 weights and per-column scales dequantized to f16 on their way
// into the dot (the load of b feeds the dot through a cast and a multiply).
inline void gemm_int8_weights(tl::ptr<tl::f16> a, tl::ptr<int8_t> b, tl::ptr<tl::f16> scale,
                              tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K,
                              tl::constexpr_<int> BM, tl::constexpr_<int> BN,
                              tl::constexpr_<int> BK) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto s = tl::load(scale + rn, rn < N);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    auto a_mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rk + k, 0) < K);
    auto b_mask = (tl::expand_dims(rk + k, 1) < K) & (tl::expand_dims(rn, 0) < N);
    auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk + k, 0), a_mask, 0.0f);
    auto q = tl::load(b + tl::expand_dims(rk + k, 1) * N + tl::expand_dims(rn, 0), b_mask, 0);
    acc += tl::dot(x, q.to<tritium::half>() * tl::expand_dims(s, 0));
  }
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), acc, mask);
}

// 16-bit integers read as bf16 too (a bitcast) and moved through shared memory (join, split):
// the moved values must keep their bits, NaN patterns included.
inline void shorts_as_bf16(tl::ptr<int16_t> x, tl::ptr<int32_t> moved, tl::ptr<int32_t> ordered,
                           tl::i32 n, tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask);
  auto f = tl::bitcast<tl::bf16>(v);
  tl::store(ordered + offs, (f == f).to<int32_t>(), mask); // false for NaN patterns
  auto [a, b] = tl::split(tl::join(v, v));
  tl::store(moved + offs, a.to<int32_t>(), mask);
}

// A persistent GEMM (tutorial 09's): each program walks tiles tile_id, tile_id + programs, ...
// with its K loop inside and the tile's store in the tile loop. Rows and columns past the edge
// read row / column 0, hinted contiguous as the tutorial does. FLATTEN: the tutorial's
// flatten=True (the K loop's copy ring runs across tiles).
inline void persistent_gemm(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c, tl::i32 M,
                            tl::i32 N, tl::i32 K, tl::constexpr_<int> BM, tl::constexpr_<int> BN,
                            tl::constexpr_<int> BK, tl::constexpr_<int> PROGRAMS,
                            tl::constexpr_<bool> FLATTEN) {
  auto tiles_n = tl::cdiv(N, BN);
  auto tiles = tl::cdiv(M, BM) * tiles_n;
  for (auto t : tl::range(tl::program_id(0), tiles, PROGRAMS, {.flatten = FLATTEN})) {
    auto rm = (t / tiles_n) * BM + tl::arange(0, BM);
    auto rn = (t % tiles_n) * BN + tl::arange(0, BN);
    auto rm_in = tl::max_contiguous(tl::multiple_of(tl::where(rm < M, rm, 0), BM), BM);
    auto rn_in = tl::max_contiguous(tl::multiple_of(tl::where(rn < N, rn, 0), BN), BN);
    auto acc = tl::zeros<float>({BM, BN});
    for (auto k : tl::range(0, tl::cdiv(K, BK))) {
      auto rk = k * BK + tl::arange(0, BK);
      auto x = tl::load(a + tl::expand_dims(rm_in, 1) * K + tl::expand_dims(rk, 0),
                        tl::expand_dims(rk, 0) < K, 0.0f);
      auto y = tl::load(b + tl::expand_dims(rk, 1) * N + tl::expand_dims(rn_in, 0),
                        tl::expand_dims(rk, 1) < K, 0.0f);
      acc = tl::dot(x, y, acc);
    }
    auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
    tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), tl::cast<tl::f16>(acc),
              mask);
  }
}

// The same through tensor descriptors (tutorial 09's descriptor variant): A [M, K]; B [K, N],
// or [N, K] read transposed (B_T); TMA copies them on sm_90a.
inline void descriptor_gemm(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c, tl::i32 M,
                            tl::i32 N, tl::i32 K, tl::constexpr_<int> BM, tl::constexpr_<int> BN,
                            tl::constexpr_<int> BK, tl::constexpr_<int> PROGRAMS,
                            tl::constexpr_<bool> FLATTEN, tl::constexpr_<bool> B_T) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = B_T ? tl::make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK})
                    : tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  auto tiles_n = tl::cdiv(N, BN);
  auto tiles = tl::cdiv(M, BM) * tiles_n;
  for (auto t : tl::range(tl::program_id(0), tiles, PROGRAMS, {.flatten = FLATTEN})) {
    auto om = (t / tiles_n) * BM;
    auto on = (t % tiles_n) * BN;
    auto acc = tl::zeros<float>({BM, BN});
    for (auto k : tl::range(0, tl::cdiv(K, BK))) {
      auto x = a_desc.load({om, k * BK});
      if (B_T)
        acc = tl::dot(x, tl::trans(b_desc.load({on, k * BK})), acc);
      else
        acc = tl::dot(x, b_desc.load({k * BK, on}), acc);
    }
    c_desc.store({om, on}, tl::cast<tl::f16>(acc));
  }
}

// One tile in two K loops, one after the other (causal attention's shape): two TMA rings whose
// buffers and mbarriers the lowering may place in the same shared memory.
inline void descriptor_gemm_two_loops(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c,
                                      tl::i32 M, tl::i32 N, tl::i32 K, tl::constexpr_<int> BM,
                                      tl::constexpr_<int> BN, tl::constexpr_<int> BK) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto om = tl::program_id(0) * BM;
  auto on = tl::program_id(1) * BN;
  auto steps = tl::cdiv(K, BK);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, steps / 2))
    acc = tl::dot(a_desc.load({om, k * BK}), b_desc.load({k * BK, on}), acc);
  for (auto k : tl::range(steps / 2, steps))
    acc = tl::dot(a_desc.load({om, k * BK}), b_desc.load({k * BK, on}), acc);
  auto rm = om + tl::arange(0, BM);
  auto rn = on + tl::arange(0, BN);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), tl::cast<tl::f16>(acc),
            (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N));
}

inline void atomics(tl::ptr<float> x, tl::ptr<int32_t> counter, tl::ptr<float> out, tl::i32 n,
                    tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask);
  auto old = tl::atomic_add(out + offs, v, mask);
  tl::atomic_max(out + offs, old, mask);
  auto ticket = tl::atomic_add(counter + 0, 1);
  auto prev = tl::atomic_cas(counter + 1, ticket, ticket + 1);
  tl::atomic_xchg(counter + 2, prev);
  tl::atomic_or(counter + offs % 4 + 3, offs, mask);
}

inline void control(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> B) {
  auto offs = tl::arange(0, B);
  auto acc = tl::zeros<float>({B});
  for (auto k : tl::range(0, n, B)) {
    auto p = tl::multiple_of(k + offs, 16);
    acc = acc + tl::load(x + tl::max_contiguous(p, 16), p < n, 0.0f);
  }
  auto total = tl::sum(acc, 0);
  tl::i32 i = tl::program_id(0);
  tl::while_([&] { return i < n; }, [&] { i = i + 1024; });
  tl::if_(
      total > 0.0f, [&] { acc = acc * 2.0f; }, [&] { acc = acc - 1.0f; });
  tl::assume(n > 0);
  tl::device_assert(acc == acc, "no NaN");
  tl::debug_barrier();
  tl::device_print("total", total);
  tl::store(out + offs + tl::max_constancy(i * 0, 16), acc);
}

} // namespace gpu_test

namespace gpu_test {

// Tensors smaller than the block: threads replicate elements; stores are benign, atomics must
// still happen once per element.
inline void tiny(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<float> acc, tl::constexpr_<int> N) {
  auto r = tl::arange(0, N);
  auto a = tl::load(x + r);
  tl::atomic_add(acc + r, a);
  tl::atomic_add(acc + N, tl::sum(a, 0));
  auto m = tl::reshape(a, {2, N / 2});
  auto rows = tl::sum(m, 1);
  auto cols = tl::max(m, 0);
  tl::store(out + tl::arange(0, 2), rows);
  tl::store(out + 2 + tl::arange(0, N / 2), cols);
  tl::store(out + 2 + N / 2 + r, tl::cumsum(a, 0));
}

// A row's mean and its normalized copy in passes over BLOCK-wide chunks (the looped layer
// norm's shape): loops whose trips each wait on a load.
inline void row_passes(tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::i32 n,
                       tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  x += row * n;
  y += row * n;
  auto acc = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    acc += tl::load(x + cols, cols < n, 0.0).to<float>();
  }
  auto mean = tl::sum(acc, 0) / n;
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto v = tl::load(x + cols, cols < n, 0.0).to<float>();
    tl::store(y + cols, (v - mean).to<tl::f16>(), cols < n);
  }
}

// A row's sum and sum of squares over BLOCK-wide chunks (GroupNorm's and var_mean's loop).
inline void sum_and_squares(tl::ptr<tl::f16> x, tl::ptr<float> out, tl::i32 n,
                            tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  x += row * n;
  auto sum = tl::zeros<float>({BLOCK});
  auto sum_sq = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto v = tl::load(x + cols, cols < n, 0.0).to<float>();
    sum += v;
    sum_sq += v * v;
  }
  tl::store(out + 2 * row, tl::sum(sum, 0));
  tl::store(out + 2 * row + 1, tl::sum(sum_sq, 0));
}

// The same mean with the row in registers, no loop.
inline void row_in_registers(tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::i32 n,
                             tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto v = tl::load(x + row * n + cols, cols < n, 0.0).to<float>();
  auto mean = tl::sum(v, 0) / n;
  tl::store(y + row * n + cols, (v - mean).to<tl::f16>(), cols < n);
}

// Scans along both axes of a 2-D block, forward and reverse.
inline void scans(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> M,
                  tl::constexpr_<int> N) {
  auto rm = tl::arange(0, M);
  auto rn = tl::arange(0, N);
  auto offs = tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
  auto a = tl::load(x + offs);
  tl::store(out + offs, tl::cumsum(a, 1) + tl::cumsum(a, 0, true));
  tl::store(out + M * N + offs, tl::cumsum(a, 1, true) - tl::cumsum(a, 0));
}

// out = x * y + z: one fma, or a multiply and an add, per CompileOptions::enable_fp_fusion.
inline void mul_add(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto x0 = tl::load(x + offs), y = tl::load(x + BLOCK + offs), z = tl::load(x + 2 * BLOCK + offs);
  tl::store(out + offs, x0 * y + z);
}

// tl::extern_elementwise: C math functions the language lacks, one unary and one binary.
inline void externs(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto a = tl::load(x + offs, mask, 1.0f);
  tl::store(out + offs, tl::extern_elementwise("atan2", a, a + 1.0f), mask);
  tl::store(out + n + offs, tl::extern_elementwise("cbrt", a), mask);
}

} // namespace gpu_test

namespace gpu_test {

// dot's other dtype rules: bf16 into f32, f64 into f64, bf16 into a bf16 accumulator.
inline void more_dots(tl::ptr<tritium::bfloat16> a, tl::ptr<double> d, tl::ptr<float> out,
                      tl::ptr<double> dout, tl::ptr<tritium::bfloat16> bout,
                      tl::constexpr_<int> M) {
  auto r = tl::arange(0, M);
  auto offs = tl::expand_dims(r, 1) * M + tl::expand_dims(r, 0);
  auto x = tl::load(a + offs);
  tl::store(out + offs, tl::dot(x, x, tl::zeros<float>({M, M})));
  auto y = tl::load(d + offs);
  tl::store(dout + offs, tl::dot(y, y, tl::zeros<double>({M, M})));
  tl::store(bout + offs, tl::dot(x, x, tl::zeros<tritium::bfloat16>({M, M})));
}

} // namespace gpu_test

namespace gpu_test {

// Narrow element types through memory: bytes, shorts and booleans, masked.
inline void narrow(tl::ptr<bool> flags, tl::ptr<uint8_t> bytes, tl::ptr<int16_t> shorts,
                   tl::ptr<tritium::half> halves, tl::ptr<int32_t> out, tl::i32 n,
                   tl::constexpr_<int> B) {
  auto offs = tl::program_id(0) * B + tl::arange(0, B);
  auto mask = offs < n;
  auto f = tl::load(flags + offs, mask);
  auto b = tl::load(bytes + offs, mask);
  auto s = tl::load(shorts + offs, mask);
  auto h = tl::load(halves + offs, mask);
  auto r = tl::where(f, tl::cast<int32_t>(b), tl::cast<int32_t>(s)) + tl::cast<int32_t>(h);
  tl::store(out + offs, r, mask);
  tl::store(flags + offs, !f, mask);
  tl::store(bytes + offs, b + tl::cast<uint8_t>(s), mask);
  tl::store(halves + offs, h * h, mask);
}

} // namespace gpu_test

namespace gpu_test {

// Reductions that keep the reduced axis (size 1) broadcast back against their input.
inline void keep_dims(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> M,
                      tl::constexpr_<int> N) {
  auto offs = tl::expand_dims(tl::arange(0, M), 1) * N + tl::expand_dims(tl::arange(0, N), 0);
  auto a = tl::load(x + offs);
  tl::store(out + offs, a - tl::max(a, 1, true) + tl::sum(a, 0, true));
}

} // namespace gpu_test

namespace gpu_test {

// f64 transcendentals (AMD: our own expansions, as ocml is not available).
inline void f64_math(tl::ptr<double> x, tl::ptr<double> out, tl::constexpr_<int> B) {
  auto offs = tl::arange(0, B);
  auto a = tl::load(x + offs);
  tl::store(out + offs, tl::exp(a));
  tl::store(out + B + offs, tl::log(tl::abs(a) + 1e-300));
  tl::store(out + 2 * B + offs, tl::sin(a));
  tl::store(out + 3 * B + offs, tl::cos(a));
  tl::store(out + 4 * B + offs, tl::exp2(a));
  tl::store(out + 5 * B + offs, tl::log2(tl::abs(a) + 1e-300));
}

} // namespace gpu_test

namespace gpu_test {

// A tile transpose written the ordinary way: a 2-D block loaded, transposed, stored, the mask
// transposed too (as the zoo's twin of Triton's kernel writes it).
template <class T>
void tile_transpose(tl::ptr<T> x, tl::ptr<T> y, tl::i32 m, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto rows = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  auto r = tl::expand_dims(rows, 1), c = tl::expand_dims(cols, 0);
  auto mask = (r < m) & (c < n);
  auto tile = tl::load(x + r * n + c, mask);
  auto rt = tl::expand_dims(cols, 1), ct = tl::expand_dims(rows, 0);
  tl::store(y + rt * m + ct, tl::trans(tile), tl::trans(mask));
}

} // namespace gpu_test

namespace gpu_test {

// More bins than a block's shared memory holds counters for (128 KiB).
inline void big_histogram(tl::ptr<int32_t> x, tl::ptr<int32_t> out) {
  auto offs = tl::arange(0, 1024);
  tl::store(out + tl::arange(0, 32768), tl::histogram(tl::load(x + offs), 32768));
}

} // namespace gpu_test
