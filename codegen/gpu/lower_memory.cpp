// Loads, stores and atomics: vectorized to the AxisInfo width, masked by branches or, where the
// target has them, by buffer instructions or predicated instructions.
#include "gpu/lowering.hpp"

#include <algorithm>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

// Whether an integer value is known to be >= 0 (i32 arithmetic is assumed not to overflow,
// as Triton's AMD buffer-op conversion assumes).
bool MemoryLowering::nonneg(const ir::Value* v) {
  if (auto it = nonneg_.find(v); it != nonneg_.end())
    return it->second;
  bool r = false;
  if (const ir::Op* d = v->def) {
    auto all = [&] {
      for (const ir::Value* o : d->operands)
        if (!nonneg(o))
          return false;
      return true;
    };
    switch (d->kind) {
    case OpKind::ProgramId:
    case OpKind::NumPrograms:
      r = true;
      break;
    case OpKind::Arange:
      r = d->int_attr(attr::start) >= 0;
      break;
    case OpKind::Constant:
      r = std::holds_alternative<int64_t>(d->attrs.at(attr::value)) &&
          std::get<int64_t>(d->attrs.at(attr::value)) >= 0;
      break;
    case OpKind::Splat:
    case OpKind::Cast: // an integer widened (a float converted is not an offset)
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::ConvertLayout:
    case OpKind::Hint:
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Min:
    case OpKind::Max:
      r = all();
      break;
    case OpKind::And:
      r = nonneg(d->operands[0]) || nonneg(d->operands[1]);
      break;
    case OpKind::Rem: // the sign of the dividend (truncating division)
      r = nonneg(d->operands[0]);
      break;
    default:
      break;
    }
  } else if (v->block == &f_.entry()) {
    const ir::ArgInfo& a = f_.arg_info.at(v->index);
    r = a.is_constant && a.constant >= 0;
  } else if (const ir::Op* loop = v->block && v->block->parent ? v->block->parent->parent : nullptr;
             loop && loop->kind == OpKind::For && v == v->block->args[0]) {
    // A loop's induction variable from a non-negative start in positive steps (a row's blocks:
    // range(0, n, BLOCK)).
    const ir::Value* step = loop->operands[2];
    r = nonneg(loop->operands[0]) && step->def && step->def->kind == OpKind::Constant &&
        std::holds_alternative<int64_t>(step->def->attrs.at(attr::value)) &&
        std::get<int64_t>(step->def->attrs.at(attr::value)) > 0;
  }
  return nonneg_[v] = r;
}

void MemoryLowering::track_base_offset(const ir::Op& op) {
  const ir::Value *p = op.operand(0), *o = op.operand(1);
  // 64-bit offsets (a block pointer's) only from the argument itself, where an in-bounds
  // access's offset is below 2^31: their low 32 bits, added modulo 2^32, are that offset.
  const bool wide = o->type.elem.kind == ScalarKind::I64;
  if (p->type.is_scalar() || (o->type.elem.kind != ScalarKind::I32 && !wide))
    return;
  auto offsets = [&] {
    Regs off = get(o);
    if (wide)
      for (LV*& v : off)
        v = b_.CreateTrunc(v, b_.getInt32Ty());
    return off;
  };
  // From the argument itself, an in-bounds access's offset is non-negative whatever the
  // offsets' signs (Triton's small-tensor buffer ops); from a scalar moved into the buffer
  // (X += batch * stride), the offsets shown non-negative keep that base, and others go back to
  // the argument, the scalar steps added to every offset: the total of an in-bounds access is
  // below 2^31 whatever its parts' signs, so their low 32 bits added modulo 2^32 are exact (a
  // batched GEMM's `a += batch * M * K` then `offs_m * K`, K of unknown sign).
  if (p->def && p->def->kind == OpKind::Splat) {
    const ir::Value* s = p->def->operand(0);
    const bool at_argument = range32_argument(s);
    if (at_argument || (!wide && in_range32_buffer(f_, s) && nonneg(o))) {
      s_.split[op.result()] = {get(s)[0], offsets(), at_argument};
    } else if (in_range32_buffer(f_, s)) {
      LV* moved = b_.getInt32(0);
      for (; s->def; s = s->def->operand(0))
        moved =
            b_.CreateAdd(moved, b_.CreateSExtOrTrunc(get(s->def->operand(1))[0], b_.getInt32Ty()));
      Regs off = offsets();
      for (LV*& v : off)
        v = b_.CreateAdd(moved, v);
      s_.split[op.result()] = {get(s)[0], std::move(off), true};
    }
  } else if (auto it = s_.split.find(p);
             it != s_.split.end() && (it->second.at_argument || (!wide && nonneg(o)))) {
    BaseOffset s = it->second;
    const Regs off = offsets();
    for (size_t i = 0; i < off.size(); ++i)
      s.offsets[i] = b_.CreateAdd(s.offsets[i], off[i], "", false, !s.at_argument);
    s_.split[op.result()] = std::move(s);
  }
}

