// fused_moe: the expert GEMM of a mixture-of-experts layer as vLLM's fused MoE kernel computes
// it. Each token is routed to TOP_K of E experts; the host groups the (token, slot) pairs by
// expert and pads each expert's list to a multiple of BLOCK_M (vLLM's moe_align_block_size:
// sorted_token_ids, one expert id per block of BLOCK_M rows, num_tokens_post_padded), so that
// every program multiplies BLOCK_M rows gathered from A by one expert's weights. Padding rows
// hold the sentinel T * TOP_K and are masked. The routing weight multiplies each row in the
// epilogue. A: fp16 [T, K]; W: fp16 [E, N, K] (vLLM's layout, read as [K, N] through strides);
// C: fp16 [T * TOP_K, N].
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void fused_moe_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr, tl::ptr<tl::f16> c_ptr,
                      tl::ptr<float> topk_weights_ptr, tl::ptr<int32_t> sorted_token_ids_ptr,
                      tl::ptr<int32_t> expert_ids_ptr, tl::ptr<int32_t> num_tokens_post_padded_ptr,
                      tl::i32 N, tl::i32 K, tl::i32 EM, tl::i32 num_valid_tokens, tl::i32 stride_am,
                      tl::i32 stride_ak, tl::i32 stride_be, tl::i32 stride_bk, tl::i32 stride_bn,
                      tl::i32 stride_cm, tl::i32 stride_cn, tl::constexpr_<int> BLOCK_M,
                      tl::constexpr_<int> BLOCK_N, tl::constexpr_<int> BLOCK_K,
                      tl::constexpr_<int> GROUP_M, tl::constexpr_<bool> MUL_ROUTED_WEIGHT,
                      tl::constexpr_<int> TOP_K) {
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(EM, BLOCK_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto num_pid_in_group = GROUP_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  // The grid covers the most rows any routing can need; blocks past this routing's rows exit.
  auto num_tokens_post_padded = tl::load(num_tokens_post_padded_ptr);
  tl::if_(pid_m * BLOCK_M < num_tokens_post_padded, [&] {
    auto offs_token_id = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
    auto offs_token = tl::load(sorted_token_ids_ptr + offs_token_id);
    auto token_mask = offs_token < num_valid_tokens;

    auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
    auto offs_k = tl::arange(0, BLOCK_K);
    // Row t * TOP_K + j of the routed rows reads token t.
    auto a_ptrs =
        a_ptr + ((offs_token / TOP_K)[{_, None}] * stride_am + offs_k[{None, _}] * stride_ak);
    auto off_experts = tl::load(expert_ids_ptr + pid_m);
    auto b_ptrs = b_ptr + off_experts * stride_be +
                  (offs_k[{_, None}] * stride_bk + offs_bn[{None, _}] * stride_bn);

    auto accumulator = tl::zeros<float>({BLOCK_M, BLOCK_N});
    for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
      auto a =
          tl::load(a_ptrs, token_mask[{_, None}] && (offs_k[{None, _}] < K - k * BLOCK_K), 0.0);
      auto b = tl::load(b_ptrs, offs_k[{_, None}] < K - k * BLOCK_K, 0.0);
      accumulator += tl::dot(a, b);
      a_ptrs += BLOCK_K * stride_ak;
      b_ptrs += BLOCK_K * stride_bk;
    }
    if (MUL_ROUTED_WEIGHT) {
      auto moe_weight = tl::load(topk_weights_ptr + offs_token, token_mask, 0.0);
      accumulator = accumulator * moe_weight[{_, None}];
    }
    auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
    auto c_ptrs = c_ptr + stride_cm * offs_token[{_, None}] + stride_cn * offs_cn[{None, _}];
    tl::store(c_ptrs, accumulator.to<half>(), token_mask[{_, None}] && (offs_cn[{None, _}] < N));
  });
}

