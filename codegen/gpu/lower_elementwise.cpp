// Elementwise ops: register i of the result from register i of each operand, one scalar
// instruction sequence per register from the shared element semantics (codegen/llvm/scalar.hpp).
// What the GPU decides for itself: f16/bf16 stay in half / bfloat registers, and math functions
// come from the target (TargetInfo::math), on f32 for the 16-bit types; f32 `/` is the target's
// (TargetInfo::approx: Triton's approximate quotient) unless the op asks for rounding (div_rn).
#include "gpu/lowering.hpp"

#include <llvm/IR/Intrinsics.h>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

void ElementwiseLowering::elementwise(const ir::Op& op) {
  int n = nregs(op.result());
  // Registers that AxisInfo knows hold equal values (an aligned run of consecutive registers
  // over consecutive elements, within a run of equal ones) are computed once: a mask
  // `cols < N` over 8 elements per thread is one compare, not eight.
  int run = 1;
  if (!op.result()->type.is_scalar()) {
    LinearLayout d = dist(op.result());
    if (!d.reg.empty() && LinearLayout::dim_of(d.reg[0]) >= 0) {
      int k = LinearLayout::dim_of(d.reg[0]);
      int64_t c = axis_info(op.result()).constancy[k];
      while (run * 2 <= std::min<int64_t>(c, d.contiguous_regs(k)))
        run *= 2;
    }
  }
  Regs r;
  // Two lanes at a time where the target has one instruction for both (TargetInfo::pair):
  // f32 -> f16/bf16 conversions (NVIDIA's cvt.rn.f16x2.f32: two conversions and a pack, the
  // same rounding) and 16-bit float arithmetic (mul.f16x2, as Triton emits: each lane rounds
  // as the scalar op does, in half the instructions, and registers that arrive in pairs are not
  // unpacked).
  // fp8 conversions come in pairs too (cvt.rn.satfinite.e4m3x2.f32, cvt.rn.f16x2.e4m3x2).
  const DType from = op.operand(0)->type.elem, to = op.result()->type.elem;
  const bool half = to.kind == ScalarKind::F16 || to.kind == ScalarKind::BF16;
  const bool pairs = op.kind == OpKind::Cast
                         ? (half && from.kind == ScalarKind::F32) || from.is_storage_float() ||
                               to.is_storage_float()
                         : half && (op.kind == OpKind::Add || op.kind == OpKind::Sub ||
                                    op.kind == OpKind::Mul || op.kind == OpKind::Fma);
  if (pairs && run == 1 && n % 2 == 0) {
    for (int i = 0; i < n; i += 2) {
      std::vector<std::array<LV*, 2>> lanes;
      for (const ir::Value* v : op.operands) {
        const Regs& x = get(v);
        const bool one = v->type.is_scalar();
        lanes.push_back({x[one ? 0 : i], x[one ? 0 : i + 1]});
      }
      LV* v = ti_.pair(b_, op.kind, lanes, from, to);
      if (!v) {
        r.clear();
        break;
      }
      r.push_back(b_.CreateExtractElement(v, uint64_t{0}));
      r.push_back(b_.CreateExtractElement(v, uint64_t{1}));
    }
    if (!r.empty())
      return set(op.result(), std::move(r));
  }
  for (int i = 0; i < n; ++i) {
    if (i % run) {
      r.push_back(r[i - i % run]);
      continue;
    }
    std::vector<LV*> a;
    for (const ir::Value* v : op.operands)
      a.push_back(get(v)[v->type.is_scalar() ? 0 : i]);
    LV* fast = (op.kind == OpKind::Div || op.kind == OpKind::Sqrt) &&
                       from.kind == ScalarKind::F32 && !op.int_attr(attr::rn, 0)
                   ? ti_.approx(b_, op.kind, a)
                   : nullptr;
    r.push_back(fast ? fast : scalar_.elementwise(op, a));
  }
  set(op.result(), std::move(r));
}

LV* Context::math(ir::OpKind kind, DType t, const std::vector<LV*>& args, const ir::Op& op) {
  if (kind == ir::OpKind::Rsqrt) {
    LV* x = args[0];
    return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0),
                         b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  }
  const bool narrow = t.bits() < 32;
  std::vector<LV*> wide;
  for (LV* a : args)
    wide.push_back(narrow ? b_.CreateFPExt(a, b_.getFloatTy()) : a);
  LV* r = ti_.math(b_, kind, wide, op);
  return narrow ? b_.CreateFPTrunc(r, type(t)) : r;
}

} // namespace tritium::gpu
