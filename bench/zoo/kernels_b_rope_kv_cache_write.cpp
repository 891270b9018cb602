// rope_kv_cache_write: the step of a prefill or decode that rotates the new tokens' keys
// (RoPE, GPT-NeoX style: the first and second halves of each head are the pairs) and writes
// keys and values into a paged KV cache through a slot mapping (vLLM's rotary_embedding +
// reshape_and_cache, fused as SGLang and vLLM's Triton backends do). Slot -1 marks a padding
// token, which writes nothing. One program per token handles all its KV heads.
//   k, v: fp16 [T, HKV, D]; positions, slot_mapping: i32 [T]; cos_sin: f32 [max_pos, D]
//   (cos in the first D / 2 columns, sin in the rest, vLLM's cos_sin_cache);
//   k_cache, v_cache: fp16 [num_pages, PAGE, HKV, D].
#include "kernels_b_util.hpp"

#include <numeric>

namespace {
using namespace zoo_b;

void rope_kv_cache_write_kernel(tl::ptr<tl::f16> k_ptr, tl::ptr<tl::f16> v_ptr,
                                tl::ptr<int32_t> positions_ptr, tl::ptr<float> cos_sin_ptr,
                                tl::ptr<int32_t> slot_mapping_ptr, tl::ptr<tl::f16> k_cache_ptr,
                                tl::ptr<tl::f16> v_cache_ptr, tl::constexpr_<int> HKV,
                                tl::constexpr_<int> D, tl::constexpr_<int> PAGE) {
  const int HALF = D / 2;
  auto t = tl::program_id(0);
  auto slot = tl::load(slot_mapping_ptr + t);
  tl::if_(slot >= 0, [&] {
    auto pos = tl::load(positions_ptr + t);
    auto offs_h = tl::arange(0, HKV);
    auto offs_half = tl::arange(0, HALF);
    auto cos = tl::load(cos_sin_ptr + pos * D + offs_half)[{None, _}];
    auto sin = tl::load(cos_sin_ptr + pos * D + HALF + offs_half)[{None, _}];
    auto src = t * (HKV * D) + offs_h[{_, None}] * D + offs_half[{None, _}];
    auto k1 = tl::load(k_ptr + src).to<float>();
    auto k2 = tl::load(k_ptr + src + HALF).to<float>();
    auto page = slot / PAGE;
    auto in_page = slot % PAGE;
    auto dst = page * (PAGE * HKV * D) + in_page * (HKV * D) + offs_h[{_, None}] * D +
               offs_half[{None, _}];
    tl::store(k_cache_ptr + dst, (k1 * cos - k2 * sin).to<half>());
    tl::store(k_cache_ptr + dst + HALF, (k2 * cos + k1 * sin).to<half>());
    auto offs_d = tl::arange(0, D);
    auto v = tl::load(v_ptr + t * (HKV * D) + offs_h[{_, None}] * D + offs_d[{None, _}]);
    tl::store(v_cache_ptr + page * (PAGE * HKV * D) + in_page * (HKV * D) + offs_h[{_, None}] * D +
                  offs_d[{None, _}],
              v);
  });
}

std::vector<std::string> shapes(bool full) {
  // A prefill chunk and a decoding batch, Llama-3-8B's KV heads.
  if (full)
    return {"t4096_hkv8_d128_page16", "t256_hkv8_d128_page16"};
  return {"t9_hkv2_d16_page4", "t20_hkv4_d32_page16"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int T = d["t"], HKV = d["hkv"], D = d["d"], PAGE = d["page"];
  const int max_pos = 8192, half_d = D / 2;
  Rng rng("rope_kv_cache_write " + shape);
  auto hk = rng.uniform_vec<half>(size_t(T) * HKV * D, -1, 1);
  auto hv = rng.uniform_vec<half>(hk.size(), -1, 1);
  std::vector<int32_t> positions(T);
  for (auto& p : positions)
    p = rng.integer(0, max_pos - 1);
  // vLLM's cache: inv_freq = base^(-2i / D), computed in f32.
  std::vector<float> cos_sin(size_t(max_pos) * D);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < half_d; ++i) {
      float inv_freq = 1.f / std::pow(10000.f, float(2 * i) / float(D));
      float angle = float(p) * inv_freq;
      cos_sin[size_t(p) * D + i] = std::cos(angle);
      cos_sin[size_t(p) * D + half_d + i] = std::sin(angle);
    }
  // Slots scattered over a cache twice as large as needed; on small shapes one padding token.
  const int num_pages = 2 * tritium::cdiv(T, PAGE);
  std::vector<int32_t> slots(size_t(num_pages) * PAGE);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng.gen);
  slots.resize(T);
  if (!ctx.full)
    slots[T / 2] = -1;
  const size_t cache_size = size_t(num_pages) * PAGE * HKV * D;
  auto k = ctx.dev.from_host(hk);
  auto v = ctx.dev.from_host(hv);
  auto pos = ctx.dev.from_host(positions);
  auto cs = ctx.dev.from_host(cos_sin);
  auto sm = ctx.dev.from_host(slots);
  auto k_cache = ctx.dev.from_host(std::vector<half>(cache_size, half(0.f)));
  auto v_cache = ctx.dev.from_host(std::vector<half>(cache_size, half(0.f)));

  auto kernel = tritium::jit(rope_kv_cache_write_kernel, "rope_kv_cache_write_kernel");
  kernel.options({.num_warps = 4});
  ctx.launch([&] { kernel[{T}](k, v, pos, cs, sm, k_cache, v_cache, HKV, D, PAGE); });

  auto gk = k_cache.to_host();
  auto gv = v_cache.to_host();
  std::vector<double> rk(cache_size, 0), rv(cache_size, 0);
  for (int t = 0; t < T; ++t) {
    if (slots[t] < 0)
      continue;
    for (int h = 0; h < HKV; ++h) {
      size_t src = (size_t(t) * HKV + h) * D, dst = (size_t(slots[t]) * HKV + h) * D;
      for (int i = 0; i < half_d; ++i) {
        double c = cos_sin[size_t(positions[t]) * D + i];
        double s = cos_sin[size_t(positions[t]) * D + half_d + i];
        double x1 = to_d(hk[src + i]), x2 = to_d(hk[src + half_d + i]);
        rk[dst + i] = x1 * c - x2 * s;
        rk[dst + half_d + i] = x2 * c + x1 * s;
      }
      for (int i = 0; i < D; ++i)
        rv[dst + i] = to_d(hv[src + i]);
    }
  }
  Check ck{1e-3, 1.0 / 1024}, cv{0, 0};
  for (size_t i = 0; i < cache_size; ++i) {
    ck.add(to_d(gk[i]), rk[i], "k_cache", i);
    cv.add(to_d(gv[i]), rv[i], "v_cache", i);
  }
  auto o = outcome(ck, 2.0 * 4 * hk.size() + 8.0 * T + 4.0 * T * D, 0);
  auto ov = outcome(cv, 0, 0);
  o.ok = o.ok && ov.ok;
  o.worst = std::max(o.worst, ov.worst);
  if (!ov.note.empty())
    o.note = o.note.empty() ? ov.note : o.note + "; " + ov.note;
  return o;
}

[[maybe_unused]] const int registered = zoo::add({"rope_kv_cache_write", "attention", shapes, run});
} // namespace
