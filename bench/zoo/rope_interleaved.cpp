// rope_interleaved: rotary position embedding on adjacent pairs (x[2i], x[2i+1]), Meta's Llama
// layout, of q [tokens, heads, D] fp16 into out. One program per token rotates all its heads:
// the [heads, D] block is reshaped to [heads, D/2, 2], split into its even and odd halves,
// rotated, joined and reshaped back, so loads and stores stay contiguous.
#include "rope.hpp"

namespace {
using namespace zoo;

void rope_interleaved_kernel(tl::ptr<tl::f16> Q, tl::ptr<float> Cos, tl::ptr<float> Sin,
                             tl::ptr<tl::f16> Out, tl::i32 n_heads, tl::constexpr_<int> HEAD_DIM,
                             tl::constexpr_<int> BLOCK_H) {
  auto token = tl::program_id(0);
  auto h = tl::arange(0, BLOCK_H);
  auto d = tl::arange(0, HEAD_DIM);
  auto offs = token * n_heads * HEAD_DIM + h[{tl::_, tl::None}] * HEAD_DIM + d[{tl::None, tl::_}];
  auto mask = h[{tl::_, tl::None}] < n_heads;
  auto x = tl::load(Q + offs, mask).to<float>();
  auto [x0, x1] = tl::split(tl::reshape(x, {BLOCK_H, HEAD_DIM / 2, 2}));
  auto i = tl::arange(0, HEAD_DIM / 2);
  auto cos = tl::load(Cos + token * (HEAD_DIM / 2) + i)[{tl::None, tl::_}];
  auto sin = tl::load(Sin + token * (HEAD_DIM / 2) + i)[{tl::None, tl::_}];
  auto y = tl::join(x0 * cos - x1 * sin, x0 * sin + x1 * cos);
  tl::store(Out + offs, tl::reshape(y, {BLOCK_H, HEAD_DIM}), mask);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32x128", "4096x40x128"};
  return {"5x3x128"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int T = int(d[0]), H = int(d[1]), D = int(d[2]);
  auto hq = random_vector<half>(size_t(T) * H * D, 3);
  auto tab = rope::tables(T, D);
  auto q = ctx.dev.from_host(hq);
  auto cos = ctx.dev.from_host(tab.cos), sin = ctx.dev.from_host(tab.sin);
  auto out = ctx.dev.alloc<half>(hq.size());
  auto kernel = tritium::jit(rope_interleaved_kernel, "rope_interleaved_kernel");
  ctx.launch([&] { kernel[{T}](q, cos, sin, out, H, D, next_pow2(H)); });
  std::vector<double> ref(hq.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D / 2; ++i) {
        size_t at = (size_t(t) * H + h) * D + 2 * i;
        double x0 = to_double(hq[at]), x1 = to_double(hq[at + 1]);
        double c = tab.cos[size_t(t) * D / 2 + i], s = tab.sin[size_t(t) * D / 2 + i];
        ref[at] = x0 * c - x1 * s;
        ref[at + 1] = x0 * s + x1 * c;
      }
  Outcome o = compare("out", out.to_host(), ref, 1e-3, 2e-3);
  o.bytes = 2.0 * hq.size() * sizeof(half) + 2.0 * tab.cos.size() * sizeof(float);
  return o;
}

const int registered = add({"rope_interleaved", "elementwise", shapes, run});

} // namespace
