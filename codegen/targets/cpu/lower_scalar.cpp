// Element semantics: what one lane of each elementwise op computes, bit for bit as the
// reference interpreter (runtime/interpreter/interpreter.cpp) defines it.
//
// Rounding choices that keep results identical to the interpreter, which computes in double:
//  * f32 add/sub/mul/div/sqrt/fma/min/max/rem are exact IEEE f32 operations;
//  * transcendental functions (exp, log, sin, pow, …) call the C library's double versions and
//    round once, as the interpreter does;
//  * f16/bf16 add/sub/mul/div/sqrt compute in f32 and round once to 16 bits: f32 has more than
//    2p+2 significand bits, so the double rounding is innocuous;
//  * every f64 -> f16/bf16 rounding goes through f32 with round-to-odd, which is exact.
#include "lowering.hpp"

#include <tritium/error.hpp>
#include <tritium/float16.hpp>

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <bit>
#include <cmath>

namespace tritium::cpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

namespace {
bool narrow_float(DType t) {
  return t.kind == ScalarKind::F16 || t.kind == ScalarKind::BF16;
}
} // namespace

llvm::Type* KernelLowering::reg_type(DType t) {
  auto& c = ctx_;
  switch (t.kind) {
  case ScalarKind::I1:
    return llvm::Type::getInt1Ty(c);
  case ScalarKind::I8:
  case ScalarKind::U8:
    return llvm::Type::getInt8Ty(c);
  case ScalarKind::I16:
  case ScalarKind::U16:
    return llvm::Type::getInt16Ty(c);
  case ScalarKind::I32:
  case ScalarKind::U32:
    return llvm::Type::getInt32Ty(c);
  case ScalarKind::I64:
  case ScalarKind::U64:
    return llvm::Type::getInt64Ty(c);
  case ScalarKind::F16:
  case ScalarKind::BF16:
  case ScalarKind::F32:
    return llvm::Type::getFloatTy(c);
  case ScalarKind::F64:
    return llvm::Type::getDoubleTy(c);
  case ScalarKind::Ptr:
    return llvm::PointerType::get(c, 0);
  }
  return nullptr;
}

llvm::Type* KernelLowering::scratch_type(DType t) {
  return t.is_bool() ? llvm::Type::getInt8Ty(ctx_) : reg_type(t);
}
llvm::Value* KernelLowering::to_scratch(llvm::Value* v, DType t) {
  return t.is_bool() ? builder_.CreateZExt(v, builder_.getInt8Ty()) : v;
}
llvm::Value* KernelLowering::from_scratch(llvm::Value* v, DType t) {
  return t.is_bool() ? builder_.CreateTrunc(v, builder_.getInt1Ty()) : v;
}

llvm::Value* KernelLowering::to_bits(llvm::Value* v, DType t) {
  auto& b = builder_;
  switch (t.kind) {
  case ScalarKind::F16:
    return b.CreateBitCast(b.CreateFPTrunc(v, b.getHalfTy()), b.getInt16Ty());
  case ScalarKind::BF16:
    return b.CreateTrunc(b.CreateLShr(b.CreateBitCast(v, b.getInt32Ty()), 16), b.getInt16Ty());
  case ScalarKind::F32:
    return b.CreateBitCast(v, b.getInt32Ty());
  case ScalarKind::F64:
    return b.CreateBitCast(v, b.getInt64Ty());
  case ScalarKind::Ptr:
    return b.CreatePtrToInt(v, b.getInt64Ty());
  default:
    return v;
  }
}

llvm::Value* KernelLowering::from_bits(llvm::Value* bits, DType t) {
  auto& b = builder_;
  switch (t.kind) {
  case ScalarKind::F16:
    return b.CreateFPExt(b.CreateBitCast(bits, b.getHalfTy()), b.getFloatTy());
  case ScalarKind::BF16:
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
  case ScalarKind::F32:
    return b.CreateBitCast(bits, b.getFloatTy());
  case ScalarKind::F64:
    return b.CreateBitCast(bits, b.getDoubleTy());
  case ScalarKind::Ptr:
    return b.CreateIntToPtr(bits, reg_type(t));
  default:
    return bits;
  }
}

