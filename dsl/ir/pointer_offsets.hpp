// A pointer taken apart into what moved it from the kernel argument it derives from, for
// TRITIUM_CHECK to bound its offsets with scalars.
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tritium::ir {

// A value a `for` loop carries that each trip advances by `d` elements, a scalar made outside
// the loop or a constant (`a_ptrs += BLOCK_K * stride_ak`): on trip j it is `init` advanced by
// j * d. A constant step is `constant` too (its op may be inside the loop).
struct Induction {
  const Op* loop;
  Value* init;
  Value* d;
  std::optional<int64_t> constant;
};
std::optional<Induction> induction(const Value* v);
// The inductions of every loop nested in `b`, by carried value (found before a rewrite takes
// the loops' bodies apart).
using Inductions = std::unordered_map<const Value*, Induction>;
void find_inductions(const Block& b, Inductions& out);

// `p` as `arg` advanced by scalar offsets, tiles of i32 element offsets, and the steps of the
// loops that carry it (outermost last).
struct PointerOffsets {
  std::vector<Value*> tiles;
  std::vector<Value*> scalars;
  std::vector<Induction> steps;
};
// Nullopt where anything else made `p` (a select, a pointer read from memory, i64 tiles, a
// loop-carried pointer that is not an induction).
std::optional<PointerOffsets> pointer_offsets(Value* p, const Value* arg,
                                              const Inductions& inductions);

} // namespace tritium::ir
