// What cross_entropy_fwd and cross_entropy_bwd share: logits [BT, V] fp16 with some rows'
// targets set to ignore_index, and the float64 log-sum-exp of each row.
#pragma once

#include "check.hpp"

namespace zoo::cross_entropy {

constexpr int ignore_index = -100;

// The block over the vocabulary: Liger's, a whole row up to 32768 logits.
inline int block(int V) {
  return std::min(next_pow2(V), 32768);
}

struct Inputs {
  std::vector<half> logits;
  std::vector<int64_t> targets;
};

// Logits in [-8, 8); every 7th row ignored.
inline Inputs inputs(int BT, int V) {
  Inputs in{random_vector<half>(size_t(BT) * V, 11, -8, 8), {}};
  for (int r = 0; r < BT; ++r)
    in.targets.push_back(r % 7 == 3 ? ignore_index : int64_t(uniform(12, r, 0, V)));
  return in;
}

inline double logsumexp(const half* row, int V) {
  double m = -INFINITY, s = 0;
  for (int j = 0; j < V; ++j)
    m = std::max(m, to_double(row[j]));
  for (int j = 0; j < V; ++j)
    s += std::exp(to_double(row[j]) - m);
  return m + std::log(s);
}

} // namespace zoo::cross_entropy
