// batched_transpose: fp16 [B, M, N] into [B, N, M], the last two dimensions swapped (a head's
// K into K^T, x.transpose(1, 2).contiguous()). A third grid axis over the batch; each program
// transposes one 64 x 64 tile as transpose_2d does.
#include "check.hpp"

namespace {
using namespace zoo;

void batched_transpose_kernel(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y, tl::i32 M, tl::i32 N,
                              tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N) {
  auto batch = tl::program_id(2).to<int64_t>() * M * N;
  X += batch;
  Y += batch;
  auto rm = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto rn = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N);
  auto mask = (rm[{tl::_, tl::None}] < M) && (rn[{tl::None, tl::_}] < N);
  auto x = tl::load(X + rm[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}], mask);
  tl::store(Y + rn[{tl::_, tl::None}] * M + rm[{tl::None, tl::_}], tl::trans(x), tl::trans(mask));
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"32x4096x128", "64x1024x1024"};
  return {"3x70x100"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int B = int(d[0]), M = int(d[1]), N = int(d[2]);
  auto hx = random_vector<half>(size_t(B) * M * N, 2);
  auto x = ctx.dev.from_host(hx);
  auto y = ctx.dev.alloc<half>(hx.size());
  auto kernel = tritium::jit(batched_transpose_kernel, "batched_transpose_kernel");
  ctx.launch([&] { kernel[{tritium::cdiv(M, 64), tritium::cdiv(N, 64), B}](x, y, M, N, 64, 64); });
  std::vector<half> ref(hx.size());
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        ref[(size_t(b) * N + j) * M + i] = hx[(size_t(b) * M + i) * N + j];
  Outcome o = compare_exact("y", y.to_host(), ref);
  o.bytes = 2.0 * hx.size() * sizeof(half);
  return o;
}

const int registered = add({"batched_transpose", "shape", shapes, run});

} // namespace
