// prefix_prefill_attention: the attention of a prefill whose sequences start with a prefix
// already in the paged KV cache (prefix caching, chunked prefill; vLLM's context_attention_fwd
// in prefix_prefill.py, SGLang's extend attention). The new tokens' queries attend to the
// whole cached prefix and, causally, to the new tokens' own keys. Sequence b's new tokens are
// rows start_loc[b] ... of the packed Q, K, V; its prefix of prefix_lens[b] tokens lives in the
// pages block_tables[b, :]. One program per (sequence, query head, BLOCK_M new tokens): two
// online-softmax loops, over the prefix (gathered through the block table) and over the new
// keys up to the diagonal (masked), with grouped-query attention (HQ / HKV heads share a KV
// head).
//   q, out: fp16 [total_new, HQ, D]; k, v: fp16 [total_new, HKV, D];
//   k_cache, v_cache: fp16 [num_pages, PAGE, HKV, D].
#include "kernels_b_util.hpp"

#include <limits>
#include <numeric>

namespace {
using namespace zoo_b;

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

void prefix_prefill_attention_kernel(
    tl::ptr<tl::f16> q_ptr, tl::ptr<tl::f16> k_ptr, tl::ptr<tl::f16> v_ptr,
    tl::ptr<tl::f16> k_cache_ptr, tl::ptr<tl::f16> v_cache_ptr, tl::ptr<int32_t> block_tables_ptr,
    tl::ptr<int32_t> start_loc_ptr, tl::ptr<int32_t> new_lens_ptr, tl::ptr<int32_t> prefix_lens_ptr,
    tl::ptr<tl::f16> out_ptr, tl::f32 sm_scale, tl::i32 max_pages_per_seq, tl::constexpr_<int> HQ,
    tl::constexpr_<int> HKV, tl::constexpr_<int> D, tl::constexpr_<int> PAGE,
    tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N) {
  const int GROUP = HQ / HKV;
  auto b = tl::program_id(0);
  auto head = tl::program_id(1);
  auto start_m = tl::program_id(2);
  auto kv_head = head / GROUP;
  auto q_len = tl::load(new_lens_ptr + b);
  auto prefix_len = tl::load(prefix_lens_ptr + b);
  auto start_loc = tl::load(start_loc_ptr + b);
  // The grid covers the longest sequence; shorter ones' extra blocks have nothing to do.
  tl::if_(start_m * BLOCK_M < q_len, [&] {
    auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
    auto offs_n = tl::arange(0, BLOCK_N);
    auto offs_d = tl::arange(0, D);
    auto m_mask = offs_m < q_len;
    auto q =
        tl::load(q_ptr + (start_loc + offs_m)[{_, None}] * (HQ * D) + head * D + offs_d[{None, _}],
                 m_mask[{_, None}], 0.0);
    auto qk_scale = sm_scale * 1.44269504; // exp2 with log2(e) folded in

    auto m_i = tl::full<float>({BLOCK_M}, neg_inf);
    auto l_i = tl::zeros<float>({BLOCK_M});
    auto acc = tl::zeros<float>({BLOCK_M, D});

    // The cached prefix: every query sees all of it.
    for (auto start_n : tl::range(0, prefix_len, BLOCK_N)) {
      auto tok = start_n + offs_n;
      auto n_mask = tok < prefix_len;
      auto page = tl::load(block_tables_ptr + b * max_pages_per_seq + tok / PAGE, n_mask, 0);
      auto kv_offs =
          (page * PAGE + tok % PAGE)[{_, None}] * (HKV * D) + kv_head * D + offs_d[{None, _}];
      auto k = tl::load(k_cache_ptr + kv_offs, n_mask[{_, None}], 0.0);
      auto qk = tl::dot(q, tl::trans(k)) * qk_scale;
      qk = tl::where(n_mask[{None, _}], qk, neg_inf);
      auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
      auto p = tl::exp2(qk - m_ij[{_, None}]);
      auto alpha = tl::exp2(m_i - m_ij);
      l_i = l_i * alpha + tl::sum(p, 1);
      auto v = tl::load(v_cache_ptr + kv_offs, n_mask[{_, None}], 0.0);
      acc = tl::dot(p.to<half>(), v, acc * alpha[{_, None}]);
      m_i = m_ij;
    }

    // The new tokens, causally: query i sees new keys 0 ... i.
    auto end_n = tl::minimum((start_m + 1) * BLOCK_M, q_len);
    for (auto start_n : tl::range(0, end_n, BLOCK_N)) {
      auto tok = start_n + offs_n;
      auto n_mask = tok < q_len;
      auto kv_offs = (start_loc + tok)[{_, None}] * (HKV * D) + kv_head * D + offs_d[{None, _}];
      auto k = tl::load(k_ptr + kv_offs, n_mask[{_, None}], 0.0);
      auto qk = tl::dot(q, tl::trans(k)) * qk_scale;
      auto visible = (offs_m[{_, None}] >= tok[{None, _}]) && n_mask[{None, _}];
      qk = tl::where(visible, qk, neg_inf);
      auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
      auto p = tl::exp2(qk - m_ij[{_, None}]);
      auto alpha = tl::exp2(m_i - m_ij);
      l_i = l_i * alpha + tl::sum(p, 1);
      auto v = tl::load(v_ptr + kv_offs, n_mask[{_, None}], 0.0);
      acc = tl::dot(p.to<half>(), v, acc * alpha[{_, None}]);
      m_i = m_ij;
    }
    acc = acc / l_i[{_, None}];
    tl::store(out_ptr + (start_loc + offs_m)[{_, None}] * (HQ * D) + head * D + offs_d[{None, _}],
              acc.to<half>(), m_mask[{_, None}]);
  });
}

std::vector<std::string> shapes(bool full) {
  // Chunked prefill of 512 new tokens after up to 2048 cached ones, and a prefix-cache hit
  // with a short new suffix; Llama-3-8B's heads.
  if (full)
    return {"b8_hq32_hkv8_d128_page16_prefix2048_new512",
            "b16_hq32_hkv8_d128_page16_prefix4096_new128"};
  return {"b3_hq4_hkv2_d32_page16_prefix40_new24", "b2_hq2_hkv1_d16_page16_prefix20_new40"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int B = d["b"], HQ = d["hq"], HKV = d["hkv"], D = d["d"], PAGE = d["page"],
            max_prefix = d["prefix"], max_new = d["new"];
  Rng rng("prefix_prefill_attention " + shape);
  // Lengths up to the maxima, the first sequence at the maxima; on small shapes another with
  // no prefix at all (a plain causal prefill).
  std::vector<int32_t> prefix(B), news(B), start(B);
  for (int b = 0; b < B; ++b) {
    prefix[b] = b == 0 ? max_prefix : rng.integer(max_prefix / 2, max_prefix);
    news[b] = b == 0 ? max_new : rng.integer(1, max_new);
  }
  if (!ctx.full && B > 1)
    prefix[1] = 0;
  int total = 0;
  for (int b = 0; b < B; ++b) {
    start[b] = total;
    total += news[b];
  }
  const int max_pages = std::max(1, tritium::cdiv(max_prefix, PAGE));
  int num_pages = 0;
  for (int b = 0; b < B; ++b)
    num_pages += tritium::cdiv(prefix[b], PAGE);
  std::vector<int32_t> order(std::max(num_pages, 1));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng.gen);
  std::vector<int32_t> tables(size_t(B) * max_pages, 0);
  for (int b = 0, next = 0; b < B; ++b)
    for (int i = 0; i < tritium::cdiv(prefix[b], PAGE); ++i)
      tables[size_t(b) * max_pages + i] = order[next++];

  auto hq = rng.uniform_vec<half>(size_t(total) * HQ * D, -1, 1);
  auto hk = rng.uniform_vec<half>(size_t(total) * HKV * D, -1, 1);
  auto hv = rng.uniform_vec<half>(hk.size(), -1, 1);
  auto hkc = rng.uniform_vec<half>(size_t(std::max(num_pages, 1)) * PAGE * HKV * D, -1, 1);
  auto hvc = rng.uniform_vec<half>(hkc.size(), -1, 1);
  auto q = ctx.dev.from_host(hq);
  auto k = ctx.dev.from_host(hk);
  auto v = ctx.dev.from_host(hv);
  auto kc = ctx.dev.from_host(hkc);
  auto vc = ctx.dev.from_host(hvc);
  auto bt = ctx.dev.from_host(tables);
  auto sl = ctx.dev.from_host(start);
  auto nl = ctx.dev.from_host(news);
  auto pl = ctx.dev.from_host(prefix);
  auto out = ctx.dev.alloc<half>(hq.size());
  const float sm_scale = float(1 / std::sqrt(double(D)));

  auto kernel = tritium::jit(prefix_prefill_attention_kernel, "prefix_prefill_attention_kernel");
  const int block_m = is_gpu(ctx.dev) ? 128 : 16;
  const int block_n = is_gpu(ctx.dev) ? 64 : 16;
  kernel.options({.num_warps = is_gpu(ctx.dev) ? 8 : 4, .num_stages = is_gpu(ctx.dev) ? 2 : 1});
  ctx.launch([&] {
    kernel[{B, HQ, tritium::cdiv(max_new, block_m)}](q, k, v, kc, vc, bt, sl, nl, pl, out, sm_scale,
                                                     max_pages, HQ, HKV, D, PAGE, block_m, block_n);
  });

  auto got = out.to_host();
  Check chk{2e-3, 1e-2};
  std::vector<double> s;
  for (size_t r : sample(size_t(total) * HQ, 512, rng)) {
    const int row = int(r / HQ), h = int(r % HQ), kvh = h / (HQ / HKV);
    int b = 0;
    while (b + 1 < B && start[b + 1] <= row)
      ++b;
    const int i = row - start[b], P = prefix[b], L = P + i + 1;
    auto key = [&](int t, int c) {
      if (t < P) {
        size_t slot = size_t(tables[size_t(b) * max_pages + t / PAGE]) * PAGE + t % PAGE;
        return to_d(hkc[(slot * HKV + kvh) * D + c]);
      }
      return to_d(hk[((size_t(start[b]) + t - P) * HKV + kvh) * D + c]);
    };
    auto value = [&](int t, int c) {
      if (t < P) {
        size_t slot = size_t(tables[size_t(b) * max_pages + t / PAGE]) * PAGE + t % PAGE;
        return to_d(hvc[(slot * HKV + kvh) * D + c]);
      }
      return to_d(hv[((size_t(start[b]) + t - P) * HKV + kvh) * D + c]);
    };
    s.assign(L, 0);
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t < L; ++t) {
      double dot = 0;
      for (int c = 0; c < D; ++c)
        dot += to_d(hq[r * D + c]) * key(t, c);
      s[t] = dot * sm_scale;
      mx = std::max(mx, s[t]);
    }
    for (int t = 0; t < L; ++t)
      sum += s[t] = std::exp(s[t] - mx);
    for (int c = 0; c < D; ++c) {
      double o = 0;
      for (int t = 0; t < L; ++t)
        o += s[t] * value(t, c);
      chk.add(to_d(got[r * D + c]), o / sum, "out", r * D + c);
    }
  }
  double bytes = 2.0 * (2 * hq.size() + 2 * hk.size()), flops = 0;
  for (int b = 0; b < B; ++b) {
    bytes += 2.0 * 2 * double(prefix[b]) * HKV * D;
    flops += 4.0 * HQ * D * double(news[b]) * (prefix[b] + (news[b] + 1) / 2.0);
  }
  return outcome(chk, bytes, flops);
}

[[maybe_unused]] const int registered =
    zoo::add({"prefix_prefill_attention", "attention", shapes, run});
} // namespace
