// Reloaded rows. A row-wise kernel loads a row, reduces it, then reads the loaded values again
// (softmax's x - max, RMSNorm's x * rstd). Buffered, the row went to scratch and was read back:
// one more write and read of the row per reader, more bytes than the kernel's own traffic, and
// for rows past L1 the first pass streamed the row in while evicting its own buffer. The row is
// still in cache when it is read again, so a later reader re-issues the load (and the cheap
// elementwise ops between it and the value read) instead of reading a buffer.
//
// That is right only while memory at the loaded addresses is unchanged. Every write between the
// load and the value's last reader must be a store with addresses in closed form (a scalar, or
// `base + arange [+ s]` under an optional mask); before such a store runs, its address range is
// compared with the row's at run time and, if they overlap, the row is first copied aside (a
// snapshot, per load), and every later reader takes a second version of its loop that reads
// the copy. A write that cannot be bounded (an atomic, a store inside a loop or `if`, a scatter)
// keeps the value buffered, as do readers that are not elementwise (views, loops, yields).
#include "lowering.hpp"
#include "llvm/guarded.hpp"

#include <algorithm>
#include <functional>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpCategory;
using ir::OpKind;
using ir::ScalarKind;

namespace {

// Ops between a load and the value reloaded, each counted once (a reader computes a shared
// subtree once per element): a few, or a reader would recompute a long chain per element.
constexpr int kMaxReloadOps = 16;

// p = splat(base) + (arange [+ splat(shift)]): the addresses base + (start + shift + i) * size.
struct AffinePointer {
  const ir::Value* base = nullptr; // rank 0
  const Op* range = nullptr;
  const ir::Value* shift = nullptr; // rank 0 i32, or null
};

std::optional<AffinePointer> affine_pointer(const ir::Value* p) {
  const Op* add = p->def;
  if (!add || add->kind != OpKind::AddPtr || p->type.rank() != 1)
    return std::nullopt;
  const Op* splat = add->operand(0)->def;
  const ir::Value* offs = add->operand(1);
  if (!splat || splat->kind != OpKind::Splat || offs->type.elem.kind != ir::ScalarKind::I32)
    return std::nullopt;
  AffinePointer a;
  a.base = splat->operand(0);
  const Op* r = offs->def;
  if (r && r->kind == OpKind::Add) {
    const Op* x = r->operand(0)->def;
    const Op* y = r->operand(1)->def;
    if (x && y && x->kind == OpKind::Splat && y->kind == OpKind::Arange)
      std::swap(x, y);
    if (!x || !y || x->kind != OpKind::Arange || y->kind != OpKind::Splat)
      return std::nullopt;
    a.range = x;
    a.shift = y->operand(0);
  } else if (r && r->kind == OpKind::Arange) {
    a.range = r;
  } else {
    return std::nullopt;
  }
  return a;
}

bool writes_memory(const Op& op) {
  if (ir::has_trait(op.kind, ir::OpTrait::WritesMemory))
    return true;
  for (const auto& r : op.regions)
    for (const auto& inner : r->block->ops)
      if (writes_memory(*inner))
        return true;
  return false;
}

} // namespace

bool affine_access(const Op& access) {
  return (access.kind == OpKind::Load || access.kind == OpKind::Store) &&
         affine_pointer(access.operand(0)).has_value();
}

namespace {

// A write whose address range access_span can bound.
bool bounded_store(const Op& op) {
  return op.kind == OpKind::Store &&
         (op.operand(0)->type.is_scalar() || affine_pointer(op.operand(0)).has_value());
}

const ir::Value* mask_of(const Op& access) {
  size_t at = access.kind == OpKind::Load ? 1 : 2;
  return access.operands.size() > at ? access.operand(at) : nullptr;
}

bool cheap_elementwise(const Op& op) {
  if (!ir::is_elementwise(op.kind))
    return false;
  switch (ir::op_category(op.kind)) {
  case OpCategory::Binary:
  case OpCategory::Compare:
  case OpCategory::Unary:
  case OpCategory::Ternary:
  case OpCategory::Select:
  case OpCategory::Convert:
    return true;
  default:
    return false;
  }
}

} // namespace

