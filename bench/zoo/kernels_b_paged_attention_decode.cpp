// paged_attention_decode: one decoding step of attention over a paged KV cache (vLLM's
// PagedAttention; the Triton decode kernels of vLLM and SGLang), with grouped-query attention.
// Each sequence's keys and values live in pages of PAGE tokens scattered through the cache;
// block_tables[b, i] names the page holding tokens i * PAGE ... of sequence b, whose length is
// context_lens[b]. One program per (sequence, KV head) computes the QUERY_GROUP query heads
// that share the KV head as the rows of one tile (padded to 16 rows for the dot), walking the
// context BLOCK_N tokens at a time with an online softmax.
//   q, out: fp16 [B, HQ, D]; k_cache, v_cache: fp16 [num_pages, PAGE, HKV, D].
#include "kernels_b_util.hpp"

#include <limits>
#include <numeric>

namespace {
using namespace zoo_b;

void paged_attention_decode_kernel(tl::ptr<tl::f16> q_ptr, tl::ptr<tl::f16> k_cache_ptr,
                                   tl::ptr<tl::f16> v_cache_ptr, tl::ptr<int32_t> block_tables_ptr,
                                   tl::ptr<int32_t> context_lens_ptr, tl::ptr<tl::f16> out_ptr,
                                   tl::f32 sm_scale, tl::i32 max_pages_per_seq,
                                   tl::constexpr_<int> HQ, tl::constexpr_<int> HKV,
                                   tl::constexpr_<int> D, tl::constexpr_<int> PAGE,
                                   tl::constexpr_<int> BLOCK_H, tl::constexpr_<int> BLOCK_N) {
  tl::static_assert_(BLOCK_N % PAGE == 0, "a block of tokens covers whole pages");
  const int QUERY_GROUP = HQ / HKV;
  auto b = tl::program_id(0);
  auto kv_head = tl::program_id(1);
  auto offs_h = tl::arange(0, BLOCK_H);
  auto h_mask = offs_h < QUERY_GROUP;
  auto q_heads = kv_head * QUERY_GROUP + offs_h;
  auto offs_d = tl::arange(0, D);
  auto q = tl::load(q_ptr + b * (HQ * D) + q_heads[{_, None}] * D + offs_d[{None, _}],
                    h_mask[{_, None}], 0.0);
  auto context_len = tl::load(context_lens_ptr + b);
  // exp2 with log2(e) folded into the scale, as Triton's attention kernels do.
  auto qk_scale = sm_scale * 1.44269504;

  auto m_i = tl::full<float>({BLOCK_H}, -std::numeric_limits<float>::infinity());
  auto l_i = tl::zeros<float>({BLOCK_H});
  auto acc = tl::zeros<float>({BLOCK_H, D});
  auto offs_n = tl::arange(0, BLOCK_N);
  for (auto start_n : tl::range(0, context_len, BLOCK_N)) {
    auto tok = start_n + offs_n;
    auto n_mask = tok < context_len;
    auto page = tl::load(block_tables_ptr + b * max_pages_per_seq + tok / PAGE, n_mask, 0);
    auto slot = page * PAGE + tok % PAGE;
    auto kv_offs = slot[{_, None}] * (HKV * D) + kv_head * D + offs_d[{None, _}];
    auto k = tl::load(k_cache_ptr + kv_offs, n_mask[{_, None}], 0.0);
    auto qk = tl::dot(q, tl::trans(k)) * qk_scale;
    qk = tl::where(n_mask[{None, _}], qk, -std::numeric_limits<float>::infinity());
    auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
    auto p = tl::exp2(qk - m_ij[{_, None}]);
    auto alpha = tl::exp2(m_i - m_ij);
    l_i = l_i * alpha + tl::sum(p, 1);
    auto v = tl::load(v_cache_ptr + kv_offs, n_mask[{_, None}], 0.0);
    acc = tl::dot(p.to<half>(), v, acc * alpha[{_, None}]);
    m_i = m_ij;
  }
  acc = acc / l_i[{_, None}];
  tl::store(out_ptr + b * (HQ * D) + q_heads[{_, None}] * D + offs_d[{None, _}], acc.to<half>(),
            h_mask[{_, None}]);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"b32_hq32_hkv8_d128_page16_ctx4096", "b32_hq32_hkv8_d128_page16_ctx1024"};
  return {"b3_hq4_hkv2_d32_page16_ctx50", "b2_hq8_hkv1_d16_page16_ctx40"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int B = d["b"], HQ = d["hq"], HKV = d["hkv"], D = d["d"], PAGE = d["page"],
            max_ctx = d["ctx"];
  Rng rng("paged_attention_decode " + shape);
  // Lengths between half the longest and the longest; on small shapes one sequence of a
  // single token (the first decoding step after a one-token prompt).
  std::vector<int32_t> lens(B);
  for (int b = 0; b < B; ++b)
    lens[b] = rng.integer(max_ctx / 2, max_ctx);
  if (!ctx.full)
    lens[0] = 1;
  const int max_pages = tritium::cdiv(max_ctx, PAGE);
  // Pages handed out in a shuffled order, as a cache allocator that has run a while does.
  int num_pages = 0;
  for (int b = 0; b < B; ++b)
    num_pages += tritium::cdiv(lens[b], PAGE);
  std::vector<int32_t> order(num_pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng.gen);
  std::vector<int32_t> tables(size_t(B) * max_pages, 0);
  for (int b = 0, next = 0; b < B; ++b)
    for (int i = 0; i < tritium::cdiv(lens[b], PAGE); ++i)
      tables[size_t(b) * max_pages + i] = order[next++];

  auto hq = rng.uniform_vec<half>(size_t(B) * HQ * D, -1, 1);
  auto hk = rng.uniform_vec<half>(size_t(num_pages) * PAGE * HKV * D, -1, 1);
  auto hv = rng.uniform_vec<half>(hk.size(), -1, 1);
  auto q = ctx.dev.from_host(hq);
  auto k = ctx.dev.from_host(hk);
  auto v = ctx.dev.from_host(hv);
  auto bt = ctx.dev.from_host(tables);
  auto cl = ctx.dev.from_host(lens);
  auto out = ctx.dev.alloc<half>(hq.size());
  const float sm_scale = float(1 / std::sqrt(double(D)));

  auto kernel = tritium::jit(paged_attention_decode_kernel, "paged_attention_decode_kernel");
  const int block_h = std::max(16, next_pow2(HQ / HKV));
  const int block_n = is_gpu(ctx.dev) ? 64 : 16;
  kernel.options({.num_warps = 4, .num_stages = is_gpu(ctx.dev) ? 2 : 1});
  ctx.launch([&] {
    kernel[{B, HKV}](q, k, v, bt, cl, out, sm_scale, max_pages, HQ, HKV, D, PAGE, block_h, block_n);
  });

  auto got = out.to_host();
  Check chk{2e-3, 1e-2};
  double bytes = 4.0 * hq.size();
  std::vector<double> s;
  for (int b = 0; b < B; ++b) {
    const int L = lens[b];
    bytes += 2.0 * 2 * double(L) * HKV * D;
    s.resize(L);
    for (int h = 0; h < HQ; ++h) {
      const int kvh = h / (HQ / HKV);
      auto kv = [&](int t, int c) {
        size_t slot = size_t(tables[size_t(b) * max_pages + t / PAGE]) * PAGE + t % PAGE;
        return (slot * HKV + kvh) * D + c;
      };
      double mx = -INFINITY, sum = 0;
      for (int t = 0; t < L; ++t) {
        double dot = 0;
        for (int c = 0; c < D; ++c)
          dot += to_d(hq[(size_t(b) * HQ + h) * D + c]) * to_d(hk[kv(t, c)]);
        s[t] = dot * sm_scale;
        mx = std::max(mx, s[t]);
      }
      for (int t = 0; t < L; ++t)
        sum += s[t] = std::exp(s[t] - mx);
      for (int c = 0; c < D; ++c) {
        double o = 0;
        for (int t = 0; t < L; ++t)
          o += s[t] * to_d(hv[kv(t, c)]);
        size_t idx = (size_t(b) * HQ + h) * D + c;
        chk.add(to_d(got[idx]), o / sum, "out", idx);
      }
    }
  }
  double flops = 0;
  for (int L : lens)
    flops += 4.0 * L * HQ * D;
  return outcome(chk, bytes, flops);
}

[[maybe_unused]] const int registered =
    zoo::add({"paged_attention_decode", "attention", shapes, run});
} // namespace
