#include "passes/pipeline_analysis.hpp"

#include "gpu_ir/conversion_plan.hpp"
#include "gpu_ir/layout.hpp"
#include "passes/iteration_ahead.hpp"
#include "passes/rewrite.hpp"

#include "passes/passes.hpp"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace tritium::gpu {

using ir::OpKind;

ir::Op* only_user(const ir::Value* v, const ir::Block& scope) {
  ir::Op* user = nullptr;
  int n = 0;
  std::function<void(const ir::Block&)> scan = [&](const ir::Block& b) {
    for (const auto& op : b.ops) {
      for (const ir::Value* o : op->operands)
        if (o == v) {
          ++n;
          user = op.get();
        }
      for (const auto& r : op->regions)
        scan(*r->block);
    }
  };
  scan(scope);
  return n == 1 ? user : nullptr;
}

bool zero_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  while (d && (d->kind == OpKind::Splat || d->kind == OpKind::ConvertLayout))
    d = d->operands[0]->def;
  if (!d || d->kind != OpKind::Constant)
    return false;
  const auto& a = d->attrs.at(attr::value);
  return std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) == 0
                                            : std::get<double>(a) == 0.0;
}

bool positive_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d || d->kind != OpKind::Constant)
    return false;
  const auto* i = std::get_if<int64_t>(&d->attrs.at(attr::value));
  return i && *i > 0;
}

ir::Op* operand_conversion(const ir::Op& load, const ir::Block& scope, bool through_broadcast) {
  const ir::Op* at = &load;
  for (int depth = 0; depth < 16; ++depth) {
    ir::Op* u = at->results.size() == 1 ? only_user(at->result(), scope) : nullptr;
    if (!u || u->parent != load.parent)
      return nullptr;
    if (u->kind == OpKind::ConvertLayout)
      return dynamic_cast<const DotOperandLayout*>(u->result()->type.layout.get()) ||
                     dynamic_cast<const SharedLayout*>(u->result()->type.layout.get())
                 ? u
                 : nullptr;
    const bool transposed = u->kind == OpKind::Trans && u->result()->type.rank() == 2;
    const bool widened = through_broadcast && u->kind == OpKind::Broadcast;
    if ((!ir::is_elementwise(u->kind) && !transposed && !widened) || u->results.size() != 1)
      return nullptr;
    at = u;
  }
  return nullptr;
}

ir::Op* direct_trans(const ir::Op& load, const ir::Block& scope) {
  ir::Op* t = only_user(load.result(), scope);
  if (!t || t->kind != OpKind::Trans)
    return nullptr;
  ir::Op* cvt = operand_conversion(load, scope);
  return cvt && only_user(t->result(), scope) == cvt &&
                 dynamic_cast<const DotOperandLayout*>(cvt->result()->type.layout.get())
             ? t
             : nullptr;
}

bool tiled(const ir::Value* v, const ir::Op& tiles, const ir::Op& loop, int depth) {
  if (!defined_in(v, tiles.body()) || v == tiles.body().args[0] || v == loop.body().args[0])
    return true;
  const ir::Op* d = v->def;
  if (!d || depth > 48 || !d->regions.empty() || !is_pure(*d) || d->kind == OpKind::Load ||
      (d->parent != &tiles.body() && d->parent != &loop.body()))
    return false;
  for (const ir::Value* x : d->operands)
    if (!tiled(x, tiles, loop, depth + 1))
      return false;
  return true;
}

ir::Op* flattened_tile_loop(const ir::Op& loop, const std::vector<ir::Op*>& loads) {
  ir::Region* region = loop.parent->parent;
  ir::Op* o = region ? region->parent : nullptr;
  if (!o || o->kind != OpKind::For || !o->int_attr(attr::flatten, 0) ||
      !positive_constant(o->operands[2]) || !positive_constant(loop.operands[2]) ||
      o->operands[0]->type != loop.operands[0]->type)
    return nullptr;
  for (int i = 0; i < 3; ++i)
    if (!invariant_in(loop.operands[i], o->body(), 0))
      return nullptr;
  for (const ir::Op* l : loads)
    for (size_t k = 0; k < std::min<size_t>(2, l->operands.size()); ++k)
      if (!tiled(l->operands[k], *o, loop))
        return nullptr;
  return o;
}

