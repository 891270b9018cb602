// Bounds of the tiles a loop reads but does not change, built ahead of it from the tiles
// themselves: where interval arithmetic knows nothing (offsets loaded from memory, a routed
// GEMM's token rows), two block-wide reductions give the tile's least and greatest element over
// the elements that the access's mask lets through on every trip.
#pragma once

#include "offset_bounds.hpp"

#include <unordered_map>

namespace tritium::ir {

// Values of `loop` rebuilt ahead of it, where the builder is: a value made outside the loop is
// itself; one made inside by pure elementwise and shape ops from such values is a copy of those
// ops (a mask's `token_mask[:, None]` is traced inside the loop); anything else made inside (a
// load, a carried value, the induction value) has no copy.
class AheadOf {
public:
  AheadOf(Builder& b, const Op& loop) : b_(b), loop_(loop) {}
  Value* operator()(Value* v) { return copy(v, 0); }

private:
  Value* copy(Value* v, int depth);

  Builder& b_;
  const Op& loop_;
  std::unordered_map<const Value*, Value*> map_;
};

// The conjunction of the factors of `mask` (split at `and`) that the loop does not change,
// rebuilt ahead of it; null where there is none.
Value* invariant_factors(Builder& b, AheadOf& ahead, Value* mask);

// The least and greatest element (i64) of the i64 tile `exact` where `keep` (null: everywhere)
// holds. Where it holds nowhere, lo > hi, which no bound check rejects: nothing is accessed.
Interval reduced_bounds(Builder& b, Value* exact, Value* keep);

// Every element of `v` combined by `combine` (min, max, add...), one reduction an axis.
Value* reduce_all(Builder& b, Value* v, OpKind combine);

} // namespace tritium::ir
