// What the two RoPE entries share: the cos/sin tables of Llama's rotary embedding for each
// token's position, and the float64 rotation of one pair.
#pragma once

#include "check.hpp"

namespace zoo::rope {

// cos and sin of position * theta^(-2i/D), [tokens, D/2], as the host precomputes them.
struct Tables {
  std::vector<float> cos, sin;
};

inline Tables tables(int tokens, int dim) {
  Tables t;
  for (int p = 0; p < tokens; ++p)
    for (int i = 0; i < dim / 2; ++i) {
      double angle = p * std::pow(10000.0, -2.0 * i / dim);
      t.cos.push_back(float(std::cos(angle)));
      t.sin.push_back(float(std::sin(angle)));
    }
  return t;
}

// Runs a RoPE kernel over q [tokens, heads, D] (shape "TxHxD", inputs from `seed`) and checks
// it in float64. A pair is (i, i + D/2) for the half-split layout, (2i, 2i + 1) interleaved.
template <class Kernel>
Outcome check(Context& ctx, const std::string& shape, Kernel kernel_fn, const char* name,
              uint64_t seed, bool interleaved) {
  auto d = dims(shape);
  const int T = int(d[0]), H = int(d[1]), D = int(d[2]);
  auto hq = random_vector<half>(size_t(T) * H * D, seed);
  auto tab = tables(T, D);
  auto q = ctx.dev.from_host(hq);
  auto cos = ctx.dev.from_host(tab.cos), sin = ctx.dev.from_host(tab.sin);
  auto out = ctx.dev.alloc<half>(hq.size());
  auto kernel = tritium::jit(kernel_fn, name);
  ctx.launch([&] { kernel[{T}](q, cos, sin, out, H, D, next_pow2(H)); });
  std::vector<double> ref(hq.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D / 2; ++i) {
        const size_t row = (size_t(t) * H + h) * D;
        const size_t a = row + (interleaved ? 2 * i : i), b = interleaved ? a + 1 : a + D / 2;
        const double x0 = to_double(hq[a]), x1 = to_double(hq[b]);
        const double c = tab.cos[size_t(t) * D / 2 + i], s = tab.sin[size_t(t) * D / 2 + i];
        ref[a] = x0 * c - x1 * s;
        ref[b] = x0 * s + x1 * c;
      }
  Outcome o = compare("out", out.to_host(), ref, 1e-3, 2e-3);
  o.bytes = 2.0 * hq.size() * sizeof(half) + 2.0 * tab.cos.size() * sizeof(float);
  return o;
}

} // namespace zoo::rope
