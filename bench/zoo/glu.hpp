// What the gated-MLP activations (swiglu_fwd, swiglu_bwd, geglu_fwd) share: Liger's launch,
// one program per row of [tokens, intermediate] with the whole row in one block, and the
// float64 activations.
#pragma once

#include "check.hpp"

namespace zoo::glu {

inline double silu(double a) {
  return a / (1 + std::exp(-a));
}
inline double gelu_tanh(double a) {
  return 0.5 * a * (1 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
}

// A forward gate, c = act(a) * b over [tokens, intermediate] (shape "TxI"): inputs from
// `seed`, one program per row, checked against act in float64.
template <class Kernel>
Outcome forward(Context& ctx, const std::string& shape, Kernel kernel_fn, const char* name,
                double (*act)(double), uint64_t seed) {
  auto d = dims(shape);
  const int T = int(d[0]), I = int(d[1]);
  auto ha = random_vector<half>(size_t(T) * I, seed, -4, 4);
  auto hb = random_vector<half>(ha.size(), seed + 1, -2, 2);
  auto a = ctx.dev.from_host(ha), b = ctx.dev.from_host(hb);
  auto c = ctx.dev.alloc<half>(ha.size());
  auto kernel = tritium::jit(kernel_fn, name);
  const int block = next_pow2(I);
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{T}](a, b, c, I, block); });
  std::vector<double> ref(ha.size());
  for (size_t i = 0; i < ha.size(); ++i)
    ref[i] = act(to_double(ha[i])) * to_double(hb[i]);
  Outcome o = compare("c", c.to_host(), ref, 2e-3, 4e-3);
  o.bytes = 3.0 * ha.size() * sizeof(half);
  return o;
}

} // namespace zoo::glu
