// rope_half: rotary position embedding on the two halves of each head (x[i], x[i + D/2]), the
// GPT-NeoX / Hugging Face layout, of q [tokens, heads, D] fp16 into out. One program per token;
// each half is loaded as its own [heads, D/2] block.
#include "rope.hpp"

namespace {
using namespace zoo;

void rope_half_kernel(tl::ptr<tl::f16> Q, tl::ptr<float> Cos, tl::ptr<float> Sin,
                      tl::ptr<tl::f16> Out, tl::i32 n_heads, tl::constexpr_<int> HEAD_DIM,
                      tl::constexpr_<int> BLOCK_H) {
  auto token = tl::program_id(0);
  auto h = tl::arange(0, BLOCK_H);
  auto i = tl::arange(0, HEAD_DIM / 2);
  auto first = token * n_heads * HEAD_DIM + h[{tl::_, tl::None}] * HEAD_DIM + i[{tl::None, tl::_}];
  auto second = first + HEAD_DIM / 2;
  auto mask = h[{tl::_, tl::None}] < n_heads;
  auto x1 = tl::load(Q + first, mask).to<float>();
  auto x2 = tl::load(Q + second, mask).to<float>();
  auto cos = tl::load(Cos + token * (HEAD_DIM / 2) + i)[{tl::None, tl::_}];
  auto sin = tl::load(Sin + token * (HEAD_DIM / 2) + i)[{tl::None, tl::_}];
  tl::store(Out + first, x1 * cos - x2 * sin, mask);
  tl::store(Out + second, x2 * cos + x1 * sin, mask);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32x128", "4096x40x128"};
  return {"5x3x128"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int T = int(d[0]), H = int(d[1]), D = int(d[2]);
  auto hq = random_vector<half>(size_t(T) * H * D, 4);
  auto tab = rope::tables(T, D);
  auto q = ctx.dev.from_host(hq);
  auto cos = ctx.dev.from_host(tab.cos), sin = ctx.dev.from_host(tab.sin);
  auto out = ctx.dev.alloc<half>(hq.size());
  auto kernel = tritium::jit(rope_half_kernel, "rope_half_kernel");
  ctx.launch([&] { kernel[{T}](q, cos, sin, out, H, D, next_pow2(H)); });
  std::vector<double> ref(hq.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D / 2; ++i) {
        size_t at = (size_t(t) * H + h) * D + i;
        double x1 = to_double(hq[at]), x2 = to_double(hq[at + D / 2]);
        double c = tab.cos[size_t(t) * D / 2 + i], s = tab.sin[size_t(t) * D / 2 + i];
        ref[at] = x1 * c - x2 * s;
        ref[at + D / 2] = x2 * c + x1 * s;
      }
  Outcome o = compare("out", out.to_host(), ref, 1e-3, 2e-3);
  o.bytes = 2.0 * hq.size() * sizeof(half) + 2.0 * tab.cos.size() * sizeof(float);
  return o;
}

const int registered = add({"rope_half", "elementwise", shapes, run});

} // namespace
