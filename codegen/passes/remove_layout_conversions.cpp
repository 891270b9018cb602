// Removal of redundant layout conversions. A conversion costs a round trip through shared
// memory; most disappear because their operand is cheap to compute in the wanted layout:
// constants, aranges and splats, elementwise ops, broadcasts and pointer arithmetic are
// rematerialized (cloned right after the original, in the new layout, with conversions pushed
// onto their operands), until the conversions meet a load, a reduction or a block argument.
// Ops that read their operands through shared memory or in any layout (dot, reductions, scans,
// reshapes, transposes, joins, splits, concatenations) take the unconverted operand; the
// shape ops then make their results' layouts from it.
// Conversions of conversions fold; conversions to the layout a value already has vanish;
// dead ops are erased.
#include "gpu_ir/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <string>

namespace tritium::gpu {
namespace {

using ir::OpCategory;
using ir::OpKind;

// Layouts of the matrix units: an Mma accumulator, its operands, and slices of those.
bool accelerator_layout(const ir::LayoutPtr& l) {
  if (auto* s = dynamic_cast<const SliceLayout*>(l.get()))
    return accelerator_layout(s->parent);
  return dynamic_cast<const MmaLayout*>(l.get()) || dynamic_cast<const DotOperandLayout*>(l.get());
}

// A matrix unit's operand fragment, or a slice of one (what a broadcast into it comes from).
bool dot_operand_layout(const ir::LayoutPtr& l) {
  if (auto* s = dynamic_cast<const SliceLayout*>(l.get()))
    return dot_operand_layout(s->parent);
  return dynamic_cast<const DotOperandLayout*>(l.get()) != nullptr;
}

// `accel`: whether the op would be recomputed in an accelerator layout.
bool rematerializable(const ir::Op& op, bool accel = false) {
  if (op.results.size() != 1 || !op.regions.empty())
    return false;
  if (op_category(op.kind) == OpCategory::Source || ir::is_elementwise(op.kind))
    return true;
  // A 1-D load (a bias, a norm's weights) is reloaded in an accelerator layout its user
  // wants: a second read of a few cached lines is cheaper than moving a matrix
  // instruction's accumulator through shared memory. (Elsewhere loads keep the layout
  // coalesce chose.)
  if (op.kind == OpKind::Load)
    return accel && op.result()->type.rank() <= 1 && !op.int_attr(attr::volatile_, 0);
  // A read of shared memory is read again in the accelerator layout its user wants: weights
  // dequantized on their way to a dot (int8 -> f16, times a scale) are then read from the
  // pipeline's ring straight into the operand's registers and converted there, where they
  // would otherwise be written back to shared memory and reread every iteration.
  if (op.kind == OpKind::LocalLoad)
    return accel;
  // A transposition or reshape of something cheap is recomputed in the wanted layout from
  // its operand in the layout that makes it (a transposed mask, as a transpose kernel stores
  // with).
  return op.kind == OpKind::Splat || op.kind == OpKind::Broadcast ||
         op.kind == OpKind::ExpandDims || op.kind == OpKind::Trans || op.kind == OpKind::Reshape;
}

// The layout op's operand must have for op's result to come out in `want`.
ir::LayoutPtr operand_layout_for(const ir::Op& op, const ir::LayoutPtr& want) {
  const ir::Type& r = op.result()->type;
  switch (op.kind) {
  case OpKind::ExpandDims:
    return slice_layout(static_cast<int>(op.int_attr(attr::axis)), want);
  case OpKind::Trans: {
    const auto& order = op.ints_attr(attr::order);
    std::vector<int64_t> inverse(order.size());
    for (size_t k = 0; k < order.size(); ++k)
      inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    return linear_layout(trans_layout(resolve(want, r.shape), inverse));
  }
  case OpKind::Reshape:
    return linear_layout(reshape_layout(resolve(want, r.shape), op.operands[0]->type.shape));
  case OpKind::LocalLoad: // reads its buffer in whatever layout it is asked for
    return op.operands[0]->type.layout;
  default:
    return want;
  }
}

// Bytes along `dim` that a warp's consecutive lanes hold back to back in one register: what
// one store instruction writes contiguously.
int64_t contiguous_bytes(const LinearLayout& l, int dim, int64_t elem_bytes) {
  int64_t run = l.contiguous_regs(dim);
  for (const auto& c : l.lane) {
    if (LinearLayout::dim_of(c) != dim || c[static_cast<size_t>(dim)] != run)
      break;
    run *= 2;
  }
  return run * elem_bytes;
}

class Remover {
public:
  Remover(ir::Function& f, bool dot_operands_only) : f_(f), dot_operands_only_(dot_operands_only) {}

