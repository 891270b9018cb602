#include "passes/iteration_ahead.hpp"

#include "passes/rewrite.hpp"

namespace tritium::gpu {

using ir::OpKind;

bool defined_in(const ir::Value* v, const ir::Block& body) {
  const ir::Block* b = v->def ? v->def->parent : v->block;
  while (b) {
    if (b == &body)
      return true;
    const ir::Op* owner = b->parent ? b->parent->parent : nullptr;
    b = owner ? owner->parent : nullptr;
  }
  return false;
}

bool invariant_in(const ir::Value* v, const ir::Block& scope, int depth) {
  if (!defined_in(v, scope))
    return true;
  const ir::Op* d = v->def;
  if (!d || depth > 32 || !d->regions.empty() || !is_pure(*d) || d->kind == OpKind::Load)
    return false;
  for (const ir::Value* o : d->operands)
    if (!invariant_in(o, scope, depth + 1))
      return false;
  return true;
}

void copy_op(ir::Function& f, ir::Block& b, size_t& at, const ir::Op& def,
             const std::vector<ir::Value*>& operands, ValueMap& memo) {
  std::vector<ir::Type> types;
  for (ir::Value* r : def.results)
    types.push_back(r->type);
  ir::Op& c = insert_op(f, b, at++, def.kind, operands, types, def.loc);
  c.attrs = def.attrs;
  for (size_t i = 0; i < def.results.size(); ++i)
    memo[def.results[i]] = c.results[i];
}

ir::Value* constant_of(ir::Function& f, ir::Block& b, size_t& at, const ir::Type& t, int64_t v,
                       const ir::SourceLoc& loc) {
  ir::Op& c = insert_op(f, b, at++, OpKind::Constant, {}, {t.scalar()}, loc);
  c.attrs[attr::value] = v;
  return c.result();
}

IterationAhead::IterationAhead(ir::Function& f, ir::Op& loop, bool index_loads)
    : f_(f), loop_(loop), index_loads_(index_loads) {
  ir::Block& body = loop_.body();
  ir::walk(body, [&](ir::Op& op) { writes_ |= ir::has_trait(op.kind, ir::OpTrait::WritesMemory); });
  const ir::Op& y = *body.terminator();
  for (size_t k = 1; k < body.args.size(); ++k) {
    ir::Value* next = y.operands[k - 1];
    ir::Op* d = next->def;
    if (!d || (d->kind != OpKind::AddPtr && d->kind != OpKind::Add) || !invariant(d->operands[1]))
      continue;
    // arg + inc, or hint(arg) + inc: a hint on the carried pointer (grouped GEMM's
    // tl::multiple_of(a_ptrs, 16)) does not change its value.
    const ir::Value* base = d->operands[0];
    while (base->def && base->def->kind == OpKind::Hint)
      base = base->def->operands[0];
    if (base != body.args[k])
      continue;
    steps_[body.args[k]] = d;
  }
}

// Triton's pipeliner reaches such addresses the same way (an indirection level: the index load
// issued ahead of the copies it addresses); the vector is small, so the repeated load costs an
// L1 hit where the tile copies it unlocks would otherwise wait in registers (paged decode).
// Only where copies are asynchronous: without them the ring is filled from registers, and on
// gfx942/gfx1100 paged decode's ring then took 2 KiB of LDS and 9 VGPRs over Triton's (amd_zoo).
bool IterationAhead::index_load(const ir::Op& load) const {
  constexpr int64_t kMaxIndices = 1024;
  const ir::Type& t = load.result()->type;
  return index_loads_ && !writes_ && !load.int_attr(attr::volatile_, 0) && t.rank() <= 1 &&
         t.numel() <= kMaxIndices && t.elem.is_int() && t.elem.kind != ir::ScalarKind::I1;
}

bool IterationAhead::predictable(const ir::Value* v, int depth) const {
  if (!defined_in(v, loop_.body()))
    return true;
  if (v == loop_.body().args[0] || steps_.count(v))
    return true;
  const ir::Op* d = v->def;
  if (!d || depth > 32 || !d->regions.empty() || d->parent != &loop_.body())
    return false;
  if (d->kind == OpKind::Load ? !index_load(*d) : !is_pure(*d))
    return false;
  for (const ir::Value* o : d->operands)
    if (!predictable(o, depth + 1))
      return false;
  return true;
}

ir::Value* IterationAhead::distance(ir::Block& b, size_t& at, const ir::Type& t, int d) {
  ir::Value* dv = constant_of(f_, b, at, t, d, loop_.loc);
  if (!exists_)
    return dv;
  ir::Value* zero = constant_of(f_, b, at, t, 0, loop_.loc);
  return insert_op(f_, b, at++, OpKind::Select, {exists_, dv, zero}, {t.scalar()}, loop_.loc)
      .result();
}

ir::Value* IterationAhead::value(ir::Block& b, size_t& at, ir::Value* v, const Bindings& bind,
                                 int d, ValueMap& memo) {
  if (!defined_in(v, loop_.body()))
    return v;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  ir::Value* out = nullptr;
  const ir::SourceLoc& loc = loop_.loc;
  if (v == loop_.body().args[0]) {
    // iv + d * step
    ir::Value* dv = distance(b, at, v->type, d);
    ir::Value* delta =
        insert_op(f_, b, at++, OpKind::Mul, {dv, loop_.operands[2]}, {v->type}, loc).result();
    out = insert_op(f_, b, at++, OpKind::Add, {bind.iv, delta}, {v->type}, loc).result();
  } else if (auto it = steps_.find(v); it != steps_.end()) {
    // arg + d * inc (the increment itself recomputed here)
    ir::Value* base = bind.args.at(v);
    ir::Value* inc = value(b, at, it->second->operands[1], bind, d, memo);
    if (d != 1 || exists_) {
      ir::Value* dv = distance(b, at, inc->type.scalar(), d);
      if (!inc->type.is_scalar()) {
        ir::Type t = inc->type;
        dv = insert_op(f_, b, at++, OpKind::Splat, {dv}, {t}, loc).result();
      }
      inc = insert_op(f_, b, at++, OpKind::Mul, {inc, dv}, {inc->type}, loc).result();
    }
    out = d == 0 ? base
                 : insert_op(f_, b, at++, it->second->kind, {base, inc}, {v->type}, loc).result();
  } else {
    std::vector<ir::Value*> ops;
    for (ir::Value* o : v->def->operands)
      ops.push_back(value(b, at, o, bind, d, memo));
    if (v->def->kind == OpKind::Load && !exists_)
      guard_load(b, at, ops, bind, d, memo);
    copy_op(f_, b, at, *v->def, ops, memo);
    out = memo.at(v);
  }
  memo[v] = out;
  return out;
}

// An index load for an iteration that may not exist reads nothing there: its mask (pointers,
// mask, other) gains that iteration's existence. Where `reuse` is under way the addresses are
// an existing iteration's already.
void IterationAhead::guard_load(ir::Block& b, size_t& at, std::vector<ir::Value*>& ops,
                                const Bindings& bind, int d, ValueMap& memo) {
  const ir::SourceLoc& loc = loop_.loc;
  ir::Value* there = exists(b, at, bind, d, memo);
  ir::Type mt(ir::ScalarKind::I1, ops[0]->type.shape);
  mt.layout = ops[0]->type.layout;
  if (!ops[0]->type.is_scalar())
    there = insert_op(f_, b, at++, OpKind::Splat, {there}, {mt}, loc).result();
  if (ops.size() == 1)
    ops.push_back(there);
  else
    ops[1] = insert_op(f_, b, at++, OpKind::And, {ops[1], there}, {mt}, loc).result();
}

ir::Value* IterationAhead::exists(ir::Block& b, size_t& at, const Bindings& bind, int d,
                                  ValueMap& memo) {
  const ir::SourceLoc& loc = loop_.loc;
  ir::Value* iv = value(b, at, loop_.body().args[0], bind, d, memo);
  ir::Type i1(ir::ScalarKind::I1);
  auto cmp = [&](ir::Value* x, ir::Value* y, ir::CmpPred pred) {
    ir::Op& c = insert_op(f_, b, at++, OpKind::Cmp, {x, y}, {i1}, loc);
    c.attrs[attr::pred] = pred;
    return c.result();
  };
  ir::Value* zero = constant_of(f_, b, at, loop_.operands[2]->type, 0, loc);
  ir::Value* up = cmp(loop_.operands[2], zero, ir::CmpPred::Gt);
  ir::Value* lt = cmp(iv, loop_.operands[1], ir::CmpPred::Lt);
  ir::Value* gt = cmp(iv, loop_.operands[1], ir::CmpPred::Gt);
  return insert_op(f_, b, at++, OpKind::Select, {up, lt, gt}, {i1}, loc).result();
}

std::pair<ir::Value*, ir::Value*> IterationAhead::address(ir::Block& b, size_t& at,
                                                          const ir::Op& load, const Bindings& bind,
                                                          int d, bool reuse, ValueMap* shared) {
  ValueMap local;
  ValueMap& memo = shared && !reuse ? *shared : local;
  const ir::SourceLoc& loc = load.loc;
  ir::Value* there = exists(b, at, bind, d, memo);
  if (reuse) {
    exists_ = there;
    memo.clear();
  }
  ir::Value* ptrs = value(b, at, load.operands[0], bind, d, memo);
  ir::Value* m = load.operands.size() > 1 ? value(b, at, load.operands[1], bind, d, memo) : nullptr;
  exists_ = nullptr;
  if (reuse)
    return {ptrs, m};
  ir::Type mt(ir::ScalarKind::I1, ptrs->type.shape);
  mt.layout = ptrs->type.layout;
  ir::Value* mask = insert_op(f_, b, at++, OpKind::Splat, {there}, {mt}, loc).result();
  if (m)
    mask = insert_op(f_, b, at++, OpKind::And, {m, mask}, {mt}, loc).result();
  return {ptrs, mask};
}

} // namespace tritium::gpu
