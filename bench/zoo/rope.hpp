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

} // namespace zoo::rope