bool MemoryLowering::range32_argument(const ir::Value* p) {
  return !p->def && p->block == &f_.entry() && f_.arg_info.at(p->index).range32;
}

LV* MemoryLowering::byte_offset(const BaseOffset& s, size_t r, int64_t elem_bytes) {
  return b_.CreateMul(s.offsets[r], b_.getInt32(static_cast<uint32_t>(elem_bytes)), "", false,
                      true);
}

// Elements per vector access: contiguity and alignment of the pointers (AxisInfo), the
// layout's run per thread, the mask's constancy, at most 128 bits. Booleans too (a byte each in
// memory: eight a thread are one 64-bit access, not eight byte loads).
int MemoryLowering::vector_width(const ir::Value* ptr, const ir::Value* mask, const LinearLayout& d,
                                 DType elem) {
  if (d.reg.empty())
    return 1;
  int k = LinearLayout::dim_of(d.reg[0]);
  if (k < 0)
    return 1;
  int64_t run = d.contiguous_regs(k);
  const AxisInfo& pi = axis_info(ptr);
  int64_t eb = mem_bytes(elem);
  int64_t v = std::min<int64_t>(
      {run, pi.contiguity[k], std::max<int64_t>(1, pi.divisibility[k] / eb), 16 / eb});
  if (mask)
    v = std::min(v, axis_info(mask).constancy[k]);
  v = std::max<int64_t>(1, v);
  while (!is_pow2(v))
    --v;
  return static_cast<int>(v);
}

const AxisInfo& Context::axis_info(const ir::Value* v) {
  auto it = s_.axis.find(v);
  if (it == s_.axis.end()) {
    AxisInfo u;
    int n = std::max(1, v->type.rank());
    u.contiguity = u.divisibility = u.constancy = std::vector<int64_t>(n, 1);
    it = s_.axis.emplace(v, u).first;
  }
  return it->second;
}

// The vector of type `vt` at register r of `ptr`: a buffer load where the pointers are a base
// and 32-bit offsets, else the target's masked load, else a load under a branch; `fallback`
// where `mask` is false.
LV* MemoryLowering::load_vector(const ir::Value* ptr, size_t r, llvm::Type* vt, LV* mask,
                                LV* fallback, bool vol) {
  const ir::DType e = ptr->type.elem.element_of_pointer();
  const int64_t eb = mem_bytes(e);
  const auto* fv = llvm::dyn_cast<llvm::FixedVectorType>(vt);
  const int64_t n = fv ? fv->getNumElements() : 1;
  LV* p = get(ptr)[r];
  if (auto it = s_.split.find(ptr); it != s_.split.end() && !vol)
    if (LV* v = ti_.buffer_load(b_, vt, it->second.base, byte_offset(it->second, r, eb), mask))
      return mask && !(llvm::isa<llvm::Constant>(fallback) &&
                       llvm::cast<llvm::Constant>(fallback)->isNullValue())
                 ? b_.CreateSelect(mask, v, fallback)
                 : v;
  if (mask && !vol)
    if (LV* v = ti_.masked_load(b_, vt, p, mask, fallback))
      return v;
  return guarded(
      mask, [&] { return static_cast<LV*>(b_.CreateAlignedLoad(vt, p, llvm::Align(eb * n), vol)); },
      fallback);
}

