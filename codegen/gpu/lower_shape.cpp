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
void ShapeLowering::broadcast(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  const ir::Value* r = op.result();
  if (x->type.is_scalar())
    return set(r, Regs(nregs(r), get(x)[0]));
  if (!same_layout(x->type.layout, r->type.layout))
    fail(op, "broadcast between different layouts (internal: layout assignment)");
  LinearLayout dx = dist(x), dr = dist(r);
  const Regs& xr = get(x);
  Regs out;
  std::vector<int> from; // the register of x each of r's copies
  for (int i = 0; i < dr.num_regs(); ++i) {
    auto off = dr.reg_offset(i);
    for (int k = 0; k < dr.rank(); ++k)
      if (x->type.shape[k] == 1)
        off[k] = 0;
    int j = dx.reg_index(off);
    if (j < 0)
      fail(op, "broadcast: registers do not line up (internal: layout assignment)");
    out.push_back(xr[j]);
    from.push_back(j);
  }
  // Pointers kept as a base and offsets (buffer accesses) stay so.
  if (auto split = s_.split.find(x); split != s_.split.end()) {
    BaseOffset s = split->second;
    s.offsets.clear();
    for (int j : from)
      s.offsets.push_back(split->second.offsets[j]);
    s_.split[r] = std::move(s);
  }
  set(r, std::move(out));
}

void ShapeLowering::convert_layout(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  if (dynamic_cast<const SharedLayout*>(op.result()->type.layout.get()))
    return s_.shared->store_to_shared(op);
  if (x->type.is_scalar())
    return set(op.result(), get(x));
  set(op.result(), convert_regs(get(x), dist(x), dist(op.result()), x->type.elem));
}

void ShapeLowering::shape_op(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  const ir::DType e = x->type.elem;
  if (x->type.is_scalar() && op.kind == OpKind::Join) {
    // Two scalars: element i of the pair is a or b, wherever the result's layout puts it.
    const LinearLayout d = dist(op.result());
    LV* a = get(x)[0];
    LV* b = get(op.operand(1))[0];
    Regs out;
    for (int r = 0; r < d.num_regs(); ++r)
      out.push_back(b_.CreateSelect(b_.CreateICmpEQ(coords(d, r)[0], b_.getInt32(0)), a, b));
    return set(op.result(), std::move(out));
  }
  if (x->type.is_scalar())
    return set(op.result(), Regs(nregs(op.result()), get(x)[0]));
  LinearLayout src = dist(x);
  Regs regs = get(x);
  LinearLayout made;
  switch (op.kind) {
  case OpKind::Trans:
    made = trans_layout(src, op.ints_attr(attr::order));
    break;
  case OpKind::Reshape:
    made = reshape_layout(src, op.result()->type.shape);
    break;
  case OpKind::ExpandDims:
    made = expand_dims_layout(src, static_cast<int>(op.int_attr(attr::axis)));
    break;
  case OpKind::Join: {
    // b in a's layout, then a thread holds a[i], b[i] side by side.
    const ir::Value* y = op.operand(1);
    Regs rb = convert_regs(get(y), dist(y), src, e);
    Regs both;
    for (size_t i = 0; i < regs.size(); ++i) {
      both.push_back(regs[i]);
      both.push_back(rb[i]);
    }
    regs = std::move(both);
    made = join_layout(src);
    break;
  }
  case OpKind::Split: {
    // The halves must sit in registers; then each result takes its registers.
    LinearLayout ready = split_ready(src);
    regs = convert_regs(regs, src, ready, e);
    const int bit = split_reg_bit(ready);
    made = split_layout(ready);
    for (size_t k = 0; k < 2; ++k) {
      Regs half;
      for (size_t r = 0; r < regs.size(); ++r)
        if ((r >> bit & 1) == k)
          half.push_back(regs[r]);
      set(op.results[k], convert_regs(half, made, dist(op.results[k]), e));
    }
    return;
  }
  default:
    fail(op, "not a shape op (internal)");
  }
  set(op.result(), convert_regs(regs, made, dist(op.result()), e));
}

// Concatenation along dim 0 of row-major tiles is appending: both operands to shared memory,
// each result register read from a or b.
void ShapeLowering::cat(const ir::Op& op) {
  ti_.barrier(b_); // earlier readers of shared memory are done
  const ir::Value* a = op.operand(0);
  const int64_t eb = mem_bytes(a->type.elem);
  const int64_t off_b = to_smem(a, get(a), 0);
  need_shared(off_b + to_smem(op.operand(1), get(op.operand(1)), off_b));
  ti_.barrier(b_);
  const ir::Value* res = op.result();
  LinearLayout d = dist(res);
  const int64_t na = a->type.numel();
  Regs out;
  for (int i = 0; i < d.num_regs(); ++i) {
    LV* idx = linear(coords(d, i), res->type.shape);
    LV* in_b = b_.CreateICmpUGE(idx, b_.getInt32(static_cast<uint32_t>(na)));
    LV* pa = smem_ptr(idx, 0, eb);
    LV* pb = smem_ptr(b_.CreateSub(idx, b_.getInt32(static_cast<uint32_t>(na))), off_b, eb);
    out.push_back(from_mem(b_.CreateLoad(mem_type(a->type.elem), b_.CreateSelect(in_b, pb, pa)),
                           a->type.elem));
  }
  set(res, std::move(out));
}

} // namespace tritium::gpu
