// A fusion group's one loop (or loop nest): every op of the group computed per element, what
// other groups read stored to buffers, masked loads and stores split where all masks hold.
#include "inner_lanes.hpp"
#include "lowering.hpp"
#include "target.hpp"
#include "transpose_copy.hpp"
#include "llvm/guarded.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpCategory;
using ir::OpKind;

class GroupLowering {
public:
  GroupLowering(KernelLowering& l, KernelLowering::Group g);
  void run();

private:
  using Values = std::unordered_map<const ir::Value*, llvm::Value*>;

  bool choose_outputs();
  void choose_loop_shape();
  void collect_masks();
  void element(const std::vector<llvm::Value*>& idx);
  llvm::Value* element_of(const Op& op, const std::vector<llvm::Value*>& idx, llvm::Value* fl,
                          Values& in);
  llvm::Value* get(const ir::Value* v, const std::vector<llvm::Value*>& idx, llvm::Value* fl,
                   Values& in);
  void emit();
  void emit_split();
  void emit_split_inner();
  void prefetch_and_emit();
  void copy_transposed_reads();
  void prefetch_rows_ahead(const std::vector<llvm::Value*>& rows, int64_t n);

  KernelLowering& L;
  llvm::IRBuilder<>& b;
  KernelLowering::Group g;
  std::unordered_set<const Op*> members;
  std::vector<std::pair<const ir::Value*, View>> outputs; // values read outside the group
  bool stores = false;
  std::vector<const Op*> reloaded_loads_in; // loads of earlier groups' values this one reloads
  bool flat = true;
  std::vector<int64_t> space;
  std::vector<const ir::Value*> masks;
  bool split = false;
  bool split_inner = false;    // a loop nest's innermost loop split per row (emit_split_inner)
  bool masks_true = false;     // lanes of the split's first loop
  bool from_snapshots = false; // the version for rows copied aside (lower_reload.cpp)
  const Op* streaming = nullptr;
  std::vector<std::pair<const ir::Value*, View>> untransposed; // views to put back after
};

GroupLowering::GroupLowering(KernelLowering& l, KernelLowering::Group group)
    : L(l), b(l.builder_), g(std::move(group)), members(g.ops.begin(), g.ops.end()) {}

// Only values read outside the group get a buffer, and not those that every reader (other
// groups) recomputes from the launch alone (offsets, masks) or reloads from memory
// (lower_reload.cpp). Whether the group has anything to do.
bool GroupLowering::choose_outputs() {
  for (const Op* op : g.ops)
    for (ir::Value* r : op->results) {
      auto& us = L.users_[r];
      auto outside = [&](const Op* u) { return !members.count(u); };
      if ((!std::any_of(us.begin(), us.end(), outside) && !L.fusion_.division_leaf(r)) ||
          L.lazy_init_values_.count(r))
        continue;
      bool recomputed = L.fusion_.rematerializable(r) && !L.fusion_.read_from_buffer(r);
      if (recomputed || L.reloads_.try_reload(r, members))
        continue;
      if (const View* carry = L.fusion_.carried_in_place(r, members))
        outputs.emplace_back(r, *carry);
      else
        outputs.emplace_back(r, L.new_buffer(r->type.elem, r->type.shape));
    }
  for (const Op* op : g.ops)
    if (op->kind == OpKind::Store) {
      L.reloads_.guard_reloads(*op);
      stores = true;
    }
  return !outputs.empty() || stores;
}

// One flat loop when every tensor read is contiguous in the group's shape: the best case
// for the vectorizer. Otherwise a loop nest with the innermost dimension last.
void GroupLowering::choose_loop_shape() {
  std::vector<const ir::Value*> reloads;
  for (const Op* op : g.ops)
    for (ir::Value* o : op->operands)
      if (L.reloads_.is_reloaded(o) && !members.count(o->def) &&
          std::find(reloads.begin(), reloads.end(), o) == reloads.end())
        reloads.push_back(o);
  reloaded_loads_in = L.reloads_.reloaded_loads(reloads);
  for (const Op* op : g.ops) {
    if (op->kind == OpKind::Arange && g.shape.size() != 1)
      flat = false;
    for (ir::Value* o : op->operands) {
      if (o->type.is_scalar() || g.defines.count(o) || L.reloads_.is_reloaded(o))
        continue;
      if (L.fusion_.rematerializable(o) ? g.shape.size() > 1 : !contiguous(L.values_.at(o).view))
        flat = false;
    }
  }
  space = flat ? std::vector<int64_t>{std::accumulate(g.shape.begin(), g.shape.end(), int64_t{1},
                                                      std::multiplies<>())}
               : g.shape;
}

