// Fusion groups: which values a group recomputes per element from the launch (offsets, masks)
// instead of reading them from a buffer, what every lane of a loop knows about its masks, and
// how an op joins the pending group (lower_group.cpp emits the group's loop).
#include "lowering.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpCategory;
using ir::OpKind;

// Integer, pointer and mask tensors computed from the launch alone (aranges, splats, offsets,
// pointer arithmetic, comparisons, and views of those) are recomputed per element where a
// group uses them instead of being read back from a buffer: addresses then stay affine in the
// loop indices, and the vectorizer emits contiguous (masked) accesses, not gathers/scatters.
//
// Integer division is the exception: recomputed wherever a loop reads it, a `% N` in an
// address (Triton's tutorial 03 wraps its tile rows and columns) divided again on every trip,
// per element along the contiguous dimension. An integer Div or Rem of tensors whose operands
// are rematerializable is a leaf instead (division_leaf): computed once, in a group of its
// own, into a buffer, which the expressions above it read where they are recomputed.
bool FusionLowering::rematerializable(const ir::Value* v) {
  // The cost is the size of the expression tree (shared subexpressions count once per use,
  // as they are recomputed): small trees only, or code size would grow exponentially.
  constexpr int64_t kMaxCost = 48;
  if (is_rank0(v))
    return true;
  if (auto it = remat_.find(v); it != remat_.end())
    return it->second >= 0;
  int64_t cost = -1;
  if (v->def && !v->type.elem.is_float()) {
    const Op& op = *v->def;
    const bool division = op.kind == OpKind::Div || op.kind == OpKind::Rem;
    bool kind_ok = (ir::is_elementwise(op.kind) && !division) || op.kind == OpKind::Arange ||
                   op.kind == OpKind::Constant || op.kind == OpKind::Splat ||
                   op.kind == OpKind::Broadcast || op.kind == OpKind::ExpandDims ||
                   op.kind == OpKind::Trans;
    if (kind_ok) {
      cost = 1;
      for (const ir::Value* o : op.operands) {
        if (is_rank0(o))
          continue;
        if (division_leaf(o)) {
          cost += 1;
          continue;
        }
        if (!rematerializable(o)) {
          cost = -1;
          break;
        }
        cost += remat_.at(o);
      }
      if (cost > kMaxCost)
        cost = -1;
    }
  }
  remat_[v] = cost;
  return cost >= 0;
}

bool FusionLowering::division_leaf(const ir::Value* v) {
  if (is_rank0(v) || !v->def || v->type.elem.is_float() ||
      (v->def->kind != OpKind::Div && v->def->kind != OpKind::Rem))
    return false;
  return std::all_of(v->def->operands.begin(), v->def->operands.end(),
                     [&](const ir::Value* o) { return rematerializable(o); });
}

// Whether some op reads `v` from a buffer: one that is not fused (a reduction, a dot, a
// yield), or a view (broadcast, expand_dims, trans) whose result is read so. Fused readers
// recompute a rematerializable value, and so do they through such views: a 2-D tile's mask
// `(rm < M)[:, None] & (rn < N)[None, :]` stored transposed was written to a buffer per program
// that nothing read.
bool FusionLowering::read_from_buffer(const ir::Value* v) {
  for (const Op* u : k_.users_[v]) {
    if (fusible(*u))
      continue;
    const bool view =
        u->kind == OpKind::Broadcast || u->kind == OpKind::ExpandDims || u->kind == OpKind::Trans;
    if (!view || !rematerializable(u->result()) || read_from_buffer(u->result()))
      return true;
  }
  return false;
}

// Whether two values compute the same thing from the same values: `cols < N` written twice
// (Triton's layer norm masks a load with one and a `where` with the other).
static bool same_computation(const ir::Value* a, const ir::Value* b, int depth = 8) {
  if (a == b)
    return true;
  if (!a->def || !b->def || depth == 0 || a->index != b->index || !(a->type == b->type))
    return false;
  const Op& x = *a->def;
  const Op& y = *b->def;
  if (x.kind != y.kind || !ir::is_elementwise(x.kind) && x.kind != OpKind::Arange &&
                              x.kind != OpKind::Splat && x.kind != OpKind::Constant)
    return false;
  if (x.attrs != y.attrs || x.operands.size() != y.operands.size())
    return false;
  for (size_t i = 0; i < x.operands.size(); ++i)
    if (!same_computation(x.operand(i), y.operand(i), depth - 1))
      return false;
  return true;
}

