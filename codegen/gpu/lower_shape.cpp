// Shape ops and layout conversions: free where the registers already line up, else through
// shared memory.
#include "gpu/lowering.hpp"

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

// Broadcast within one layout: the size-1 dimensions of x have no register bits and zero lane
// and warp bits, so each result register reads the x register at its offset with those
// dimensions dropped.
void Lowering::broadcast(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  const ir::Value* r = op.result();
  if (x->type.is_scalar())
    return set(r, Regs(nregs(r), get(x)[0]));
  if (!same_layout(x->type.layout, r->type.layout))
    fail(op, "broadcast between different layouts (internal: layout assignment)");
  LinearLayout dx = dist(x), dr = dist(r);
  const Regs& xr = get(x);
  Regs out;
  for (int i = 0; i < dr.num_regs(); ++i) {
    auto off = dr.reg_offset(i);
    for (int k = 0; k < dr.rank(); ++k)
      if (x->type.shape[k] == 1)
        off[k] = 0;
    int j = dx.reg_index(off);
    if (j < 0)
      fail(op, "broadcast: registers do not line up (internal: layout assignment)");
    out.push_back(xr[j]);
  }
  set(r, std::move(out));
}

// expand_dims is free when inserting a size-1 dimension into x's resolved layout gives the
// result's (a slice expanded back into its parent, for one).
void Lowering::expand_dims(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  const ir::Value* r = op.result();
  if (x->type.is_scalar())
    return set(r, Regs(nregs(r), get(x)[0]));
  LinearLayout dx = dist(x);
  const auto axis = static_cast<size_t>(op.int_attr("axis"));
  for (auto* bases : {&dx.reg, &dx.lane, &dx.warp})
    for (auto& c : *bases)
      c.insert(c.begin() + static_cast<std::ptrdiff_t>(axis), 0);
  dx.shape = r->type.shape;
  if (dx == dist(r))
    return set(r, get(x)); // same registers in the same order
  through_smem(op);
}

void Lowering::convert_layout(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  if (dynamic_cast<const SharedLayout*>(op.result()->type.layout.get()))
    return store_to_shared(op);
  if (x->type.is_scalar())
    return set(op.result(), get(x));
  LinearLayout dx = dist(x), dr = dist(op.result());
  if (dx == dr)
    return set(op.result(), get(x));
  // The same elements in every thread, in another register order (a wgmma accumulator as the
  // next wgmma's a operand in registers): a permutation of the registers.
  if (dx.lane == dr.lane && dx.warp == dr.warp && dx.num_regs() == dr.num_regs()) {
    const Regs& xr = get(x);
    Regs out;
    for (int i = 0; i < dr.num_regs(); ++i) {
      const int j = dx.reg_index(dr.reg_offset(i));
      if (j < 0)
        break;
      out.push_back(xr[j]);
    }
    if (static_cast<int>(out.size()) == dr.num_regs())
      return set(op.result(), std::move(out));
  }
  through_smem(op);
}

// Shape ops and conversions: operands to shared memory in row-major order, barrier, each
// result register read from the source element its coordinate maps to.
void Lowering::through_smem(const ir::Op& op) {
  ti_.barrier(b_); // earlier readers of shared memory are done
  // A 2-D conversion pads its rows (conversion_row_pad).
  const int64_t pad =
      op.kind == OpKind::ConvertLayout ? conversion_row_pad(op.operand(0)->type) : 0;
  int64_t off = 0;
  std::vector<int64_t> offsets;
  for (const ir::Value* v : op.operands) {
    offsets.push_back(off);
    off += to_smem(v, get(v), off, pad);
  }
  need_shared(off);
  ti_.barrier(b_);
  const ir::Value* src = op.operand(0);
  const auto& ss = src->type.shape;
  for (size_t ri = 0; ri < op.results.size(); ++ri) {
    const ir::Value* res = op.results[ri];
    LinearLayout d = dist(res);
    const auto& rs = res->type.shape;
    Regs out;
    for (int i = 0; i < d.num_regs(); ++i) {
      Regs c = coords(d, i);
      LV* idx = nullptr;
      int64_t base = 0;
      switch (op.kind) {
      case OpKind::Trans: {
        const auto& order = op.ints_attr("order");
        Regs sc(ss.size());
        for (size_t k = 0; k < order.size(); ++k)
          sc[order[k]] = c[k];
        idx = linear(sc, ss);
        break;
      }
      case OpKind::Join: {
        Regs head(c.begin(), c.end() - 1);
        idx = linear(head, ss);
        // c.back() picks the operand: a at offsets[0], b at offsets[1].
        LV* pa = smem_ptr(idx, offsets[0], mem_bytes(src->type.elem));
        LV* pb = smem_ptr(idx, offsets[1], mem_bytes(src->type.elem));
        LV* p = b_.CreateSelect(b_.CreateICmpEQ(c.back(), b_.getInt32(0)), pa, pb);
        out.push_back(from_mem(b_.CreateLoad(mem_type(src->type.elem), p), src->type.elem));
        continue;
      }
      case OpKind::Split:
        idx = b_.CreateAdd(b_.CreateMul(linear(c, rs), b_.getInt32(2)),
                           b_.getInt32(static_cast<uint32_t>(ri)));
        break;
      case OpKind::Cat: {
        // Row-major concatenation along dim 0 is appending: b follows a in the index space.
        idx = linear(c, rs);
        int64_t na = src->type.numel();
        LV* in_b = b_.CreateICmpUGE(idx, b_.getInt32(static_cast<uint32_t>(na)));
        LV* pa = smem_ptr(idx, offsets[0], mem_bytes(src->type.elem));
        LV* pb = smem_ptr(b_.CreateSub(idx, b_.getInt32(static_cast<uint32_t>(na))), offsets[1],
                          mem_bytes(src->type.elem));
        out.push_back(
            from_mem(b_.CreateLoad(mem_type(src->type.elem), b_.CreateSelect(in_b, pb, pa)),
                     src->type.elem));
        continue;
      }
      default: // reshape, expand_dims, convert_layout: the same row-major index
        idx = padded_index(c, rs, pad);
        break;
      }
      out.push_back(from_smem(src->type.elem, idx, offsets[0] + base));
    }
    set(res, std::move(out));
  }
}

} // namespace tritium::gpu
