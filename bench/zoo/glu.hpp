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

} // namespace zoo::glu
