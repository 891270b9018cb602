// int8_per_token_quant: dynamic per-token int8 quantization of activations (vLLM's
// dynamic_per_token_scaled_int8 / SGLang's per_token_quant_int8 for W8A8 GEMMs): each row of an
// fp16 [T, H] matrix gets scale = max|x| / 127 and q = round(x / scale) as int8, with the scales
// stored in f32. One program per row, the row in one block.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void int8_per_token_quant_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<int8_t> q_ptr,
                                 tl::ptr<float> scale_ptr, tl::i32 H, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < H;
  auto x = tl::load(x_ptr + row * H + cols, mask, 0.0).to<float>();
  // A row of zeros gets a tiny scale rather than a division by zero.
  auto absmax = tl::maximum(tl::max(tl::abs(x)), 1e-10f);
  auto scale = absmax / 127.f;
  auto q = tl::libdevice::round(x * (127.f / absmax));
  tl::store(q_ptr + row * H + cols, tl::clamp(q, -127.f, 127.f).to<int8_t>(), mask);
  tl::store(scale_ptr + row, scale);
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"t4096_h4096", "t16384_h8192"};
  return {"t5_h200", "t3_h1024"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int T = d["t"], H = d["h"];
  Rng rng("int8_per_token_quant " + shape);
  const std::vector<half> hx = token_rows(T, H, rng);
  auto x = ctx.dev.from_host(hx);
  auto q = ctx.dev.alloc<int8_t>(hx.size());
  auto s = ctx.dev.alloc<float>(T);

  auto kernel = tritium::jit(int8_per_token_quant_kernel, "int8_per_token_quant_kernel");
  const int block = next_pow2(H);
  kernel.options({.num_warps = std::clamp(block / 256, 1, 16)});
  ctx.launch([&] { kernel[{T}](x, q, s, H, block); });

  auto gq = q.to_host();
  auto gs = s.to_host();
  Check scales{0, 1e-6}, codes{0, 0};
  int off_by_one_at_ties = 0;
  for (size_t t : sample(size_t(T), 2048, rng)) {
    double absmax = 1e-10;
    for (int i = 0; i < H; ++i)
      absmax = std::max(absmax, std::fabs(to_d(hx[t * H + i])));
    scales.add(gs[t], absmax / 127, "scales", t);
    for (int i = 0; i < H; ++i) {
      size_t o = t * H + i;
      double v = to_d(hx[o]) * 127 / absmax;
      double ref = std::clamp(std::round(v), -127.0, 127.0);
      // The kernel's f32 product may land on the other side of a .5 the double one is
      // within 1e-4 of; anything else must match.
      if (gq[o] != ref && std::fabs(std::fabs(v - std::trunc(v)) - 0.5) < 1e-4 &&
          std::fabs(gq[o] - ref) == 1) {
        ++off_by_one_at_ties;
        continue;
      }
      codes.add(gq[o], ref, "q", o);
    }
  }
  return both(outcome(scales, 3.0 * T * H + 4.0 * T, 0), outcome(codes, 0, 0));
}

[[maybe_unused]] const int registered = zoo::add({"int8_per_token_quant", "quant", shapes, run});
} // namespace
