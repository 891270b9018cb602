// hoist_loads: a global load that follows a loop but does not depend on it moves before the
// loop, so that its memory latency overlaps the loop's work instead of following it. The case
// it is for: the GEMM epilogue's bias load, which otherwise waits a DRAM round trip after the
// last K step (measured on an H200 at the seed's 64 x 256 x 128: the fused GEMM 0.3-1.2 us
// slower than the plain one, which matches cuBLAS).
//
// The load and the pure ops computing its operands move before the loop when:
//   * every value they use is defined before the loop (not by it, not by ops after it);
//   * nothing in the loop or between the loop and the load writes memory or has effects
//     (a barrier, an assert, a print), so the value read is the same;
//   * the load is not volatile.
// The moved load reads in the coalesced layout (its operands converted there), a few registers
// per thread where its consumer's layout (an accumulator's columns) may hold dozens, live
// across the whole loop; a conversion back sits where the load was.
#include "gpu_ir/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace tritium::gpu {
namespace {

using ir::OpKind;

bool writes_or_effects(const ir::Op& op) {
  if (ir::has_trait(op.kind, ir::OpTrait::WritesMemory) ||
      ir::has_trait(op.kind, ir::OpTrait::Effects) ||
      (op.kind == OpKind::Load && op.int_attr(attr::volatile_, 0)))
    return true;
  for (const auto& r : op.regions)
    for (const auto& inner : r->block->ops)
      if (writes_or_effects(*inner))
        return true;
  return false;
}

// Registers per thread up to which a hoisted load keeps its consumer's layout.
constexpr int kKeepLayoutRegs = 16;

class Hoister {
public:
  Hoister(ir::Function& f, const GpuFeatures& t)
      : f_(f), num_warps_(t.num_warps), warp_size_(t.warp_size),
        coalesced_(coalesced_layouts(f, analyze_axis_info(f), t)) {}

  void run(ir::Block& b) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      for (auto& r : b.ops[i]->regions)
        run(*r->block);
      if (b.ops[i]->kind == OpKind::For && !writes_or_effects(*b.ops[i])) {
        ir::Op& loop = *b.ops[i];
        hoist_after(b, loop);
        i = index_in_block(loop); // past what was copied before it
      }
    }
  }

private:
  // Copies before `loop` the loads after it that qualify.
  void hoist_after(ir::Block& b, ir::Op& loop) {
    for (size_t i = index_in_block(loop) + 1; i < b.ops.size(); ++i) {
      ir::Op& op = *b.ops[i];
      if (op.kind == OpKind::Load && !op.int_attr(attr::volatile_, 0) &&
          !op.operands[0]->type.is_scalar() && hoisted_.insert(&op).second) {
        std::vector<const ir::Op*> chain;
        if (movable(op, loop, chain)) {
          hoist(b, loop, op, chain);
          i = index_in_block(op);
          continue;
        }
      }
      // Loads after the next loop are that loop's to hoist: moved above both they would hold
      // registers across both, and scanning on from every loop made a kernel of many loops
      // compile in quadratic time.
      if (op.kind == OpKind::For || writes_or_effects(op))
        return; // (or later loads may read what this writes)
    }
  }

  // The pure ops after `loop` that `load` needs, in block order, if they use only values
  // defined before the loop (or by each other).
  static bool movable(const ir::Op& load, const ir::Op& loop, std::vector<const ir::Op*>& chain) {
    const ir::Block& b = *load.parent;
    const size_t loop_at = index_in_block(loop);
    std::unordered_set<const ir::Op*> need;
    std::function<bool(const ir::Value*)> reach = [&](const ir::Value* v) {
      const ir::Op* d = v->def;
      if (!d) // an argument of this block or an enclosing one
        return true;
      if (d->parent != &b || need.count(d)) // from an enclosing block, or already needed
        return true;
      const size_t at = index_in_block(*d);
      if (at < loop_at)
        return true;
      if (at == loop_at || !is_pure(*d) || d->kind == OpKind::Load || !d->regions.empty())
        return false;
      need.insert(d);
      return std::all_of(d->operands.begin(), d->operands.end(), reach);
    };
    if (!std::all_of(load.operands.begin(), load.operands.end(), reach))
      return false;
    for (const auto& o : b.ops)
      if (need.count(o.get()))
        chain.push_back(o.get());
    return true;
  }

  // Copies `chain` and `load` before `loop` (the load reading in the coalesced layout); the
  // old load's users read a conversion of the copy, placed right after the loop.
  void hoist(ir::Block& b, ir::Op& loop, ir::Op& load, const std::vector<const ir::Op*>& chain) {
    std::unordered_map<const ir::Value*, ir::Value*> copy;
    auto mapped = [&](ir::Value* v) {
      auto it = copy.find(v);
      return it == copy.end() ? v : it->second;
    };
    auto clone = [&](const ir::Op& op, const ir::LayoutPtr* layout) {
      std::vector<ir::Value*> operands;
      for (ir::Value* v : op.operands)
        operands.push_back(mapped(v));
      std::vector<ir::Type> types;
      for (const ir::Value* r : op.results)
        types.push_back(r->type);
      if (layout)
        types[0].layout = *layout;
      ir::Op& c = insert_op(f_, b, index_in_block(loop), op.kind, operands, types, op.loc);
      c.attrs = op.attrs;
      for (size_t k = 0; k < op.results.size(); ++k)
        copy[op.results[k]] = c.results[k];
      return &c;
    };
    for (const ir::Op* op : chain)
      clone(*op, nullptr);
    ir::Value* r = load.result();
    const ir::LayoutPtr old = r->type.layout;
    auto it = coalesced_.find(&load);
    // Few registers in the consumer's layout (a 64 x 64 accumulator's bias: 16): the load moves
    // as it is, with no conversion on either side (each costs barriers and a shared-memory trip).
    const bool small = !old || resolve(old, r->type.shape).num_regs() <= kKeepLayoutRegs;
    const ir::LayoutPtr want = it == coalesced_.end() || small ? old : it->second;
    // The copy's operands in the layout it reads in.
    for (ir::Value* v : load.operands) {
      size_t at = index_in_block(loop);
      copy[v] = want == old ? mapped(v) : convert_to(f_, b, at, mapped(v), want, load.loc);
    }
    ir::Op* early = clone(load, &want);
    size_t after = index_in_block(loop) + 1;
    ir::Value* back =
        want == old ? early->result() : convert_to(f_, b, after, early->result(), old, load.loc);
    f_.replace_all_uses(r, back);
  }

  ir::Function& f_;
  std::unordered_set<const ir::Op*> hoisted_; // loads already copied (dead until erased)
  int num_warps_, warp_size_;
  std::unordered_map<const ir::Op*, ir::LayoutPtr> coalesced_;
};

} // namespace

void hoist_loads(ir::Function& f, const GpuFeatures& target) {
  Hoister(f, target).run(f.entry());
  erase_dead_ops(f);
}

} // namespace tritium::gpu
