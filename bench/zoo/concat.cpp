// concat: out = torch.cat([a, b], dim=1) for fp16 a [M, N1] and b [M, N2] (FlagGems' cat along
// the last dimension). One kernel over out's rows and column blocks: a column left of N1 comes
// from a, the rest from b, both loads masked so that each element is read once.
#include "check.hpp"

namespace {
using namespace zoo;

void concat_kernel(tl::ptr<tl::f16> A, tl::ptr<tl::f16> B, tl::ptr<tl::f16> Out, tl::i32 N1,
                   tl::i32 N2, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0).to<int64_t>();
  auto cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  auto n = N1 + N2;
  auto from_a = cols < N1;
  auto a = tl::load(A + row * N1 + cols, from_a);
  auto b = tl::load(B + row * N2 + (cols - N1), !from_a && cols < n);
  tl::store(Out + row * n + cols, tl::where(from_a, a, b), cols < n);
}

// M x N1 x N2
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096x4096", "8192x1000x3000"};
  return {"5x70x50"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N1 = int(d[1]), N2 = int(d[2]);
  auto ha = random_vector<half>(size_t(M) * N1, 77), hb = random_vector<half>(size_t(M) * N2, 78);
  auto a = ctx.dev.from_host(ha), b = ctx.dev.from_host(hb);
  auto out = ctx.dev.alloc<half>(size_t(M) * (N1 + N2));
  auto kernel = tritium::jit(concat_kernel, "concat_kernel");
  ctx.launch([&] { kernel[{M, tritium::cdiv(N1 + N2, 1024)}](a, b, out, N1, N2, 1024); });
  std::vector<half> ref;
  for (int m = 0; m < M; ++m) {
    ref.insert(ref.end(), &ha[size_t(m) * N1], &ha[size_t(m + 1) * N1]);
    ref.insert(ref.end(), &hb[size_t(m) * N2], &hb[size_t(m + 1) * N2]);
  }
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = 2.0 * ref.size() * sizeof(half);
  return o;
}

const int registered = add({"concat", "shape", shapes, run});

} // namespace
