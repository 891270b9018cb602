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
  return rope::check(ctx, shape, rope_half_kernel, "rope_half_kernel", 4, false);
}

const int registered = add({"rope_half", "elementwise", shapes, run});

} // namespace
