// Loop-carried pointer tensors as their initial value plus one carried offset. Triton's tiled
// kernels walk their operands with pointer tensors that each trip advances (tutorial 03's
// matmul: `a_ptrs += BLOCK_SIZE_K` after every `dot`). Carried through a loop, such a tensor
// is a buffer of addresses: each trip rewrote every address, and each tile load read its
// element addresses back from that buffer, one scalar load at a time, where a tile computed
// from the kernel's arguments is a row of contiguous vector loads. In tutorial 03's fp32
// matmul at 1024^3 on a Zen 4 (64 x 64 x 32 tiles) that gather took most of the time:
// the same kernel written with `a_base + k * BK` inside the loop ran 2.4 times faster.
//
// So the argument becomes `off`, an i64 starting at 0; the body reads `init + off` (init is
// the loop's initial pointers, defined before it), yields `off + step`, and a use of the final
// pointers after the loop reads `init + off` too. Every address is the one the original
// computed (pointer plus element offsets, in 64 bits), so results are the same bit for bit.
// The lowering recomputes `init` where the loop reads it, but for its integer divisions
// (tutorial 03 wraps rows and columns with `% M`, `% N`), which it computes once, before the
// loop (lower_kernel.cpp, division_leaf).
#include "pointer_offsets.hpp"

#include <tritium/ir/builder.hpp>

#include <vector>

namespace tritium::cpu {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::ScalarKind;
using ir::Type;
using ir::Value;

namespace {

Op& insert_op(ir::Function& f, Block& block, size_t at, OpKind kind, std::vector<Value*> operands,
              const Type& result, const ir::SourceLoc& loc) {
  ir::Builder b(f, block);
  b.set_insert_point(block, at);
  b.set_loc(loc);
  return b.create(kind, std::move(operands), {result});
}

size_t index_of(const Op& op) {
  const auto& ops = op.parent->ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].get() == &op)
      return i;
  return ops.size();
}

// Whether `b` is `loop`'s body or nested in it.
bool inside(const Block* b, const Op* loop) {
  while (b && b->parent && b->parent->parent) {
    const Op* owner = b->parent->parent;
    if (owner == loop)
      return true;
    b = owner->parent;
  }
  return false;
}

// Whether scalar `v` has the same value on every trip of `loop`: defined outside it, or by
// constants and arithmetic on such values inside it.
bool invariant(const Value* v, const Op* loop, int depth = 0) {
  if (!v->type.is_scalar() || depth > 16)
    return false;
  if (!v->def)
    return !inside(v->block, loop);
  const Op& d = *v->def;
  if (!inside(d.parent, loop))
    return true;
  if (!d.regions.empty() || !ir::has_trait(d.kind, ir::OpTrait::Pure))
    return false;
  for (const Value* o : d.operands)
    if (!invariant(o, loop, depth + 1))
      return false;
  return true;
}

// The scalar amount, the same on every trip, that `offsets` (addptr's second operand) adds to
// every pointer: a splat of an invariant scalar, or a constant tensor (then a scalar constant
// is made before `at` in `body`); null for anything else.
Value* uniform_step(ir::Function& g, Value* offsets, const Op* loop, Block& body, size_t at) {
  const Op* d = offsets->def;
  if (!d)
    return nullptr;
  if (d->kind == OpKind::Splat && invariant(d->operand(0), loop))
    return d->operand(0);
  if (d->kind == OpKind::Constant && d->operands.empty() && !offsets->type.is_scalar()) {
    Op& c = insert_op(g, body, at, OpKind::Constant, {}, offsets->type.scalar(), d->loc);
    c.attrs[attr::value] = d->int_attr(attr::value);
    return c.result();
  }
  return nullptr;
}

bool used(ir::Function& g, const Value* v) {
  bool found = false;
  ir::walk(g.entry(), [&](const Op& op) {
    for (const Value* o : op.operands)
      found = found || o == v;
  });
  return found;
}

