// argmax: the index of each row's largest value, x [M, N] fp16 -> int64 [M] (greedy sampling
// over logits; FlagGems' argmax along the last dimension). One program per row walks it in
// blocks, keeping the best value and index so far; the first index wins ties, as torch's.
#include "check.hpp"

namespace {
using namespace zoo;

void argmax_kernel(tl::ptr<tl::f16> X, tl::ptr<int64_t> Out, tl::i32 N, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  X += row.to<int64_t>() * N;
  auto best = tl::scalar<float>(-INFINITY);
  auto best_index = tl::scalar<int32_t>(0);
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto x = tl::load(X + cols, cols < N, -INFINITY).to<float>();
    auto [value, index] = tl::max(x, 0, tl::return_indices);
    best_index = tl::where(value > best, off + index, best_index);
    best = tl::maximum(best, value);
  }
  tl::store(Out + row, best_index);
}

// M x N
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32000", "64x128256"};
  return {"7x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  auto hx = random_vector<half>(size_t(M) * N, 21, -8, 8);
  auto x = ctx.dev.from_host(hx);
  auto out = ctx.dev.alloc<int64_t>(M);
  auto kernel = tritium::jit(argmax_kernel, "argmax_kernel");
  const int block = ctx.full ? std::min(next_pow2(N), 4096) : 128;
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{M}](x, out, N, block); });
  std::vector<int64_t> ref(M);
  for (int i = 0; i < M; ++i)
    for (int j = 1; j < N; ++j)
      if (to_double(hx[size_t(i) * N + j]) > to_double(hx[size_t(i) * N + ref[i]]))
        ref[i] = j;
  Outcome o = compare_exact("argmax", out.to_host(), ref);
  o.bytes = double(hx.size()) * sizeof(half);
  return o;
}

const int registered = add({"argmax", "reduction", shapes, run});

} // namespace