// A masked vector load of memory that is not in cache costs several times a plain one (an
// AMD Zen 5: a fused f16 row copy with `cols < n` masks moved 10 GB/s where the same loop
// without masks moved 40). Where every mask of a 1-D group is recomputed from the launch
// (`offs < n`), the loop is split after the leading lanes where all masks hold: those load
// and store unconditionally, the rest as before (none, for a full block).
//
// A loop nest (2-D tiles, `rm < M` and `rn < N`) splits its innermost loop in every row where
// its masks' lanes are known in closed form (inner_lanes.hpp): a 64x64 fp16 transpose on the CPU
// moved 2 GB/s with a branch around every element.
void GroupLowering::collect_masks() {
  split = flat && g.shape.size() == 1;
  split_inner = !flat && g.shape.size() > 1 && reloaded_loads_in.empty();
  for (const Op* op : g.ops) {
    const auto& o = op->operands;
    const ir::Value* mask = op->kind == OpKind::Load && o.size() > 1    ? o[1]
                            : op->kind == OpKind::Store && o.size() > 2 ? o[2]
                                                                        : nullptr;
    if (!mask)
      continue;
    masks.push_back(mask);
    split = split && L.fusion_.rematerializable(mask);
    split_inner = split_inner && L.fusion_.rematerializable(mask);
  }
  for (const Op* load : reloaded_loads_in)
    if (load->operands.size() > 1)
      masks.push_back(load->operand(1));
  split = split && !masks.empty();
  split_inner = split_inner && !masks.empty();
}

llvm::Value* GroupLowering::get(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                                llvm::Value* fl, Values& in) {
  if (std::optional<bool> known = L.fusion_.known_mask(v))
    return static_cast<llvm::Value*>(b.getInt1(*known));
  return L.reloads_.is_reloaded(v) ? L.reloads_.reload(v, idx[0], masks_true, from_snapshots, in)
                                   : L.fusion_.group_element(v, idx, fl, in);
}

// One op of the group at one element; its value, or nullptr for a store.
llvm::Value* GroupLowering::element_of(const Op& op, const std::vector<llvm::Value*>& idx,
                                       llvm::Value* fl, Values& in) {
  const auto& o = op.operands;
  DType t = op.results.empty() ? o[1]->type.elem : op.result()->type.elem;
  auto arg = [&](const ir::Value* v) { return get(v, idx, fl, in); };
  switch (op.kind) {
  case OpKind::Constant:
    return L.elements_.scalar_.constant(op, t);
  case OpKind::Arange:
    return b.CreateTrunc(b.CreateAdd(idx.back(), L.i64(op.int_attr(attr::start))), b.getInt32Ty());
  case OpKind::Splat:
    return arg(o[0]);
  case OpKind::Load: {
    llvm::Value* p = arg(o[0]);
    if (o.size() == 1 || masks_true)
      return L.elements_.load_user(p, t);
    llvm::Value* mask = arg(o[1]);
    llvm::Value* other = o.size() > 2 ? arg(o[2]) : L.elements_.scalar_.zero(t);
    return llvm_ir::guarded(
        b, mask, "load", [&] { return L.elements_.load_user(p, t); }, other);
  }
  case OpKind::Store: {
    llvm::Value* v = arg(o[1]);
    if (llvm::Value* aligned = L.stores_.streaming_pointer(op)) {
      L.elements_.store_user(aligned, v, t);
      L.stores_.mark_streaming(&b.GetInsertBlock()->back());
      return nullptr;
    }
    llvm::Value* p = arg(o[0]);
    if (o.size() == 2 || masks_true) {
      L.elements_.store_user(p, v, t);
      return nullptr;
    }
    return llvm_ir::guarded(b, arg(o[2]), "store", [&]() -> llvm::Value* {
      L.elements_.store_user(p, v, t);
      return nullptr;
    });
  }
  default: {
    std::vector<llvm::Value*> args;
    for (ir::Value* x : o)
      args.push_back(arg(x));
    return L.elements_.elementwise(op, args);
  }
  }
}

void GroupLowering::element(const std::vector<llvm::Value*>& idx) {
  llvm::Value* fl = flat ? idx[0] : nullptr;
  Values in;
  for (const Op* op : g.ops)
    if (llvm::Value* r = element_of(*op, idx, fl, in))
      in[op->result()] = r;
  for (auto& [v, buf] : outputs) {
    llvm::Value* p = fl ? b.CreateInBoundsGEP(buf.ty, buf.base, fl) : L.element_ptr(buf, idx);
    b.CreateStore(L.elements_.to_scratch(in.at(v), v->type.elem), p);
  }
}

