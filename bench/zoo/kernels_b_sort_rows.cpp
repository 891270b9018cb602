// sort_rows: each row of a [R, V] matrix of probabilities sorted in descending order, the first
// step of nucleus (top-p) sampling over a vocabulary (vLLM's and SGLang's samplers sort the
// probabilities to find the smallest set whose sum reaches p). One program sorts one row with
// tl::sort, a bitonic network over the whole row held in registers.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void sort_rows_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::constexpr_<int> V) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, V);
  auto x = tl::load(x_ptr + row * V + cols);
  tl::store(y_ptr + row * V + cols, tl::sort(x, 0, /*descending=*/true));
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"r64_v4096", "r64_v32768"};
  return {"r3_v256", "r2_v1024"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int R = d["r"], V = d["v"];
  Rng rng("sort_rows " + shape);
  // Softmax of normal logits: probabilities spanning many orders of magnitude.
  std::vector<float> hx(size_t(R) * V);
  for (int r = 0; r < R; ++r) {
    double sum = 0;
    std::vector<double> e(V);
    for (auto& v : e)
      sum += v = std::exp(rng.normal(0, 3));
    for (int i = 0; i < V; ++i)
      hx[size_t(r) * V + i] = float(e[i] / sum);
  }
  auto x = ctx.dev.from_host(hx);
  auto y = ctx.dev.alloc<float>(size_t(R) * V);

  auto kernel = tritium::jit(sort_rows_kernel, "sort_rows_kernel");
  kernel.options({.num_warps = is_gpu(ctx.dev) ? 16 : 4});
  ctx.launch([&] { kernel[{R}](x, y, V); });

  auto got = y.to_host();
  Check chk{0, 0}; // a sort moves values: they come back exactly
  for (int r = 0; r < R; ++r) {
    std::vector<float> ref(hx.begin() + size_t(r) * V, hx.begin() + size_t(r + 1) * V);
    std::sort(ref.begin(), ref.end(), std::greater<float>());
    for (int i = 0; i < V; ++i)
      chk.add(got[size_t(r) * V + i], ref[i], "y", size_t(r) * V + i);
  }
  return outcome(chk, 8.0 * R * V, 0);
}

[[maybe_unused]] const int registered = zoo::add({"sort_rows", "sort", shapes, run});
} // namespace
