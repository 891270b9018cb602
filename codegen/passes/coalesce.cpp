// Coalescing: each global memory access gets a blocked layout in which a thread holds a run of
// contiguous elements along the pointer's most contiguous dimension (up to 128 bits, as far as
// contiguity and alignment allow) and consecutive threads hold consecutive runs. Conversions
// around the access keep the rest of the kernel as it was; remove_layout_conversions then
// usually makes them disappear.
#include "gpu/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <numeric>

namespace tritium::gpu {
using ir::OpKind;

ir::LayoutPtr coalesced_layout(const ir::Value* ptr, const AxisInfo& info, int num_warps,
                               int warp_size) {
  const auto& shape = ptr->type.shape;
  int rank = static_cast<int>(shape.size());
  std::vector<int> order;
  for (int d = rank - 1; d >= 0; --d)
    order.push_back(d);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return info.contiguity[a] > info.contiguity[b]; });
  int d0 = order[0];
  int64_t elem_bytes = std::max(1, ptr->type.elem.element_of_pointer().bits() / 8);
  int64_t align = std::max<int64_t>(1, info.divisibility[d0] / elem_bytes);
  int64_t vec = std::min<int64_t>({16 / elem_bytes, info.contiguity[d0], align});
  // Every thread should still get work: no more per thread than the tensor allows.
  int64_t threads = int64_t{num_warps} * warp_size;
  int64_t numel = ptr->type.numel();
  vec = std::max<int64_t>(1, std::min<int64_t>(vec, numel / threads));
  while (!is_pow2(vec))
    --vec;
  return blocked_layout(shape, order, static_cast<int>(vec), num_warps, warp_size);
}

namespace {

void visit(ir::Function& f, ir::Block& b, const AxisInfoMap& info, int num_warps, int warp_size) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      visit(f, *r->block, info, num_warps, warp_size);
    bool memory = op.kind == OpKind::Load || op.kind == OpKind::Store ||
                  op.kind == OpKind::AtomicRmw || op.kind == OpKind::AtomicCas;
    if (!memory || op.operands[0]->type.is_scalar())
      continue;
    auto it = info.find(op.operands[0]);
    if (it == info.end())
      continue;
    ir::LayoutPtr want = coalesced_layout(op.operands[0], it->second, num_warps, warp_size);
    if (same_layout(want, op.operands[0]->type.layout))
      continue;
    ir::LayoutPtr old = op.operands[0]->type.layout;
    for (auto& v : op.operands)
      v = convert_to(f, b, i, v, want, op.loc);
    if (op.results.empty())
      continue;
    // The result comes out in the coalesced layout; its users get it back in the old one.
    ir::Value* r = op.result();
    r->type.layout = want;
    ir::Type back = r->type;
    back.layout = old;
    size_t after = i + 1;
    ir::Op& c = insert_op(f, b, after, OpKind::ConvertLayout, {r}, {back}, op.loc);
    f.replace_all_uses(r, c.result());
    c.operands[0] = r; // replace_all_uses rewrote the conversion's own operand too
    ++i;
  }
}

} // namespace

void coalesce(ir::Function& f, int num_warps, int warp_size) {
  AxisInfoMap info = analyze_axis_info(f);
  visit(f, f.entry(), info, num_warps, warp_size);
}

} // namespace tritium::gpu
