// scatter: out[i, index[i, k]] = src[i, k], x.scatter(1, index, src) with distinct indices in
// each row (so no two writes meet; FlagGems' scatter without a reduction). out starts as a
// copy of x; the kernel writes only the scattered elements, elementwise over src.
#include "check.hpp"

#include <numeric>

namespace {
using namespace zoo;

void scatter_kernel(tl::ptr<tl::f16> Src, tl::ptr<int64_t> Index, tl::ptr<tl::f16> Out, tl::i32 N,
                    tl::i32 K, tl::i64 numel, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0).to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < numel;
  auto row = offs / K;
  auto index = tl::load(Index + offs, mask);
  tl::store(Out + row * N + index, tl::load(Src + offs, mask), mask);
}

// M x N x K
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096x2048", "4096x32000x512"};
  return {"20x50x30"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]), K = int(d[2]);
  const int64_t numel = int64_t(M) * K;
  auto hx = random_vector<half>(size_t(M) * N, 67);
  auto hsrc = random_vector<half>(numel, 68);
  // Each row: the first K of a shuffle of 0..N-1.
  std::vector<int64_t> hidx(numel), perm(N);
  for (int m = 0; m < M; ++m) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int k = 0; k < K; ++k) {
      std::swap(perm[k], perm[k + int64_t(uniform(69, size_t(m) * K + k, 0, N - k))]);
      hidx[size_t(m) * K + k] = perm[k];
    }
  }
  auto src = ctx.dev.from_host(hsrc);
  auto index = ctx.dev.from_host(hidx);
  auto out = ctx.dev.from_host(hx);
  auto kernel = tritium::jit(scatter_kernel, "scatter_kernel");
  ctx.launch(
      [&] { kernel[{tritium::cdiv(numel, int64_t{1024})}](src, index, out, N, K, numel, 1024); });
  std::vector<half> ref = hx;
  for (int64_t i = 0; i < numel; ++i)
    ref[size_t(i / K) * N + hidx[i]] = hsrc[i];
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = double(numel) * (2 * sizeof(half) + sizeof(int64_t));
  return o;
}

const int registered = add({"scatter", "gather", shapes, run});

} // namespace
