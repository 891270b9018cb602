// cross_entropy_fwd: the loss of each row of logits [BT, V] fp16 against its target, Liger's
// forward: one program per row walks the vocabulary in blocks with an online log-sum-exp (a
// running max m and a running sum d of exp(x - m), rescaled when m grows), so a row of 128256
// logits is read once. loss = lse - x[target], 0 where target == ignore_index; lse is kept
// for the backward pass.
#include "cross_entropy.hpp"

namespace {
using namespace zoo;

void cross_entropy_fwd_kernel(tl::ptr<tl::f16> X, tl::ptr<int64_t> Target, tl::ptr<float> Loss,
                              tl::ptr<float> Lse, tl::i32 V, tl::i32 ignore_index,
                              tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  X += row.to<int64_t>() * V;
  auto target = tl::load(Target + row);
  auto m = tl::scalar<float>(-INFINITY);
  auto d = tl::scalar<float>(0.f);
  for (auto off : tl::range(0, V, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto x = tl::load(X + cols, cols < V, -INFINITY).to<float>();
    auto m_new = tl::maximum(m, tl::max(x, 0));
    d = d * tl::exp(m - m_new) + tl::sum(tl::exp(x - m_new), 0);
    m = m_new;
  }
  auto lse = m + tl::log(d);
  auto keep = target != ignore_index;
  auto x_target = tl::load(X + target, keep).to<float>();
  tl::store(Loss + row, tl::where(keep, lse - x_target, 0.f));
  tl::store(Lse + row, lse);
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
  auto x = ctx.dev.from_host(in.logits);
  auto target = ctx.dev.from_host(in.targets);
  auto loss = ctx.dev.alloc<float>(BT), lse = ctx.dev.alloc<float>(BT);
  auto kernel = tritium::jit(cross_entropy_fwd_kernel, "cross_entropy_fwd_kernel");
  const int block = ctx.full ? cross_entropy::block(V) : 128; // small: several blocks a row
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{BT}](x, target, loss, lse, V, cross_entropy::ignore_index, block); });
  std::vector<double> ref_loss, ref_lse;
  for (int r = 0; r < BT; ++r) {
    const half* row = &in.logits[size_t(r) * V];
    double l = cross_entropy::logsumexp(row, V);
    int64_t t = in.targets[r];
    ref_lse.push_back(l);
    ref_loss.push_back(t == cross_entropy::ignore_index ? 0 : l - to_double(row[t]));
  }
  Outcome o = combine({compare("loss", loss.to_host(), ref_loss, 1e-4, 1e-5),
                       compare("lse", lse.to_host(), ref_lse, 1e-4, 1e-5)});
  o.bytes = double(in.logits.size()) * sizeof(half);
  return o;
}

const int registered = add({"cross_entropy_fwd", "reduction", shapes, run});

} // namespace