  void run() {
    ir::walk(f_.entry(), [&](ir::Op& op) {
      const bool access = op.kind == OpKind::Load || op.kind == OpKind::Store ||
                          op.kind == OpKind::AtomicRmw || op.kind == OpKind::AtomicCas;
      if (!access || op.operands[0]->type.is_scalar())
        return;
      const ir::Type& t = op.operands[0]->type;
      auto* l = dynamic_cast<const BlockedLayout*>(t.layout.get());
      auto& best = access_layouts_[t.shape];
      auto* had = dynamic_cast<const BlockedLayout*>(best.get());
      auto size = [](const BlockedLayout* b) {
        return std::accumulate(b->size_per_thread.begin(), b->size_per_thread.end(), 1,
                               std::multiplies<>());
      };
      if (l && (!had || size(l) > size(had)))
        best = t.layout;
    });
    std::erase_if(access_layouts_, [](const auto& kv) { return !kv.second; });
    for (int round = 0; round < 64; ++round) {
      changed_ = false;
      memo_.clear(); // erased clones must not be handed out again
      block(f_.entry());
      erase_dead_ops(f_);
      if (!changed_)
        break;
    }
    while (hoist_and_merge(f_.entry()))
      erase_dead_ops(f_);
  }

private:
  static bool defined_in(const ir::Value* v, const ir::Block& body) {
    for (const ir::Block* b = v->def ? v->def->parent : v->block; b;) {
      if (b == &body)
        return true;
      const ir::Op* owner = b->parent ? b->parent->parent : nullptr;
      b = owner ? owner->parent : nullptr;
    }
    return false;
  }

  // Whether every user of `v` in `b` is a dot (as operand a or b), directly or through a
  // transpose (of a tile in shared memory: a view of the same bytes). Attention's backward
  // reads its Q tile as Q K^T's B operand transposed and as dS^T Q's B: one tile for both.
  static bool only_dots_read(const ir::Value* v, const ir::Block& b) {
    bool any = false;
    for (const auto& op : b.ops)
      for (size_t k = 0; k < op->operands.size(); ++k)
        if (op->operands[k] == v) {
          const bool view = op->kind == OpKind::Trans &&
                            dynamic_cast<const SharedLayout*>(op->result()->type.layout.get()) &&
                            only_dots_read(op->result(), b);
          if ((op->kind != OpKind::Dot || k > 1) && !view)
            return false;
          any = true;
        }
    return any;
  }