llvm::Value* KernelLowering::load_user(llvm::Value* ptr, DType t) {
  auto& b = builder_;
  if (narrow_float(t))
    return from_bits(b.CreateLoad(b.getInt16Ty(), ptr), t);
  if (t.is_bool()) // the low bit, as the interpreter reads a bool
    return b.CreateTrunc(b.CreateLoad(b.getInt8Ty(), ptr), b.getInt1Ty());
  return b.CreateLoad(reg_type(t), ptr);
}

void KernelLowering::store_user(llvm::Value* ptr, llvm::Value* v, DType t) {
  auto& b = builder_;
  if (narrow_float(t))
    b.CreateStore(to_bits(v, t), ptr);
  else if (t.is_bool())
    b.CreateStore(b.CreateZExt(v, b.getInt8Ty()), ptr);
  else
    b.CreateStore(v, ptr);
}

// f32 -> f16/bf16 with round to nearest even; the value stays in a float register.
llvm::Value* KernelLowering::round_from_float(llvm::Value* f, DType t) {
  auto& b = builder_;
  if (t.kind == ScalarKind::F16)
    return b.CreateFPExt(b.CreateFPTrunc(f, b.getHalfTy()), b.getFloatTy());
  if (t.kind == ScalarKind::BF16) {
    llvm::Value* u = b.CreateBitCast(f, b.getInt32Ty());
    llvm::Value* lsb = b.CreateAnd(b.CreateLShr(u, 16), 1);
    llvm::Value* r =
        b.CreateAnd(b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7fff)), lsb), b.getInt32(0xffff0000u));
    llvm::Value* nan = b.CreateOr(b.CreateAnd(u, b.getInt32(0x80000000u)), b.getInt32(0x7fc00000));
    llvm::Value* is_nan = b.CreateFCmpUNO(f, f);
    return b.CreateBitCast(b.CreateSelect(is_nan, nan, r), b.getFloatTy());
  }
  return f;
}

llvm::Value* KernelLowering::round_from_double(llvm::Value* d, DType t) {
  auto& b = builder_;
  if (t.kind == ScalarKind::F64)
    return d;
  llvm::Value* f = b.CreateFPTrunc(d, b.getFloatTy());
  if (t.kind == ScalarKind::F32)
    return f;
  // Round to odd: truncate toward zero, then set the last bit if anything was lost. A later
  // round-to-nearest to <= 22 significand bits is then the correctly rounded result.
  llvm::Value* back = b.CreateFPExt(f, b.getDoubleTy());
  llvm::Value* bits = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* inexact = b.CreateFCmpONE(back, d);
  llvm::Value* away = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                      b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  llvm::Value* toward_zero = b.CreateSelect(away, b.CreateSub(bits, b.getInt32(1)), bits);
  llvm::Value* odd = b.CreateOr(toward_zero, b.getInt32(1));
  llvm::Value* rto = b.CreateBitCast(b.CreateSelect(inexact, odd, bits), b.getFloatTy());
  return round_from_float(rto, t);
}

llvm::Value* KernelLowering::zero(DType t) {
  if (t.is_float())
    return llvm::ConstantFP::get(reg_type(t), 0.0);
  if (t.is_ptr())
    return llvm::ConstantPointerNull::get(llvm::PointerType::get(ctx_, 0));
  return llvm::ConstantInt::get(reg_type(t), 0);
}

llvm::Value* KernelLowering::constant(const ir::Op& op, DType t) {
  if (t.is_float()) {
    double v = op.float_attr("value");
    switch (t.kind) {
    case ScalarKind::F16:
      v = f16_bits_to_float(double_to_f16_bits(v));
      break;
    case ScalarKind::BF16:
      v = bf16_bits_to_float(double_to_bf16_bits(v));
      break;
    case ScalarKind::F32:
      v = static_cast<float>(v);
      break;
    default:
      break;
    }
    return llvm::ConstantFP::get(reg_type(t), v);
  }
  int64_t v = op.int_attr("value");
  if (t.is_ptr())
    return builder_.CreateIntToPtr(i64(v), reg_type(t));
  if (t.is_bool())
    v &= 1;
  return llvm::ConstantInt::get(reg_type(t), static_cast<uint64_t>(v), t.is_signed_int());
}

llvm::FunctionCallee KernelLowering::libm(const char* name, int args) {
  auto* d = llvm::Type::getDoubleTy(ctx_);
  std::vector<llvm::Type*> params(args, d);
  auto callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(d, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setOnlyAccessesInaccessibleMemory(); // errno at most
  }
  return callee;
}

