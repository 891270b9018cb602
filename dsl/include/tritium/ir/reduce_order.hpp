// The order in which `reduce` applies its combine function: part of the IR's semantics, so
// that the interpreter and the CPU backend agree bit for bit while the CPU keeps many partial
// results in vector registers (a strictly sequential order would chain every step on the one
// before it). GPU backends combine in the order their layouts give and are compared with a
// tolerance.
//
// A reduction of `len` elements, for each of `lanes` independent outputs (the product of the
// other dimensions), keeps P = partials(len, lanes) partial results: element j goes into
// partial j % P, each partial combining its elements in increasing j (acc = combine(acc, x_j),
// the first element starting it). The partials then halve as a tree: for h = P/2, P/4, …, 1,
// partial k = combine(partial k, partial k + h) for k < h. Partial 0 is the result. With
// P = 1 this is the plain sequential order; reductions of many independent lanes keep it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tritium::ir {

// Partial results per output: about 32 accumulators in all, a power of two, at most `len`.
constexpr int64_t reduce_partials(int64_t len, int64_t lanes) {
  int64_t cap = std::min<int64_t>(len, std::max<int64_t>(1, 32 / std::max<int64_t>(1, lanes)));
  int64_t p = 1;
  while (p * 2 <= cap)
    p *= 2;
  return p;
}

} // namespace tritium::ir