int64_t conversion_scratch(const ir::Op& op, int64_t max_shared) {
  if (op.kind != OpKind::ConvertLayout || !op.operands[0]->type.layout ||
      !op.result()->type.layout ||
      dynamic_cast<const SharedLayout*>(op.result()->type.layout.get()) ||
      dynamic_cast<const SharedLayout*>(op.operands[0]->type.layout.get()))
    return 0;
  const ir::Type& src = op.operands[0]->type;
  const LinearLayout from = resolve(src.layout, src.shape);
  const LinearLayout to = resolve(op.result()->type.layout, op.result()->type.shape);
  return converts_in_registers(from, to)
             ? 0
             : conversion_round_scratch(from, to, elem_bytes(src.elem), max_shared);
}

int64_t tile_bytes(const ir::Op& loop, const std::vector<ir::Op*>& loads) {
  std::unordered_set<const ir::Op*> seen;
  int64_t bytes = 0;
  auto add = [&](const ir::Op& c) {
    if (c.kind != OpKind::ConvertLayout ||
        !dynamic_cast<const SharedLayout*>(c.result()->type.layout.get()) ||
        std::find(loads.begin(), loads.end(), c.operands[0]->def) != loads.end() ||
        !seen.insert(&c).second)
      return;
    bytes += shared_tile_bytes(c.result()->type);
  };
  std::function<void(const ir::Block&)> walk = [&](const ir::Block& b) {
    for (const auto& op : b.ops) {
      add(*op);
      for (const ir::Value* v : op->operands)
        if (v->def)
          add(*v->def); // made before the loop, read in it
      for (const auto& r : op->regions)
        walk(*r->block);
    }
  };
  walk(loop.body());
  return bytes;
}

int64_t loop_scratch_bytes(const ir::Op& loop, const std::vector<ir::Op*>& loads,
                           const ir::Block& scope, int64_t max_shared) {
  std::unordered_set<const ir::Op*> ringed;
  for (const ir::Op* l : loads)
    ringed.insert(operand_conversion(*l, scope));
  int64_t bytes = 0;
  std::function<void(const ir::Block&)> walk = [&](const ir::Block& b) {
    for (const auto& op : b.ops) {
      if (op->kind == OpKind::ConvertLayout && !ringed.count(op.get()) &&
          !op->result()->type.is_scalar())
        bytes = std::max(bytes, conversion_scratch(*op, max_shared));
      for (const auto& r : op->regions)
        walk(*r->block);
    }
  };
  walk(loop.body());
  return bytes;
}

int64_t outer_scratch_bytes(const ir::Op& top, const ir::Op& loop, int64_t max_shared) {
  int64_t bytes = 0;
  std::function<void(const ir::Block&)> walk = [&](const ir::Block& b) {
    for (const auto& op : b.ops) {
      if (op.get() == &loop)
        continue;
      if (op->kind == OpKind::ConvertLayout && op->result()->type.rank() == 2)
        bytes = std::max(bytes, conversion_scratch(*op, max_shared));
      for (const auto& r : op->regions)
        walk(*r->block);
    }
  };
  if (&top != &loop)
    for (const auto& r : top.regions)
      walk(*r->block);
  return bytes;
}

