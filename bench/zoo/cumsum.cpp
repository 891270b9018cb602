// cumsum: the inclusive prefix sum of each row, x [M, N] f32 (top-p sampling's cumulative
// probabilities; FlagGems' cumsum along the last dimension). One program per row scans it in
// blocks with tl::cumsum and carries the running total from block to block.
#include "check.hpp"

namespace {
using namespace zoo;

void cumsum_kernel(tl::ptr<float> X, tl::ptr<float> Y, tl::i32 N, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0).to<int64_t>() * N;
  X += row;
  Y += row;
  auto carry = tl::scalar<float>(0.f);
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < N;
    auto x = tl::load(X + cols, mask, 0.f);
    tl::store(Y + cols, tl::cumsum(x, 0) + carry, mask);
    carry += tl::sum(x, 0);
  }
}

// M x N
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "256x32000"};
  return {"5x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  auto hx = random_vector<float>(size_t(M) * N, 22, 0, 1);
  auto x = ctx.dev.from_host(hx);
  auto y = ctx.dev.alloc<float>(hx.size());
  auto kernel = tritium::jit(cumsum_kernel, "cumsum_kernel");
  const int block = ctx.full ? 1024 : 128;
  ctx.launch([&] { kernel[{M}](x, y, N, block); });
  std::vector<double> ref(hx.size());
  for (int i = 0; i < M; ++i) {
    double s = 0;
    for (int j = 0; j < N; ++j)
      ref[size_t(i) * N + j] = s += hx[size_t(i) * N + j];
  }
  // f32 sums of up to N terms of [0, 1): the error grows with the prefix.
  Outcome o = compare("y", y.to_host(), ref, 1e-5, 1e-5 * std::sqrt(double(N)));
  o.bytes = 2.0 * hx.size() * sizeof(float);
  return o;
}

const int registered = add({"cumsum", "scan", shapes, run});

} // namespace