std::optional<bool> FusionLowering::known_mask(const ir::Value* v) {
  if (known_masks_.empty() || !v->type.elem.is_bool())
    return std::nullopt;
  if (auto it = known_masks_.find(v); it != known_masks_.end())
    return it->second;
  for (const auto& [m, value] : known_masks_)
    if (same_computation(v, m))
      return value;
  return std::nullopt;
}

llvm::Value* FusionLowering::remat(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                                   bool same_index,
                                   std::unordered_map<const ir::Value*, llvm::Value*>& in) {
  if (same_index)
    if (auto it = in.find(v); it != in.end())
      return it->second;
  if (is_rank0(v))
    return k_.scalar(v);
  if (division_leaf(v)) { // its own group wrote it before (fuse)
    const View& w = k_.values_.at(v).view;
    return k_.elements_.from_scratch(k_.builder_.CreateLoad(w.ty, k_.element_ptr(w, idx)),
                                     v->type.elem);
  }
  const Op& op = *v->def;
  auto& b = k_.builder_;
  switch (op.kind) {
  case OpKind::Arange:
    return b.CreateTrunc(b.CreateAdd(idx[0], k_.i64(op.int_attr(attr::start))), b.getInt32Ty());
  case OpKind::Constant:
    return k_.elements_.scalar_.constant(op, v->type.elem);
  case OpKind::Splat:
    return k_.scalar(op.operand(0));
  case OpKind::Broadcast: {
    std::vector<llvm::Value*> j = idx;
    for (size_t d = 0; d < j.size(); ++d)
      if (op.operand(0)->type.shape[d] == 1)
        j[d] = k_.i64(0);
    return remat(op.operand(0), j, false, in);
  }
  case OpKind::ExpandDims: {
    std::vector<llvm::Value*> j = idx;
    j.erase(j.begin() + op.int_attr(attr::axis));
    return remat(op.operand(0), j, false, in);
  }
  case OpKind::Trans: {
    auto order = op.ints_attr(attr::order);
    std::vector<llvm::Value*> j(idx.size());
    for (size_t d = 0; d < order.size(); ++d)
      j[order[d]] = idx[d];
    return remat(op.operand(0), j, false, in);
  }
  default: {
    std::vector<llvm::Value*> args;
    for (const ir::Value* o : op.operands)
      args.push_back(remat(o, idx, same_index, in));
    return k_.elements_.elementwise(op, args);
  }
  }
}

llvm::Value*
FusionLowering::group_element(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                              llvm::Value* flat,
                              std::unordered_map<const ir::Value*, llvm::Value*>& in_group) {
  if (auto it = in_group.find(v); it != in_group.end())
    return it->second;
  if (is_rank0(v))
    return k_.scalar(v);
  // (A flat loop's one index is the element's index only in a 1-D group; a group of higher
  // rank reading a rematerializable value is never flat.)
  if (rematerializable(v) && (!flat || v->type.rank() == 1))
    return remat(v, idx, true, in_group);
  const View& w = k_.values_.at(v).view;
  llvm::Value* p =
      flat ? k_.builder_.CreateInBoundsGEP(
                 w.ty, w.base, k_.builder_.CreateAdd(flat, k_.i64(w.offset), "", true, true))
           : k_.element_ptr(w, idx);
  llvm::Value* r = k_.elements_.from_scratch(k_.builder_.CreateLoad(w.ty, p), v->type.elem);
  if (auto it = k_.lazy_init_.find(v); it != k_.lazy_init_.end() && !it->second.filled)
    r = k_.builder_.CreateSelect(it->second.first, it->second.value, r); // the buffer is not filled
  return r;
}

