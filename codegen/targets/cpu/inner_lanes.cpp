// The lanes of a loop nest's innermost loop where a mask holds, in closed form.
//
// The offsets are added in i64 from the i32 values the kernel computes in i32: a chain of
// additions and subtractions agrees with its i32 result modulo 2^32, so where the i64 value of
// the first and the last lane lies in i32's range, every lane's i32 value equals it and the
// comparison reads as the closed form says. Where it does not (an offset wrapped around), no lane
// is taken as known and the whole row stays masked, which is right for any mask.
#include "inner_lanes.hpp"

#include <cstdint>

namespace tritium::cpu {

using ir::Op;
using ir::OpKind;
using ir::ScalarKind;

InnerLanes::InnerLanes(KernelLowering& k, std::vector<llvm::Value*> outer, int64_t n)
    : k_(k), outer_(std::move(outer)), n_(n) {}

std::optional<InnerLanes::Prefix> InnerLanes::prefix(const ir::Value* mask) {
  std::vector<llvm::Value*> idx = outer_;
  idx.push_back(k_.i64(0)); // the innermost index: never read, see `inner`
  return mask_prefix(mask, std::move(idx), static_cast<int>(outer_.size()));
}

bool InnerLanes::operand_index(const Op& op, std::vector<llvm::Value*>& idx, int& inner) {
  switch (op.kind) {
  case OpKind::Broadcast: {
    const auto& from = op.operand(0)->type.shape;
    for (size_t d = 0; d < idx.size(); ++d)
      if (from[d] == 1) {
        idx[d] = k_.i64(0);
        if (static_cast<int>(d) == inner)
          inner = -1;
      }
    return true;
  }
  case OpKind::ExpandDims: {
    const int axis = static_cast<int>(op.int_attr(attr::axis));
    idx.erase(idx.begin() + axis);
    inner = inner == axis ? -1 : inner > axis ? inner - 1 : inner;
    return true;
  }
  case OpKind::Trans: {
    auto order = op.ints_attr(attr::order);
    std::vector<llvm::Value*> j(idx.size());
    for (size_t d = 0; d < order.size(); ++d)
      j[order[d]] = idx[d];
    idx = std::move(j);
    if (inner >= 0)
      inner = static_cast<int>(order[inner]);
    return true;
  }
  default:
    return false;
  }
}

// A value that does not vary along the innermost loop, computed once per row.
llvm::Value* InnerLanes::invariant(const ir::Value* v, std::vector<llvm::Value*> idx, int inner) {
  if (is_rank0(v))
    return k_.scalar(v);
  if (inner >= 0)
    idx[inner] = k_.i64(0);
  std::unordered_map<const ir::Value*, llvm::Value*> in;
  return k_.fusion_.remat(v, idx, false, in);
}

llvm::Value* InnerLanes::clamp(llvm::Value* c) {
  auto& b = k_.b();
  c = b.CreateSelect(b.CreateICmpSLT(c, k_.i64(0)), k_.i64(0), c);
  return b.CreateSelect(b.CreateICmpSGT(c, k_.i64(n_)), k_.i64(n_), c);
}

std::optional<InnerLanes::Affine> InnerLanes::affine(const ir::Value* v,
                                                     std::vector<llvm::Value*> idx, int inner) {
  const ScalarKind kind = v->type.elem.kind;
  if (kind != ScalarKind::I32 && kind != ScalarKind::I64)
    return std::nullopt;
  auto& b = k_.b();
  auto widen = [&](llvm::Value* x) { return b.CreateSExt(x, b.getInt64Ty()); };
  if (inner < 0 || is_rank0(v))
    return Affine{false, widen(invariant(v, std::move(idx), inner))};
  if (!v->def)
    return std::nullopt;
  const Op& op = *v->def;
  switch (op.kind) {
  case OpKind::Arange:
    return Affine{true, k_.i64(op.int_attr(attr::start))};
  case OpKind::Splat:
  case OpKind::Constant:
    return Affine{false, widen(invariant(v, std::move(idx), inner))};
  case OpKind::Add:
  case OpKind::Sub: {
    auto x = affine(op.operand(0), idx, inner);
    auto y = x ? affine(op.operand(1), idx, inner) : std::nullopt;
    if (!y || y->unit && (x->unit || op.kind == OpKind::Sub))
      return std::nullopt; // 2i or -i: not a prefix
    llvm::Value* off = op.kind == OpKind::Add ? b.CreateAdd(x->offset, y->offset)
                                              : b.CreateSub(x->offset, y->offset);
    return Affine{x->unit || y->unit, off};
  }
  default:
    if (!operand_index(op, idx, inner))
      return std::nullopt;
    return affine(op.operand(0), std::move(idx), inner);
  }
}

std::optional<InnerLanes::Prefix>
InnerLanes::compare(const Op& cmp, const std::vector<llvm::Value*>& idx, int inner) {
  auto x = affine(cmp.operand(0), idx, inner);
  auto y = x ? affine(cmp.operand(1), idx, inner) : std::nullopt;
  if (!y)
    return std::nullopt;
  auto& b = k_.b();
  const auto pred = cmp.enum_attr<ir::CmpPred>();
  if (!x->unit && !y->unit) { // the same for every lane of the row (signed, as widened)
    static constexpr llvm::CmpInst::Predicate kSigned[] = {
        llvm::CmpInst::ICMP_EQ,  llvm::CmpInst::ICMP_NE,  llvm::CmpInst::ICMP_SLT,
        llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_SGE};
    llvm::Value* holds = b.CreateICmp(kSigned[static_cast<int>(pred)], x->offset, y->offset);
    llvm::Value* c = b.CreateSelect(holds, k_.i64(n_), k_.i64(0));
    return Prefix{c, c};
  }
  // i + a < b: the lanes below b - a (<=: one more); b > i + a reads the same.
  const bool lt = pred == ir::CmpPred::Lt || pred == ir::CmpPred::Le;
  const bool gt = pred == ir::CmpPred::Gt || pred == ir::CmpPred::Ge;
  if (!(lt && x->unit && !y->unit) && !(gt && y->unit && !x->unit))
    return std::nullopt;
  const Affine& lane = x->unit ? *x : *y;
  const Affine& bound = x->unit ? *y : *x;
  if (cmp.operand(0)->type.elem.kind != ScalarKind::I32)
    return std::nullopt; // an i64 offset's wraparound cannot be seen in i64
  llvm::Value* c = b.CreateSub(bound.offset, lane.offset);
  if (pred == ir::CmpPred::Le || pred == ir::CmpPred::Ge)
    c = b.CreateAdd(c, k_.i64(1));
  c = clamp(c);
  llvm::Value* last = b.CreateAdd(lane.offset, k_.i64(n_ - 1));
  llvm::Value* exact = b.CreateAnd(b.CreateICmpSGE(lane.offset, k_.i64(INT32_MIN)),
                                   b.CreateICmpSLE(last, k_.i64(INT32_MAX)));
  return Prefix{b.CreateSelect(exact, c, k_.i64(0)), b.CreateSelect(exact, c, k_.i64(n_))};
}

std::optional<InnerLanes::Prefix>
InnerLanes::mask_prefix(const ir::Value* m, std::vector<llvm::Value*> idx, int inner) {
  auto& b = k_.b();
  const bool uniform =
      m->def && (m->def->kind == OpKind::Splat || m->def->kind == OpKind::Constant);
  if (inner < 0 || is_rank0(m) || uniform) { // a row's mask: all lanes or none
    llvm::Value* c = b.CreateSelect(invariant(m, std::move(idx), inner), k_.i64(n_), k_.i64(0));
    return Prefix{c, c};
  }
  if (!m->def)
    return std::nullopt;
  const Op& op = *m->def;
  if (op.kind == OpKind::Cmp)
    return compare(op, idx, inner);
  if (op.kind == OpKind::And) {
    auto x = mask_prefix(op.operand(0), idx, inner);
    auto y = x ? mask_prefix(op.operand(1), idx, inner) : std::nullopt;
    if (!y)
      return std::nullopt;
    auto least = [&](llvm::Value* p, llvm::Value* q) {
      return b.CreateSelect(b.CreateICmpSLT(p, q), p, q);
    };
    return Prefix{least(x->count, y->count), least(x->end, y->end)};
  }
  if (!operand_index(op, idx, inner))
    return std::nullopt;
  return mask_prefix(op.operand(0), std::move(idx), inner);
}

} // namespace tritium::cpu
