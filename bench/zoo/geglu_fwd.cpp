// geglu_fwd: c = gelu(a) * b with GELU's tanh approximation, over [tokens, intermediate] fp16
// (Gemma's MLP; Liger's GEGLU forward): one program per row, the row in one block, in f32.
#include "glu.hpp"

namespace {
using namespace zoo;

void geglu_fwd_kernel(tl::ptr<tl::f16> A, tl::ptr<tl::f16> B, tl::ptr<tl::f16> C, tl::i32 n_cols,
                      tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0).to<int64_t>() * n_cols;
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto a = tl::load(A + row + cols, mask, 0).to<float>();
  auto b = tl::load(B + row + cols, mask, 0);
  const float sqrt_2_over_pi = 0.7978845608028654f;
  auto inner = sqrt_2_over_pi * (a + 0.044715f * a * a * a);
  auto gelu = 0.5f * a * (1.f + tl::tanh(inner));
  tl::store(C + row + cols, gelu.to<tl::f16>() * b, mask);
}

// tokens x intermediate
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x16384", "4096x24576"};
  return {"5x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  return glu::forward(ctx, shape, geglu_fwd_kernel, "geglu_fwd_kernel", glu::gelu_tanh, 36);
}

const int registered = add({"geglu_fwd", "elementwise", shapes, run});

} // namespace
