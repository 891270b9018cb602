// dropout: out = x / (1 - p) where rand(seed, i) > p, else 0, the random numbers made in the
// kernel from a seed (Triton's tutorial 04, low-memory dropout; FlagGems' dropout). Checked
// by what must hold whatever the numbers: every output is 0 or x / (1 - p), and the share kept
// is 1 - p within five standard deviations.
#include "check.hpp"

namespace {
using namespace zoo;

// 32-bit offsets: tritium's philox takes 32-bit counters only (Triton's also 64-bit ones).
void dropout_kernel(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Out, tl::i32 n, tl::f32 p, tl::i32 seed,
                    tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto x = tl::load(X + offs, mask).to<float>();
  auto keep = tl::rand(seed, offs) > p;
  tl::store(Out + offs, tl::where(keep, x / (1.f - p), 0.f), mask);
}

// rows x cols (one flat pass)
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "4096x16384"};
  return {"7x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int n = int(d[0] * d[1]);
  // Away from 0, so that a kept element never rounds to 0.
  auto hx = random_vector<half>(n, 76, 0.5, 2);
  const float p = 0.25f;
  auto x = ctx.dev.from_host(hx);
  auto out = ctx.dev.alloc<half>(n);
  auto kernel = tritium::jit(dropout_kernel, "dropout_kernel");
  ctx.launch([&] { kernel[{tritium::cdiv(n, 1024)}](x, out, n, p, 1234, 1024); });
  auto got = out.to_host();
  Outcome o;
  o.ok = true;
  int64_t kept = 0;
  for (int i = 0; i < n && o.ok; ++i) {
    double g = to_double(got[i]), scaled = to_double(hx[i]) / (1 - p);
    kept += g != 0;
    double err = g == 0 ? 0 : std::fabs(g - scaled) / (1e-3 + 2e-3 * scaled);
    o.worst = std::max(o.worst, err);
    if (err > 1) {
      o.ok = false;
      o.note = fmt::format("out[{}] = {}, neither 0 nor x / (1 - p) = {}", i, g, scaled);
    }
  }
  double sigma = std::sqrt(double(n) * p * (1 - p)), expect = double(n) * (1 - p);
  if (o.ok && std::fabs(kept - expect) > 5 * sigma) {
    o.ok = false;
    o.note = fmt::format("{} of {} kept, expected {:.0f} +- {:.0f}", kept, n, expect, 5 * sigma);
  }
  o.bytes = 2.0 * n * sizeof(half);
  return o;
}

const int registered = add({"dropout", "elementwise", shapes, run});

} // namespace