// `init + off` (off an i64 scalar) as a tensor of `ptrs`'s type, inserted at `at` in `block`;
// every use of `old` but this one's becomes a use of it.
void rebase(ir::Function& g, Block& block, size_t at, Value* init, Value* off, Value* old,
            const Type& ptrs, const ir::SourceLoc& loc) {
  Op& splat = insert_op(g, block, at, OpKind::Splat, {off}, Type(ScalarKind::I64, ptrs.shape), loc);
  Op& add = insert_op(g, block, at + 1, OpKind::AddPtr, {init, splat.result()}, ptrs, loc);
  g.replace_all_uses(old, add.result());
  splat.operands[0] = off; // (where old is off itself)
}

bool carry_offset(ir::Function& g, Op& loop, size_t i) {
  Block& body = loop.body();
  Op& yield = *body.terminator();
  Value* arg = body.args[1 + i];
  if (!arg->type.elem.is_ptr() || arg->type.is_scalar())
    return false;
  Op* step_op = yield.operands[i]->def;
  if (!step_op || step_op->kind != OpKind::AddPtr || step_op->parent != &body)
    return false;
  // The pointers advanced may be the argument through hints (tutorial 08's grouped GEMM
  // applies tl.multiple_of to them at the top of each trip).
  const Value* advanced = step_op->operand(0);
  while (advanced != arg && advanced->def && advanced->def->kind == OpKind::Hint)
    advanced = advanced->def->operand(0);
  if (advanced != arg)
    return false;
  size_t at_yield = body.ops.size() - 1;
  Value* step = uniform_step(g, step_op->operand(1), &loop, body, at_yield);
  if (!step)
    return false;
  at_yield = body.ops.size() - 1;
  const Type ptrs = arg->type;
  const Type i64(ScalarKind::I64);
  Value* init = loop.operands[3 + i];
  const ir::SourceLoc loc = step_op->loc; // a copy: step_op may be erased below

  // The offset starts at 0 and grows by the step, in 64 bits, before the yield.
  Op& zero = insert_op(g, *loop.parent, index_of(loop), OpKind::Constant, {}, i64, loc);
  zero.attrs[attr::value] = int64_t{0};
  loop.operands[3 + i] = zero.result();
  Value* step64 = step;
  if (step->type.elem.kind != ScalarKind::I64)
    step64 = insert_op(g, body, at_yield++, OpKind::Cast, {step}, i64, loc).result();
  Op& next = insert_op(g, body, at_yield, OpKind::Add, {arg, step64}, i64, loc);
  yield.operands[i] = next.result();

  // In the body, the pointers are init + off; the old step is dead unless something else
  // read it (it then reads init + off + step, as before).
  arg->type = i64;
  rebase(g, body, 0, init, arg, arg, ptrs, loc);
  next.operands[0] = arg;
  if (!used(g, step_op->result()))
    body.ops.erase(body.ops.begin() + static_cast<std::ptrdiff_t>(index_of(*step_op)));

  // After the loop, the final pointers likewise.
  Value* result = loop.results[i];
  result->type = i64;
  if (used(g, result))
    rebase(g, *loop.parent, index_of(loop) + 1, init, result, result, ptrs, loc);
  return true;
}

} // namespace

std::unique_ptr<ir::Function> carry_pointer_offsets(const ir::Function& f) {
  std::unique_ptr<ir::Function> g = ir::clone(f);
  std::vector<Op*> loops;
  ir::walk(g->entry(), [&](Op& op) {
    if (op.kind == OpKind::For)
      loops.push_back(&op);
  });
  bool changed = false;
  for (Op* loop : loops)
    for (size_t i = 0; i < loop->results.size(); ++i)
      changed |= carry_offset(*g, *loop, i);
  return changed ? std::move(g) : nullptr;
}

} // namespace tritium::cpu
