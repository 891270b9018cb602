// Bounds on the elements of an integer tile, as scalar ops: TRITIUM_CHECK decides whether an
// access can fail from its offsets' bounds, a few scalar compares, instead of checking each
// element.
#pragma once

#include <tritium/ir/builder.hpp>

#include <optional>
#include <unordered_map>

namespace tritium::ir {

// Whether `v` is made inside `op` (by an op in one of its regions, or as a block argument of
// one).
bool made_in(const Value* v, const Op& op);

// Lower and upper bounds (i64 scalars) of every element.
struct Interval {
  Value* lo;
  Value* hi;
};

// Bounds built where the builder is, from aranges, constants and scalars through +, -, *, /, %,
// sign extension, splats, broadcasts and expand_dims. A scalar made otherwise bounds itself (one
// value for the program). Each i32 op on the way adds to `fits()` that its bounds stay in i32,
// so that where it holds no element wrapped.
//
// Over a loop's trips: with `loop` set, its induction value ranges over `trips` and any other
// value made inside the loop has no bounds, so that what is built holds for every trip and can
// be built ahead of the loop.
class OffsetBounds {
public:
  explicit OffsetBounds(Builder& b, const Op* loop = nullptr, Interval trips = {});
  std::optional<Interval> of(Value* v);
  Value* fits() const { return fits_; }

private:
  std::optional<Interval> compute(Value* v);
  std::optional<Interval> binary(const Op& d, Interval a, Interval c);
  Value* op(OpKind k, Value* a, Value* c);
  Value* i64(int64_t v);
  Value* widen(Value* v);
  Value* cmp(CmpPred pred, Value* a, Value* c);

  Builder& b_;
  const Op* loop_;
  Interval trips_;
  Value* fits_;
  std::unordered_map<const Value*, std::optional<Interval>> memo_;
};

} // namespace tritium::ir
