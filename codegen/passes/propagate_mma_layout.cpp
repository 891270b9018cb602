// propagate_mma_layout: what is computed from a matrix instruction's accumulator stays in the
// accumulator's layout. Starting from the values accelerate_matmul put in an MmaLayout, each
// user reached through a conversion out of it is moved into it: elementwise ops, broadcasts,
// expand_dims of a slice, reductions (their results in the slice of the layout), and loop-carried
// values (the loop carries them in it). Other operands of a moved op are converted to the layout
// instead (remove_layout_conversions then recomputes the cheap ones in place).
//
// Why forward from the accumulator: remove_layout_conversions only moves an op when every
// operand agrees, so a chain that mixes accumulator values with loop-carried ones (attention's
// running max, sum and output) stayed in the blocked layout, and each iteration sent the
// accumulators through shared memory. Triton resolves the same by propagating the layouts of
// its anchor ops forward; here the anchors are the dots on matrix units.
#include "gpu_ir/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <unordered_map>
#include <unordered_set>

namespace tritium::gpu {
namespace {

using ir::OpKind;

// An accumulator layout, or a slice of one (a row statistic of an accumulator).
bool mma_derived(const ir::LayoutPtr& l) {
  if (auto* s = dynamic_cast<const SliceLayout*>(l.get()))
    return mma_derived(s->parent);
  return dynamic_cast<const MmaLayout*>(l.get()) != nullptr;
}

// x when v is a chain of conversions of x, x in an accumulator-derived layout; else null.
ir::Value* from_mma(ir::Value* v) {
  ir::Value* x = v;
  while (x->def && x->def->kind == OpKind::ConvertLayout)
    x = x->def->operands[0];
  return x != v && x->type.layout && mma_derived(x->type.layout) ? x : nullptr;
}

class Propagator {
public:
  explicit Propagator(ir::Function& f) : f_(f) {}

  void run() {
    // Each step moves one op (or loop argument) into an accumulator layout and none moves
    // back, so this ends; the bound only guards against a bug turning it into a hang.
    for (int round = 0; round < 256 && block(f_.entry()); ++round) {
    }
  }

private:
  // One sweep over `b` and the blocks inside it; returns whether anything moved.
  bool block(ir::Block& b) {
    bool any = false;
    for (size_t i = 0; i < b.ops.size(); ++i) {
      ir::Op* op = b.ops[i].get();
      for (auto& r : op->regions)
        any = block(*r->block) || any;
      i = index_in_block(*op); // a loop inside may have put conversions around itself
      if (op->kind == OpKind::Yield)
        any = yield(*op) || any;
      else
        any = move(b, i) || any;
    }
    return any;
  }

  // The layout of `op`'s results when its operands are in `l`; null where `op` cannot follow.
  static ir::LayoutPtr result_layout(const ir::Op& op, const ir::LayoutPtr& l) {
    switch (op.kind) {
    case OpKind::Broadcast:
      return l;
    case OpKind::ExpandDims: {
      auto* s = dynamic_cast<const SliceLayout*>(l.get());
      return s && s->dim == op.int_attr(attr::axis) ? s->parent : nullptr;
    }
    case OpKind::Reduce:
      return op.int_attr(attr::keep_dims, 0)
                 ? l
                 : slice_layout(static_cast<int>(op.int_attr(attr::axis)), l);
    default:
      return ir::is_elementwise(op.kind) && op.results.size() == 1 ? l : nullptr;
    }
  }

  // Moves b.ops[i] into the accumulator layout of its first operand converted out of one;
  // every other tensor operand is converted to that layout, every result converted back for
  // its users (later sweeps move those users in turn).
  bool move(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    if (op.results.empty() || op.result()->type.is_scalar() || !op.result()->type.layout ||
        mma_derived(op.result()->type.layout) || (!op.regions.empty() && op.kind != OpKind::Reduce))
      return false;
    if (op.kind == OpKind::Load || op.kind == OpKind::Store || op.kind == OpKind::ConvertLayout)
      return false;
    ir::LayoutPtr l;
    for (ir::Value* v : op.operands)
      if (ir::Value* x = from_mma(v)) {
        l = x->type.layout;
        break;
      }
    if (!l)
      return false;
    ir::LayoutPtr out = result_layout(op, l);
    if (!out)
      return false;
    if (op.kind == OpKind::Reduce)
      for (ir::Value* v : op.operands) // all operands of a multi-operand reduction in `l`
        if (ir::Value* x = from_mma(v); !x || !same_layout(x->type.layout, l))
          return false;
    for (auto& v : op.operands) {
      if (v->type.is_scalar())
        continue;
      ir::Value* x = from_mma(v);
      v = x && same_layout(x->type.layout, l) ? x : convert_to(f_, b, i, v, l, op.loc);
    }
    size_t after = i + 1;
    for (ir::Value* r : op.results) {
      ir::Type old = r->type;
      r->type.layout = out;
      ir::Op& back = insert_op(f_, b, after++, OpKind::ConvertLayout, {r}, {old}, op.loc);
      f_.replace_all_uses(r, back.result());
      back.operands[0] = r;
    }
    i = after - 1;
    return true;
  }

  // A loop yielding a conversion out of an accumulator layout carries the value in that layout.
  bool yield(ir::Op& y) {
    ir::Block& body = *y.parent;
    ir::Op* loop = body.parent ? body.parent->parent : nullptr;
    if (!loop || loop->kind != OpKind::For)
      return false;
    bool any = false;
    for (size_t k = 0; k < y.operands.size(); ++k) {
      ir::Value* x = from_mma(y.operands[k]);
      if (!x || same_layout(body.args[k + 1]->type.layout, x->type.layout))
        continue;
      carry_in_layout(f_, *loop, k, x->type.layout);
      any = true;
    }
    return any;
  }

  ir::Function& f_;
};

} // namespace

void propagate_mma_layout(ir::Function& f) {
  Propagator(f).run();
}

} // namespace tritium::gpu