void GroupLowering::emit() {
  auto each = [&](const std::vector<llvm::Value*>& idx) { element(idx); };
  if (split)
    return emit_split();
  if (split_inner)
    return emit_split_inner();
  if (streaming && streaming->operands.size() == 2)
    return L.stores_.store_loop(streaming, L.i64(0), L.i64(space[0]),
                                [&](llvm::Value* i) { element({i}); });
  L.loop_nest(space, each, flat);
}

// The leading lanes where every mask holds without masks; then the rest, skipped where no
// lane needs it, or in two parts where every mask's end is known.
void GroupLowering::emit_split() {
  auto flat_element = [&](llvm::Value* i) { element({i}); };
  llvm::Value* n = L.i64(space[0]);
  llvm::Value* k = L.fusion_.leading_true_lanes(masks, space[0]);
  masks_true = true;
  for (const ir::Value* m : masks)
    L.fusion_.known_masks_[m] = true;
  L.stores_.store_loop(streaming, L.i64(0), k, flat_element);
  L.fusion_.known_masks_.clear();
  masks_true = false;
  llvm::Value* needed = L.fusion_.masked_lanes_needed(g.ops, masks, outputs.empty(), space[0]);
  if (!needed) {
    llvm::Value* off = L.fusion_.all_masks_off_from(masks, space[0]);
    if (!off)
      return L.loop(k, n, 1, flat_element, true);
    // Past every mask's end, loads read their `other` and stores store nothing: no masked
    // accesses (LLVM scalarizes masked f16 loads), often a loop-invariant value.
    L.loop(k, off, 1, flat_element, true);
    for (const ir::Value* m : masks)
      L.fusion_.known_masks_[m] = false;
    L.loop(off, n, 1, flat_element, true);
    L.fusion_.known_masks_.clear();
    return;
  }
  auto* rest = llvm::BasicBlock::Create(L.ctx_, "masked", L.fn_);
  auto* done = llvm::BasicBlock::Create(L.ctx_, "masked.done", L.fn_);
  b.CreateCondBr(needed, rest, done);
  b.SetInsertPoint(rest);
  L.loop(k, n, 1, flat_element, true);
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// Per row of the outer loops: the leading lanes where every mask holds, without masks; the
// lanes where some may hold, masked; the lanes where none holds, with masks known false (loads
// read `other`, stores store nothing). A mask of another form leaves its row masked throughout.
void GroupLowering::emit_split_inner() {
  std::vector<int64_t> outer(space.begin(), space.end() - 1);
  const int64_t n = space.back();
  L.loop_nest(outer, [&](const std::vector<llvm::Value*>& rows) {
    prefetch_rows_ahead(rows, n);
    InnerLanes lanes(L, rows, n);
    llvm::Value* all = L.i64(n);
    llvm::Value* none = L.i64(0);
    for (const ir::Value* m : masks) {
      auto p = lanes.prefix(m);
      if (!p) {
        all = L.i64(0);
        none = L.i64(n);
        break;
      }
      all = b.CreateSelect(b.CreateICmpSLT(p->count, all), p->count, all);
      none = b.CreateSelect(b.CreateICmpSGT(p->end, none), p->end, none);
    }
    auto lane = [&](llvm::Value* i) {
      std::vector<llvm::Value*> idx = rows;
      idx.push_back(i);
      element(idx);
    };
    auto known = [&](std::optional<bool> value) {
      L.fusion_.known_masks_.clear();
      masks_true = value == true;
      if (value)
        for (const ir::Value* m : masks)
          L.fusion_.known_masks_[m] = *value;
    };
    known(true);
    L.loop(L.i64(0), all, 1, lane, true);
    known(std::nullopt);
    L.loop(all, none, 1, lane, true);
    known(false);
    L.loop(none, L.i64(n), 1, lane, true);
    known(std::nullopt);
  });
}

// A tile's rows lie a row of the tensor apart (16 KiB for an fp16 8192-wide matrix): the
// hardware prefetchers do not follow them, and a row's few lines are read in a few dozen
// instructions, so the out-of-order window holds the misses of about three rows. Loads whose
// rows span one to eight lines prefetch the row kRowsAhead further (past the tile's last rows,
// lines it will not read: a prefetch never faults). The stores' rows prefetched for writing
// as well did not help.
void GroupLowering::prefetch_rows_ahead(const std::vector<llvm::Value*>& rows, int64_t n) {
  constexpr int64_t kRowsAhead = 8, kLine = 64;
  if (rows.empty())
    return;
  for (const Op* op : g.ops) {
    if (op->kind != OpKind::Load || !L.fusion_.rematerializable(op->operand(0)))
      continue;
    const int64_t bytes = n * L.elements_.memory_bytes(op->result()->type.elem);
    if (bytes < kLine || bytes > 8 * kLine)
      continue;
    std::vector<llvm::Value*> idx = rows;
    idx.back() = b.CreateAdd(idx.back(), L.i64(kRowsAhead));
    idx.push_back(L.i64(0));
    Values in;
    llvm::Value* first = L.fusion_.remat(op->operand(0), idx, false, in);
    auto prefetch = [&](int64_t offset) {
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {b.getPtrTy()},
                        {b.CreateGEP(b.getInt8Ty(), first, L.i64(offset)), b.getInt32(0),
                         b.getInt32(3), b.getInt32(1)});
    };
    for (int64_t at = 0; at < bytes; at += kLine)
      prefetch(at);
    prefetch(bytes - 1); // the last line, where the row does not start one
  }
}

