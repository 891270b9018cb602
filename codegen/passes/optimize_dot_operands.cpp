// After pipelining: matrix-unit operands computed in registers (weights dequantized on their
// way to a dot, a tile a trans made of a load) come from shared memory the way the rings'
// tiles do. On NVIDIA the conversions into dot operands are first pushed up once more: they
// now meet the rings' local_loads, which read shared memory in the operand's layout directly
// (int8 weights land in the fragment's registers and are converted there, as Triton's
// optimize-dot-operands does). What still needs a conversion (an int4 unpack, whose bytes hold
// two rows; K and V gathered from a paged cache) is stored into a swizzled tile in its own
// order, 16 bytes a thread at a time, and read back in the operand's layout: by ldmatrix on
// NVIDIA (the plain conversion's scratch has room for only one side's vectors, and the other
// side then moves 2-byte elements), and on AMD fragment by fragment as the dot's K steps need
// them (the conversion held the whole operand in registers at once: a prefill's gathered K^T
// and V, 2,076 bytes of scratch on gfx1100, 68 this way; w8a16's weights, 268 and 0).
#include "gpu_ir/layout.hpp"
#include "passes/iteration_ahead.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

namespace tritium::gpu {
namespace {

using ir::OpKind;

// The tile's dimensions from the one a thread's registers run along (its first register basis;
// else the lanes'), for a tile in registers written 16 bytes a thread at a time.
std::vector<int> register_order(const ir::Type& t) {
  const LinearLayout d = resolve(t.layout, t.shape);
  for (const auto* bases : {&d.reg, &d.lane})
    for (const LinearLayout::Coord& c : *bases)
      if (const int dim = LinearLayout::dim_of(c); dim >= 0)
        return {dim, 1 - dim};
  return {1, 0};
}

// A 16-bit tile in registers (a blocked load's, or a view a trans made of one), at least 8 x 8
// (ldmatrix's matrices), converted into a matrix-unit operand read from shared memory.
bool through_shared(const ir::Op& op) {
  if (op.kind != OpKind::ConvertLayout)
    return false;
  const ir::Type& to = op.result()->type;
  const ir::Type& from = op.operands[0]->type;
  auto* dot = dynamic_cast<const DotOperandLayout*>(to.layout.get());
  auto* mma = dot ? dynamic_cast<const MmaLayout*>(dot->parent.get()) : nullptr;
  const bool in_registers = dynamic_cast<const BlockedLayout*>(from.layout.get()) ||
                            dynamic_cast<const LinearLayoutAttr*>(from.layout.get());
  return mma && mma->unit != MatrixUnit::Wgmma && in_registers && to.rank() == 2 &&
         elem_bytes(to.elem) == 2 && to.shape[0] >= 8 && to.shape[1] >= 8;
}

// `budget`: the shared memory the rings leave; a tile larger than that stays a conversion,
// which moves it in rounds.
void collect(ir::Block& b, int64_t budget, std::vector<ir::Op*>& out) {
  for (auto& op : b.ops) {
    for (auto& r : op->regions)
      collect(*r->block, budget, out);
    if (through_shared(*op) && shared_tile_bytes(op->result()->type) <= budget)
      out.push_back(op.get());
  }
}

int64_t ring_bytes(const ir::Block& b) {
  int64_t bytes = 0;
  for (const auto& op : b.ops) {
    if (op->kind == OpKind::LocalAlloc)
      bytes += shared_tile_bytes(op->result()->type);
    for (const auto& r : op->regions)
      bytes += ring_bytes(*r->block);
  }
  return bytes;
}

} // namespace

void optimize_dot_operands(ir::Function& f, const GpuFeatures& target) {
  // Conversions moved up into the rings' reads: NVIDIA only. On AMD's matrix units the operand
  // fragments hold runs along K that LDS reads byte by byte in this layout (the zoo's int8-weight
  // GEMM: 153 VGPRs against 134 on gfx942, scratch on gfx1100), where the blocked read and the
  // conversion are cheaper.
  if (target.matrix == MatrixUnit::MmaSync || target.matrix == MatrixUnit::Wgmma)
    remove_layout_conversions(f, /*dot_operands_only=*/true);
  std::vector<ir::Op*> conversions;
  collect(f.entry(), target.max_shared_bytes - ring_bytes(f.entry()), conversions);
  for (ir::Op* c : conversions) {
    ir::Value* x = c->operands[0];
    const ir::Type& t = x->type;
    // NVIDIA's ldmatrix reads either order (transposing where asked): the tile takes the
    // registers' order, written 16 bytes a thread. AMD's matrix units read runs along K, which
    // a tile in the other order serves 2 bytes at a time (64 ds_read_u16 a thread an iteration
    // in the int8-weight GEMM's B): the tile is K-major, its writes narrower but once per
    // fragment rather than once per warp reading it (w8a16 4096^3 loop 257 -> 159 instructions
    // on gfx942, Triton 203; 650 -> 327 on gfx1100, Triton 588).
    std::vector<int> order = register_order(t);
    if (operands_k_major(target.matrix)) {
      const int k = dynamic_cast<const DotOperandLayout&>(*c->result()->type.layout).op_idx == 0;
      order = {k, 1 - k};
    }
    ir::Type bt(t.elem, {1, t.shape[0], t.shape[1]});
    bt.layout = shared_layout(t.shape[order[0]], static_cast<int>(elem_bytes(t.elem)), order);
    // Made beside the conversion, so that it lives from there to the dot (plan_buffers): two
    // such tiles of one loop share memory, as the conversions' scratch did.
    ir::Block& b = *c->parent;
    size_t c_at = index_in_block(*c);
    ir::Value* buf = insert_op(f, b, c_at++, OpKind::LocalAlloc, {}, {bt}, c->loc).result();
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
