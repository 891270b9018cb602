// carry_ahead: a loop that carries a pointer advanced by a loop-invariant step (`p += inc`, the
// GEMM idiom) and reads it only d iterations ahead (`p + d * inc`: the addresses the pipeliner
// copies from, d its distance) carries it d iterations ahead instead. Each iteration then
// advances one pointer and reads through it, where it advanced one and added the distance to
// another: on sm_90a LLVM's loop strength reduction turned bmm's 8 pointer tiles into a base and
// loop-invariant 64-bit offsets, 13 64-bit adds an iteration where 8 suffice.
#include "passes/iteration_ahead.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <optional>

namespace tritium::gpu {
namespace {

using ir::OpKind;

// Whether `a` and `b` compute the same value the same way: the same value, or the same pure op
// on such operands (the pipeliner recomputes a step where it uses it).
bool same(const ir::Value* a, const ir::Value* b, int depth = 0) {
  if (a == b)
    return true;
  const ir::Op *x = a->def, *y = b->def;
  if (!x || !y || depth > 16 || x->kind != y->kind || !(a->type == b->type) ||
      a->index != b->index || x->attrs != y->attrs || !x->regions.empty() || !is_pure(*x) ||
      x->kind == OpKind::Load || x->operands.size() != y->operands.size())
    return false;
  for (size_t i = 0; i < x->operands.size(); ++i)
    if (!same(x->operands[i], y->operands[i], depth + 1))
      return false;
  return true;
}

// The integer constant `v` holds, seen through a splat.
std::optional<int64_t> constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (d && d->kind == OpKind::Splat)
    d = d->operands[0]->def;
  if (!d || d->kind != OpKind::Constant)
    return std::nullopt;
  auto it = d->attrs.find(attr::value);
  const int64_t* i = it == d->attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  return i ? std::optional<int64_t>(*i) : std::nullopt;
}

// d where `x` is `inc` times d (inc itself: 1).
std::optional<int64_t> multiple(const ir::Value* x, const ir::Value* inc) {
  if (same(x, inc))
    return 1;
  const ir::Op* m = x->def;
  if (!m || m->kind != OpKind::Mul)
    return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (same(m->operands[i], inc))
      return constant(m->operands[1 - i]);
  return std::nullopt;
}

// `v` (loop-invariant) at position `at` of the block holding the loop whose body is `body`:
// itself where defined outside, else its pure ops copied there.
ir::Value* outside(ir::Function& f, ir::Block& b, size_t& at, ir::Value* v, const ir::Block& body,
                   ValueMap& memo) {
  if (!defined_in(v, body))
    return v;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  std::vector<ir::Value*> ops;
  for (ir::Value* o : v->def->operands)
    ops.push_back(outside(f, b, at, o, body, memo));
  copy_op(f, b, at, *v->def, ops, memo);
  return memo.at(v);
}

int uses_of(const ir::Block& b, const ir::Value* v) {
  int n = 0;
  ir::walk(const_cast<ir::Block&>(b), [&](ir::Op& op) {
    for (const ir::Value* o : op.operands)
      n += o == v;
  });
  return n;
}

void shift(ir::Function& f, ir::Op& loop) {
  ir::Block& body = loop.body();
  ir::Op& y = *body.terminator();
  for (size_t k = 1; k < body.args.size(); ++k) {
    ir::Value* arg = body.args[k];
    ir::Op* step = y.operands[k - 1]->def;
    if (!step || (step->kind != OpKind::AddPtr && step->kind != OpKind::Add) ||
        step->operands[0] != arg || step->parent != &body ||
        !invariant_in(step->operands[1], body) || uses_of(f.entry(), loop.results[k - 1]) > 0)
      continue;
    // Every other use reads the pointer the same d > 0 iterations ahead.
    std::vector<ir::Op*> ahead;
    std::optional<int64_t> d;
    bool ok = true;
    ir::walk(body, [&](ir::Op& op) {
      if (&op == step ||
          std::find(op.operands.begin(), op.operands.end(), arg) == op.operands.end())
        return;
      std::optional<int64_t> m;
      if (op.kind == step->kind && op.operands[0] == arg && op.operands[1] != arg)
        m = multiple(op.operands[1], step->operands[1]);
      ok &= m && *m > 0 && (!d || *d == *m);
      if (ok) {
        d = m;
        ahead.push_back(&op);
      }
    });
    if (!ok || ahead.empty())
      continue;
    // The initial value d iterations ahead, computed before the loop.
    ir::Block& outer = *loop.parent;
    size_t at = index_in_block(loop);
    ValueMap memo;
    ir::Value* inc = outside(f, outer, at, step->operands[1], body, memo);
    ir::Value* dv = constant_of(f, outer, at, inc->type, *d, loop.loc);
    if (!inc->type.is_scalar())
      dv = insert_op(f, outer, at++, OpKind::Splat, {dv}, {inc->type}, loop.loc).result();
    ir::Value* dist =
        insert_op(f, outer, at++, OpKind::Mul, {inc, dv}, {inc->type}, loop.loc).result();
    ir::Value*& init = loop.operands[3 + k - 1];
    init = insert_op(f, outer, at++, step->kind, {init, dist}, {init->type}, loop.loc).result();
    for (ir::Op* op : ahead)
      f.replace_all_uses(op->result(), arg);
  }
}

} // namespace

void carry_ahead(ir::Function& f) {
  std::vector<ir::Op*> loops;
  ir::walk(f.entry(), [&](ir::Op& op) {
    if (op.kind == OpKind::For)
      loops.push_back(&op);
  });
  for (ir::Op* loop : loops)
    shift(f, *loop);
  erase_dead_ops(f);
}

} // namespace tritium::gpu
