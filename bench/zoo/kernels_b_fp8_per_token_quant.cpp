// fp8_per_token_quant: dynamic per-token fp8 quantization of activations (vLLM's
// dynamic_per_token_scaled_fp8_quant, the prologue of an fp8 W8A8 GEMM): each row of an fp16
// [T, H] matrix gets scale = max|x| / 448 and q = x / scale as float8e4nv (e4m3fn: round to
// nearest even, saturating), with the scales in f32. One program per row, the row in one block.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;
using tritium::float8e4nv;

void fp8_per_token_quant_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<float8e4nv> q_ptr,
                                tl::ptr<float> scale_ptr, tl::i32 H, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < H;
  auto x = tl::load(x_ptr + row * H + cols, mask, 0.0).to<float>();
  // A row of zeros gets a tiny scale rather than a division by zero.
  auto absmax = tl::maximum(tl::max(tl::abs(x)), 1e-10f);
  tl::store(q_ptr + row * H + cols, (x * (448.f / absmax)).to<float8e4nv>(), mask);
  tl::store(scale_ptr + row, absmax / 448.f);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"t4096_h4096", "t16384_h8192"};
  return {"t5_h200", "t3_h1024"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int T = d["t"], H = d["h"];
  Rng rng("fp8_per_token_quant " + shape);
  const std::vector<half> hx = token_rows(T, H, rng);
  auto x = ctx.dev.from_host(hx);
  auto q = ctx.dev.alloc<float8e4nv>(hx.size());
  auto s = ctx.dev.alloc<float>(T);

  auto kernel = tritium::jit(fp8_per_token_quant_kernel, "fp8_per_token_quant_kernel");
  const int block = next_pow2(H);
  kernel.options({.num_warps = std::clamp(block / 256, 1, 16)});
  ctx.launch([&] { kernel[{T}](x, q, s, H, block); });

  auto gq = q.to_host();
  auto gs = s.to_host();
  // e4m3 keeps 3 mantissa bits: a correctly rounded code is within 2^-4 of the value, or 2^-10
  // below the normal range; the division's approximation on GPUs moves a value by ulps of f32.
  Check scales{0, 1e-6}, codes{std::ldexp(1.0, -10), 0.0626};
  for (size_t t : sample(size_t(T), 2048, rng)) {
    double absmax = 1e-10;
    for (int i = 0; i < H; ++i)
      absmax = std::max(absmax, std::fabs(to_d(hx[t * H + i])));
    scales.add(gs[t], absmax / 448, "scales", t);
    for (int i = 0; i < H; ++i) {
      size_t o = t * H + i;
      codes.add(static_cast<float>(gq[o]), to_d(hx[o]) * 448 / absmax, "q", o);
    }
  }
  return both(outcome(scales, 3.0 * T * H + 4.0 * T, 0), outcome(codes, 0, 0));
}

[[maybe_unused]] const int registered = zoo::add({"fp8_per_token_quant", "quant", shapes, run});
} // namespace