namespace {

// Whether each of the dot's a and b in shared memory is a ring slot (a load's conversion, maybe
// of its transpose), made outside the loop, or converted in the body for this dot alone (then
// added to `turns`).
bool operands_stay(const ir::Op& loop, const ir::Op& dot, const std::vector<ir::Op*>& loads,
                   const ir::Block& scope, std::vector<ir::Op*>& turns) {
  for (int i = 0; i < 2; ++i) {
    const ir::Value* v = dot.operands[i];
    if (!dynamic_cast<const SharedLayout*>(v->type.layout.get()) || !defined_in(v, loop.body()))
      continue;
    ir::Op* d = v->def;
    if (d && d->kind == OpKind::Trans) // a view of the tile transposed (b as [N, K])
      d = d->operands[0]->def;
    const ir::Op* src = d && d->kind == OpKind::ConvertLayout ? d->operands[0]->def : nullptr;
    if (src && src->kind == OpKind::Trans) // read transposed in place (direct_trans)
      src = src->operands[0]->def;
    if (src && std::find(loads.begin(), loads.end(), src) != loads.end())
      continue;
    if (!d || d->kind != OpKind::ConvertLayout || d->parent != &loop.body() ||
        only_user(d->result(), scope) != &dot)
      return false;
    turns.push_back(d);
  }
  return true;
}

// Whether every read of `acc` in the body comes after a wgmma dot (other than `dot`) whose
// wait completes all groups, the one in flight from the iteration before included.
bool reads_after_first_wait(const ir::Op& loop, const ir::Value* acc, const ir::Op* dot) {
  std::function<bool(const ir::Op&)> reads = [&](const ir::Op& o) {
    for (const ir::Value* v : o.operands)
      if (v == acc)
        return true;
    for (const auto& r : o.regions)
      for (const auto& inner : r->block->ops)
        if (reads(*inner))
          return true;
    return false;
  };
  bool waited = false;
  for (const auto& op : loop.body().ops) {
    if (reads(*op) && !waited)
      return false;
    if (op.get() == dot)
      return waited;
    auto* m = op->kind == OpKind::Dot
                  ? dynamic_cast<const MmaLayout*>(op->result()->type.layout.get())
                  : nullptr;
    waited = waited || (m && m->unit == MatrixUnit::Wgmma);
  }
  return false;
}

} // namespace

Deferral deferred_wgmma(const ir::Op& loop, const std::vector<ir::Op*>& loads,
                        const ir::Block& scope) {
  const ir::Block& body = loop.body();
  const ir::Op* y = body.terminator();
  Deferral chains, other;
  for (ir::Op* l : loads) {
    ir::Op* cvt = only_user(l->result(), scope);
    ir::Op* dot = cvt ? only_user(cvt->result(), scope) : nullptr;
    if (dot && dot->kind == OpKind::Trans) // b as [N, K], read through its transpose
      dot = only_user(dot->result(), scope);
    // (Not one that adds partial sums in f32, max_num_imprecise_acc: it waits in its loop.)
    auto* m = dot && dot->kind == OpKind::Dot && dot->parent == &body &&
                      !dot->has_attr(attr::max_num_imprecise_acc)
                  ? dynamic_cast<const MmaLayout*>(dot->result()->type.layout.get())
                  : nullptr;
    if (!m || m->unit != MatrixUnit::Wgmma || only_user(dot->result(), scope) != y ||
        std::find(chains.dots.begin(), chains.dots.end(), dot) != chains.dots.end())
      continue;
    std::vector<ir::Op*> turns;
    if (!operands_stay(loop, *dot, loads, scope, turns))
      continue;
    auto carried = std::find(y->operands.begin(), y->operands.end(), dot->result());
    if (carried == y->operands.end())
      continue;
    ir::Value* acc = body.args[static_cast<size_t>(carried - y->operands.begin()) + 1];
    if (dot->operands[2] == acc && only_user(acc, scope) == dot) {
      chains.dots.push_back(dot);
      chains.turns.insert(chains.turns.end(), turns.begin(), turns.end());
    } else if (other.dots.empty() && reads_after_first_wait(loop, acc, dot)) {
      other.dots.push_back(dot);
      other.turns = std::move(turns);
    }
  }
  if (chains.dots.empty())
    return other;
  // In the body's order: the copies that go after them follow the last.
  std::sort(chains.dots.begin(), chains.dots.end(), [&](const ir::Op* a, const ir::Op* b) {
    return index_in_block(*a) < index_in_block(*b);
  });
  chains.chained = true;
  return chains;
}