  // What is left of the conversions, made cheaper: a conversion of a value computed before a
  // loop moves out of the loop (it is pure, and would otherwise go through shared memory every
  // iteration: the RMS statistics of the fused Llama MLP), and two conversions of one value to
  // one layout in a block become one. Returns whether anything changed.
  bool hoist_and_merge(ir::Block& b) {
    bool any = false;
    std::map<std::pair<const ir::Value*, std::string>, ir::Value*> seen;
    for (size_t i = 0; i < b.ops.size(); ++i) {
      ir::Op& op = *b.ops[i];
      for (auto& r : op.regions)
        any = hoist_and_merge(*r->block) || any;
      // An expand_dims of a loop-invariant value moves too, so that the conversion after it
      // can (it adds no registers: the value was live across the loop already).
      if (op.kind != OpKind::ConvertLayout && op.kind != OpKind::ExpandDims)
        continue;
      const ir::LayoutPtr& want = op.result()->type.layout;
      // A loop-invariant tile that a dot reads from shared memory is stored there once, before
      // the loop (attention's Q); other stores into shared memory stay where they are.
      if (dynamic_cast<const SharedLayout*>(want.get()) && !only_dots_read(op.result(), b))
        continue;
      ir::Op* loop = b.parent ? b.parent->parent : nullptr;
      if (loop && loop->kind == OpKind::For && !defined_in(op.operands[0], b)) {
        ir::Block& outer = *loop->parent;
        size_t at = index_in_block(*loop);
        std::unique_ptr<ir::Op> moved = std::move(b.ops[i]);
        b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(i));
        moved->parent = &outer;
        outer.ops.insert(outer.ops.begin() + static_cast<std::ptrdiff_t>(at), std::move(moved));
        --i;
        any = true;
        continue;
      }
      if (op.kind != OpKind::ConvertLayout)
        continue;
      auto key = std::make_pair(static_cast<const ir::Value*>(op.operands[0]), want->str());
      if (auto it = seen.find(key); it != seen.end()) {
        f_.replace_all_uses(op.result(), it->second);
        any = true;
      } else {
        seen.emplace(key, op.result());
      }
    }
    return any;
  }

