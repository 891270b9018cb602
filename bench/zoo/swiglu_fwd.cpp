// swiglu_fwd: c = silu(a) * b over [tokens, intermediate] fp16, the gate of Llama's MLP
// (Liger's SwiGLU forward): one program per row, the row in one block, silu in f32.
#include "glu.hpp"

namespace {
using namespace zoo;

void swiglu_fwd_kernel(tl::ptr<tl::f16> A, tl::ptr<tl::f16> B, tl::ptr<tl::f16> C, tl::i32 n_cols,
                       tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0).to<int64_t>() * n_cols;
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto a = tl::load(A + row + cols, mask, 0).to<float>();
  auto b = tl::load(B + row + cols, mask, 0);
  tl::store(C + row + cols, (a * tl::sigmoid(a)).to<tl::f16>() * b, mask);
}

// tokens x intermediate
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x11008", "4096x14336"};
  return {"5x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  return glu::forward(ctx, shape, swiglu_fwd_kernel, "swiglu_fwd_kernel", glu::silu, 31);
}

const int registered = add({"swiglu_fwd", "elementwise", shapes, run});

} // namespace