// A position in `u`'s block up to which ops may run in the same fused loop as `u` (a store
// there runs interleaved with u's reloads, lane by lane): the next store, or the op before the
// next one that certainly ends the group (control flow, a reduction, a debug op, an atomic).
static size_t group_end(const Op& u, const std::unordered_map<const Op*, size_t>& position) {
  size_t end = position.at(&u);
  if (!fusible(u) || u.kind == OpKind::Store)
    return end;
  const auto& ops = u.parent->ops;
  for (size_t p = end + 1; p < ops.size(); ++p) {
    const Op& o = *ops[p];
    switch (ir::op_category(o.kind)) {
    case OpCategory::Control:
    case OpCategory::Terminator:
    case OpCategory::Debug:
      return end;
    case OpCategory::Collective:
      if (o.kind != OpKind::Dot)
        return end;
      break;
    default:
      if (o.kind == OpKind::AtomicRmw || o.kind == OpKind::AtomicCas)
        return end;
      break;
    }
    end = p;
    if (o.kind == OpKind::Store)
      return end;
  }
  return end;
}

bool ReloadLowering::try_reload(const ir::Value* v, const std::unordered_set<const Op*>& group) {
  if (!v->def || v->type.rank() != 1)
    return false;
  const ir::Block* blk = v->def->parent;
  std::vector<const Op*> loads;
  std::vector<const ir::Value*> nodes;
  std::unordered_set<const ir::Value*> seen; // a second visit follows a first that succeeded
  int ops = 0;
  std::function<bool(const ir::Value*)> tree = [&](const ir::Value* x) -> bool {
    if (x->type.is_scalar() || k_.fusion_.rematerializable(x) || !seen.insert(x).second)
      return true;
    const Op* d = x->def;
    if (!d || ++ops > kMaxReloadOps)
      return false;
    if (d->kind == OpKind::Splat || d->kind == OpKind::Constant)
      return true;
    if (!group.count(d) && !reload_nodes_.count(x))
      return false;
    nodes.push_back(x);
    if (d->kind == OpKind::Load) {
      const ir::Value* mask = mask_of(*d);
      if (!k_.fusion_.rematerializable(d->operand(0)) || !affine_pointer(d->operand(0)) ||
          (mask && !k_.fusion_.rematerializable(mask)) ||
          (d->operands.size() > 2 && !tree(d->operand(2))))
        return false;
      if (std::find(loads.begin(), loads.end(), d) == loads.end())
        loads.push_back(d);
      return true;
    }
    if (!cheap_elementwise(*d))
      return false;
    return std::all_of(d->operands.begin(), d->operands.end(), tree);
  };
  if (!tree(v) || loads.empty())
    return false;

  // Every reader outside the group: elementwise in the same block, or a 1-D reduction.
  size_t end = 0, last_in_group = 0;
  for (const Op* op : group)
    last_in_group = std::max(last_in_group, k_.position_.at(op));
  for (const Op* u : k_.users_[v]) {
    if (group.count(u))
      continue;
    if (u->parent != blk || !(fusible(*u) || u->kind == OpKind::Reduce))
      return false;
    end = std::max(end, group_end(*u, k_.position_));
  }

  // Every write between a load and the last reader can be bounded, and those already emitted
  // were checked against the load's row.
  for (const Op* load : loads) {
    size_t from = k_.position_.at(load);
    auto known = reload_source_of_.find(load);
    size_t checked =
        known == reload_source_of_.end() ? from : reload_sources_[known->second].live_end;
    for (size_t p = from + 1; p <= end && p < blk->ops.size(); ++p) {
      const Op& w = *blk->ops[p];
      if (!writes_memory(w))
        continue;
      if (!bounded_store(w))
        return false;
      if (!group.count(&w) && p > checked && p < last_in_group)
        return false;
    }
  }
  reloaded_.insert(v);
  reload_nodes_.insert(nodes.begin(), nodes.end());
  for (const Op* load : loads) {
    auto [it, fresh] = reload_source_of_.emplace(load, reload_sources_.size());
    if (fresh) {
      ReloadSource s;
      s.load = load;
      s.live_end = k_.position_.at(load);
      reload_sources_.push_back(s);
    }
    auto& s = reload_sources_[it->second];
    s.live_end = std::max(s.live_end, end);
  }
  return true;
}