// Prefetches pay off in a pass that computes long enough per element to hide them and moves
// no memory of its own: softmax's exp pass gained 2-17 %, while RMSNorm's output pass (a
// store) and the looped layer norm's variance pass (a flat loop before its loops were
// inlined) lost 4-17 %. (A reduction prefetches too: lower_collective.cpp.)
void GroupLowering::prefetch_and_emit() {
  std::vector<const Op*> accesses = reloaded_loads_in;
  for (const Op* op : g.ops)
    if (op->kind == OpKind::Load || op->kind == OpKind::Store)
      accesses.push_back(op);
  bool heavy = std::any_of(g.ops.begin(), g.ops.end(), [](const Op* op) {
    auto c = ir::op_category(op->kind);
    return c == OpCategory::Math || c == OpCategory::Extern;
  });
  // A pass whose store streams past the caches (lower_streaming_store.cpp) writes memory
  // without reading it: the next block's reads overlap its writes, as in a plain copy loop.
  if (flat && heavy && !stores)
    L.prefetch_.begin_prefetch(accesses, space[0]);
  else if (flat && streaming)
    L.prefetch_.begin_prefetch(accesses, space[0], L.stores_.launch_streams(*streaming), true);
  else
    L.prefetch_.begin_prefetch(accesses, 0);
  L.prefetch_.prefetch_strips_ = !L.prefetch_.prefetching_.empty();
  L.reloads_.emit_reload_versions(reloaded_loads_in, "group", [&](bool snapshots) {
    from_snapshots = snapshots;
    emit();
    from_snapshots = false;
    return ReloadLowering::VersionValues{};
  });
  L.prefetch_.end_prefetch();
}

// Tiles this loop nest reads transposed (transpose_copy.hpp) are copied first, blocks
// transposed in registers, and the group reads the copy: only here, as another reader may not
// run where this group does.
void GroupLowering::copy_transposed_reads() {
  const int64_t lanes = L.target().vector_bits / 32;
  if (flat || !reloaded_loads_in.empty())
    return;
  for (const Op* op : g.ops)
    for (const ir::Value* o : op->operands) {
      if (is_rank0(o) || g.defines.count(o) || L.fusion_.rematerializable(o) ||
          L.reloads_.is_reloaded(o) || L.lazy_init_.count(o))
        continue;
      auto it = L.values_.find(o);
      if (it == L.values_.end() || !transposed_view(it->second.view, lanes) ||
          std::any_of(untransposed.begin(), untransposed.end(),
                      [&](const auto& u) { return u.first == o; }))
        continue;
      View copy = L.new_buffer(o->type.elem, o->type.shape);
      transposed_copy(L, it->second.view, copy, lanes);
      untransposed.emplace_back(o, it->second.view);
      it->second.view = copy;
    }
}

void GroupLowering::run() {
  if (!choose_outputs())
    return; // every value it computes is recomputed or reloaded where it is read
  choose_loop_shape();
  collect_masks();
  copy_transposed_reads();
  // The one store of a 1-D group may stream past the caches (lower_streaming_store.cpp) in the
  // lanes where it stores unconditionally.
  streaming = L.stores_.streaming_store(g.ops, flat && g.shape.size() == 1);
  prefetch_and_emit();
  for (auto& [v, view] : untransposed)
    L.set_view(v, view);
  for (auto& [v, buf] : outputs)
    L.set_view(v, buf);
}

void KernelLowering::flush() {
  if (group_.ops.empty())
    return;
  Group g = std::move(group_);
  group_ = Group{};
  GroupLowering(*this, std::move(g)).run();
}

} // namespace tritium::cpu
