// What kl_div and jsd share: rows of log-probabilities (log_softmax of random logits) and
// Liger's block over the vocabulary.
#pragma once

#include "check.hpp"

namespace zoo::divergence {

// log_softmax of logits uniform in [-4, 4), row by row, as float.
inline std::vector<float> log_probs(int rows, int V, uint64_t seed) {
  std::vector<float> out(size_t(rows) * V);
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    std::vector<double> z(V);
    for (int j = 0; j < V; ++j)
      m = std::max(m, z[j] = uniform(seed, size_t(r) * V + j, -4, 4));
    for (int j = 0; j < V; ++j)
      s += std::exp(z[j] - m);
    for (int j = 0; j < V; ++j)
      out[size_t(r) * V + j] = float(z[j] - m - std::log(s));
  }
  return out;
}

inline int block(int V) {
  return std::min(next_pow2(V), 16384);
}

} // namespace zoo::divergence
