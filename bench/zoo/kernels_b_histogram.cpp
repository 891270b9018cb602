// histogram: counts of n integer values in [0, NUM_BINS) (FlagGems' histc, the token counts
// per expert of MoE routing): each program counts its block with tl::histogram and adds its
// NUM_BINS counts to the global bins with one atomic add per bin.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void histogram_kernel(tl::ptr<int32_t> x_ptr, tl::ptr<int32_t> bins_ptr, tl::i32 n,
                      tl::constexpr_<int> NUM_BINS, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto x = tl::load(x_ptr + offs, mask, 0);
  auto counts = tl::histogram(x, NUM_BINS, mask);
  tl::atomic_add(bins_ptr + tl::arange(0, NUM_BINS), counts, "relaxed");
}

int block_for(const Device& dev) {
  return is_gpu(dev) ? 4096 : 256;
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"n1048576_bins256", "n16777216_bins256", "n16777216_bins64"};
  return {"n3000_bins64", "n1000_bins16"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int n = d["n"], num_bins = d["bins"];
  Rng rng("histogram " + shape);
  // Skewed counts, as expert loads are: the square of a uniform picks low bins more often.
  std::vector<int32_t> hx(n);
  for (auto& v : hx) {
    double u = rng.uniform(0, 1);
    v = int32_t(u * u * num_bins);
  }
  auto x = ctx.dev.from_host(hx);
  auto bins = ctx.dev.alloc<int32_t>(num_bins);

  auto kernel = tritium::jit(histogram_kernel, "histogram_kernel");
  const int block = block_for(ctx.dev);
  kernel.options({.num_warps = 4});
  Zero zero;
  ctx.launch([&] {
    zero(bins);
    kernel[{tritium::cdiv(n, block)}](x, bins, n, num_bins, block);
  });

  auto got = bins.to_host();
  std::vector<int64_t> ref(num_bins, 0);
  for (int v : hx)
    ++ref[v];
  Check chk{0, 0}; // counts are exact
  for (int b = 0; b < num_bins; ++b)
    chk.add(got[b], double(ref[b]), "bins", b);
  return outcome(chk, 4.0 * n + 4.0 * num_bins, 0);
}

[[maybe_unused]] const int registered = zoo::add({"histogram", "reduction", shapes, run});
} // namespace
