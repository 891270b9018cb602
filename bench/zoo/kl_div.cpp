// kl_div: KL(y_true || y_pred) of each row, sum_j p_j (log p_j - y_pred_j) with y_pred given as
// log-probabilities and p = y_true as probabilities (nn.KLDivLoss's convention; Liger's
// forward with per-row sums, reduction left to the caller). One program per row walks the
// vocabulary in blocks; log(max(p, eps)) keeps p = 0 terms at 0.
#include "divergence.hpp"

namespace {
using namespace zoo;

void kl_div_kernel(tl::ptr<float> Y_pred, tl::ptr<float> Y_true, tl::ptr<float> Loss, tl::i32 V,
                   tl::f32 eps, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  Y_pred += row.to<int64_t>() * V;
  Y_true += row.to<int64_t>() * V;
  auto acc = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, V, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < V;
    auto y_pred = tl::load(Y_pred + cols, mask, 0.f);
    auto y = tl::load(Y_true + cols, mask, 0.f);
    acc += y * (tl::log(tl::maximum(y, eps)) - y_pred);
  }
  tl::store(Loss + row, tl::sum(acc, 0));
}

// rows x vocabulary
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32000", "1024x128256"};
  return {"6x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int BT = int(d[0]), V = int(d[1]);
  auto h_pred = divergence::log_probs(BT, V, 51);
  auto h_true = divergence::log_probs(BT, V, 52);
  for (auto& v : h_true)
    v = std::exp(v);
  const float eps = 1e-10f;
  auto y_pred = ctx.dev.from_host(h_pred), y_true = ctx.dev.from_host(h_true);
  auto loss = ctx.dev.alloc<float>(BT);
  auto kernel = tritium::jit(kl_div_kernel, "kl_div_kernel");
  const int block = ctx.full ? divergence::block(V) : 128;
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{BT}](y_pred, y_true, loss, V, eps, block); });
  std::vector<double> ref(BT);
  for (size_t i = 0; i < h_pred.size(); ++i)
    ref[i / V] += h_true[i] * (std::log(std::max<double>(h_true[i], eps)) - h_pred[i]);
  Outcome o = compare("loss", loss.to_host(), ref, 1e-5, 1e-4);
  o.bytes = 2.0 * h_pred.size() * sizeof(float);
  return o;
}

const int registered = add({"kl_div", "reduction", shapes, run});

} // namespace
