// jsd: the generalized Jensen-Shannon divergence of each row and its gradient (Liger's JSD, for
// distillation), from log-probabilities X = log Q (student) and Y = log P (teacher):
// M = beta P + (1 - beta) Q, loss = sum beta P (Y - log M) + (1 - beta) Q (X - log M), and
// dloss/dX = (1 - beta) Q (X - log M). One program per row walks the vocabulary in blocks,
// writing dX and summing the loss.
#include "divergence.hpp"

namespace {
using namespace zoo;

void jsd_kernel(tl::ptr<float> X, tl::ptr<float> Y, tl::ptr<float> Loss, tl::ptr<float> DX,
                tl::i32 V, tl::f32 beta, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto base = row.to<int64_t>() * V;
  X += base;
  Y += base;
  DX += base;
  auto acc = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, V, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < V;
    auto x = tl::load(X + cols, mask, 0.f);
    auto y = tl::load(Y + cols, mask, 0.f);
    auto q = tl::exp(x);
    auto p = tl::exp(y);
    auto log_m = tl::log(beta * p + (1.f - beta) * q);
    auto loss = beta * p * (y - log_m) + (1.f - beta) * q * (x - log_m);
    acc += tl::where(mask, loss, 0.f);
    tl::store(DX + cols, (1.f - beta) * q * (x - log_m), mask);
  }
  tl::store(Loss + row, tl::sum(acc, 0));
}

// rows x vocabulary
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"2048x32000", "512x128256"};
  return {"6x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int BT = int(d[0]), V = int(d[1]);
  auto hx = divergence::log_probs(BT, V, 53), hy = divergence::log_probs(BT, V, 54);
  const float beta = 0.5f;
  auto x = ctx.dev.from_host(hx), y = ctx.dev.from_host(hy);
  auto loss = ctx.dev.alloc<float>(BT);
  auto dx = ctx.dev.alloc<float>(hx.size());
  auto kernel = tritium::jit(jsd_kernel, "jsd_kernel");
  const int block = ctx.full ? divergence::block(V) : 128;
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{BT}](x, y, loss, dx, V, beta, block); });
  std::vector<double> ref_loss(BT), ref_dx(hx.size());
  for (size_t i = 0; i < hx.size(); ++i) {
    double q = std::exp(double(hx[i])), p = std::exp(double(hy[i]));
    double log_m = std::log(beta * p + (1 - beta) * q);
    ref_loss[i / V] += beta * p * (hy[i] - log_m) + (1 - beta) * q * (hx[i] - log_m);
    ref_dx[i] = (1 - beta) * q * (hx[i] - log_m);
  }
  Outcome o = combine({compare("loss", loss.to_host(), ref_loss, 1e-5, 1e-4),
                       compare("dx", dx.to_host(), ref_dx, 1e-7, 1e-4)});
  o.bytes = 3.0 * hx.size() * sizeof(float);
  return o;
}

const int registered = add({"jsd", "reduction", shapes, run});

} // namespace
