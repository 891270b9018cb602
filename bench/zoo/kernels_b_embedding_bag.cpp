// embedding_bag: PyTorch's EmbeddingBag in sum mode with offsets (DLRM-style recommendation
// models; FlagGems' embedding kernels): bag b sums the rows indices[offsets[b] ..
// offsets[b + 1]) of an f32 [V, D] table. One program per (bag, BLOCK_D columns) loops over
// the bag's indices, gathering one row slice per step.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void embedding_bag_kernel(tl::ptr<float> weight_ptr, tl::ptr<int32_t> indices_ptr,
                          tl::ptr<int32_t> offsets_ptr, tl::ptr<float> out_ptr, tl::i32 D,
                          tl::constexpr_<int> BLOCK_D) {
  auto bag = tl::program_id(0);
  auto cols = tl::program_id(1) * BLOCK_D + tl::arange(0, BLOCK_D);
  auto mask = cols < D;
  auto start = tl::load(offsets_ptr + bag);
  auto end = tl::load(offsets_ptr + bag + 1);
  auto acc = tl::zeros<float>({BLOCK_D});
  for (auto i : tl::range(start, end)) {
    auto row = tl::load(indices_ptr + i);
    acc += tl::load(weight_ptr + row.to<int64_t>() * D + cols, mask, 0.0);
  }
  tl::store(out_ptr + bag * D + cols, acc, mask);
}

std::vector<std::string> shapes(bool full) {
  // A DLRM-sized table: a million rows of 128 features, 4096 bags of ~40 lookups.
  if (full)
    return {"v1000000_d128_bags4096_avg40", "v100000_d256_bags2048_avg100"};
  return {"v100_d20_bags7_avg5", "v64_d64_bags4_avg9"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int V = d["v"], D = d["d"], bags = d["bags"], avg = d["avg"];
  Rng rng("embedding_bag " + shape);
  auto hw = rng.uniform_vec<float>(size_t(V) * D, -1, 1);
  std::vector<int32_t> offsets{0}, indices;
  for (int b = 0; b < bags; ++b) {
    // One empty bag on small shapes (its sum is zero).
    int n = (!ctx.full && b == 1) ? 0 : rng.integer(1, 2 * avg - 1);
    for (int i = 0; i < n; ++i)
      indices.push_back(rng.integer(0, V - 1));
    offsets.push_back(int32_t(indices.size()));
  }
  auto w = ctx.dev.from_host(hw);
  auto idx = ctx.dev.from_host(indices);
  auto off = ctx.dev.from_host(offsets);
  auto out = ctx.dev.alloc<float>(size_t(bags) * D);

  auto kernel = tritium::jit(embedding_bag_kernel, "embedding_bag_kernel");
  const int block_d = std::min(next_pow2(D), is_gpu(ctx.dev) ? 256 : 32);
  kernel.options({.num_warps = is_gpu(ctx.dev) ? 2 : 4});
  ctx.launch([&] { kernel[{bags, tritium::cdiv(D, block_d)}](w, idx, off, out, D, block_d); });

  auto got = out.to_host();
  // f32 sums of up to 2 avg values of magnitude <= 1, in order.
  Check chk{1e-4, 1e-5};
  for (int b = 0; b < bags; ++b)
    for (int c = 0; c < D; ++c) {
      double s = 0;
      for (int i = offsets[b]; i < offsets[b + 1]; ++i)
        s += hw[size_t(indices[i]) * D + c];
      chk.add(got[size_t(b) * D + c], s, "out", size_t(b) * D + c);
    }
  double bytes =
      4.0 * (double(indices.size()) * D + indices.size() + offsets.size() + double(bags) * D);
  return outcome(chk, bytes, 0);
}

[[maybe_unused]] const int registered = zoo::add({"embedding_bag", "gather", shapes, run});
} // namespace
