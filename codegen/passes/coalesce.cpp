// Coalescing: each global memory access gets a blocked layout in which a thread holds a run of
// contiguous elements along the pointer's most contiguous dimension (up to 128 bits, as far as
// contiguity and alignment allow) and consecutive threads hold consecutive runs. Conversions
// around the access keep the rest of the kernel as it was; remove_layout_conversions then
// usually makes them disappear.
#include "gpu_ir/layout.hpp"
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
  bool gather = false;   // no two neighbours along order[0] are contiguous: one element a run
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
  a.gather = info.contiguity[d0] == 1 && a.constancy == 1 && ptr->type.shape[d0] > 1;
  return a;
}

// `k_dim`: where the load is a dot operand whose K dimension (k_dim) is not its contiguous
// one, else -1. Then each thread also takes a run along K, as far as its share of the tile
// (no more registers) and 16 bytes allow.
ir::LayoutPtr layout_for(const ir::Value* ptr, const OwnAccess& a, int64_t vec, int num_warps,
                         int warp_size, int k_dim) {
  // Every thread should still get work: no more per thread than the tensor allows.
  const int64_t threads = int64_t{num_warps} * warp_size;
  const int64_t numel = ptr->type.numel();
  vec = std::max<int64_t>(1, std::min<int64_t>(vec, numel / threads));
  while (!is_pow2(vec))
    --vec;
  int64_t second = 1;
  if (k_dim >= 0 && a.order.size() == 2 && a.order[1] == k_dim) {
    const int64_t elem_bytes = std::max(1, ptr->type.elem.element_of_pointer().bits() / 8);
    // Pairs, written 32 bits at a time as Triton's AMD backend writes them: runs of four
    // (64-bit writes) left a 128 x 128 x 64 GEMM on gfx1100 with 104 B of scratch, pairs 0.
    const int64_t most =
        std::min<int64_t>({numel / (threads * vec), std::max<int64_t>(1, 4 / elem_bytes),
                           ptr->type.shape[static_cast<size_t>(k_dim)]});
    while (second * 2 <= most)
      second *= 2;
  }
  return blocked_layout(ptr->type.shape, a.order, static_cast<int>(vec), num_warps, warp_size,
                        static_cast<int>(second));
}

// The loads an operand of a dot is as loaded (through conversions; not those math comes after,
// a dequantization's), and whether it is computed from another dot's result (attention's P).
struct OperandSources {
  std::vector<const ir::Op*> loads;
  bool from_dot = false;
};
OperandSources operand_sources(const ir::Value* operand) {
  OperandSources out;
  std::vector<std::pair<const ir::Value*, bool>> stack{{operand, false}};
  for (int depth = 0; !stack.empty() && depth < 64; ++depth) {
    auto [v, through_math] = stack.back();
    stack.pop_back();
    const ir::Op* d = v->def;
    if (!d)
      continue;
    if (d->kind == OpKind::Dot) {
      out.from_dot = true;
    } else if (d->kind == OpKind::Load) {
      if (!through_math)
        out.loads.push_back(d);
    } else if (d->kind == OpKind::ConvertLayout) {
      stack.emplace_back(d->operands[0], through_math);
    } else if (ir::is_elementwise(d->kind) || d->kind == OpKind::Broadcast) {
      for (const ir::Value* o : d->operands)
        stack.emplace_back(o, true);
    }
  }
  return out;
}

// The loads inside a loop that are an operand of a GEMM's dot as loaded, with the operand's K
// dimension: the tiles a pipeline rings through shared memory. Not a chained dot's (attention's
// V, read once per row block or gathered from pages), nor a dequantized weight's (w8a16,
// w4a16): there the rows paired cost registers and scratch (paged decode 128 -> 204 VGPRs on
// gfx942; w8a16 M16 164 -> 176, 136 -> 444 B scratch on gfx1100).
void dot_operand_loads(const ir::Block& b, bool in_loop,
                       std::unordered_map<const ir::Op*, int>& out) {
  for (const auto& op : b.ops) {
    for (const auto& r : op->regions)
      dot_operand_loads(*r->block, in_loop || op->kind == OpKind::For, out);
    if (op->kind != OpKind::Dot || !in_loop || op->operands[0]->type.rank() != 2)
      continue;
    const OperandSources a = operand_sources(op->operands[0]);
    const OperandSources bs = operand_sources(op->operands[1]);
    if (a.from_dot || bs.from_dot)
      continue;
    for (const auto& [sources, k] : {std::pair{&a, 1}, std::pair{&bs, 0}})
      for (const ir::Op* l : sources->loads)
        if (l->parent == op->parent)
          out.emplace(l, k);
  }
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
coalesced_layouts(const ir::Function& f, const AxisInfoMap& info, const GpuFeatures& t) {
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
  // 32000x4096x1024). Where the target asks (GpuFeatures::gathers_join_class), a gather and the
  // loads of its class with its shape (its indices, a scatter's values) take the widest access
  // of the class instead, as Triton's coalescing does, so that nothing converts between them.
  // Other stores keep their own width (wider would leave gaps in a warp's writes).
  Flow flow(f);
  std::unordered_map<const ir::Value*, std::vector<const Found*>> classes;
  for (const Found& a : accesses)
    classes[flow.find(a.op->operands[0])].push_back(&a);
  // AMD's matrix units read operands with K fastest in shared memory (pipeline.cpp): a tile
  // loaded along M or N is written there across its runs, 16 bits at a time unless a thread
  // holds neighbours along K (Triton's AMD backend writes such a B tile 32 bits at a time).
  std::unordered_map<const ir::Op*, int> operand_k;
  if (operands_k_major(t.matrix))
    dot_operand_loads(f.entry(), false, operand_k);
  std::unordered_map<const ir::Op*, ir::LayoutPtr> out;
  for (const Found& a : accesses) {
    int64_t vec = a.own.vec;
    auto alike = [&](const Found* o) {
      return o->own.order == a.own.order &&
             o->op->operands[0]->type.shape == a.op->operands[0]->type.shape;
    };
    const auto& mine = classes[flow.find(a.op->operands[0])];
    const bool beside_gather =
        t.gathers_join_class && std::any_of(mine.begin(), mine.end(), [&](const Found* o) {
          return o->own.gather && alike(o);
        });
    if (beside_gather && (a.own.gather || a.op->kind == OpKind::Load))
      for (const Found* o : mine)
        if (alike(o))
          vec = std::max(vec, o->own.vec);
    if (a.op->kind == OpKind::Load && a.own.constancy > 1)
      for (const Found* o : mine)
        if (alike(o))
          vec = std::max(vec, o->own.vec);
    auto k = operand_k.find(a.op);
    out[a.op] = layout_for(a.op->operands[0], a.own, vec, t.num_warps, t.warp_size,
                           k == operand_k.end() ? -1 : k->second);
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

void coalesce(ir::Function& f, const GpuFeatures& target) {
  visit(f, f.entry(), coalesced_layouts(f, analyze_axis_info(f), target));
}

} // namespace tritium::gpu