void MemoryLowering::load(const ir::Op& op) {
  const ir::Value* ptr = op.operand(0);
  DType e = op.result()->type.elem;
  const Regs& p = get(ptr);
  const Regs* mask = op.operands.size() > 1 ? &get(op.operand(1)) : nullptr;
  const Regs* other = op.operands.size() > 2 ? &get(op.operand(2)) : nullptr;
  bool vol = op.int_attr(attr::volatile_, 0) != 0;
  if (ptr->type.is_scalar()) {
    LV* zero = llvm::Constant::getNullValue(type(e));
    LV* v = guarded(
        mask ? (*mask)[0] : nullptr,
        [&] {
          auto* l = b_.CreateLoad(mem_type(e), p[0], vol);
          return from_mem(l, e);
        },
        other ? (*other)[0] : zero);
    return set(op.result(), {v});
  }
  LinearLayout d = dist(ptr);
  int vec = vector_width(ptr, op.operands.size() > 1 ? op.operand(1) : nullptr, d, e);
  int64_t eb = mem_bytes(e);
  Regs out(p.size());
  for (size_t r = 0; r < p.size(); r += vec) {
    llvm::Type* vt = vec == 1 ? mem_type(e) : llvm::FixedVectorType::get(mem_type(e), vec);
    LV* fallback = llvm::Constant::getNullValue(vt);
    if (other) {
      fallback = llvm::PoisonValue::get(vt);
      for (int k = 0; k < vec; ++k) {
        LV* o = to_mem((*other)[r + k], e);
        fallback = vec == 1 ? o : b_.CreateInsertElement(fallback, o, k);
      }
    }
    LV* v = load_vector(ptr, r, vt, mask ? (*mask)[r] : nullptr, fallback, vol);
    for (int k = 0; k < vec; ++k)
      out[r + k] = from_mem(vec == 1 ? v : b_.CreateExtractElement(v, k), e);
  }
  set(op.result(), std::move(out));
}

void MemoryLowering::store(const ir::Op& op) {
  const ir::Value* ptr = op.operand(0);
  DType e = op.operand(1)->type.elem;
  const Regs &p = get(ptr), &val = get(op.operand(1));
  const Regs* mask = op.operands.size() > 2 ? &get(op.operand(2)) : nullptr;
  int vec = ptr->type.is_scalar()
                ? 1
                : vector_width(ptr, op.operands.size() > 2 ? op.operand(2) : nullptr, dist(ptr), e);
  int64_t eb = mem_bytes(e);
  auto split = ptr->type.is_scalar() ? s_.split.end() : s_.split.find(ptr);
  // Only the thread that owns an element stores it (as Triton masks redundant data): a replica
  // that loaded the same address later than the owner's store would otherwise write a value
  // computed from the new contents (x = load(p); store(p, x + 1) added once per replica).
  LV* owner = nullptr;
  if (ptr->type.is_scalar()) {
    owner = b_.CreateICmpEQ(s_.tid, b_.getInt32(0));
  } else if (LinearLayout d = dist(ptr); d.replica_lane_mask() || d.replica_warp_mask()) {
    owner = is_owner(d);
  }
  for (size_t r = 0; r < p.size(); r += vec) {
    LV* cond = mask ? (owner ? b_.CreateAnd(owner, (*mask)[r]) : (*mask)[r]) : owner;
    auto value = [&] {
      LV* v = to_mem(val[r], e);
      if (vec > 1) {
        v = llvm::PoisonValue::get(llvm::FixedVectorType::get(mem_type(e), vec));
        for (int k = 0; k < vec; ++k)
          v = b_.CreateInsertElement(v, to_mem(val[r + k], e), k);
      }
      return v;
    };
    if (split != s_.split.end() &&
        ti_.buffer_store(b_, value(), split->second.base, byte_offset(split->second, r, eb), cond))
      continue;
    if (mask && ti_.masked_store(b_, value(), p[r], (*mask)[r]))
      continue;
    guarded(
        cond,
        [&]() -> LV* {
          b_.CreateAlignedStore(value(), p[r], llvm::Align(eb * vec));
          return nullptr;
        },
        nullptr);
  }
}