  void block(ir::Block& b) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      ir::Op& op = *b.ops[i];
      for (auto& r : op.regions)
        block(*r->block);
      if (op.kind == OpKind::For && !dot_operands_only_)
        carry_where_computed(op);
      if (op.kind == OpKind::If && !dot_operands_only_)
        branch_where_computed(op);
      if (op.kind == OpKind::ConvertLayout) {
        if (!dot_operands_only_ || dot_operand_layout(op.result()->type.layout))
          convert(op);
      } else if (!dot_operands_only_) {
        skip_operand_conversions(b, i);
      }
    }
  }

  static ir::Value* unconverted(ir::Value* v) {
    return v->def && v->def->kind == OpKind::ConvertLayout ? v->def->operands[0] : v;
  }

  // Whether `v` can be recomputed in any layout from scalars alone (its conversion would be
  // rematerialized away).
  static bool cheap(const ir::Value* v, bool accel = false, int depth = 0) {
    // A scalar, or a buffer in shared memory (a local_load rereads it in any layout).
    if (v->type.is_scalar() || dynamic_cast<const SharedLayout*>(v->type.layout.get()))
      return true;
    const ir::Op* d = v->def;
    // A conversion of something cheap is cheap: the something can be recomputed instead.
    if (d && d->kind == OpKind::ConvertLayout)
      return depth <= 16 && cheap(d->operands[0], accel, depth + 1);
    if (!d || depth > 16 || !rematerializable(*d, accel))
      return false;
    for (const ir::Value* o : d->operands)
      if (!cheap(o, accel, depth + 1))
        return false;
    return true;
  }

  // store(ptr, convert(x), mask) with cheap pointers and mask: store x where it is, computing
  // the pointers in its layout, instead of moving the data through shared memory.
  void store_in_value_layout(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    ir::Value* x = unconverted(op.operands[1]);
    if (x == op.operands[1] || !x->type.layout)
      return;
    // A matrix unit's accumulator holds pairs of adjacent columns per thread: stored from
    // there, a warp writes 8 rows x 16 bytes per instruction. A kernel's final tile (a store at
    // the top level) goes through shared memory instead, into the store's coalesced layout:
    // 16-byte vectors along the rows (Triton's epilogue does the same). Measured on the H200
    // (bench_gemm f16, same command): 4096^3 228.4 -> 215.7 us, 8192^3 1825.9 -> 1763.9 us.
    // So does a tile stored inside a loop (a persistent kernel's): its scratch then sits above
    // the K loop's rings, and the pipeliner counts it in its shared-memory budget.
    // (wgmma only: on mma.sync, MFMA and WMMA the direct store was not measured slower, and on
    // gfx1100 the scratch tile's registers spill.)
    // Only where the store's own layout has wider vectors than the accumulator's pairs (the
    // pointers' alignment known: not so for a grouped GEMM's pointers read from a table).
    auto* mma = dynamic_cast<const MmaLayout*>(x->type.layout.get());
    auto* want = dynamic_cast<const BlockedLayout*>(op.operands[1]->type.layout.get());
    if (x->type.rank() == 2 && mma && mma->unit == MatrixUnit::Wgmma && want &&
        want->size_per_thread[want->order[0]] * x->type.elem.bits() > 32)
      return;
    // Nor where x's threads would write fewer than 16 contiguous bytes of a row per
    // instruction (a transposed tile: a warp's 2-byte stores would fall on 8 rows at once, a
    // quarter of each sector used; Triton 3.93x faster on an 8192^2 transpose until this).
    if (want && x->type.rank() >= 1) {
      const int d = want->order[0];
      const int64_t eb = elem_bytes(x->type.elem);
      auto run = [&](const ir::Type& t) {
        return contiguous_bytes(resolve(t.layout, t.shape), d, eb);
      };
      // A transposed MFMA accumulator's lanes hold 4 columns of a row, two lanes 16 bytes
      // of it: stored from there as 64-bit vectors, as Triton's AMD backend stores them,
      // instead of a round trip through LDS.
      const int64_t enough = mma && mma->transposed ? 8 : 16;
      if (run(x->type) < std::min<int64_t>(enough, run(op.operands[1]->type)))
        return;
    }
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (k != 1 && !cheap(op.operands[k], accelerator_layout(x->type.layout)))
        return;
    for (size_t k = 0; k < op.operands.size(); ++k)
      op.operands[k] = k == 1 ? x : convert_to(f_, b, i, op.operands[k], x->type.layout, op.loc);
    changed_ = true;
  }

  void skip_operand_conversions(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    switch (op.kind) {
    case OpKind::Dot:
      // On FMA units dot reads a and b through shared memory in any layout; matrix
      // instructions need their fragment layouts.
      if (dynamic_cast<const MmaLayout*>(op.result()->type.layout.get()))
        return;
      for (size_t k = 0; k < 2; ++k)
        if (ir::Value* x = unconverted(op.operands[k]); x != op.operands[k]) {
          op.operands[k] = x;
          changed_ = true;
        }
      return;
    case OpKind::Store:
      return store_in_value_layout(b, i);
    default:
      if (op.results.size() == 1 && ir::is_elementwise(op.kind))
        forward(b, i);
      return;
    case OpKind::Reshape:
    case OpKind::Trans:
    case OpKind::Join:
    case OpKind::Split:
    case OpKind::Cat:
      if (dynamic_cast<const SharedLayout*>(op.result()->type.layout.get()))
        return; // a view of a tile in shared memory (a wgmma operand's transposition)
      return reshape_unconverted(b, i);
    case OpKind::Reduce:
      if (reduce_in_access_layout(b, i))
        return;
      [[fallthrough]];
    case OpKind::Scan: {
      // All operands must come from one layout; the results follow it and are converted back
      // for their users.
      ir::Value* x0 = unconverted(op.operands[0]);
      if (x0 == op.operands[0] || !x0->type.layout)
        return;
      for (ir::Value* v : op.operands)
        if (!same_layout(unconverted(v)->type.layout, x0->type.layout))
          return;
      for (auto& v : op.operands)
        v = unconverted(v);
      ir::LayoutPtr l = x0->type.layout;
      int axis = static_cast<int>(op.int_attr(attr::axis));
      size_t at = i + 1;
      for (ir::Value* r : op.results) {
        if (r->type.is_scalar())
          continue;
        ir::LayoutPtr old = r->type.layout;
        bool keep = op.kind == OpKind::Scan || op.int_attr(attr::keep_dims, 0);
        r->type.layout = keep ? l : slice_layout(axis, l);
        ir::Type back = r->type;
        back.layout = old;
        ir::Op& c = insert_op(f_, b, at++, OpKind::ConvertLayout, {r}, {back}, op.loc);
        f_.replace_all_uses(r, c.result());
        c.operands[0] = r;
      }
      i = at - 1;
      changed_ = true;
      return;
    }
    }
  }

  bool only_reductions_read(const ir::Value* v) {
    bool only = true;
    ir::walk(f_.entry(), [&](ir::Op& o) {
      if (o.kind != OpKind::Reduce &&
          std::find(o.operands.begin(), o.operands.end(), v) != o.operands.end())
        only = false;
    });
    return only;
  }

  // A reduction of values computed from scalars alone (a bounds check's failing elements, a
  // count of a mask) reads them in the layout the kernel's accesses of their shape have:
  // there the same offsets and masks are already computed for the accesses, where in the
  // default layout beside it they would be computed twice and held in registers twice.
  bool reduce_in_access_layout(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    auto it = access_layouts_.find(op.operands[0]->type.shape);
    if (it == access_layouts_.end())
      return false;

    const ir::LayoutPtr& l = it->second;
    for (ir::Value* v : op.operands)
      if (!v->type.layout || same_layout(v->type.layout, l) || !cheap(v) ||
          (v->def && v->def->kind == OpKind::ConvertLayout))
        return false;
    // Only a reduction to scalars, directly or through reductions (which read any layout):
    // a tile result in a new layout would convert for its elementwise users.
    for (const ir::Value* r : op.results)
      if (!r->type.is_scalar() && !only_reductions_read(r))
        return false;
    for (auto& v : op.operands)
      v = convert_to(f_, b, i, v, l, op.loc); // recomputed there by the next round
    const int axis = static_cast<int>(op.int_attr(attr::axis));
    size_t at = i + 1;
    for (ir::Value* r : op.results) {
      if (r->type.is_scalar())
        continue;
      ir::Type back = r->type;
      r->type.layout = op.int_attr(attr::keep_dims, 0) ? l : slice_layout(axis, l);
      ir::Op& c = insert_op(f_, b, at++, OpKind::ConvertLayout, {r}, {back}, op.loc);
      f_.replace_all_uses(r, c.result());
      c.operands[0] = r;
    }
    i = at - 1;
    changed_ = true;
    return true;
  }

  // A reshape, transposition, join or split reads its operands where they are (they were
  // only converted for it); its results take the layouts it makes of them, and their users get
  // a conversion to the layouts they had (which later rounds remove where they can).
  void reshape_unconverted(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    bool any = false;
    // Only data worth keeping in place pulls (a cheap operand's conversion is recomputed away,
    // and stripping it would undo the rematerialization of the op itself).
    for (auto& v : op.operands)
      if (ir::Value* x = unconverted(v); x != v && x->type.layout && !cheap(x)) {
        v = x;
        any = true;
      }
    if (!any)
      return;
    changed_ = true;
    size_t at = i + 1;
    for (size_t k = 0; k < op.results.size(); ++k) {
      ir::Value* r = op.results[k];
      ir::LayoutPtr made = induced_layout(op, k);
      if (!made || same_layout(made, r->type.layout))
        continue;
      ir::Type back = r->type;
      r->type.layout = made;
      ir::Op& c = insert_op(f_, b, at++, OpKind::ConvertLayout, {r}, {back}, op.loc);
      f_.replace_all_uses(r, c.result());
      c.operands[0] = r;
    }
    i = at - 1;
  }

  // op(convert(x: S -> L), ...) with every other operand cheap or also converted from S:
  // compute op in S and convert its one result instead of its operands.
  void forward(ir::Block& b, size_t& i) {
    ir::Op& op = *b.ops[i];
    // Only data worth keeping in place pulls: a converted operand that is not cheap.
    ir::LayoutPtr from;
    // (Cheap as convert() judges it for the layout it was converted to: there a conversion
    // into a matrix unit's layout rematerializes a 1-D load, and pulling the op out of that
    // layout would only be undone, round after round.)
    for (ir::Value* v : op.operands)
      if (ir::Value* x = unconverted(v); x != v && x->type.layout &&
                                         !cheap(x, accelerator_layout(v->type.layout)) &&
                                         !reloadable(x, v->type.layout)) {
        from = x->type.layout;
        break;
      }
    if (!from || op.result()->type.is_scalar())
      return;
    for (ir::Value* v : op.operands) {
      ir::Value* x = unconverted(v);
      if (!(x != v && same_layout(x->type.layout, from)) && !cheap(v, accelerator_layout(from)) &&
          !reloadable(v, from))
        return;
    }
    for (auto& v : op.operands) {
      ir::Value* x = unconverted(v);
      v = x != v ? x : convert_to(f_, b, i, v, from, op.loc);
    }
    ir::Value* r = op.result();
    ir::LayoutPtr old = r->type.layout;
    r->type.layout = from;
    ir::Type back = r->type;
    back.layout = old;
    ir::Op& c = insert_op(f_, b, i + 1, OpKind::ConvertLayout, {r}, {back}, op.loc);
    f_.replace_all_uses(r, c.result());
    c.operands[0] = r;
    ++i;
    changed_ = true;
  }

  void replace(ir::Op& c, ir::Value* with) {
    f_.replace_all_uses(c.result(), with);
    changed_ = true;
  }

  void convert(ir::Op& c) {
    ir::Value* x = c.operands[0];
    const ir::LayoutPtr& want = c.result()->type.layout;
    // Into shared memory is a store, not something to recompute; a chain of conversions into
    // it stores from the first layout (each thread writes its own registers wherever they go).
    if (dynamic_cast<const SharedLayout*>(want.get())) {
      if (x->def && x->def->kind == OpKind::ConvertLayout &&
          !dynamic_cast<const SharedLayout*>(x->def->operands[0]->type.layout.get())) {
        c.operands[0] = x->def->operands[0];
        changed_ = true;
      }
      return;
    }
    if (same_layout(x->type.layout, want))
      return replace(c, x);
    ir::Op* def = x->def;
    if (!def)
      return;
    if (def->kind == OpKind::ConvertLayout) {
      c.operands[0] = def->operands[0];
      changed_ = true;
      return;
    }
    const bool accel = accelerator_layout(want);
    if (!rematerializable(*def, accel) && !reloadable(x, want))
      return;
    // A broadcast or expand_dims always moves its conversion up: its operand has no more
    // elements. Other ops only when that removes conversions: every operand is cheap, already
    // in the layout, or a conversion from it. (Otherwise forward propagation below may have
    // just put it here.)
    const bool shrinks = def->kind == OpKind::Broadcast || def->kind == OpKind::ExpandDims;
    // A chain is recomputed only in the layout its users read, not on its way to another
    // conversion (a [64, 1] column in a default layout of its own, converted into the tile's):
    // that conversion first folds into this one.
    const bool last = !converted_again(c.result());
    for (const ir::Value* v : def->operands) {
      ir::LayoutPtr need = operand_layout_for(*def, want);
      // A 1-D load on its way (a zero point cast before a broadcast) is read again in the
      // layout wanted, as above, once the conversion has moved up to it.
      if (reloadable(v, need, last ? 0 : kNoChains))
        continue;
      if (!shrinks && !cheap(v, accel) && !same_layout(v->type.layout, need) &&
          !same_layout(unconverted(const_cast<ir::Value*>(v))->type.layout, need))
        return;
    }
    // An expand_dims moves its conversion up as a slice of the wanted layout.
    if (def->kind == OpKind::ExpandDims && !dynamic_cast<const BlockedLayout*>(want.get()) &&
        !dynamic_cast<const MmaLayout*>(want.get()) &&
        !dynamic_cast<const LinearLayoutAttr*>(want.get()))
      return;
    replace(c, rematerialize(*def, want, c));
  }

  // A loop that yields a conversion out of layout L, of a value each iteration reads only
  // through conversions into L (a running state a reduction makes and the next iteration
  // broadcasts: a scan's carry, a row's running max), carries it in L: both conversions an
  // iteration go, one before and one after the loop take their place.
  void carry_where_computed(ir::Op& loop) {
    ir::Block& body = loop.body();
    const ir::Op& y = *body.terminator();
    for (size_t k = 0; k < y.operands.size(); ++k) {
      const ir::Value* x = unconverted(y.operands[k]);
      const ir::Value* arg = body.args[k + 1];
      if (x == y.operands[k] || !x->type.layout || !arg->type.layout ||
          same_layout(x->type.layout, arg->type.layout))
        continue;
      bool only_converted = true, read = false;
      ir::walk(body, [&](ir::Op& op) {
        for (const ir::Value* o : op.operands)
          if (o == arg) {
            read = true;
            only_converted = only_converted && op.kind == OpKind::ConvertLayout &&
                             same_layout(op.result()->type.layout, x->type.layout);
          }
      });
      if (!read || !only_converted)
        continue;
      carry_in_layout(f_, loop, k, x->type.layout);
      changed_ = true;
    }
  }

  // A branch that yields a conversion out of layout L (a load that coalesce widened, on the
  // likely path of a checked access) gives its result in L when the other branch's value is
  // in L too or cheap to make there (a constant): the conversion leaves the likely path, and
  // one after the branch takes its place, where the users' own conversions can meet it. On
  // an If without a likely side both yields must come out of L.
  void branch_where_computed(ir::Op& branch) {
    const bool weighted = branch.has_attr(attr::likely);
    const int likely = weighted && branch.int_attr(attr::likely) ? 1 : 0;
    ir::Op& yes = *branch.body(likely).terminator();
    ir::Op& no = *branch.body(1 - likely).terminator();
    for (size_t k = 0; k < branch.results.size(); ++k) {
      ir::Value* r = branch.results[k];
      const ir::Value* x = unconverted(yes.operands[k]);
      if (x == yes.operands[k] || !x->type.layout || !r->type.layout ||
          same_layout(x->type.layout, r->type.layout))
        continue;
      const ir::LayoutPtr l = x->type.layout;
      const ir::Value* other = unconverted(no.operands[k]);
      const bool fits = (other->type.layout && same_layout(other->type.layout, l)) ||
                        (weighted && cheap(no.operands[k]));
      if (!fits)
        continue;
      const ir::LayoutPtr old = r->type.layout;
      for (ir::Op* y : {&yes, &no}) {
        ir::Block& body = *y->parent;
        size_t at = body.ops.size() - 1;
        y->operands[k] = convert_to(f_, body, at, y->operands[k], l, branch.loc);
      }
      r->type.layout = l;
      ir::Type back = r->type;
      back.layout = old;
      ir::Block& outer = *branch.parent;
      size_t after = index_in_block(branch) + 1;
      ir::Op& c = insert_op(f_, outer, after, OpKind::ConvertLayout, {r}, {back}, branch.loc);
      f_.replace_all_uses(r, c.result());
      c.operands[0] = r;
      changed_ = true;
    }
  }

  // A 1-D load that a 2-D tile broadcasts (a row of cos, a norm's weights: wanted as a slice
  // of the tile's layout) is read again in that layout: a second read of a few cached lines
  // costs less than a trip through shared memory and two barriers. (Not into a plain 1-D
  // layout: that would undo coalesce.)
  // Only where its pointers, mask and fill can be recomputed there too (not a pointer the loop
  // carries).
  // The same through elementwise ops, when every leaf is cheap or such a load (a step size
  // softplus(dt) read per channel and broadcast over a state tile): the chain is recomputed in
  // the slice layout from the reloads, and no conversion is left. Only where the slice holds no
  // more elements a thread than the chain's own layout, so that nothing is computed more
  // often per thread than it was (each copy of the chain costs what the original did).
  static constexpr int kNoChains = 8; // as the depth of reloadable(): a load alone

  // Whether every user of v converts it, directly or after an expand_dims or a broadcast.
  bool converted_again(const ir::Value* v) const {
    bool any = false, all = true;
    ir::walk(f_.entry(), [&](ir::Op& op) {
      if (std::find(op.operands.begin(), op.operands.end(), v) == op.operands.end())
        return;
      any = true;
      const bool moves = op.kind == OpKind::ExpandDims || op.kind == OpKind::Broadcast;
      all = all && (op.kind == OpKind::ConvertLayout || (moves && converted_again(op.result())));
    });
    return any && all;
  }

  static bool reloadable(const ir::Value* v, const ir::LayoutPtr& want, int depth = 0) {
    const ir::Op* d = v->def;
    if (!d || v->type.rank() > 1 || !v->type.layout ||
        !dynamic_cast<const SliceLayout*>(want.get()))
      return false;
    if (d->kind == OpKind::Load)
      return !d->int_attr(attr::volatile_, 0) &&
             std::all_of(d->operands.begin(), d->operands.end(),
                         [](const ir::Value* o) { return cheap(o); });
    if (depth >= 8 || d->results.size() != 1 || !ir::is_elementwise(d->kind) ||
        resolve(want, v->type.shape).num_regs() > resolve(v->type.layout, v->type.shape).num_regs())
      return false;
    bool leaf_load = false;
    for (const ir::Value* o : d->operands) {
      if (cheap(o))
        continue;
      if (!reloadable(o, want, depth + 1))
        return false;
      leaf_load = true;
    }
    return leaf_load;
  }

  // The clone goes right before the conversion it replaces when both are in one block (so
  // that values recomputed for an epilogue are not live across the loop before it), else right
  // after the original.
  ir::Value* rematerialize(ir::Op& def, const ir::LayoutPtr& want, ir::Op& use) {
    const bool sink = use.parent == def.parent;
    std::string key = std::to_string(reinterpret_cast<uintptr_t>(def.result())) + want->str() +
                      (sink ? "@use" : "");
    // A clone sunk to an earlier-processed use may sit below this one: then this use gets its
    // own (a recomputation of a cheap op), which later uses below it share.
    if (auto it = memo_.find(key);
        it != memo_.end() && (!sink || index_in_block(*it->second->def) < index_in_block(use)))
      return it->second;
    ir::Block& b = *def.parent;
    size_t at = sink ? index_in_block(use) : index_in_block(def) + 1;
    std::vector<ir::Value*> operands;
    for (ir::Value* v : def.operands)
      operands.push_back(convert_to(f_, b, at, v, operand_layout_for(def, want), def.loc));
    ir::Type t = def.result()->type;
    t.layout = want;
    ir::Op& clone = insert_op(f_, b, at, def.kind, operands, {t}, def.loc);
    clone.attrs = def.attrs;
    memo_[key] = clone.result();
    return clone.result();
  }

  ir::Function& f_;
  const bool dot_operands_only_;
  bool changed_ = false;
  std::map<std::string, ir::Value*> memo_;
  // Per shape, the layout of the access that holds the most elements per thread (a bounds
  // check's report writes one word from a single thread in the default layout; the checked
  // load beside it was coalesced).
  std::map<std::vector<int64_t>, ir::LayoutPtr> access_layouts_;
};

} // namespace

void remove_layout_conversions(ir::Function& f, bool dot_operands_only) {
  Remover(f, dot_operands_only).run();
}

} // namespace tritium::gpu
