// transpose_2d: an fp16 [M, N] matrix into [N, M] (FlagGems' transpose / permute of a 2-D
// tensor). Each program loads a 64 x 64 tile as one 2-D block, transposes it in registers with
// tl::trans and stores it, so that both the loads and the stores run along rows; the GPU
// lowering must turn the register transpose into a trip through shared memory.
#include "check.hpp"

namespace {
using namespace zoo;

void transpose_2d_kernel(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y, tl::i32 M, tl::i32 N,
                         tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N) {
  auto rm = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto rn = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N);
  auto mask = (rm[{tl::_, tl::None}] < M) && (rn[{tl::None, tl::_}] < N);
  auto x = tl::load(X + rm[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}], mask);
  tl::store(Y + rn[{tl::_, tl::None}] * M + rm[{tl::None, tl::_}], tl::trans(x), tl::trans(mask));
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"8192x8192", "4099x1000"};
  return {"130x70"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  auto hx = random_vector<half>(size_t(M) * N, 1);
  auto x = ctx.dev.from_host(hx);
  auto y = ctx.dev.alloc<half>(hx.size());
  auto kernel = tritium::jit(transpose_2d_kernel, "transpose_2d_kernel");
  ctx.launch([&] { kernel[{tritium::cdiv(M, 64), tritium::cdiv(N, 64)}](x, y, M, N, 64, 64); });
  std::vector<half> ref(hx.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      ref[size_t(j) * M + i] = hx[size_t(i) * N + j];
  Outcome o = compare_exact("y", y.to_host(), ref);
  o.bytes = 2.0 * hx.size() * sizeof(half);
  return o;
}

const int registered = add({"transpose_2d", "shape", shapes, run});

} // namespace
