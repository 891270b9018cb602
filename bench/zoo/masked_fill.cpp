// masked_fill: out = where(mask, value, x) over fp16 scores and a bool mask (an attention
// mask applied before softmax; FlagGems' masked_fill), elementwise.
#include "check.hpp"

namespace {
using namespace zoo;

void masked_fill_kernel(tl::ptr<tl::f16> X, tl::ptr<bool> Mask, tl::ptr<tl::f16> Out, tl::i64 n,
                        tl::f32 value, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0).to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
  auto in = offs < n;
  auto fill = tl::load(Mask + offs, in);
  tl::store(Out + offs, tl::where(fill, value, tl::load(X + offs, in).to<float>()), in);
}

// rows x cols (one flat pass)
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "8192x16384"};
  return {"7x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int64_t n = d[0] * d[1];
  auto hx = random_vector<half>(n, 74);
  std::unique_ptr<bool[]> hm(new bool[n]);
  for (int64_t i = 0; i < n; ++i)
    hm[i] = uniform(75, i, 0, 1) < 0.3;
  const float value = -10000.f;
  auto x = ctx.dev.from_host(hx);
  auto mask = ctx.dev.from_host(std::span<const bool>(hm.get(), n));
  auto out = ctx.dev.alloc<half>(n);
  auto kernel = tritium::jit(masked_fill_kernel, "masked_fill_kernel");
  ctx.launch([&] { kernel[{tritium::cdiv(n, int64_t{1024})}](x, mask, out, n, value, 1024); });
  std::vector<half> ref(n);
  for (int64_t i = 0; i < n; ++i)
    ref[i] = hm[i] ? half(value) : hx[i];
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = double(n) * (2 * sizeof(half) + sizeof(bool));
  return o;
}

const int registered = add({"masked_fill", "elementwise", shapes, run});

} // namespace