llvm::Value* KernelLowering::binary(const ir::Op& op, OpKind k, DType t, llvm::Value* a,
                                    llvm::Value* x) {
  auto& b = builder_;
  llvm::Value* y = x;
  if (t.is_float()) {
    bool narrow = narrow_float(t);
    llvm::Value* r = nullptr;
    switch (k) {
    case OpKind::Add:
      r = b.CreateFAdd(a, y);
      break;
    case OpKind::Sub:
      r = b.CreateFSub(a, y);
      break;
    case OpKind::Mul:
      r = b.CreateFMul(a, y);
      break;
    case OpKind::Div:
      r = b.CreateFDiv(a, y);
      break;
    case OpKind::Rem:
      r = b.CreateFRem(a, y);
      break;
    case OpKind::Min:
      r = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, y);
      break;
    case OpKind::Max:
      r = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, y);
      break;
    case OpKind::Pow: {
      auto* d = b.getDoubleTy();
      if (t.kind == ScalarKind::F64)
        return b.CreateCall(libm("pow", 2), {a, y});
      return round_from_double(
          b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, b.CreateFPExt(a, d), b.CreateFPExt(y, d)),
          t);
    }
    default:
      throw Error(fmt::format("{}: op '{}' is not defined on floating-point values", where(op),
                              ir::op_name(k)));
    }
    return narrow ? round_from_float(r, t) : r;
  }
  const bool u = t.is_unsigned();
  const unsigned bits = static_cast<unsigned>(t.kind == ScalarKind::I1 ? 1 : t.bits());
  llvm::Type* ty = reg_type(t);
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(ty, static_cast<uint64_t>(v), true); };
  switch (k) {
  case OpKind::Add:
    return b.CreateAdd(a, y);
  case OpKind::Sub:
    return b.CreateSub(a, y);
  case OpKind::Mul:
    return b.CreateMul(a, y);
  case OpKind::Div:
  case OpKind::Rem: {
    // Division by zero would trap: the interpreter reports it, compiled code yields 0. The
    // most negative value divided by -1 wraps, as the interpreter's two's complement does.
    llvm::Value* is_zero = b.CreateICmpEQ(y, c(0));
    llvm::Value* r;
    if (u || bits == 1) {
      llvm::Value* safe = b.CreateSelect(is_zero, c(1), y);
      r = k == OpKind::Div ? b.CreateUDiv(a, safe) : b.CreateURem(a, safe);
    } else {
      llvm::Value* minus_one = b.CreateICmpEQ(y, c(-1));
      llvm::Value* safe = b.CreateSelect(b.CreateOr(is_zero, minus_one), c(1), y);
      r = k == OpKind::Div ? b.CreateSDiv(a, safe) : b.CreateSRem(a, safe);
      r = b.CreateSelect(minus_one, k == OpKind::Div ? b.CreateNeg(a) : c(0), r);
    }
    return b.CreateSelect(is_zero, c(0), r);
  }
  case OpKind::And:
    return b.CreateAnd(a, y);
  case OpKind::Or:
    return b.CreateOr(a, y);
  case OpKind::Xor:
    return b.CreateXor(a, y);
  case OpKind::Shl: {
    llvm::Value* big = b.CreateICmpUGE(y, c(bits));
    llvm::Value* safe = b.CreateSelect(big, c(0), y);
    return b.CreateSelect(big, c(0), b.CreateShl(a, safe));
  }
  case OpKind::Shr: {
    llvm::Value* big = b.CreateICmpUGE(y, c(bits));
    llvm::Value* safe = b.CreateSelect(big, c(0), y);
    if (u || bits == 1)
      return b.CreateSelect(big, c(0), b.CreateLShr(a, safe));
    llvm::Value* fill = b.CreateSelect(b.CreateICmpSLT(a, c(0)), c(-1), c(0));
    return b.CreateSelect(big, fill, b.CreateAShr(a, safe));
  }
  case OpKind::Min:
    return b.CreateBinaryIntrinsic(u ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, a, y);
  case OpKind::Max:
    return b.CreateBinaryIntrinsic(u ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, a, y);
  case OpKind::Umulhi: {
    llvm::Type* wide = b.getIntNTy(2 * bits);
    llvm::Value* p = b.CreateMul(b.CreateZExt(a, wide), b.CreateZExt(y, wide));
    return b.CreateTrunc(b.CreateLShr(p, bits), ty);
  }
  default:
    throw Error(fmt::format("{}: op '{}' is not defined on integers", where(op), ir::op_name(k)));
  }
}

