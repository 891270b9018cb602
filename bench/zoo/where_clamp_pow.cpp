// where_clamp_pow: out = where(cond, clamp(x, lo, hi), pow(y, e)), three ATen pointwise ops
// fused into one pass over fp16 x, y and a bool condition (what FlagGems' pointwise code
// generator makes of such a chain).
#include "check.hpp"

namespace {
using namespace zoo;

void where_clamp_pow_kernel(tl::ptr<bool> Cond, tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y,
                            tl::ptr<tl::f16> Out, tl::i64 n, tl::f32 lo, tl::f32 hi,
                            tl::f32 exponent, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0).to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto cond = tl::load(Cond + offs, mask);
  auto x = tl::load(X + offs, mask).to<float>();
  auto y = tl::load(Y + offs, mask).to<float>();
  tl::store(Out + offs, tl::where(cond, tl::clamp(x, lo, hi), tl::pow(y, exponent)), mask);
}

// rows x cols (one flat pass)
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "4096x16384"};
  return {"7x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int64_t n = d[0] * d[1];
  auto hx = random_vector<half>(n, 71, -2, 2), hy = random_vector<half>(n, 72, 0.25, 2);
  std::unique_ptr<bool[]> hc(new bool[n]);
  for (int64_t i = 0; i < n; ++i)
    hc[i] = uniform(73, i, 0, 1) < 0.5;
  const float lo = -0.5f, hi = 1.f, exponent = 1.5f;
  auto cond = ctx.dev.from_host(std::span<const bool>(hc.get(), n));
  auto x = ctx.dev.from_host(hx), y = ctx.dev.from_host(hy);
  auto out = ctx.dev.alloc<half>(n);
  auto kernel = tritium::jit(where_clamp_pow_kernel, "where_clamp_pow_kernel");
  ctx.launch([&] {
    kernel[{tritium::cdiv(n, int64_t{1024})}](cond, x, y, out, n, lo, hi, exponent, 1024);
  });
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i)
    ref[i] = hc[i] ? std::clamp(to_double(hx[i]), double(lo), double(hi))
                   : std::pow(to_double(hy[i]), double(exponent));
  Outcome o = compare("out", out.to_host(), ref, 1e-3, 2e-3);
  o.bytes = double(n) * (3 * sizeof(half) + sizeof(bool));
  return o;
}

const int registered = add({"where_clamp_pow", "elementwise", shapes, run});

} // namespace