std::vector<const Op*> ReloadLowering::reloaded_loads(const std::vector<const ir::Value*>& values) {
  std::vector<const Op*> loads;
  std::function<void(const ir::Value*)> walk = [&](const ir::Value* x) {
    if (x->type.is_scalar() || k_.fusion_.rematerializable(x) || !x->def)
      return;
    const Op* d = x->def;
    if (d->kind == OpKind::Splat || d->kind == OpKind::Constant)
      return;
    if (d->kind == OpKind::Load) {
      if (std::find(loads.begin(), loads.end(), d) == loads.end())
        loads.push_back(d);
      if (d->operands.size() > 2)
        walk(d->operand(2));
      return;
    }
    for (const ir::Value* o : d->operands)
      walk(o);
  };
  for (const ir::Value* v : values)
    if (is_reloaded(v))
      walk(v);
  return loads;
}

// The first lane's offset of an affine pointer (64 bits), and whether no lane's 32-bit offset
// wraps around (then base + (first + i) * size is lane i's address).
static std::pair<llvm::Value*, llvm::Value*>
affine_first(llvm::IRBuilder<>& b, const AffinePointer& a, int64_t lanes, llvm::Value* shift) {
  llvm::Value* first = b.getInt64(a.range->int_attr(attr::start));
  if (shift)
    first = b.CreateAdd(first, b.CreateSExt(shift, b.getInt64Ty()));
  llvm::Value* last = b.CreateAdd(first, b.getInt64(lanes - 1));
  llvm::Value* exact = b.CreateAnd(b.CreateICmpSGE(first, b.getInt64(INT32_MIN)),
                                   b.CreateICmpSLE(last, b.getInt64(INT32_MAX)));
  return {first, exact};
}

llvm::Value* ReloadLowering::reload_slow_path(const std::vector<const Op*>& loads) {
  auto& b = k_.builder_;
  llvm::Value* any = b.getFalse();
  for (const Op* load : loads) {
    AffinePointer a = *affine_pointer(load->operand(0));
    llvm::Value* exact =
        affine_first(b, a, load->result()->type.shape[0], a.shift ? k_.scalar(a.shift) : nullptr)
            .second;
    any = b.CreateOr(any, b.CreateNot(exact));
    auto it = reload_source_of_.find(load);
    if (it != reload_source_of_.end())
      if (llvm::Value* t = reload_sources_[it->second].taken)
        any = b.CreateOr(any, t);
  }
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(any); c && c->isZero())
    return nullptr;
  return any;
}

ReloadLowering::VersionValues
ReloadLowering::emit_reload_versions(const std::vector<const Op*>& loads, const std::string& tag,
                                     const std::function<VersionValues(bool)>& emit) {
  llvm::Value* slow = reload_slow_path(loads);
  if (!slow)
    return emit(false);
  auto& b = k_.builder_;
  auto* copied = llvm::BasicBlock::Create(k_.ctx_, tag + ".snapshot", k_.fn_);
  auto* direct = llvm::BasicBlock::Create(k_.ctx_, tag + ".memory", k_.fn_);
  auto* done = llvm::BasicBlock::Create(k_.ctx_, tag + ".done", k_.fn_);
  b.CreateCondBr(slow, copied, direct);
  b.SetInsertPoint(copied);
  VersionValues from_copies = emit(true);
  llvm::BasicBlock* copies_end = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(direct);
  VersionValues from_memory = emit(false);
  llvm::BasicBlock* memory_end = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(done);
  VersionValues merged;
  for (size_t k = 0; k < from_memory.size(); ++k) {
    auto* phi = b.CreatePHI(from_memory[k]->getType(), 2);
    phi->addIncoming(from_copies.at(k), copies_end);
    phi->addIncoming(from_memory[k], memory_end);
    merged.push_back(phi);
  }
  return merged;
}

