#include "loop_invariant_bounds.hpp"

#include "clone_op.hpp"

#include <cstdint>

namespace tritium::ir {

namespace {

bool shape_only(OpKind k) {
  return k == OpKind::Splat || k == OpKind::Broadcast || k == OpKind::ExpandDims;
}

// Deeper chains are left to the checked copy rather than risk the stack on a generated kernel.
constexpr int kMaxDepth = 64;

} // namespace

Value* AheadOf::copy(Value* v, int depth) {
  if (!made_in(v, loop_))
    return v;
  if (auto it = map_.find(v); it != map_.end())
    return it->second;
  const Op* d = v->def;
  if (!d || depth > kMaxDepth || !d->regions.empty() ||
      !(is_elementwise(d->kind) || shape_only(d->kind) || d->kind == OpKind::Constant ||
        d->kind == OpKind::Arange))
    return nullptr;
  // A copy runs where the loop may run no trip; every op copied is defined on any operands
  // (an integer division by zero included).
  std::unordered_map<const Value*, Value*> operands;
  for (Value* o : d->operands) {
    Value* c = copy(o, depth + 1);
    if (!c)
      return nullptr;
    operands[o] = c;
  }
  Op& c = clone_op(b_, *d, operands);
  for (size_t k = 0; k < d->results.size(); ++k)
    map_[d->results[k]] = c.results[k];
  return map_[v];
}

Value* invariant_factors(Builder& b, AheadOf& ahead, Value* mask) {
  const Op* d = mask->def;
  if (!d || d->kind != OpKind::And)
    return ahead(mask);
  Value* a = invariant_factors(b, ahead, d->operand(0));
  Value* c = invariant_factors(b, ahead, d->operand(1));
  if (a && c)
    return b.create1(OpKind::And, {a, c}, a->type);
  return a ? a : c;
}

Value* reduce_all(Builder& b, Value* v, OpKind combine) {
  const Type scalar = v->type.scalar();
  while (!v->type.is_scalar()) {
    auto shape = v->type.shape;
    shape.erase(shape.begin());
    Op& r =
        b.create(OpKind::Reduce, {v}, {Type(scalar.elem, shape)}, {{attr::axis, int64_t{0}}}, 1);
    Block& outer = b.block();
    Block& body = r.body();
    Value* x = b.add_block_arg(body, scalar);
    Value* y = b.add_block_arg(body, scalar);
    b.set_block(body);
    b.create(OpKind::Yield, {b.create1(combine, {x, y}, scalar)}, {});
    b.set_block(outer);
    v = r.result();
  }
  return v;
}

Interval reduced_bounds(Builder& b, Value* exact, Value* keep) {
  auto bound = [&](OpKind combine, int64_t neutral) {
    Value* v = exact;
    if (keep)
      v = b.create1(OpKind::Select, {keep, v, b.constant_int(neutral, v->type)}, v->type);
    return reduce_all(b, v, combine);
  };
  // Neutral values of i32's range: far enough to pass no bound, near enough that the sums
  // made from them cannot wrap in i64.
  return Interval{bound(OpKind::Min, INT32_MAX), bound(OpKind::Max, INT32_MIN)};
}

} // namespace tritium::ir
