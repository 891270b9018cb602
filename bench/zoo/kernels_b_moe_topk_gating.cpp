// moe_topk_gating: the router of a mixture-of-experts layer (vLLM's topk_softmax, SGLang's
// fused gating): a softmax over each token's E expert logits, the TOP_K largest
// probabilities with their expert ids, renormalized to sum to 1 (Mixtral's
// norm_topk_prob). One program handles BLOCK_T tokens; the top-k is TOP_K rounds of an
// argmax, each masking out the expert it found.
#include "kernels_b_util.hpp"

#include <limits>

namespace {
using namespace zoo_b;

void moe_topk_gating_kernel(tl::ptr<float> logits_ptr, tl::ptr<float> weights_ptr,
                            tl::ptr<int32_t> ids_ptr, tl::i32 T, tl::constexpr_<int> E,
                            tl::constexpr_<int> TOP_K, tl::constexpr_<int> BLOCK_T) {
  auto offs_t = tl::program_id(0) * BLOCK_T + tl::arange(0, BLOCK_T);
  auto offs_e = tl::arange(0, E);
  auto t_mask = offs_t < T;
  auto logits =
      tl::load(logits_ptr + offs_t[{_, None}] * E + offs_e[{None, _}], t_mask[{_, None}], 0.0);
  auto z = logits - tl::max(logits, 1)[{_, None}];
  auto num = tl::exp(z);
  auto probs = num / tl::sum(num, 1)[{_, None}];

  // The top-k, unrolled while tracing (TOP_K is a constexpr): each round takes the largest
  // remaining probability (the first expert on ties) and removes it. The first pass sums the
  // kept probabilities, the second stores them divided by that sum (E is small: the rounds
  // cost less than keeping TOP_K results apart, which Triton's loops cannot).
  auto total = tl::zeros<float>({BLOCK_T});
  auto remaining = probs;
  for (int j = 0; j < TOP_K; ++j) {
    auto [w, i] = tl::max(remaining, 1, tl::return_indices);
    total = total + w;
    remaining = tl::where(offs_e[{None, _}] == i[{_, None}], -1.0f, remaining);
  }
  remaining = probs;
  for (int j = 0; j < TOP_K; ++j) {
    auto [w, i] = tl::max(remaining, 1, tl::return_indices);
    tl::store(weights_ptr + offs_t * TOP_K + j, w / total, t_mask);
    tl::store(ids_ptr + offs_t * TOP_K + j, i, t_mask);
    remaining = tl::where(offs_e[{None, _}] == i[{_, None}], -1.0f, remaining);
  }
}

int block_t_for(const Device& dev) {
  return is_gpu(dev) ? 128 : 16;
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"t4096_e8_top2", "t65536_e8_top2"};
  return {"t37_e8_top2", "t16_e8_top2"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int T = d["t"], E = d["e"], top_k = d["top"];
  Rng rng("moe_topk_gating " + shape);
  auto hl = rng.normal_vec<float>(size_t(T) * E, 0, 2);
  auto logits = ctx.dev.from_host(hl);
  auto weights = ctx.dev.alloc<float>(size_t(T) * top_k);
  auto ids = ctx.dev.alloc<int32_t>(size_t(T) * top_k);

  auto kernel = tritium::jit(moe_topk_gating_kernel, "moe_topk_gating_kernel");
  const int block_t = block_t_for(ctx.dev);
  kernel.options({.num_warps = 4});
  ctx.launch(
      [&] { kernel[{tritium::cdiv(T, block_t)}](logits, weights, ids, T, E, top_k, block_t); });

  auto gw = weights.to_host();
  auto gi = ids.to_host();
  Check chk{1e-6, 1e-5};
  int id_mismatches = 0;
  std::string bad_id;
  for (size_t t : sample(size_t(T), 8192, rng)) {
    std::vector<double> p(E);
    double mx = -INFINITY, sum = 0;
    for (int e = 0; e < E; ++e)
      mx = std::max(mx, double(hl[t * E + e]));
    for (int e = 0; e < E; ++e)
      sum += p[e] = std::exp(hl[t * E + e] - mx);
    std::vector<int> order(E);
    for (int e = 0; e < E; ++e)
      order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return p[x] > p[y]; });
    double kept = 0;
    for (int j = 0; j < top_k; ++j)
      kept += p[order[j]];
    for (int j = 0; j < top_k; ++j) {
      size_t o = t * top_k + j;
      // An id may differ only where two probabilities tie to f32's precision.
      if (gi[o] != order[j] &&
          std::fabs(p[order[j]] - p[std::clamp(gi[o], 0, E - 1)]) > 1e-6 * p[order[j]]) {
        if (bad_id.empty())
          bad_id = fmt::format("ids[{}] = {} against {}", o, gi[o], order[j]);
        ++id_mismatches;
      }
      chk.add(gw[o], p[order[j]] / kept, "weights", o);
    }
  }
  auto o = outcome(chk, 4.0 * T * E + 8.0 * T * top_k, 0, bad_id);
  o.ok = o.ok && id_mismatches == 0;
  return o;
}

[[maybe_unused]] const int registered = zoo::add({"moe_topk_gating", "moe", shapes, run});
} // namespace