struct Tiles {
  int m, n, k, group, warps, stages;
};
// vLLM's tuned configurations for Mixtral-sized experts on H100 are of this kind: 64-row
// blocks when each expert gets many tokens, 16-row blocks for decoding batches.
Tiles tiles_for(const Device& dev, int routed_rows_per_expert) {
  if (is_gpu(dev))
    return routed_rows_per_expert >= 64 ? Tiles{64, 128, 64, 8, 4, 4} : Tiles{16, 64, 128, 1, 4, 4};
  return {16, 32, 32, 4, 4, 1};
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"t16_e8_top2_h4096_n14336", "t4096_e8_top2_h4096_n14336"};
  return {"t32_e8_top2_h64_n48", "t7_e4_top2_h96_n32"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int T = d["t"], E = d["e"], top_k = d["top"], K = d["h"], N = d["n"];
  Rng rng("fused_moe " + shape);
  auto ha = rng.uniform_vec<half>(size_t(T) * K, -1, 1);
  // Weights of magnitude 1/sqrt(K) keep the outputs near 1 whatever K is.
  const double wr = 1.0 / std::sqrt(double(K));
  auto hw = rng.uniform_vec<half>(size_t(E) * N * K, -wr, wr);

  // The router's choice: TOP_K distinct experts per token, weights summing to 1.
  std::vector<int32_t> topk_ids(size_t(T) * top_k);
  std::vector<float> topk_weights(size_t(T) * top_k);
  for (int t = 0; t < T; ++t) {
    std::vector<int> experts(E);
    for (int e = 0; e < E; ++e)
      experts[e] = e;
    std::shuffle(experts.begin(), experts.end(), rng.gen);
    double total = 0;
    std::vector<double> w(top_k);
    for (int j = 0; j < top_k; ++j)
      total += w[j] = rng.uniform(0.1, 1);
    for (int j = 0; j < top_k; ++j) {
      topk_ids[size_t(t) * top_k + j] = experts[j];
      topk_weights[size_t(t) * top_k + j] = float(w[j] / total);
    }
  }

  Tiles tl_ = tiles_for(ctx.dev, T * top_k / E);
  const int BM = tl_.m;
  // moe_align_block_size on the host: each expert's routed rows, padded to BLOCK_M.
  const int num_valid = T * top_k;
  const int em = num_valid + E * (BM - 1);
  std::vector<int32_t> sorted_ids(size_t(em), num_valid);
  std::vector<int32_t> expert_ids(size_t(tritium::cdiv(em, BM)), 0);
  int pos = 0;
  for (int e = 0; e < E; ++e) {
    int start = pos;
    for (int r = 0; r < num_valid; ++r)
      if (topk_ids[r] == e)
        sorted_ids[pos++] = r;
    pos = start + tritium::cdiv(pos - start, BM) * BM;
    for (int b = start / BM; b < pos / BM; ++b)
      expert_ids[b] = e;
  }
  std::vector<int32_t> post_padded{pos};

  auto a = ctx.dev.from_host(ha);
  auto w = ctx.dev.from_host(hw);
  auto tw = ctx.dev.from_host(topk_weights);
  auto sid = ctx.dev.from_host(sorted_ids);
  auto eid = ctx.dev.from_host(expert_ids);
  auto npp = ctx.dev.from_host(post_padded);
  auto c = ctx.dev.alloc<half>(size_t(num_valid) * N);

  auto kernel = tritium::jit(fused_moe_kernel, "fused_moe_kernel");
  kernel.options({.num_warps = tl_.warps, .num_stages = tl_.stages});
  int grid = tritium::cdiv(em, BM) * tritium::cdiv(N, tl_.n);
  ctx.launch([&] {
    kernel[{grid}](a, w, c, tw, sid, eid, npp, N, K, em, num_valid, K, 1, N * K, 1, K, N, 1, BM,
                   tl_.n, tl_.k, tl_.group, true, top_k);
  });

  auto got = c.to_host();
  Check chk{1e-2, 1.0 / 1024};
  for (size_t idx : sample(size_t(num_valid) * N, 4096, rng)) {
    size_t r = idx / N, n = idx % N;
    size_t t = r / top_k;
    size_t e = size_t(topk_ids[r]);
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += to_d(ha[t * K + k]) * to_d(hw[(e * N + n) * K + k]);
    chk.add(to_d(got[idx]), acc * topk_weights[r], "c", idx);
  }
  // Each used expert's weights are read once per row block at best: count them once, with A
  // and C.
  int experts_used = 0;
  for (int e = 0; e < E; ++e)
    experts_used += std::count(topk_ids.begin(), topk_ids.end(), e) > 0;
  double bytes = 2.0 * T * K + 2.0 * experts_used * double(N) * K + 2.0 * num_valid * double(N);
  return outcome(chk, bytes, 2.0 * num_valid * double(N) * K);
}

[[maybe_unused]] const int registered = zoo::add({"fused_moe", "gemm", shapes, run});
} // namespace
