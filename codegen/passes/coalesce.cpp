// Coalescing: each global memory access gets a blocked layout in which a thread holds a run of
// contiguous elements along the pointer's most contiguous dimension (up to 128 bits, as far as
// contiguity and alignment allow) and consecutive threads hold consecutive runs. Conversions
// around the access keep the rest of the kernel as it was; remove_layout_conversions then
// usually makes them disappear.
#include "gpu/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <unordered_map>

namespace tritium::gpu {
using ir::OpKind;

namespace {

bool is_access(const ir::Op& op) {
  return (op.kind == OpKind::Load || op.kind == OpKind::Store || op.kind == OpKind::AtomicRmw ||
          op.kind == OpKind::AtomicCas) &&
         !op.operands[0]->type.is_scalar();
}

// The dimensions from the most contiguous (the last on a tie), and how many elements a thread
// may access at once along the first: 16 bytes, as contiguity and alignment allow.
struct OwnAccess {
  std::vector<int> order;
  int64_t vec = 1;
  int64_t constancy = 1; // along order[0]
};
OwnAccess own_access(const ir::Value* ptr, const AxisInfo& info) {
  OwnAccess a;
  const int rank = static_cast<int>(ptr->type.shape.size());
  for (int d = rank - 1; d >= 0; --d)
    a.order.push_back(d);
  std::stable_sort(a.order.begin(), a.order.end(),
                   [&](int x, int y) { return info.contiguity[x] > info.contiguity[y]; });
  const int d0 = a.order[0];
  const int64_t elem_bytes = std::max(1, ptr->type.elem.element_of_pointer().bits() / 8);
  const int64_t align = std::max<int64_t>(1, info.divisibility[d0] / elem_bytes);
  a.vec = std::min<int64_t>({16 / elem_bytes, info.contiguity[d0], align});
  a.constancy = info.constancy[d0];
  return a;
}

ir::LayoutPtr layout_for(const ir::Value* ptr, const OwnAccess& a, int64_t vec, int num_warps,
                         int warp_size) {
  // Every thread should still get work: no more per thread than the tensor allows.
  const int64_t threads = int64_t{num_warps} * warp_size;
  vec = std::max<int64_t>(1, std::min<int64_t>(vec, ptr->type.numel() / threads));
  while (!is_pow2(vec))
    --vec;
  return blocked_layout(ptr->type.shape, a.order, static_cast<int>(vec), num_warps, warp_size);
}

// Tensor values that flow into one another (through any op, and a loop's carried values), as
// classes of a union-find: the accesses of one class feed one computation.
class Flow {
public:
  explicit Flow(const ir::Function& f) { walk(f.entry()); }
  const ir::Value* find(const ir::Value* v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v)
      return v;
    return it->second = find(it->second);
  }

private:
  void unite(const ir::Value* a, const ir::Value* b) {
    if (!a || !b || a->type.is_scalar() || b->type.is_scalar())
      return;
    a = find(a);
    b = find(b);
    if (a != b)
      parent_[a] = b;
  }
  void walk(const ir::Block& b) {
    for (const auto& op : b.ops) {
      const ir::Value* first = nullptr;
      for (const ir::Value* v : op->operands)
        if (!v->type.is_scalar())
          unite(first ? first : (first = v), v);
      for (const ir::Value* v : op->results)
        if (!v->type.is_scalar())
          unite(first ? first : (first = v), v);
      for (const auto& r : op->regions) {
        walk(*r->block);
        const ir::Op* y = r->block->terminator();
        // A loop's carried values and a branch's yields are the op's results.
        for (size_t k = 0; y && k < y->operands.size() && k < op->results.size(); ++k)
          unite(y->operands[k], op->results[k]);
        if (op->kind == OpKind::For)
          for (size_t k = 3; k < op->operands.size() && k - 2 < r->block->args.size(); ++k)
            unite(op->operands[k], r->block->args[k - 2]);
      }
    }
  }
  std::unordered_map<const ir::Value*, const ir::Value*> parent_;
};

} // namespace

std::unordered_map<const ir::Op*, ir::LayoutPtr>
coalesced_layouts(const ir::Function& f, const AxisInfoMap& info, int num_warps, int warp_size) {
  struct Found {
    const ir::Op* op;
    OwnAccess own;
  };
  std::vector<Found> accesses;
  std::function<void(const ir::Block&)> collect = [&](const ir::Block& b) {
    for (const auto& op : b.ops) {
      for (const auto& r : op->regions)
        collect(*r->block);
      if (!is_access(*op))
        continue;
      if (auto it = info.find(op->operands[0]); it != info.end())
        accesses.push_back({op.get(), own_access(op->operands[0], it->second)});
    }
  };
  collect(f.entry());
  // A load whose addresses repeat along runs (a norm's per-channel weights: constancy 16)
  // takes as many elements per thread as the widest access of its class with its shape and
  // order, as Triton's coalescing gives every load: a run then costs one load, and in the
  // layout of the contiguous accesses beside it nothing has to be converted. Not a gather of
  // distinct addresses (an index_select's columns): measured on the H200, its own layout and a
  // conversion were 1.6x faster than the wide one (0.385 against 0.626 ms, index_select
  // 32000x4096x1024). Stores keep their own width (wider would leave gaps in a warp's writes).
  Flow flow(f);
  std::unordered_map<const ir::Value*, std::vector<const Found*>> classes;
  for (const Found& a : accesses)
    classes[flow.find(a.op->operands[0])].push_back(&a);
  std::unordered_map<const ir::Op*, ir::LayoutPtr> out;
  for (const Found& a : accesses) {
    int64_t vec = a.own.vec;
    if (a.op->kind == OpKind::Load && a.own.constancy > 1)
      for (const Found* o : classes[flow.find(a.op->operands[0])])
        if (o->own.order == a.own.order &&
            o->op->operands[0]->type.shape == a.op->operands[0]->type.shape)
          vec = std::max(vec, o->own.vec);
    out[a.op] = layout_for(a.op->operands[0], a.own, vec, num_warps, warp_size);
  }
  return out;
}

namespace {

void visit(ir::Function& f, ir::Block& b,
           const std::unordered_map<const ir::Op*, ir::LayoutPtr>& layouts) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      visit(f, *r->block, layouts);
    auto it = layouts.find(&op);
    if (it == layouts.end())
      continue;
    const ir::LayoutPtr& want = it->second;
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
  visit(f, f.entry(), coalesced_layouts(f, analyze_axis_info(f), num_warps, warp_size));
}

} // namespace tritium::gpu