// Whether slot `slot` of the `for` op `loop` starts from a splat it need not write to its
// carried buffer before the loop (see LazyInit): every reader of the carried value is in the
// loop body itself, not in a nested region, where a fill could be skipped.
bool FusionLowering::lazy_init_slot(const Op& loop, size_t slot) const {
  const ir::Value* init = loop.operand(3 + static_cast<unsigned>(slot));
  if (is_rank0(init) || !init->def)
    return false;
  const Op& def = *init->def;
  if (def.kind != OpKind::Constant && !(def.kind == OpKind::Splat && is_rank0(def.operand(0))))
    return false;
  const ir::Block& body = loop.body();
  auto it = k_.users_.find(body.args.at(1 + slot));
  return it == k_.users_.end() || std::all_of(it->second.begin(), it->second.end(),
                                              [&](const Op* u) { return u->parent == &body; });
}

llvm::Value* FusionLowering::splat_value(const ir::Value* v) {
  const Op& def = *v->def;
  return def.kind == OpKind::Constant ? k_.elements_.scalar_.constant(def, v->type.elem)
                                      : k_.scalar(def.operand(0));
}

void FusionLowering::fill_if(llvm::Value* cond, const View& dst, llvm::Value* value, DType t) {
  auto& b = k_.builder_;
  auto* fill_bb = llvm::BasicBlock::Create(k_.ctx_, "carry.init", k_.fn_);
  auto* done = llvm::BasicBlock::Create(k_.ctx_, "carry.init.done", k_.fn_);
  b.CreateCondBr(cond, fill_bb, done);
  b.SetInsertPoint(fill_bb);
  llvm::Value* stored = k_.elements_.to_scratch(value, t);
  k_.loop(
      k_.i64(0), k_.i64(numel(dst.shape)), 1,
      [&](llvm::Value* i) { b.CreateStore(stored, b.CreateInBoundsGEP(dst.ty, dst.base, i)); },
      true);
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// The leading true lanes of `mask`, of `size`, in closed form where it reads `offs < bound` with
// offs an i32 arange(start, ...) plus, optionally, a splatted scalar s: lane i holds exactly
// when i < bound - s - start, provided no lane's offs wrapped around (else 0: every lane then
// takes the masked path, which is right for any mask). nullptr for another form.
llvm::Value* FusionLowering::prefix_lanes(const ir::Value* mask, int64_t size,
                                          llvm::Value** exact_out) {
  const Op* cmp = mask->def;
  if (!cmp || cmp->kind != OpKind::Cmp || cmp->enum_attr<ir::CmpPred>() != ir::CmpPred::Lt)
    return nullptr;
  const ir::Value* offs = cmp->operand(0);
  const Op* bound = cmp->operand(1)->def;
  if (offs->type.elem.kind != ir::ScalarKind::I32 || !bound || bound->kind != OpKind::Splat)
    return nullptr;
  const Op* range = offs->def;
  const ir::Value* shift = nullptr;
  if (range && range->kind == OpKind::Add) {
    const Op* x = range->operand(0)->def;
    const Op* y = range->operand(1)->def;
    if (x && y && x->kind == OpKind::Splat && y->kind == OpKind::Arange)
      std::swap(x, y);
    if (!x || !y || x->kind != OpKind::Arange || y->kind != OpKind::Splat)
      return nullptr;
    range = x;
    shift = y->operand(0);
  }
  if (!range || range->kind != OpKind::Arange)
    return nullptr;
  auto& b = k_.builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  llvm::Value* first = k_.i64(range->int_attr(attr::start));
  if (shift)
    first = b.CreateAdd(first, b.CreateSExt(k_.scalar(shift), i64_ty));
  llvm::Value* last = b.CreateAdd(first, k_.i64(size - 1));
  llvm::Value* exact = b.CreateAnd(b.CreateICmpSGE(first, k_.i64(INT32_MIN)),
                                   b.CreateICmpSLE(last, k_.i64(INT32_MAX)));
  llvm::Value* c = b.CreateSub(b.CreateSExt(k_.scalar(bound->operand(0)), i64_ty), first);
  c = b.CreateSelect(b.CreateICmpSLT(c, k_.i64(0)), k_.i64(0), c);
  c = b.CreateSelect(b.CreateICmpSGT(c, k_.i64(size)), k_.i64(size), c);
  if (exact_out)
    *exact_out = exact;
  return b.CreateSelect(exact, c, k_.i64(0));
}

// How many leading lanes of [0, n) every one of the (rematerializable, 1-D) masks holds for,
// when the lanes where all hold are such a prefix (`offs < n`), else 0. Two sums, which the
// loop vectorizer vectorizes (a min reduction over the lane index it did not): the count c of
// lanes where all masks hold and the sum of their indices, which equals c (c - 1) / 2 only for
// the lanes 0 .. c-1 (the least sum of c distinct lane indices).
llvm::Value* FusionLowering::leading_true_lanes(const std::vector<const ir::Value*>& masks,
                                                int64_t n) {
  auto& b = k_.builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  // Where every mask reads `offs < bound` over an arange, the count needs no scan (which
  // cost a quarter of a 4096-column RMSNorm row on the CPU, once per masked group and program).
  llvm::Value* least = nullptr;
  for (const ir::Value* m : masks) {
    llvm::Value* c = prefix_lanes(m, n);
    if (!c) {
      least = nullptr;
      break;
    }
    least = least ? b.CreateSelect(b.CreateICmpSLT(c, least), c, least) : c;
  }
  if (least)
    return least;
  llvm::AllocaInst* count = k_.entry_builder_.CreateAlloca(i64_ty, nullptr, "lanes.count");
  llvm::AllocaInst* sum = k_.entry_builder_.CreateAlloca(i64_ty, nullptr, "lanes.sum");
  b.CreateStore(k_.i64(0), count);
  b.CreateStore(k_.i64(0), sum);
  k_.loop(
      k_.i64(0), k_.i64(n), 1,
      [&](llvm::Value* i) {
        std::unordered_map<const ir::Value*, llvm::Value*> in;
        llvm::Value* all = b.getTrue();
        for (const ir::Value* m : masks)
          all = b.CreateAnd(all, remat(m, {i}, true, in));
        llvm::Value* one = b.CreateZExt(all, i64_ty);
        b.CreateStore(b.CreateAdd(b.CreateLoad(i64_ty, count), one), count);
        b.CreateStore(b.CreateAdd(b.CreateLoad(i64_ty, sum), b.CreateMul(one, i)), sum);
      },
      true);
  llvm::Value* c = b.CreateLoad(i64_ty, count);
  llvm::Value* prefix = b.CreateICmpEQ(b.CreateLoad(i64_ty, sum),
                                       b.CreateLShr(b.CreateMul(c, b.CreateSub(c, k_.i64(1))), 1));
  return b.CreateSelect(prefix, c, k_.i64(0));
}

// Whether lower_op puts `op` into a fusion group (see fuse), where a value it reads is
// recomputed from the launch rather than read back from a buffer.
bool fusible(const Op& op) {
  switch (ir::op_category(op.kind)) {
  case OpCategory::Binary:
  case OpCategory::Compare:
  case OpCategory::Unary:
  case OpCategory::Math:
  case OpCategory::Extern:
  case OpCategory::Ternary:
  case OpCategory::Select:
  case OpCategory::Convert:
    return true;
  case OpCategory::Hint:
    return op.kind == OpKind::Hint;
  case OpCategory::Source:
  case OpCategory::Shape:
  case OpCategory::Memory:
    return op.kind == OpKind::Constant || op.kind == OpKind::Arange || op.kind == OpKind::Splat ||
           op.kind == OpKind::AddPtr || op.kind == OpKind::Load || op.kind == OpKind::Store;
  case OpCategory::Shared:
  case OpCategory::Collective:
  case OpCategory::Control:
  case OpCategory::Terminator:
  case OpCategory::Debug:
    return false;
  }
  return false;
}

// A group output that its enclosing `for` yields as the next value of a carried tensor whose
// current value only this group reads (lane by lane, at the lane it writes): the group writes
// it into the carried buffer itself, and the yield copies nothing.
const View* FusionLowering::carried_in_place(const ir::Value* r,
                                             const std::unordered_set<const Op*>& group) {
  const ir::Block* blk = r->def->parent;
  const Op* loop_op = blk && blk->parent ? blk->parent->parent : nullptr;
  if (!loop_op || loop_op->kind != OpKind::For)
    return nullptr;
  const Op* y = blk->terminator();
  int slot = -1;
  for (size_t k = 0; k < y->operands.size(); ++k)
    if (y->operands[k] == r) {
      if (slot >= 0)
        return nullptr;
      slot = static_cast<int>(k);
    }
  if (slot < 0)
    return nullptr;
  const ir::Value* arg = blk->args.at(1 + slot);
  for (const Op* u : k_.users_[arg])
    if (!group.count(u))
      return nullptr;
  auto it = k_.values_.find(arg);
  if (it == k_.values_.end() || !it->second.view.base)
    return nullptr;
  const View& carry = it->second.view;
  if (carry.offset != 0 || carry.shape != r->type.shape || carry.strides != row_major(carry.shape))
    return nullptr;
  return &carry;
}

// The first lane from which every mask is off, where each reads `offs < n` (closed form), else
// nullptr. A mask whose offsets wrap around may hold anywhere: its end is the block's.
llvm::Value* FusionLowering::all_masks_off_from(const std::vector<const ir::Value*>& masks,
                                                int64_t size) {
  auto& b = k_.builder_;
  llvm::Value* end = k_.i64(0);
  for (const ir::Value* m : masks) {
    llvm::Value* exact = nullptr;
    llvm::Value* c = prefix_lanes(m, size, &exact);
    if (!c)
      return nullptr;
    c = b.CreateSelect(exact, c, k_.i64(size));
    end = b.CreateSelect(b.CreateICmpSGT(c, end), c, end);
  }
  return end;
}

// Whether the masked lanes of a split group can be skipped: when its only effects are its
// stores (no buffered output), all masked, and every load and store reads one `offs < n` mask, the
// lanes past the leading ones have every mask off and do nothing, unless an offset wrapped around
// (then the leading count is 0 and every lane takes the masked loop). Returns that condition
// (an i1: run the masked loop), or nullptr where the masked loop always runs.
llvm::Value* FusionLowering::masked_lanes_needed(const std::vector<const Op*>& ops,
                                                 const std::vector<const ir::Value*>& masks,
                                                 bool only_stores, int64_t size) {
  if (!only_stores || masks.empty())
    return nullptr;
  for (const Op* op : ops)
    if (op->kind == OpKind::Store && op->operands.size() < 3)
      return nullptr; // an unmasked store writes every lane
  for (const ir::Value* m : masks)
    if (m != masks[0])
      return nullptr;
  llvm::Value* exact = nullptr;
  if (!prefix_lanes(masks[0], size, &exact))
    return nullptr;
  return k_.builder_.CreateNot(exact);
}

// Elementwise ops, sources, splats, pointer arithmetic, loads and stores: into the pending
// fusion group of their shape (rank 0: straight-line code).
void FusionLowering::fuse(const Op& op) {
  bool rank0 = !op.results.empty() ? is_rank0(op.result()) : is_rank0(op.operand(0));
  if (rank0) {
    if (op.kind == OpKind::Store) {
      k_.flush();
      k_.reloads_.guard_reloads(op);
    }
    return k_.lower_scalar_op(op);
  }
  const auto& shape = op.results.empty() ? op.operand(0)->type.shape : op.result()->type.shape;
  // A division leaf (rematerializable) is its group's only op, so that its buffer is whole
  // before any group recomputes an expression that reads it.
  const bool leaf = !op.results.empty() && division_leaf(op.result());
  if (!k_.group_.ops.empty() && (k_.group_.shape != shape || leaf))
    k_.flush();
  k_.group_.shape = shape;
  k_.group_.ops.push_back(&op);
  for (ir::Value* r : op.results)
    k_.group_.defines.insert(r);
  k_.prefetch_.stream_site(op);
  if (op.kind == OpKind::Store || leaf)
    k_.flush(); // later loads must observe the store, lane for lane and op for op
}
} // namespace tritium::cpu