llvm::Value* KernelLowering::compare(const std::string& pred, DType t, llvm::Value* a,
                                     llvm::Value* y) {
  auto& b = builder_;
  using P = llvm::CmpInst::Predicate;
  if (t.is_float()) {
    P p = pred == "eq"   ? P::FCMP_OEQ
          : pred == "ne" ? P::FCMP_UNE
          : pred == "lt" ? P::FCMP_OLT
          : pred == "le" ? P::FCMP_OLE
          : pred == "gt" ? P::FCMP_OGT
                         : P::FCMP_OGE;
    return b.CreateFCmp(p, a, y);
  }
  bool u = t.is_unsigned() || t.is_ptr();
  P p = pred == "eq"   ? P::ICMP_EQ
        : pred == "ne" ? P::ICMP_NE
        : pred == "lt" ? (u ? P::ICMP_ULT : P::ICMP_SLT)
        : pred == "le" ? (u ? P::ICMP_ULE : P::ICMP_SLE)
        : pred == "gt" ? (u ? P::ICMP_UGT : P::ICMP_SGT)
                       : (u ? P::ICMP_UGE : P::ICMP_SGE);
  return b.CreateICmp(p, a, y);
}

llvm::Value* KernelLowering::unary(const ir::Op& op, DType t, llvm::Value* a) {
  auto& b = builder_;
  if (!t.is_float()) {
    switch (op.kind) {
    case OpKind::Neg:
      return b.CreateNeg(a);
    case OpKind::Not:
      return b.CreateNot(a);
    case OpKind::Abs:
      if (t.is_unsigned())
        return a;
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b.getFalse());
    default:
      throw Error(
          fmt::format("{}: op '{}' is not defined on integers", where(op), ir::op_name(op.kind)));
    }
  }
  bool narrow = narrow_float(t);
  auto exact = [&](llvm::Value* r) { return narrow ? round_from_float(r, t) : r; };
  auto via_double = [&](const char* fn) {
    llvm::Value* d = t.kind == ScalarKind::F64 ? a : b.CreateFPExt(a, b.getDoubleTy());
    return round_from_double(b.CreateCall(libm(fn, 1), {d}), t);
  };
  // exp, log, sin, cos as double intrinsics: scalar code calls the C library (what the
  // interpreter does), vectorized loops a vector math library where the target has one. Its
  // few-ulp double error vanishes when rounded to f32/f16/bf16 (but for ties once in ~10^8
  // values), so f64 results keep the exact scalar call.
  auto vectorizable = [&](llvm::Intrinsic::ID id, const char* fn) {
    if (t.kind == ScalarKind::F64)
      return via_double(fn);
    llvm::Value* d = b.CreateFPExt(a, b.getDoubleTy());
    return round_from_double(b.CreateUnaryIntrinsic(id, d), t);
  };
  switch (op.kind) {
  case OpKind::Neg:
    return b.CreateFNeg(a);
  case OpKind::Abs:
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
  case OpKind::Floor:
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a);
  case OpKind::Ceil:
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a);
  case OpKind::Sqrt:
    return exact(b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
  case OpKind::Rsqrt: {
    llvm::Value* d = t.kind == ScalarKind::F64 ? a : b.CreateFPExt(a, b.getDoubleTy());
    llvm::Value* r = b.CreateFDiv(llvm::ConstantFP::get(b.getDoubleTy(), 1.0),
                                  b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, d));
    return round_from_double(r, t);
  }
  case OpKind::Exp:
    return vectorizable(llvm::Intrinsic::exp, "exp");
  case OpKind::Exp2:
    return via_double("exp2");
  case OpKind::Log:
    return vectorizable(llvm::Intrinsic::log, "log");
  case OpKind::Log2:
    return via_double("log2");
  case OpKind::Sin:
    return vectorizable(llvm::Intrinsic::sin, "sin");
  case OpKind::Cos:
    return vectorizable(llvm::Intrinsic::cos, "cos");
  case OpKind::Tanh:
    return via_double("tanh");
  case OpKind::Erf:
    return via_double("erf");
  default:
    throw Error(fmt::format("{}: op '{}' is not a unary op", where(op), ir::op_name(op.kind)));
  }
}