std::unordered_set<const ir::Op*> address_ops(const ir::Block& body,
                                              const std::vector<ir::Op*>& loads) {
  std::unordered_set<const ir::Op*> ops;
  std::vector<const ir::Value*> work;
  for (const ir::Op* l : loads)
    work.insert(work.end(), l->operands.begin(), l->operands.end());
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    const ir::Op* d = v->def;
    if (!d || d->parent != &body || !ops.insert(d).second)
      continue;
    work.insert(work.end(), d->operands.begin(), d->operands.end());
  }
  return ops;
}

std::optional<TmaPlan> plan_tma(ir::Function& f, const ir::Op& loop, const ir::Op* tiles,
                                const std::vector<ir::Op*>& loads, const IterationAhead& ahead) {
  TmaPlan plan;
  std::unordered_map<int64_t, ir::Op*> hints;
  ir::walk(f.entry(), [&](ir::Op& op) {
    if (op.kind == OpKind::DescHint)
      hints[op.int_attr(attr::desc)] = &op;
  });
  const AxisInfoMap info = analyze_axis_info(f);
  auto divisible = [&](const ir::Value* v, int64_t by) {
    auto it = info.find(v);
    return it != info.end() && it->second.divisibility[0] % by == 0;
  };
  auto constant = [&](const ir::Value* v) -> std::optional<int64_t> {
    auto it = info.find(v);
    return it == info.end() ? std::nullopt : it->second.constant;
  };
  const ir::Block& nest = tiles ? tiles->body() : loop.body();
  for (ir::Op* l : loads) {
    auto it = hints.find(l->int_attr(attr::desc, -1));
    ir::Op* cvt = only_user(l->result(), f.entry());
    auto* s = dynamic_cast<const SharedLayout*>(cvt->result()->type.layout.get());
    if (it == hints.end() || !s || it->second->parent != l->parent ||
        it->second->operands.size() != 7)
      return std::nullopt;
    const ir::Op& h = *it->second;
    const ir::Type& t = l->result()->type;
    const int64_t eb = elem_bytes(t.elem);
    if (eb > 4) // TMA copies 1-, 2- and 4-byte elements (wgmma takes no wider)
      return std::nullopt;
    // The dimension with stride 1 is the tile's fast one; the other's stride is a multiple of
    // 16 bytes, the base is 16-byte aligned; base, shape and strides are fixed for the nest.
    const int fast = constant(h.operands[4]) == 1 ? 1 : constant(h.operands[3]) == 1 ? 0 : -1;
    if (fast < 0 || s->order[0] != fast || !divisible(h.operands[0], 16) ||
        !divisible(h.operands[4 - fast], std::max<int64_t>(1, 16 / eb)))
      return std::nullopt;
    for (int k = 0; k < 5; ++k)
      if (defined_in(h.operands[k], nest))
        return std::nullopt;
    for (int k = 5; k < 7; ++k)
      if (tiles ? !tiled(h.operands[k], *tiles, loop) : !ahead.predictable(h.operands[k]))
        return std::nullopt;
    // A box row is one swizzle pattern's width (32, 64 or 128 bytes), the layout the
    // hardware's pattern; at most 256 rows and elements.
    const int64_t cols = t.shape[fast], rows = t.shape[1 - fast];
    const int64_t block = s->block_cols ? std::min<int64_t>(s->block_cols, cols) : cols;
    const int64_t row_bytes = block * eb;
    if ((row_bytes != 32 && row_bytes != 64 && row_bytes != 128) || rows > 256 ||
        s->vec * eb != 16 || s->per_phase != 128 / row_bytes || s->max_phase != row_bytes / 16)
      return std::nullopt;
    plan.hints.push_back(it->second);
    plan.fast.push_back(fast);
  }
  return plan;
}

} // namespace tritium::gpu