ReloadLowering::Span ReloadLowering::access_span(const Op& access) {
  auto& b = k_.builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  const ir::Value* p = access.operand(0);
  DType t = access.kind == OpKind::Load ? access.result()->type.elem : access.operand(1)->type.elem;
  int64_t size = k_.elements_.memory_bytes(t);
  if (p->type.is_scalar()) {
    llvm::Value* lo = b.CreatePtrToInt(k_.scalar(p), i64_ty);
    return {lo, b.CreateAdd(lo, k_.i64(size)), b.getTrue()};
  }
  AffinePointer a = *affine_pointer(p);
  const int64_t lanes = p->type.shape[0];
  auto [first, exact] = affine_first(b, a, lanes, a.shift ? k_.scalar(a.shift) : nullptr);
  // Lanes past a closed-form mask's count are off: they touch no memory.
  llvm::Value* count = k_.i64(lanes);
  if (const ir::Value* mask = mask_of(access)) {
    llvm::Value* mask_exact = nullptr;
    if (llvm::Value* c = k_.fusion_.prefix_lanes(mask, lanes, &mask_exact))
      count = b.CreateSelect(mask_exact, c, k_.i64(lanes));
  }
  llvm::Value* lo =
      b.CreateAdd(b.CreatePtrToInt(k_.scalar(a.base), i64_ty), b.CreateMul(first, k_.i64(size)));
  return {lo, b.CreateAdd(lo, b.CreateMul(count, k_.i64(size))), exact};
}

llvm::Value* ReloadLowering::lane_address(const Op& access, llvm::Value* lane) {
  auto& b = k_.builder_;
  AffinePointer a = *affine_pointer(access.operand(0));
  DType t = access.kind == OpKind::Load ? access.result()->type.elem : access.operand(1)->type.elem;
  llvm::Value* first =
      affine_first(b, a, access.operand(0)->type.shape[0], a.shift ? k_.scalar(a.shift) : nullptr)
          .first;
  return b.CreateGEP(k_.elements_.scalar_.memory_type(t), k_.scalar(a.base),
                     b.CreateAdd(first, lane));
}

void ReloadLowering::guard_reloads(const Op& write) {
  auto& b = k_.builder_;
  const size_t at = k_.position_.at(&write);
  std::optional<Span> ws;
  for (ReloadSource& src : reload_sources_) {
    const Op& load = *src.load;
    if (load.parent != write.parent || k_.position_.at(&load) >= at || src.live_end < at)
      continue;
    if (!ws)
      ws = access_span(write);
    Span ls = access_span(load);
    llvm::Value* overlap =
        b.CreateOr(b.CreateNot(b.CreateAnd(ws->exact, ls.exact)),
                   b.CreateAnd(b.CreateICmpULT(ws->lo, ls.hi), b.CreateICmpULT(ls.lo, ws->hi)));
    llvm::Value* copy_now = src.taken ? b.CreateAnd(b.CreateNot(src.taken), overlap) : overlap;
    DType t = load.result()->type.elem;
    if (!src.snapshot.base)
      src.snapshot = k_.new_buffer(t, load.result()->type.shape);
    llvm::BasicBlock* skip_from = b.GetInsertBlock();
    auto* copy_bb = llvm::BasicBlock::Create(k_.ctx_, "snapshot", k_.fn_);
    auto* done = llvm::BasicBlock::Create(k_.ctx_, "snapshot.done", k_.fn_);
    b.CreateCondBr(copy_now, copy_bb, done);
    b.SetInsertPoint(copy_bb);
    const View& snap = src.snapshot;
    k_.loop(k_.i64(0), k_.i64(load.result()->type.shape[0]), 1, [&](llvm::Value* i) {
      std::unordered_map<const ir::Value*, llvm::Value*> in;
      auto store_lane = [&] {
        llvm::Value* v =
            k_.elements_.load_user(k_.fusion_.remat(load.operand(0), {i}, true, in), t);
        b.CreateStore(k_.elements_.to_scratch(v, t), b.CreateInBoundsGEP(snap.ty, snap.base, i));
      };
      const ir::Value* mask = mask_of(load);
      if (!mask)
        return store_lane();
      auto* yes = llvm::BasicBlock::Create(k_.ctx_, "snapshot.lane", k_.fn_);
      auto* next = llvm::BasicBlock::Create(k_.ctx_, "snapshot.next", k_.fn_);
      b.CreateCondBr(k_.fusion_.remat(mask, {i}, true, in), yes, next);
      b.SetInsertPoint(yes);
      store_lane();
      b.CreateBr(next);
      b.SetInsertPoint(next);
    });
    llvm::BasicBlock* copy_end = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    auto* taken = b.CreatePHI(b.getInt1Ty(), 2, "snapshot.taken");
    taken->addIncoming(b.getTrue(), copy_end);
    taken->addIncoming(src.taken ? src.taken : b.getFalse(), skip_from);
    src.taken = taken;
  }
}