llvm::Value* KernelLowering::fma(DType t, llvm::Value* a, llvm::Value* x, llvm::Value* c) {
  auto& b = builder_;
  if (t.kind == ScalarKind::F32 || t.kind == ScalarKind::F64)
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, c});
  auto* d = b.getDoubleTy();
  llvm::Value* r = b.CreateIntrinsic(
      llvm::Intrinsic::fma, {d}, {b.CreateFPExt(a, d), b.CreateFPExt(x, d), b.CreateFPExt(c, d)});
  return round_from_double(r, t);
}

llvm::Value* KernelLowering::convert(const ir::Op& op, llvm::Value* a, DType from, DType to) {
  auto& b = builder_;
  if (from == to)
    return a;
  if (to.is_bool()) {
    if (from.is_float())
      return b.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
    if (from.is_ptr())
      return b.CreateICmpNE(b.CreatePtrToInt(a, b.getInt64Ty()), b.getInt64(0));
    return b.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
  }
  if (from.is_float() && to.is_float()) {
    if (to.kind == ScalarKind::F64)
      return b.CreateFPExt(a, b.getDoubleTy());
    if (from.kind == ScalarKind::F64)
      return round_from_double(a, to);
    return round_from_float(a, to); // f32/f16/bf16 in a float register
  }
  if (!from.is_float() && !from.is_ptr() && to.is_float()) {
    bool u = from.is_unsigned();
    if (to.kind == ScalarKind::F32)
      return u ? b.CreateUIToFP(a, b.getFloatTy()) : b.CreateSIToFP(a, b.getFloatTy());
    llvm::Value* d = u ? b.CreateUIToFP(a, b.getDoubleTy()) : b.CreateSIToFP(a, b.getDoubleTy());
    return round_from_double(d, to);
  }
  if (from.is_float() && !to.is_float() && !to.is_ptr()) {
    // Truncation toward zero, saturating, NaN to 0, as the interpreter (and cvt.rzi) does.
    auto id = to.is_unsigned() ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b.CreateIntrinsic(id, {reg_type(to), a->getType()}, {a});
  }
  if (from.is_ptr() && to.is_ptr())
    return a;
  if (to.is_ptr())
    return b.CreateIntToPtr(from.is_unsigned() ? b.CreateZExt(a, b.getInt64Ty())
                                               : b.CreateSExtOrTrunc(a, b.getInt64Ty()),
                            reg_type(to));
  if (from.is_ptr())
    return b.CreateTrunc(b.CreatePtrToInt(a, b.getInt64Ty()), reg_type(to));
  if (from.is_float() || to.is_float())
    throw Error(fmt::format("{}: cannot convert {} to {}", where(op), ir::to_string(from),
                            ir::to_string(to)));
  // Integer to integer: the source's value re-wrapped; extension follows the source's sign.
  return from.is_unsigned() ? b.CreateZExtOrTrunc(a, reg_type(to))
                            : b.CreateSExtOrTrunc(a, reg_type(to));
}

llvm::Value* KernelLowering::bitcast(llvm::Value* a, DType from, DType to) {
  if (from == to)
    return a;
  return from_bits(to_bits(a, from), to);
}

llvm::Value* KernelLowering::elementwise(const ir::Op& op, const std::vector<llvm::Value*>& a) {
  const DType t = op.operands[0]->type.elem;
  switch (ir::op_category(op.kind)) {
  case ir::OpCategory::Binary:
    return binary(op, op.kind, t, a[0], a[1]);
  case ir::OpCategory::Compare:
    return compare(op.str_attr("pred"), t, a[0], a[1]);
  case ir::OpCategory::Unary:
    return unary(op, t, a[0]);
  case ir::OpCategory::Ternary:
    return fma(t, a[0], a[1], a[2]);
  case ir::OpCategory::Select:
    return builder_.CreateSelect(a[0], a[1], a[2]);
  case ir::OpCategory::Convert: {
    DType to = op.result()->type.elem;
    return op.kind == OpKind::Bitcast ? bitcast(a[0], t, to) : convert(op, a[0], t, to);
  }
  case ir::OpCategory::Hint:
    return a[0];
  default:
    throw Error(fmt::format("{}: op '{}' is not elementwise", where(op), ir::op_name(op.kind)));
  }
}

} // namespace tritium::cpu
