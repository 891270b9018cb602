// topk_rows: the k largest logits of each row of a [R, V] matrix, largest first (top-k
// sampling's first step; vLLM, SGLang and FlashInfer samplers). One program per row:
// tl::topk over the row for the power of two at or above k, of which the first k are stored
// (Triton's topk takes powers of two only, as tritium's).
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void topk_rows_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::i32 k, tl::constexpr_<int> V,
                      tl::constexpr_<int> K_POW2) {
  auto row = tl::program_id(0);
  auto x = tl::load(x_ptr + row * V + tl::arange(0, V));
  auto top = tl::topk(x, K_POW2);
  auto offs = tl::arange(0, K_POW2);
  tl::store(y_ptr + row * k + offs, top, offs < k);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"r64_v32768_k8", "r64_v32768_k50"};
  return {"r3_v256_k8", "r2_v512_k50"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int R = d["r"], V = d["v"], k = d["k"];
  Rng rng("topk_rows " + shape);
  auto hx = rng.normal_vec<float>(size_t(R) * V, 0, 3);
  auto x = ctx.dev.from_host(hx);
  auto y = ctx.dev.alloc<float>(size_t(R) * k);

  auto kernel = tritium::jit(topk_rows_kernel, "topk_rows_kernel");
  kernel.options({.num_warps = is_gpu(ctx.dev) ? 16 : 4});
  ctx.launch([&] { kernel[{R}](x, y, k, V, next_pow2(k)); });

  auto got = y.to_host();
  Check chk{0, 0};
  for (int r = 0; r < R; ++r) {
    std::vector<float> ref(hx.begin() + size_t(r) * V, hx.begin() + size_t(r + 1) * V);
    std::partial_sort(ref.begin(), ref.begin() + k, ref.end(), std::greater<float>());
    for (int i = 0; i < k; ++i)
      chk.add(got[size_t(r) * k + i], ref[i], "y", size_t(r) * k + i);
  }
  return outcome(chk, 4.0 * R * V + 4.0 * R * k, 0);
}

[[maybe_unused]] const int registered = zoo::add({"topk_rows", "sort", shapes, run});
} // namespace