llvm::Value* ReloadLowering::chunk_element(const Op& load, llvm::Value* row, llvm::Value* first) {
  auto& b = k_.builder_;
  RegisterChunk& c = *register_chunk_;
  llvm::Value*& vec = c.rows[&load];
  if (!vec) {
    DType t = load.result()->type.elem;
    llvm::Type* mem = k_.elements_.scalar_.memory_type(t);
    llvm::Value* p = b.CreateGEP(mem, row, b.CreateAdd(first, c.first));
    auto* vty = llvm::FixedVectorType::get(mem, static_cast<unsigned>(c.size));
    vec = b.CreateAlignedLoad(vty, p, llvm::Align(mem->getPrimitiveSizeInBits() / 8));
    auto* f32s = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(c.size));
    auto* i32s = llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(c.size));
    auto* halfs = llvm::FixedVectorType::get(b.getHalfTy(), static_cast<unsigned>(c.size));
    if (t.kind == ScalarKind::F16) // the registers' f32, as load_user converts one element
      vec = b.CreateFPExt(b.CreateBitCast(vec, halfs), f32s);
    else if (t.kind == ScalarKind::BF16)
      vec = b.CreateBitCast(b.CreateShl(b.CreateZExt(vec, i32s), 16), f32s);
  }
  return b.CreateExtractElement(vec, static_cast<uint64_t>(c.lane));
}

bool ReloadLowering::same_where_masks_off(const ir::Value* v,
                                          const std::vector<const ir::Value*>& off) const {
  if (v->type.is_scalar() || std::find(off.begin(), off.end(), v) != off.end())
    return true;
  const Op* op = v->def;
  if (!op)
    return false;
  auto same = [&](const ir::Value* x) { return same_where_masks_off(x, off); };
  switch (op->kind) {
  case OpKind::Constant:
  case OpKind::Splat:
    return true;
  case OpKind::Load: {
    const ir::Value* mask = mask_of(*op);
    return mask && std::find(off.begin(), off.end(), mask) != off.end() &&
           (op->operands.size() < 3 || same(op->operand(2)));
  }
  default:
    break;
  }
  switch (ir::op_category(op->kind)) {
  case OpCategory::Binary:
  case OpCategory::Compare:
  case OpCategory::Unary:
  case OpCategory::Math:
  case OpCategory::Ternary:
  case OpCategory::Select:
  case OpCategory::Convert:
    return std::all_of(op->operands.begin(), op->operands.end(), same);
  default:
    return false;
  }
}

