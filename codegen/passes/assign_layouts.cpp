// Layout assignment: every tensor value gets a distributed layout. Sources take the default
// blocked layout of their shape; elementwise ops, broadcasts, loads and stores take their first
// tensor operand's and convert the others; reductions produce a slice of their input's layout,
// which expand_dims turns back into the parent for free; reshapes, transposes, joins and splits
// produce the layout they make of their operand's (no data moves: linear_layouts.cpp);
// concatenations and dots produce the default layout. Loop-carried values keep their initial
// value's layout; yields convert to it.
//
// "Default" is refined by anchors: values tied together by elementwise ops, memory accesses and
// loop-carried edges (same shape, so they should share a layout) form one class, and a class
// that contains a load, store or atomic starts in that access's coalesced layout. Most kernels
// then need no conversion at all; coalesce and remove_layout_conversions handle the rest.
#include "gpu_ir/layout.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <unordered_map>

namespace tritium::gpu {
namespace {

using ir::OpCategory;
using ir::OpKind;

class Assign {
public:
  Assign(ir::Function& f, const GpuFeatures& t) : f_(f), t_(t) {}

  void run() {
    coalesced_ = coalesced_layouts(f_, analyze_axis_info(f_), t_);
    unite_block(f_.entry());
    anchor_block(f_.entry(), false);
    anchor_block(f_.entry(), true);
    block(f_.entry());
  }

private:
  // --- anchor classes (union-find over values of one shape) ---
  ir::Value* find(ir::Value* v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v)
      return v;
    return it->second = find(it->second);
  }
  void unite(ir::Value* a, ir::Value* b) {
    if (a->type.is_scalar() || b->type.is_scalar() || a->type.shape != b->type.shape)
      return;
    a = find(a);
    b = find(b);
    if (a != b)
      parent_[a] = b;
  }
  void unite_block(ir::Block& b) {
    for (auto& op : b.ops) {
      ir::Op& o = *op;
      for (auto& r : o.regions)
        unite_block(*r->block);
      if (ir::has_trait(o.kind, ir::OpTrait::Lanewise)) { // one shape: one class
        ir::Value* first = o.results.empty() ? o.operands[0] : o.result();
        for (ir::Value* v : o.operands)
          unite(first, v);
      } else if (o.kind == OpKind::For) {
        ir::Block& body = o.body();
        for (size_t k = 3; k < o.operands.size(); ++k) {
          unite(o.operands[k], body.args[k - 2]);
          unite(o.operands[k], o.results[k - 3]);
          unite(o.operands[k], body.terminator()->operands[k - 3]);
        }
      } else if (o.kind == OpKind::If) { // a value chosen between two: one class with both
        for (size_t k = 0; k < o.results.size(); ++k)
          for (int r = 0; r < 2; ++r)
            unite(o.results[k], o.body(r).terminator()->operands[k]);
      }
    }
  }
  // A class's anchor is its first access on the hot path; only a class whose accesses all sit
  // in an If's unlikely region (a checked access's fault report, say) takes one from there,
  // so a rarely run store cannot choose the layout every iteration computes in.
  void anchor_block(ir::Block& b, bool cold_pass, bool cold = false) {
    for (auto& op : b.ops) {
      ir::Op& o = *op;
      for (size_t r = 0; r < o.regions.size(); ++r) {
        bool unlikely = o.kind == OpKind::If && o.has_attr(attr::likely) &&
                        static_cast<int64_t>(r) != (o.int_attr(attr::likely) ? 1 : 0);
        anchor_block(*o.regions[r]->block, cold_pass, cold || unlikely);
      }
      bool memory = o.kind == OpKind::Load || o.kind == OpKind::Store ||
                    o.kind == OpKind::AtomicRmw || o.kind == OpKind::AtomicCas;
      if (!memory || o.operands[0]->type.is_scalar() || cold != cold_pass)
        continue;
      ir::Value* root = find(o.operands[0]);
      if (anchor_.count(root))
        continue;
      if (auto it = coalesced_.find(&o); it != coalesced_.end())
        anchor_[root] = it->second;
    }
  }
  // The layout a new tensor value should take: its class's anchor, else the default.
  ir::LayoutPtr preferred(ir::Value* v) {
    auto it = anchor_.find(find(v));
    return it != anchor_.end() ? it->second : dflt(v->type.shape);
  }

  ir::LayoutPtr dflt(const std::vector<int64_t>& shape) {
    return default_layout(shape, t_.num_warps, t_.warp_size);
  }
  static void set(ir::Value* v, ir::LayoutPtr l) {
    if (!v->type.is_scalar())
      v->type.layout = std::move(l);
  }
  static ir::LayoutPtr layout_of(ir::Value* v) { return v->type.layout; }

  void block(ir::Block& b) {
    for (size_t i = 0; i < b.ops.size(); ++i)
      op(b, i);
  }

  // Converts the terminator's operands of `region_block` to the layouts of `targets`.
  void convert_yield(ir::Block& rb, const std::vector<ir::Value*>& targets, size_t first) {
    ir::Op& y = *rb.terminator();
    size_t at = rb.ops.size() - 1;
    for (size_t k = 0; k < targets.size(); ++k)
      y.operands[first + k] =
          convert_to(f_, rb, at, y.operands[first + k], targets[k]->type.layout, y.loc);
  }

