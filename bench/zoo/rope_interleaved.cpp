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
  return rope::check(ctx, shape, rope_interleaved_kernel, "rope_interleaved_kernel", 3, true);
}

const int registered = add({"rope_interleaved", "elementwise", shapes, run});

} // namespace
