// canonicalize_pointers: a loop that carries a tensor of pointers into a buffer of less than
// 2 GiB, p = base + o advanced by p += inc, carries the 32-bit offsets o instead and rebuilds
// p = base + o where the body starts (and after the loop). A load or copy from base + o is then
// one AMD buffer instruction, masked by an out-of-range offset, where the pointers themselves
// would be 64-bit addresses advanced each iteration and masked by branches; the loop also
// carries half the registers. Triton's AMD backend does the same (canonicalize-pointers).
//
// Only where the target has buffer instructions: elsewhere 64-bit pointers cost no more than
// rebuilding them. Only from a base the specialization knows to lie in a buffer under 2 GiB
// (range32), so that the offsets of in-bounds accesses fit 32 bits however many steps add up.
#include "passes/iteration_ahead.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

namespace tritium::gpu {

using ir::OpKind;

bool in_range32_buffer(const ir::Function& f, const ir::Value* p) {
  while (p->def && p->def->kind == OpKind::AddPtr && p->def->operand(1)->type.is_scalar())
    p = p->def->operand(0);
  return !p->def && p->block == &f.entry() && f.arg_info.at(p->index).range32;
}

bool buffer_addressable(const ir::Function& f, const ir::Value* ptrs) {
  while (ptrs->def &&
         (ptrs->def->kind == OpKind::AddPtr || ptrs->def->kind == OpKind::Hint ||
          ptrs->def->kind == OpKind::Broadcast || ptrs->def->kind == OpKind::ConvertLayout))
    ptrs = ptrs->def->operand(0);
  return ptrs->def && ptrs->def->kind == OpKind::Splat &&
         in_range32_buffer(f, ptrs->def->operand(0));
}

namespace {

bool i32_tensor(const ir::Value* v, const ir::Type& like) {
  return v->type.elem.kind == ir::ScalarKind::I32 && v->type.shape == like.shape;
}

// The scalar base of pointers `v` made from splat(base) by adding i32 offsets (addptr, also
// chained: x + rows + cols) and broadcasts, or null.
const ir::Value* base_of(const ir::Function& f, const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d)
    return nullptr;
  if (d->kind == OpKind::Splat)
    return in_range32_buffer(f, d->operand(0)) ? d->operand(0) : nullptr;
  if (d->kind == OpKind::Broadcast)
    return base_of(f, d->operand(0));
  if (d->kind == OpKind::AddPtr && i32_tensor(d->operand(1), v->type))
    return base_of(f, d->operand(0));
  return nullptr;
}

// The offsets of `v` from its base_of, made at `at` (null: none, the splat itself).
ir::Value* offsets_of(ir::Function& f, ir::Block& block, size_t& at, ir::Value* v,
                      const ir::SourceLoc& loc) {
  const ir::Op* d = v->def;
  if (d->kind == OpKind::Splat)
    return nullptr;
  ir::Value* inner = offsets_of(f, block, at, d->operand(0), loc);
  if (d->kind == OpKind::Broadcast) {
    if (!inner)
      return nullptr;
    ir::Type t = inner->type;
    t.shape = v->type.shape;
    return insert_op(f, block, at++, OpKind::Broadcast, {inner}, {t}, loc).result();
  }
  ir::Value* o = d->operand(1);
  return inner ? insert_op(f, block, at++, OpKind::Add, {inner, o}, {o->type}, loc).result() : o;
}

// base + offsets inserted at `at` of `block`, of the pointers' type `t`.
ir::Value* rebuild(ir::Function& f, ir::Block& block, size_t at, ir::Value* base,
                   ir::Value* offsets, const ir::Type& t, const ir::SourceLoc& loc) {
  ir::Value* splat = insert_op(f, block, at, OpKind::Splat, {base}, {t}, loc).result();
  return insert_op(f, block, at + 1, OpKind::AddPtr, {splat, offsets}, {t}, loc).result();
}

bool canonicalize_loop(ir::Function& f, ir::Op& loop) {
  ir::Block& body = loop.body();
  ir::Op& yield = *body.terminator();
  bool changed = false;
  for (size_t k = 0; k < loop.results.size(); ++k) {
    ir::Value* arg = body.args[k + 1];
    if (!arg->type.elem.is_ptr() || arg->type.is_scalar())
      continue;
    ir::Value* init = loop.operands[3 + k];
    auto* base = const_cast<ir::Value*>(base_of(f, init));
    const ir::Op* step = yield.operands[k]->def;
    if (!base || !step || step->kind != OpKind::AddPtr || step->operand(0) != arg ||
        !i32_tensor(step->operand(1), arg->type))
      continue;
    size_t at = index_in_block(loop);
    ir::Value* offsets = offsets_of(f, *loop.parent, at, init, loop.loc);
    if (!offsets) { // the splat itself: offsets of zero
      ir::Type t(ir::ScalarKind::I32, init->type.shape);
      ir::Value* zero = constant_of(f, *loop.parent, at, t, 0, loop.loc);
      offsets = insert_op(f, *loop.parent, at, OpKind::Splat, {zero}, {t}, loop.loc).result();
    }
    ir::Value* inc = step->operand(1);
    const ir::Type ptr_t = arg->type;
    ir::Value* res = loop.results[k];
    loop.operands[3 + k] = offsets;
    arg->type = res->type = offsets->type;
    ir::Value* p = rebuild(f, body, 0, base, arg, ptr_t, loop.loc);
    f.replace_all_uses(arg, p);
    p->def->operands[1] = arg;
    // The old step (p + inc) stays for any other user in the body; erase_dead_ops drops it.
    yield.operands[k] =
        insert_op(f, body, body.ops.size() - 1, OpKind::Add, {arg, inc}, {offsets->type}, loop.loc)
            .result();
    ir::Value* out = rebuild(f, *loop.parent, index_in_block(loop) + 1, base, res, ptr_t, loop.loc);
    f.replace_all_uses(res, out);
    out->def->operands[1] = res;
    changed = true;
  }
  return changed;
}

} // namespace

void canonicalize_pointers(ir::Function& f, const GpuFeatures& target) {
  if (!target.buffer_ops)
    return;
  std::vector<ir::Op*> loops;
  ir::walk(f.entry(), [&](ir::Op& op) {
    if (op.kind == OpKind::For)
      loops.push_back(&op);
  });
  bool changed = false;
  for (ir::Op* loop : loops)
    changed |= canonicalize_loop(f, *loop);
  if (changed)
    erase_dead_ops(f);
}

} // namespace tritium::gpu
