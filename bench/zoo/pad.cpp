// pad: constant padding of an fp16 [M, N] matrix, F.pad(x, (left, right, top, bottom), value)
// (FlagGems' constant_pad_nd in 2-D). One program per output row and column block; an output
// element inside the source reads it, the rest take the value.
#include "check.hpp"

namespace {
using namespace zoo;

constexpr int top = 1, bottom = 2, left = 3, right = 5;

void pad_kernel(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Out, tl::i32 M, tl::i32 N, tl::i32 out_n,
                tl::i32 top, tl::i32 left, tl::f32 value, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  auto in_row = row - top;
  auto in_cols = cols - left;
  auto inside = (in_row >= 0) && (in_row < M) && (in_cols >= 0) && (in_cols < N);
  // `other` must have the pointee's type here (Triton converts it): KNOWN_ISSUES.md.
  auto x = tl::load(X + in_row.to<int64_t>() * N + in_cols, inside, value.to<tl::f16>());
  tl::store(Out + row.to<int64_t>() * out_n + cols, x, cols < out_n);
}

// M x N
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "8190x8190"};
  return {"9x70"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  const int out_m = M + top + bottom, out_n = N + left + right;
  const float value = -1.5f;
  auto hx = random_vector<half>(size_t(M) * N, 79);
  auto x = ctx.dev.from_host(hx);
  auto out = ctx.dev.alloc<half>(size_t(out_m) * out_n);
  auto kernel = tritium::jit(pad_kernel, "pad_kernel");
  ctx.launch([&] {
    kernel[{out_m, tritium::cdiv(out_n, 1024)}](x, out, M, N, out_n, top, left, value, 1024);
  });
  std::vector<half> ref(size_t(out_m) * out_n, half(value));
  for (int m = 0; m < M; ++m)
    std::copy_n(&hx[size_t(m) * N], N, &ref[size_t(m + top) * out_n + left]);
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = (double(hx.size()) + double(ref.size())) * sizeof(half);
  return o;
}

const int registered = add({"pad", "shape", shapes, run});

} // namespace
