#include "offset_bounds.hpp"

#include <cstdint>

namespace tritium::ir {

bool made_in(const Value* v, const Op& op) {
  const Block* b = v->def ? v->def->parent : v->block;
  while (b && b->parent) {
    const Op* owner = b->parent->parent;
    if (owner == &op)
      return true;
    b = owner ? owner->parent : nullptr;
  }
  return false;
}

OffsetBounds::OffsetBounds(Builder& b, const Op* loop, Interval trips)
    : b_(b), loop_(loop), trips_(trips), fits_(b.constant_int(1, Type(ScalarKind::I1))) {}

Value* OffsetBounds::op(OpKind k, Value* a, Value* c) {
  return b_.create1(k, {a, c}, a->type);
}
Value* OffsetBounds::i64(int64_t v) {
  return b_.constant_int(v, Type(ScalarKind::I64));
}
Value* OffsetBounds::widen(Value* v) {
  return v->type.elem.kind == ScalarKind::I64
             ? v
             : b_.create1(OpKind::Cast, {v}, v->type.with_elem(ScalarKind::I64));
}
Value* OffsetBounds::cmp(CmpPred pred, Value* a, Value* c) {
  return b_.create1(OpKind::Cmp, {a, c}, Type(ScalarKind::I1),
                    {{std::string(EnumAttr<CmpPred>::key), pred}});
}

std::optional<Interval> OffsetBounds::of(Value* v) {
  if (auto it = memo_.find(v); it != memo_.end())
    return it->second;
  auto out = compute(v);
  memo_[v] = out;
  return out;
}

std::optional<Interval> OffsetBounds::compute(Value* v) {
  const ScalarKind kind = v->type.elem.kind;
  if (kind != ScalarKind::I32 && kind != ScalarKind::I64)
    return std::nullopt;
  const Op* d = v->def;
  if (loop_ && v == loop_->body().args[0])
    return trips_;
  if (d && d->kind == OpKind::Arange)
    return Interval{i64(d->int_attr(attr::start)), i64(d->int_attr(attr::end) - 1)};
  if (d && d->kind == OpKind::Constant && d->has_attr(attr::value)) {
    Value* x = i64(d->int_attr(attr::value));
    return Interval{x, x};
  }
  if (d &&
      (d->kind == OpKind::Splat || d->kind == OpKind::Broadcast || d->kind == OpKind::ExpandDims))
    return of(d->operand(0));
  if (d && d->kind == OpKind::Cast && kind == ScalarKind::I64 &&
      d->operand(0)->type.elem.kind == ScalarKind::I32)
    return of(d->operand(0)); // sign extension keeps the bounds
  if (d && (d->kind == OpKind::Add || d->kind == OpKind::Sub || d->kind == OpKind::Mul ||
            d->kind == OpKind::Div || d->kind == OpKind::Rem)) {
    auto a = of(d->operand(0));
    auto c = a ? of(d->operand(1)) : std::nullopt;
    if (!c)
      return std::nullopt;
    Interval out = *binary(*d, *a, *c);
    // An i64 op is taken not to wrap: its operands would be past 2^62 elements.
    if (kind == ScalarKind::I32)
      fits_ = op(OpKind::And, fits_,
                 op(OpKind::And, cmp(CmpPred::Ge, out.lo, i64(INT32_MIN)),
                    cmp(CmpPred::Le, out.hi, i64(INT32_MAX))));
    return out;
  }
  if (!v->type.is_scalar() || (loop_ && made_in(v, *loop_)))
    return std::nullopt;
  Value* x = widen(v); // one value for the whole program, whatever made it
  return Interval{x, x};
}

// The bounds of `d`'s result from its operands' (exact in i64 where those are in i32; where
// not, `fits` is false already).
std::optional<Interval> OffsetBounds::binary(const Op& d, Interval a, Interval c) {
  auto select = [&](Value* cond, Value* x, Value* y) {
    return b_.create1(OpKind::Select, {cond, x, y}, x->type);
  };
  auto min = [&](Value* x, Value* y) { return op(OpKind::Min, x, y); };
  auto max = [&](Value* x, Value* y) { return op(OpKind::Max, x, y); };
  switch (d.kind) {
  case OpKind::Add:
    return Interval{op(OpKind::Add, a.lo, c.lo), op(OpKind::Add, a.hi, c.hi)};
  case OpKind::Sub:
    return Interval{op(OpKind::Sub, a.lo, c.hi), op(OpKind::Sub, a.hi, c.lo)};
  case OpKind::Mul: {
    Value* p1 = op(OpKind::Mul, a.lo, c.lo);
    Value* p2 = op(OpKind::Mul, a.lo, c.hi);
    Value* p3 = op(OpKind::Mul, a.hi, c.lo);
    Value* p4 = op(OpKind::Mul, a.hi, c.hi);
    return Interval{min(min(p1, p2), min(p3, p4)), max(max(p1, p2), max(p3, p4))};
  }
  case OpKind::Div: {
    // By a positive divisor, x / m grows with x and shrinks toward 0 as m grows: the corners
    // bound it. Otherwise (x / 0 is 0, a negative m flips the sign) |x / m| <= |x|.
    Value* positive = cmp(CmpPred::Ge, c.lo, i64(1));
    Value* mag =
        max(max(a.lo, op(OpKind::Sub, i64(0), a.lo)), max(a.hi, op(OpKind::Sub, i64(0), a.hi)));
    Value* lo = min(op(OpKind::Div, a.lo, c.lo), op(OpKind::Div, a.lo, c.hi));
    Value* hi = max(op(OpKind::Div, a.hi, c.lo), op(OpKind::Div, a.hi, c.hi));
    return Interval{select(positive, lo, op(OpKind::Sub, i64(0), mag)), select(positive, hi, mag)};
  }
  case OpKind::Rem: {
    // x % m has x's sign and |x % m| <= |x| (x % 0 is x); by a positive m, |x % m| < m too.
    Value* positive = cmp(CmpPred::Ge, c.lo, i64(1));
    Value* lo = min(i64(0), a.lo);
    Value* hi = max(i64(0), a.hi);
    Value* below = op(OpKind::Sub, c.hi, i64(1));
    return Interval{select(positive, max(lo, op(OpKind::Sub, i64(0), below)), lo),
                    select(positive, min(hi, below), hi)};
  }
  default:
    return std::nullopt;
  }
}

} // namespace tritium::ir