  void op(ir::Block& b, size_t& i) {
    ir::Op& o = *b.ops[i];
    auto convert_operand = [&](size_t k, const ir::LayoutPtr& l) {
      o.operands[k] = convert_to(f_, b, i, o.operands[k], l, o.loc);
    };
    const OpCategory cat = op_category(o.kind);
    switch (o.kind) {
    case OpKind::For: {
      ir::Block& body = o.body();
      for (size_t k = 3; k < o.operands.size(); ++k) {
        set(body.args[k - 2], layout_of(o.operands[k]));
        set(o.results[k - 3], layout_of(o.operands[k]));
      }
      block(body);
      convert_yield(body, {body.args.begin() + 1, body.args.end()}, 0);
      return;
    }
    case OpKind::While: {
      ir::Block& before = o.body(0);
      ir::Block& after = o.body(1);
      for (size_t k = 0; k < o.operands.size(); ++k)
        set(before.args[k], layout_of(o.operands[k]));
      block(before);
      ir::Op& cond = *before.terminator();
      for (size_t k = 0; k < after.args.size(); ++k) {
        set(after.args[k], layout_of(cond.operands[k + 1]));
        set(o.results[k], layout_of(cond.operands[k + 1]));
      }
      block(after);
      convert_yield(after, before.args, 0);
      return;
    }
    case OpKind::If: {
      if (o.has_attr(attr::likely)) {
        // The likely region's values as they are; only the other one converts.
        block(o.body(0));
        block(o.body(1));
        const ir::Op& yield = *o.body(o.int_attr(attr::likely) ? 1 : 0).terminator();
        for (size_t k = 0; k < o.results.size(); ++k)
          set(o.results[k], layout_of(yield.operands[k]));
      } else {
        for (ir::Value* r : o.results)
          set(r, preferred(r));
        block(o.body(0));
        block(o.body(1));
      }
      convert_yield(o.body(0), o.results, 0);
      convert_yield(o.body(1), o.results, 0);
      return;
    }
    case OpKind::Reduce:
    case OpKind::Scan: {
      ir::LayoutPtr l = layout_of(o.operands[0]);
      for (size_t k = 1; k < o.operands.size(); ++k)
        convert_operand(k, l);
      int axis = static_cast<int>(o.int_attr(attr::axis));
      // keep_dims keeps the axis (size 1): the input's layout fits it as is.
      bool keep = o.kind == OpKind::Scan || o.int_attr(attr::keep_dims, 0);
      for (ir::Value* r : o.results)
        set(r, keep ? l : slice_layout(axis, l));
      return; // the combine region works on scalars
    }
    case OpKind::ExpandDims: {
      ir::Value* x = o.operands[0];
      ir::Value* r = o.result();
      int axis = static_cast<int>(o.int_attr(attr::axis));
      if (x->type.is_scalar()) {
        set(r, dflt(r->type.shape));
        return;
      }
      auto* s = dynamic_cast<const SliceLayout*>(layout_of(x).get());
      if (s && s->dim == axis) {
        set(r, s->parent);
        return;
      }
      ir::LayoutPtr parent = dflt(r->type.shape);
      convert_operand(0, slice_layout(axis, parent));
      set(r, parent);
      return;
    }
    case OpKind::Join:
      // Both halves in one layout, so that a thread holds a[i] and b[i].
      if (!o.operands[0]->type.is_scalar())
        convert_operand(1, layout_of(o.operands[0]));
      [[fallthrough]];
    case OpKind::Reshape:
    case OpKind::Trans:
    case OpKind::Split:
      // The layout the op makes of its operand's: the data stays where it is.
      for (size_t k = 0; k < o.results.size(); ++k) {
        ir::LayoutPtr l = induced_layout(o, k);
        set(o.results[k], l ? l : dflt(o.results[k]->type.shape));
      }
      return;
    case OpKind::Cat:
      for (ir::Value* r : o.results)
        set(r, dflt(r->type.shape));
      return;
    case OpKind::Dot:
      set(o.result(), layout_of(o.operands[2]));
      return;
    case OpKind::Histogram: // counts in shared memory, whatever x's layout; bins in the default
      if (o.operands.size() > 1)
        convert_operand(1, layout_of(o.operands[0]));
      set(o.result(), dflt(o.result()->type.shape));
      return;
    default:
      break;
    }
    if (cat == OpCategory::Source || o.kind == OpKind::Splat) {
      for (ir::Value* r : o.results)
        set(r, preferred(r));
      return;
    }
    // Elementwise, broadcast, memory and debug ops: the class's anchor decides, else the
    // first tensor operand.
    ir::LayoutPtr l;
    if (!o.results.empty() && !o.result()->type.is_scalar() && anchor_.count(find(o.result())))
      l = preferred(o.result());
    else if (o.results.empty() && !o.operands.empty() && !o.operands[0]->type.is_scalar() &&
             anchor_.count(find(o.operands[0])))
      l = preferred(o.operands[0]);
    for (ir::Value* v : o.operands)
      if (!l && !v->type.is_scalar()) {
        l = layout_of(v);
        break;
      }
    if (!l) {
      for (ir::Value* r : o.results)
        set(r, dflt(r->type.shape));
      return;
    }
    for (size_t k = 0; k < o.operands.size(); ++k)
      if (!o.operands[k]->type.is_scalar())
        convert_operand(k, l);
    for (ir::Value* r : o.results)
      set(r, l);
  }

  ir::Function& f_;
  const GpuFeatures& t_;
  std::unordered_map<const ir::Op*, ir::LayoutPtr> coalesced_;
  std::unordered_map<ir::Value*, ir::Value*> parent_;
  std::unordered_map<ir::Value*, ir::LayoutPtr> anchor_;
};

} // namespace

void assign_layouts(ir::Function& f, const GpuFeatures& target) {
  Assign(f, target).run();
}

} // namespace tritium::gpu
