// cross_entropy_bwd: the gradient of the mean cross-entropy loss with respect to the logits,
// Liger's: dx = (softmax(x) - onehot(target)) * scale, scale = grad_output / (rows not
// ignored), 0 on ignored rows. softmax comes from the forward pass's lse, so one program per
// row streams its logits once in blocks.
#include "cross_entropy.hpp"

namespace {
using namespace zoo;

void cross_entropy_bwd_kernel(tl::ptr<tl::f16> X, tl::ptr<int64_t> Target, tl::ptr<float> Lse,
                              tl::ptr<tl::f16> DX, tl::i32 V, tl::i32 ignore_index, tl::f32 scale,
                              tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  X += row.to<int64_t>() * V;
  DX += row.to<int64_t>() * V;
  auto target = tl::load(Target + row);
  auto lse = tl::load(Lse + row);
  auto row_scale = tl::where(target != ignore_index, scale, 0.f);
  for (auto off : tl::range(0, V, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < V;
    auto x = tl::load(X + cols, mask, 0.0).to<float>();
    auto p = tl::exp(x - lse);
    auto dx = (p - tl::where(cols == target, 1.f, 0.f)) * row_scale;
    tl::store(DX + cols, dx, mask);
  }
}

// BT x V
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32000", "1024x128256"};
  return {"9x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int BT = int(d[0]), V = int(d[1]);
  auto in = cross_entropy::inputs(BT, V);
  std::vector<float> h_lse;
  int kept = 0;
  for (int r = 0; r < BT; ++r) {
    h_lse.push_back(float(cross_entropy::logsumexp(&in.logits[size_t(r) * V], V)));
    kept += in.targets[r] != cross_entropy::ignore_index;
  }
  // The scaled gradient is small: a gradient of 1000 keeps it well inside fp16's normal range.
  const float scale = 1000.f / float(kept);
  auto x = ctx.dev.from_host(in.logits);
  auto target = ctx.dev.from_host(in.targets);
  auto lse = ctx.dev.from_host(h_lse);
  auto dx = ctx.dev.alloc<half>(in.logits.size());
  auto kernel = tritium::jit(cross_entropy_bwd_kernel, "cross_entropy_bwd_kernel");
  const int block = ctx.full ? cross_entropy::block(V) : 128;
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch(
      [&] { kernel[{BT}](x, target, lse, dx, V, cross_entropy::ignore_index, scale, block); });
  std::vector<double> ref(in.logits.size());
  for (int r = 0; r < BT; ++r) {
    if (in.targets[r] == cross_entropy::ignore_index)
      continue;
    for (int j = 0; j < V; ++j) {
      size_t at = size_t(r) * V + j;
      ref[at] = (std::exp(to_double(in.logits[at]) - h_lse[r]) - (j == in.targets[r])) * scale;
    }
  }
  Outcome o = compare("dx", dx.to_host(), ref, 1e-3, 4e-3);
  o.bytes = 2.0 * in.logits.size() * sizeof(half);
  return o;
}

const int registered = add({"cross_entropy_bwd", "reduction", shapes, run});

} // namespace