llvm::Value* ReloadLowering::reload(const ir::Value* v, llvm::Value* i, bool masks_true,
                                    bool from_snapshots,
                                    std::unordered_map<const ir::Value*, llvm::Value*>& in) {
  if (auto it = in.find(v); it != in.end())
    return it->second;
  if (std::optional<bool> known = k_.fusion_.known_mask(v))
    return k_.builder_.getInt1(*known);
  if (v->type.is_scalar())
    return k_.scalar(v);
  if (k_.fusion_.rematerializable(v))
    return k_.fusion_.remat(v, {i}, true, in);
  auto& b = k_.builder_;
  const Op& op = *v->def;
  DType t = v->type.elem;
  auto get = [&](const ir::Value* x) { return reload(x, i, masks_true, from_snapshots, in); };
  llvm::Value* r = nullptr;
  switch (op.kind) {
  case OpKind::Constant:
    r = k_.elements_.scalar_.constant(op, t);
    break;
  case OpKind::Splat:
    r = k_.scalar(op.operand(0));
    break;
  case OpKind::Load: {
    llvm::Value* p = nullptr;
    if (from_snapshots) {
      p = get(op.operand(0));
    } else { // no offset wraps around here (reload_slow_path): the address in 64 bits
      AffinePointer a = *affine_pointer(op.operand(0));
      llvm::Value* first =
          affine_first(b, a, v->type.shape[0], a.shift ? k_.scalar(a.shift) : nullptr).first;
      p = b.CreateGEP(k_.elements_.scalar_.memory_type(t), k_.scalar(a.base),
                      b.CreateAdd(first, i));
    }
    llvm::Value* taken = nullptr;
    const View* snap = nullptr;
    if (from_snapshots)
      if (auto it = reload_source_of_.find(&op); it != reload_source_of_.end()) {
        taken = reload_sources_[it->second].taken;
        snap = &reload_sources_[it->second].snapshot;
      }
    auto fetch = [&]() -> llvm::Value* {
      if (!taken)
        return k_.elements_.load_user(p, t);
      auto* copy = llvm::BasicBlock::Create(k_.ctx_, "reload.snapshot", k_.fn_);
      auto* memory = llvm::BasicBlock::Create(k_.ctx_, "reload.memory", k_.fn_);
      auto* done = llvm::BasicBlock::Create(k_.ctx_, "reload.done", k_.fn_);
      b.CreateCondBr(taken, copy, memory);
      b.SetInsertPoint(copy);
      llvm::Value* a = k_.elements_.from_scratch(
          b.CreateLoad(snap->ty, b.CreateInBoundsGEP(snap->ty, snap->base, i)), t);
      b.CreateBr(done);
      b.SetInsertPoint(memory);
      llvm::Value* m = k_.elements_.load_user(p, t);
      b.CreateBr(done);
      b.SetInsertPoint(done);
      auto* phi = b.CreatePHI(a->getType(), 2);
      phi->addIncoming(a, copy);
      phi->addIncoming(m, memory);
      return phi;
    };
    const ir::Value* mask = mask_of(op);
    if (!mask || masks_true) {
      const bool float_row =
          t.kind == ScalarKind::F32 || t.kind == ScalarKind::F16 || t.kind == ScalarKind::BF16;
      if (register_chunk_ && !from_snapshots && float_row) {
        AffinePointer a = *affine_pointer(op.operand(0));
        llvm::Value* first =
            affine_first(b, a, v->type.shape[0], a.shift ? k_.scalar(a.shift) : nullptr).first;
        r = chunk_element(op, k_.scalar(a.base), first);
      } else {
        r = fetch();
      }
      break;
    }
    llvm::Value* other = op.operands.size() > 2 ? get(op.operand(2)) : k_.elements_.scalar_.zero(t);
    if (reload_masks_false_) {
      r = other;
      break;
    }
    r = llvm_ir::guarded(b, get(mask), "reload", fetch, other);
    break;
  }
  default: {
    std::vector<llvm::Value*> args;
    for (const ir::Value* o : op.operands)
      args.push_back(get(o));
    r = k_.elements_.elementwise(op, args);
  }
  }
  in[v] = r;
  return r;
}

} // namespace tritium::cpu
