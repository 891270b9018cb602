// After pipelining: operands of mma.sync computed in registers (weights dequantized on their
// way to a dot) come from shared memory the way the rings' tiles do. First the conversions
// into dot operands are pushed up once more: they now meet the rings' local_loads, which read
// shared memory in the operand's layout directly (int8 weights land in the fragment's registers
// and are converted there, as Triton's optimize-dot-operands does). What still needs a
// conversion (an int4 unpack, whose bytes hold two rows) is stored into a swizzled tile in its
// own order, 16 bytes a thread at a time, and read back by ldmatrix (transposed where K is not
// the tile's contiguous dimension): the plain conversion's scratch has room for only one side's
// vectors, and the other side then moves 2-byte elements.
#include "gpu/layout.hpp"
#include "passes/iteration_ahead.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

namespace tritium::gpu {
namespace {

using ir::OpKind;

// A 16-bit tile in registers, at least 8 x 8 (ldmatrix's matrices), converted into an mma.sync
// operand.
bool through_ldmatrix(const ir::Op& op) {
  if (op.kind != OpKind::ConvertLayout)
    return false;
  const ir::Type& to = op.result()->type;
  const ir::Type& from = op.operands[0]->type;
  auto* dot = dynamic_cast<const DotOperandLayout*>(to.layout.get());
  auto* mma = dot ? dynamic_cast<const MmaLayout*>(dot->parent.get()) : nullptr;
  auto* blocked = dynamic_cast<const BlockedLayout*>(from.layout.get());
  return mma && mma->unit == MatrixUnit::MmaSync && blocked && to.rank() == 2 &&
         elem_bytes(to.elem) == 2 && to.shape[0] >= 8 && to.shape[1] >= 8;
}

// The top-level op of `f` that holds `op`.
ir::Op& top_level(ir::Function& f, ir::Op& op) {
  ir::Op* o = &op;
  while (o->parent != &f.entry())
    o = o->parent->parent->parent; // block, region, op
  return *o;
}

void collect(ir::Block& b, std::vector<ir::Op*>& out) {
  for (auto& op : b.ops) {
    for (auto& r : op->regions)
      collect(*r->block, out);
    if (through_ldmatrix(*op))
      out.push_back(op.get());
  }
}

} // namespace

void optimize_dot_operands(ir::Function& f, const GpuFeatures& target) {
  // NVIDIA only: on AMD's matrix units the operand fragments hold runs along K that LDS reads
  // byte by byte in this layout (the zoo's int8-weight GEMM: 153 VGPRs against 134 on gfx942,
  // scratch on gfx1100), where the blocked read and the conversion are cheaper.
  if (target.matrix != MatrixUnit::MmaSync && target.matrix != MatrixUnit::Wgmma)
    return;
  remove_layout_conversions(f, /*dot_operands_only=*/true);
  std::vector<ir::Op*> conversions;
  collect(f.entry(), conversions);
  for (ir::Op* c : conversions) {
    ir::Value* x = c->operands[0];
    const ir::Type& t = x->type;
    auto* blocked = static_cast<const BlockedLayout*>(t.layout.get());
    const std::vector<int> order{blocked->order[0], blocked->order[1]};
    ir::Type bt(t.elem, {1, t.shape[0], t.shape[1]});
    bt.layout = shared_layout(t.shape[order[0]], static_cast<int>(elem_bytes(t.elem)), order);
    size_t at = index_in_block(top_level(f, *c));
    ir::Value* buf = insert_op(f, f.entry(), at, OpKind::LocalAlloc, {}, {bt}, c->loc).result();
    ir::Block& b = *c->parent;
    size_t c_at = index_in_block(*c);
    ir::Value* zero = constant_of(f, b, c_at, ir::Type(ir::ScalarKind::I32), 0, c->loc);
    ir::Type tile = bt;
    tile.shape.erase(tile.shape.begin());
    ir::Value* slot =
        insert_op(f, b, c_at++, OpKind::MemdescIndex, {buf, zero}, {tile}, c->loc).result();
    insert_op(f, b, c_at++, OpKind::LocalStore, {slot, x}, {}, c->loc);
    c->kind = OpKind::LocalLoad;
    c->operands = {slot};
  }
}

} // namespace tritium::gpu
