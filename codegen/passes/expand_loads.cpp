// expand_loads: a 1-D load in a pipelined loop that the body only widens into a 2-D tile
// (expand_dims, after elementwise ops such as a cast) on its way to a dot operand becomes a load
// of the 2-D tile itself: the expand_dims moves onto its pointers (and mask and other), the ops
// between are redone in 2-D. The pipeliner then copies it into a ring like any other tile an
// operand is computed from. The case: a quantized GEMM's per-column scales and zero points
// (w4a16: `scale = tl.load(scale_ptr + g * N + offs_n)`, then `scale[None, :]`). Left as 1-D
// loads they were prefetched an iteration ahead in registers, and those global loads stalled
// every iteration: on an H200, w4a16 M16 spent 0.48 cycles a warp instruction on long
// scoreboards against Triton's 0.04 (ncu, 2026-11-30), whose pipeliner puts them in its
// cp.async rings. Only on targets with asynchronous copies: without them a ring slot is filled
// from registers anyway (pipeline.cpp), and the registers' prefetch is what they have.
#include "passes/passes.hpp"
#include "passes/pipeline_analysis.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <vector>

namespace tritium::gpu {
namespace {

using ir::OpKind;

// The ops from a 1-D load to the expand_dims that widens it: the load, elementwise ops of one
// operand each used once, then the expand_dims; empty when the load is not read that way.
std::vector<ir::Op*> widening_chain(ir::Op& load, const ir::Block& scope) {
  std::vector<ir::Op*> chain{&load};
  for (ir::Op* at = &load; at;) {
    ir::Op* u = only_user(at->result(), scope);
    if (!u || u->parent != load.parent || u->results.size() != 1)
      return {};
    chain.push_back(u);
    if (u->kind == OpKind::ExpandDims)
      return chain;
    if (!ir::is_elementwise(u->kind) || u->operands.size() != 1)
      return {};
    at = u;
  }
  return {};
}

// The 2-D type of `v` as the expand_dims `e` widens it.
ir::Type widened(const ir::Value* v, const ir::Op& e) {
  ir::Type t = e.result()->type;
  t.elem = v->type.elem;
  return t;
}

void expand(ir::Function& f, ir::Block& body, const std::vector<ir::Op*>& chain) {
  ir::Op& load = *chain.front();
  ir::Op& e = *chain.back();
  size_t at = index_in_block(load);
  std::vector<ir::Value*> operands;
  for (ir::Value* x : load.operands)
    operands.push_back(
        insert_op(f, body, at++, OpKind::ExpandDims, {x}, {widened(x, e)}, e.loc).result());
  for (ir::Value* x : operands)
    x->def->attrs = e.attrs;
  ir::Op& wide =
      insert_op(f, body, at++, OpKind::Load, operands, {widened(load.result(), e)}, load.loc);
  wide.attrs = load.attrs;
  ir::Value* v = wide.result();
  for (size_t k = 1; k + 1 < chain.size(); ++k) {
    ir::Op& op = *chain[k];
    ir::Op& w =
        insert_op(f, body, index_in_block(op), op.kind, {v}, {widened(op.result(), e)}, op.loc);
    w.attrs = op.attrs;
    v = w.result();
  }
  f.replace_all_uses(e.result(), v);
}

void expand_in(ir::Function& f, ir::Block& b, const GpuFeatures& t) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      expand_in(f, *r->block, t);
    if (op.kind != OpKind::For || op.int_attr(attr::num_stages, t.num_stages) < 2)
      continue;
    ir::Block& body = op.body();
    // The pipeliner fills a loop's ring by TMA only when every load in it is a tensor
    // descriptor's; a widened pointer load would join the ring and take TMA from the
    // descriptors' tiles. Attention backward's dK/dV loop (Q and dO through descriptors, the row
    // statistics M and Delta through pointers) ran 1-5 % slower with them widened (H200,
    // 2026-11-30): there the row statistics stay 1-D, prefetched into registers.
    const bool tma_ring =
        t.tma && std::any_of(body.ops.begin(), body.ops.end(), [](const auto& inner) {
          return inner->kind == OpKind::Load && inner->int_attr(attr::desc, -1) >= 0;
        });
    std::vector<ir::Op*> loads;
    for (auto& inner : body.ops)
      if (!tma_ring && inner->kind == OpKind::Load && inner->result()->type.rank() == 1 &&
          !inner->int_attr(attr::volatile_, 0))
        loads.push_back(inner.get());
    for (ir::Op* l : loads) {
      std::vector<ir::Op*> chain = widening_chain(*l, f.entry());
      // Worth it only where the widened tile feeds a dot operand (through broadcasts).
      if (!chain.empty() && operand_conversion(*chain.back(), f.entry(), true))
        expand(f, body, chain);
    }
  }
}

} // namespace

void expand_loads(ir::Function& f, const GpuFeatures& t) {
  if (!t.async_copy)
    return;
  expand_in(f, f.entry(), t);
  erase_dead_ops(f);
}

} // namespace tritium::gpu
