// index_select: out = x.index_select(1, index), the columns of x [M, N] fp16 that index [K]
// names (FlagGems' index_select along the last dimension). Each program fills a
// BLOCK_M x BLOCK_K tile of out, its column indices loaded once for all its rows.
#include "check.hpp"

namespace {
using namespace zoo;

void index_select_kernel(tl::ptr<tl::f16> X, tl::ptr<int64_t> Index, tl::ptr<tl::f16> Out,
                         tl::i32 M, tl::i32 N, tl::i32 K, tl::constexpr_<int> BLOCK_M,
                         tl::constexpr_<int> BLOCK_K) {
  auto rm = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto rk = tl::program_id(1) * BLOCK_K + tl::arange(0, BLOCK_K);
  auto index = tl::load(Index + rk, rk < K);
  auto mask = (rm[{tl::_, tl::None}] < M) && (rk[{tl::None, tl::_}] < K);
  auto rows = rm[{tl::_, tl::None}].to<int64_t>();
  auto x = tl::load(X + rows * N + index[{tl::None, tl::_}], mask);
  tl::store(Out + rows * K + rk[{tl::None, tl::_}], x, mask);
}

// M x N x K
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096x2048", "32000x4096x1024"};
  return {"20x50x30"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]), K = int(d[2]);
  auto hx = random_vector<half>(size_t(M) * N, 63);
  std::vector<int64_t> hidx(K);
  for (int k = 0; k < K; ++k)
    hidx[k] = int64_t(uniform(64, k, 0, N));
  auto x = ctx.dev.from_host(hx);
  auto index = ctx.dev.from_host(hidx);
  auto out = ctx.dev.alloc<half>(size_t(M) * K);
  auto kernel = tritium::jit(index_select_kernel, "index_select_kernel");
  ctx.launch([&] {
    kernel[{tritium::cdiv(M, 32), tritium::cdiv(K, 128)}](x, index, out, M, N, K, 32, 128);
  });
  std::vector<half> ref(size_t(M) * K);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      ref[size_t(m) * K + k] = hx[size_t(m) * N + hidx[k]];
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = 2.0 * ref.size() * sizeof(half);
  return o;
}

const int registered = add({"index_select", "gather", shapes, run});

} // namespace
