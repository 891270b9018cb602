// gather: out[i, k] = x[i, index[i, k]], torch.gather(x, 1, index) with x [M, N] fp16 and
// index [M, K] int64 (FlagGems' gather). Elementwise over out: each element loads its index,
// then the value it names.
#include "check.hpp"

namespace {
using namespace zoo;

void gather_kernel(tl::ptr<tl::f16> X, tl::ptr<int64_t> Index, tl::ptr<tl::f16> Out, tl::i32 N,
                   tl::i32 K, tl::i64 numel, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0).to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < numel;
  auto row = offs / K;
  auto index = tl::load(Index + offs, mask);
  tl::store(Out + offs, tl::load(X + row * N + index, mask), mask);
}

// M x N x K
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096x4096", "4096x32000x512"};
  return {"20x50x30"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]), K = int(d[2]);
  const int64_t numel = int64_t(M) * K;
  auto hx = random_vector<half>(size_t(M) * N, 65);
  std::vector<int64_t> hidx(numel);
  for (int64_t i = 0; i < numel; ++i)
    hidx[i] = int64_t(uniform(66, i, 0, N));
  auto x = ctx.dev.from_host(hx);
  auto index = ctx.dev.from_host(hidx);
  auto out = ctx.dev.alloc<half>(numel);
  auto kernel = tritium::jit(gather_kernel, "gather_kernel");
  ctx.launch(
      [&] { kernel[{tritium::cdiv(numel, int64_t{1024})}](x, index, out, N, K, numel, 1024); });
  std::vector<half> ref(numel);
  for (int64_t i = 0; i < numel; ++i)
    ref[i] = hx[size_t(i / K) * N + hidx[i]];
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = double(numel) * (2 * sizeof(half) + sizeof(int64_t));
  return o;
}

const int registered = add({"gather", "gather", shapes, run});

} // namespace