void MemoryLowering::atomic(const ir::Op& op) {
  const ir::Value* ptr = op.operand(0);
  const ir::Value* res = op.result();
  DType e = res->type.elem;
  const Regs& p = get(ptr);
  bool cas = op.kind == OpKind::AtomicCas;
  const Regs& val = get(op.operand(cas ? 2 : 1));
  const Regs* cmp = cas ? &get(op.operand(1)) : nullptr;
  const unsigned mask_at = cas ? 3 : 2;
  const Regs* mask = op.operands.size() > mask_at ? &get(op.operand(mask_at)) : nullptr;
  auto ordering = llvm::AtomicOrdering::AcquireRelease;
  switch (op.enum_attr<ir::MemSem>(ir::MemSem::AcqRel)) {
  case ir::MemSem::Relaxed:
    ordering = llvm::AtomicOrdering::Monotonic;
    break;
  case ir::MemSem::Acquire:
    ordering = llvm::AtomicOrdering::Acquire;
    break;
  case ir::MemSem::Release:
    ordering = llvm::AtomicOrdering::Release;
    break;
  case ir::MemSem::AcqRel:
    break;
  }
  auto ssid = ti_.sync_scope(ctx_, op.enum_attr<ir::MemScope>(ir::MemScope::Gpu));
  // Each element is updated once: only the thread that owns it (no replica) issues it.
  LinearLayout d;
  LV* owner;
  if (ptr->type.is_scalar()) {
    owner = b_.CreateICmpEQ(s_.tid, b_.getInt32(0));
    // A scalar is one value for the whole program, but every thread loads it: without this
    // barrier thread 0 could update the address before a slower thread has read the value
    // the program read, and the threads would disagree on it (count == 0 then branches
    // apart in Triton's layer norm backward, and the barriers below deadlock). It orders
    // global memory: kept where no shared memory was touched (remove_idle_barriers).
    ordering_barrier(ti_, b_);
  } else {
    d = dist(ptr);
    owner = is_owner(d);
  }
  const ir::MemScope scope = op.enum_attr<ir::MemScope>(ir::MemScope::Gpu);
  // Nobody reads the old values (split-K's partial sums, a histogram's counts): no exchange
  // through shared memory, and adds without a result, as many elements an instruction as the
  // layout and the mask allow where the target has them (Triton: red.global.v4.f32.add).
  bool read = false;
  walk(f_.entry(), [&](const ir::Op& o) {
    read = read || std::find(o.operands.begin(), o.operands.end(), res) != o.operands.end();
  });
  const auto kind = cas ? llvm::AtomicRMWInst::BAD_BINOP : rmw_kind(op, e);
  const bool add = kind == llvm::AtomicRMWInst::FAdd || kind == llvm::AtomicRMWInst::Add;
  if (!read && add &&
      (ordering == llvm::AtomicOrdering::Monotonic || ordering == llvm::AtomicOrdering::Release)) {
    if (ordering == llvm::AtomicOrdering::Release)
      ti_.atomic_fence(b_, scope);
    const int vec =
        ptr->type.is_scalar() ? 1 : vector_width(ptr, mask ? op.operand(mask_at) : nullptr, d, e);
    for (size_t r = 0; r < p.size(); r += vec) {
      LV* cond = mask ? b_.CreateAnd(owner, (*mask)[r]) : owner;
      LV* v = val[r];
      if (vec > 1) {
        v = llvm::PoisonValue::get(llvm::FixedVectorType::get(type(e), vec));
        for (int k = 0; k < vec; ++k)
          v = b_.CreateInsertElement(v, val[r + k], k);
      }
      if (ti_.reduce_add(b_, v, p[r], cond, scope))
        continue;
      for (int k = 0; k < vec; ++k) { // (the mask is the same over the run)
        if (ti_.reduce_add(b_, val[r + k], p[r + k], cond, scope))
          continue;
        guarded(
            cond,
            [&]() -> LV* {
              b_.CreateAtomicRMW(kind, p[r + k], val[r + k], llvm::MaybeAlign(), ordering, ssid);
              return nullptr;
            },
            nullptr);
      }
    }
    return;
  }
  const bool fence_before =
      ordering == llvm::AtomicOrdering::Release || ordering == llvm::AtomicOrdering::AcquireRelease;
  const bool fence_after =
      ordering == llvm::AtomicOrdering::Acquire || ordering == llvm::AtomicOrdering::AcquireRelease;
  Regs out;
  for (size_t r = 0; r < p.size(); ++r) {
    LV* cond = mask ? b_.CreateAnd(owner, (*mask)[r]) : owner;
    LV* zero = llvm::Constant::getNullValue(type(e));
    out.push_back(guarded(
        cond,
        [&]() -> LV* {
          if (fence_before)
            ti_.atomic_fence(b_, scope);
          LV* old = nullptr;
          if (cas) {
            auto* x = b_.CreateAtomicCmpXchg(p[r], (*cmp)[r], val[r], llvm::MaybeAlign(),
                                             ordering == llvm::AtomicOrdering::Release
                                                 ? llvm::AtomicOrdering::Release
                                                 : ordering,
                                             ordering == llvm::AtomicOrdering::AcquireRelease ||
                                                     ordering == llvm::AtomicOrdering::Release
                                                 ? llvm::AtomicOrdering::Acquire
                                                 : llvm::AtomicOrdering::Monotonic,
                                             ssid);
            if (ordering == llvm::AtomicOrdering::Release)
              x->setFailureOrdering(llvm::AtomicOrdering::Monotonic);
            old = b_.CreateExtractValue(x, 0);
          } else {
            old = b_.CreateAtomicRMW(rmw_kind(op, e), p[r], val[r], llvm::MaybeAlign(), ordering,
                                     ssid);
          }
          if (fence_after)
            ti_.atomic_fence(b_, scope);
          return old;
        },
        zero));
  }
  // The old values reach the replicas through shared memory.
  ti_.barrier(b_);
  int64_t eb = mem_bytes(e);
  if (ptr->type.is_scalar()) {
    guarded(
        owner,
        [&]() -> LV* {
          b_.CreateStore(to_mem(out[0], e), smem_ptr(b_.getInt32(0), 0, eb));
          return nullptr;
        },
        nullptr);
    need_shared(16);
    ti_.barrier(b_);
    return set(res, {from_smem(e, b_.getInt32(0), 0)});
  }
  for (int r = 0; r < d.num_regs(); ++r) {
    LV* idx = linear(coords(d, r), ptr->type.shape);
    guarded(
        owner,
        [&]() -> LV* {
          b_.CreateStore(to_mem(out[r], e), smem_ptr(idx, 0, eb));
          return nullptr;
        },
        nullptr);
  }
  need_shared(align16(ptr->type.numel() * eb));
  ti_.barrier(b_);
  Regs fin;
  for (int r = 0; r < d.num_regs(); ++r)
    fin.push_back(from_smem(e, linear(coords(d, r), ptr->type.shape), 0));
  set(res, std::move(fin));
}

llvm::AtomicRMWInst::BinOp MemoryLowering::rmw_kind(const ir::Op& op, DType e) {
  using B = llvm::AtomicRMWInst::BinOp;
  bool f = e.is_float(), u = e.is_unsigned();
  switch (op.enum_attr<ir::AtomicOp>()) {
  case ir::AtomicOp::Add:
    return f ? B::FAdd : B::Add;
  case ir::AtomicOp::Max:
    return f ? B::FMax : u ? B::UMax : B::Max;
  case ir::AtomicOp::Min:
    return f ? B::FMin : u ? B::UMin : B::Min;
  case ir::AtomicOp::And:
    return B::And;
  case ir::AtomicOp::Or:
    return B::Or;
  case ir::AtomicOp::Xor:
    return B::Xor;
  case ir::AtomicOp::Xchg:
    return B::Xchg;
  }
  return B::Xchg;
}

} // namespace tritium::gpu
