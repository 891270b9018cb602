// Algebraic combines (Triton's make_ttir "combine" patterns, and the like), so that the natural
// spelling of a kernel costs nothing:
//   x + dot(a, b)  (dot accumulating into zeros, used once)  ->  dot(a, b, x)
// `acc += tl::dot(a, b)` is how vLLM's MoE kernel and Inductor's templates write a K loop;
// without this the matrix unit accumulates into fresh zeros and every K step adds the
// accumulator again, element by element (32 extra add.f32 a thread per step on sm_90a).
//   widen(x) == splat(s)  ->  x == splat(narrow(s)) && widen(narrow(s)) == s   (and !=)
// A tile of 32-bit column indices compared with a 64-bit scalar (`cols == target`, PyTorch's
// labels are int64: cross entropy, NLL) would otherwise widen every element to a register pair
// and compare 64 bits; narrowed, the per-element compare is 32-bit and the check that the
// scalar fits is done once (cross entropy's backward on gfx1100: 64 sign extensions and 64-bit
// compares a thread an iteration).
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <unordered_map>

namespace tritium::gpu {
namespace {

using ir::OpKind;

bool is_zero_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d || d->kind != OpKind::Constant || !d->has_attr(attr::value))
    return false;
  return d->float_attr(attr::value) == 0.0;
}

// How many operands in the function read each value.
void count_uses(const ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  for (const auto& op : b.ops) {
    for (const ir::Value* v : op->operands)
      ++uses[v];
    for (const auto& r : op->regions)
      count_uses(*r->block, uses);
  }
}

// An integer tile widened by a cast (sign or zero extension, as its element type says).
ir::Value* widened_from(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d || d->kind != OpKind::Cast || v->type.is_scalar())
    return nullptr;
  const ir::DType from = d->operands[0]->type.elem, to = v->type.elem;
  const bool ints = from.is_int() && !from.is_bool() && to.is_int() && !to.is_bool();
  return ints && from.bits() < to.bits() ? d->operands[0] : nullptr;
}

// cmp(eq|ne, widen(x), splat(s)) at position i of b: compared in x's width.
void narrow_comparison(ir::Function& f, ir::Block& b, size_t& i) {
  ir::Op& op = *b.ops[i];
  const auto pred = op.enum_attr<ir::CmpPred>();
  if (pred != ir::CmpPred::Eq && pred != ir::CmpPred::Ne)
    return;
  for (size_t k = 0; k < 2; ++k) {
    ir::Value* x = widened_from(op.operands[k]);
    const ir::Op* other = op.operands[1 - k]->def;
    if (!x || !other || other->kind != OpKind::Splat)
      continue;
    ir::Value* s = other->operands[0];
    const ir::SourceLoc loc = op.loc;
    size_t at = i;
    auto make = [&](OpKind kind, std::vector<ir::Value*> operands, ir::Type t) {
      ir::Op& o = insert_op(f, b, at++, kind, std::move(operands), {std::move(t)}, loc);
      return &o;
    };
    ir::Type narrow(x->type.elem), wide(s->type.elem), flag(ir::ScalarKind::I1);
    ir::Value* t = make(OpKind::Cast, {s}, narrow)->result();
    ir::Value* back = make(OpKind::Cast, {t}, wide)->result();
    // Whether s is a value of x's type (for ne: whether it is not); else no element is equal
    // to it.
    ir::Op* fits = make(OpKind::Cmp, {back, s}, flag);
    fits->attrs[attr::pred] = pred;
    ir::Type splat_t = x->type;
    splat_t.elem = narrow.elem;
    ir::Value* ts = make(OpKind::Splat, {t}, splat_t)->result();
    ir::Type mask_t = op.result()->type;
    ir::Op* c = make(OpKind::Cmp, {x, ts}, mask_t);
    c->attrs[attr::pred] = pred;
    ir::Value* fs = make(OpKind::Splat, {fits->result()}, mask_t)->result();
    ir::Value* r =
        make(pred == ir::CmpPred::Eq ? OpKind::And : OpKind::Or, {c->result(), fs}, mask_t)
            ->result();
    i = at; // the original comparison, now dead
    f.replace_all_uses(b.ops[i]->result(), r);
    return;
  }
}

void combine_block(ir::Function& f, ir::Block& b,
                   const std::unordered_map<const ir::Value*, int>& uses) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      combine_block(f, *r->block, uses);
    if (op.kind == OpKind::Cmp && !op.result()->type.is_scalar()) {
      narrow_comparison(f, b, i);
      continue;
    }
    if (op.kind != OpKind::Add || op.results.size() != 1)
      continue;
    for (size_t k = 0; k < 2; ++k) {
      ir::Value* d = op.operands[k];
      ir::Value* x = op.operands[1 - k];
      ir::Op* dot = d->def;
      auto n = uses.find(d);
      if (!dot || dot->kind != OpKind::Dot || dot->parent != &b || n == uses.end() ||
          n->second != 1 || !is_zero_constant(dot->operands[2]) || !(x->type == d->type) ||
          !(op.result()->type == d->type))
        continue;
      // The dot moves down to the add (x may be computed between them) and accumulates into x.
      const size_t at = index_in_block(*dot);
      std::unique_ptr<ir::Op> moved = std::move(b.ops[at]);
      b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(at));
      --i; // the add moved up by one
      moved->operands[2] = x;
      b.ops.insert(b.ops.begin() + static_cast<std::ptrdiff_t>(i), std::move(moved));
      ++i;
      f.replace_all_uses(op.result(), d);
      break;
    }
  }
}

} // namespace

void combine(ir::Function& f) {
  std::unordered_map<const ir::Value*, int> uses;
  count_uses(f.entry(), uses);
  combine_block(f, f.entry(), uses);
  erase_dead_ops(f);
}

} // namespace tritium::gpu
