#include "llvm/scalar.hpp"

#include "llvm/narrow_float.hpp"

#include <tritium/error.hpp>
#include <tritium/float16.hpp>

#include <fmt/format.h>

#include <llvm/IR/Intrinsics.h>

namespace tritium::scalar {

using ir::DType;
using ir::ScalarKind;
using llvm::Value;

namespace {
bool narrow(DType t) {
  return t.kind == ScalarKind::F16 || t.kind == ScalarKind::BF16;
}
[[noreturn]] void unreachable(const ir::Op& op, std::string_view what) {
  throw Error(fmt::format("{}: op '{}': internal error: {} (the verifier admits no such op)",
                          op.loc.str(), ir::op_name(op.kind), what));
}
} // namespace

bool Emitter::in_f32(DType t) const {
  return narrow(t) && target_.narrow_floats_in_f32();
}

llvm::Type* Emitter::type(DType t) {
  switch (t.kind) {
  case ScalarKind::I1:
    return b_.getInt1Ty();
  case ScalarKind::I8:
  case ScalarKind::U8:
    return b_.getInt8Ty();
  case ScalarKind::I16:
  case ScalarKind::U16:
    return b_.getInt16Ty();
  case ScalarKind::I32:
  case ScalarKind::U32:
    return b_.getInt32Ty();
  case ScalarKind::I64:
  case ScalarKind::U64:
    return b_.getInt64Ty();
  case ScalarKind::F16:
    return target_.narrow_floats_in_f32() ? b_.getFloatTy() : b_.getHalfTy();
  case ScalarKind::BF16:
    return target_.narrow_floats_in_f32() ? b_.getFloatTy() : b_.getBFloatTy();
  case ScalarKind::F32:
    return b_.getFloatTy();
  case ScalarKind::F64:
    return b_.getDoubleTy();
  case ScalarKind::Ptr:
    return b_.getPtrTy(target_.global_address_space());
  default: // storage floats: their code
    return b_.getIntNTy(static_cast<unsigned>(t.bits()));
  }
}

llvm::Type* Emitter::memory_type(DType t) {
  if (t.is_bool())
    return b_.getInt8Ty();
  if (in_f32(t))
    return b_.getInt16Ty();
  return type(t);
}

Value* Emitter::to_bits(Value* v, DType t) {
  switch (t.kind) {
  case ScalarKind::F16:
    if (in_f32(t))
      return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
    return b_.CreateBitCast(v, b_.getInt16Ty());
  case ScalarKind::BF16:
    if (in_f32(t))
      return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, b_.getInt32Ty()), 16),
                            b_.getInt16Ty());
    return b_.CreateBitCast(v, b_.getInt16Ty());
  case ScalarKind::F32:
    return b_.CreateBitCast(v, b_.getInt32Ty());
  case ScalarKind::F64:
    return b_.CreateBitCast(v, b_.getInt64Ty());
  case ScalarKind::Ptr:
    return b_.CreatePtrToInt(v, b_.getInt64Ty());
  default:
    return v;
  }
}

Value* Emitter::from_bits(Value* bits, DType t) {
  switch (t.kind) {
  case ScalarKind::F16:
    if (in_f32(t))
      return b_.CreateFPExt(b_.CreateBitCast(bits, b_.getHalfTy()), b_.getFloatTy());
    return b_.CreateBitCast(bits, type(t));
  case ScalarKind::BF16:
    if (in_f32(t))
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, b_.getInt32Ty()), 16),
                              b_.getFloatTy());
    return b_.CreateBitCast(bits, type(t));
  case ScalarKind::F32:
  case ScalarKind::F64:
    return b_.CreateBitCast(bits, type(t));
  case ScalarKind::Ptr:
    return b_.CreateIntToPtr(bits, type(t));
  default:
    return bits;
  }
}

// f32 -> f16/bf16 with round to nearest even; the value stays in a float register. A storage
// float's register is its code.
Value* Emitter::round_from_float(Value* f, DType t) {
  if (t.is_storage_float())
    return encode(f, t);
  if (t.kind == ScalarKind::F16)
    return b_.CreateFPExt(b_.CreateFPTrunc(f, b_.getHalfTy()), b_.getFloatTy());
  if (t.kind == ScalarKind::BF16) {
    Value* u = b_.CreateBitCast(f, b_.getInt32Ty());
    Value* lsb = b_.CreateAnd(b_.CreateLShr(u, 16), 1);
    Value* r = b_.CreateAnd(b_.CreateAdd(b_.CreateAdd(u, b_.getInt32(0x7fff)), lsb),
                            b_.getInt32(0xffff0000u));
    Value* nan = b_.CreateOr(b_.CreateAnd(u, b_.getInt32(0x80000000u)), b_.getInt32(0x7fc00000));
    Value* is_nan = b_.CreateFCmpUNO(f, f);
    return b_.CreateBitCast(b_.CreateSelect(is_nan, nan, r), b_.getFloatTy());
  }
  return f;
}

Value* Emitter::round_from_double(Value* d, DType t) {
  if (t.kind == ScalarKind::F64)
    return d;
  Value* f = b_.CreateFPTrunc(d, b_.getFloatTy());
  if (t.kind == ScalarKind::F32)
    return f;
  // Round to odd: truncate toward zero, then set the last bit if anything was lost. A later
  // round-to-nearest to <= 22 significand bits is then the correctly rounded result.
  Value* back = b_.CreateFPExt(f, b_.getDoubleTy());
  Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  Value* inexact = b_.CreateFCmpONE(back, d);
  Value* away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                 b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  Value* toward_zero = b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), bits);
  Value* odd = b_.CreateOr(toward_zero, b_.getInt32(1));
  Value* rto = b_.CreateBitCast(b_.CreateSelect(inexact, odd, bits), b_.getFloatTy());
  return round_from_float(rto, t);
}

// The software conversions; the GPU lowering takes the hardware's pairs of lanes first
// (TargetInfo::pair) where a cast converts two at a time.
Value* Emitter::encode(Value* f, DType t) {
  return encode_float(b_, f, *float_format(t.kind));
}

Value* Emitter::decode(Value* code, DType t) {
  return t.is_storage_float() ? decode_float(b_, code, *float_format(t.kind)) : code;
}

Value* Emitter::round(Value* r, DType t) {
  return in_f32(t) ? round_from_float(r, t) : r;
}

Value* Emitter::zero(DType t) {
  return llvm::Constant::getNullValue(type(t));
}

Value* Emitter::constant(const ir::Op& op, DType t) {
  const ir::AttrValue& a = op.attrs.at(attr::value);
  const auto* as_int = std::get_if<int64_t>(&a);
  if (t.is_storage_float()) {
    double v = as_int ? static_cast<double>(*as_int) : std::get<double>(a);
    return llvm::ConstantInt::get(type(t), tritium::encode_float(v, *float_format(t.kind)));
  }
  if (t.is_float()) {
    double v = as_int ? static_cast<double>(*as_int) : std::get<double>(a);
    switch (t.kind) { // the value rounded to t (exact in every register type)
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
    return llvm::ConstantFP::get(type(t), v);
  }
  int64_t v = as_int ? *as_int : static_cast<int64_t>(std::get<double>(a));
  if (t.is_ptr())
    return b_.CreateIntToPtr(b_.getInt64(static_cast<uint64_t>(v)), type(t));
  if (t.is_bool())
    v &= 1;
  return llvm::ConstantInt::get(type(t), static_cast<uint64_t>(v), t.is_signed_int());
}

// Integer division and remainder without undefined behaviour: the divisor is replaced by 1
// where it is 0 (and, signed, where it is -1), and those lanes are fixed up: x / 0 = 0,
// x % 0 = x, x / -1 = -x (wrapping: INT_MIN / -1 = INT_MIN), x % -1 = 0.
Value* Emitter::divide(bool rem, bool is_unsigned, Value* a, Value* y) {
  auto c = [&](int64_t v) {
    return llvm::ConstantInt::get(y->getType(), static_cast<uint64_t>(v), true);
  };
  Value* is_zero = b_.CreateICmpEQ(y, c(0));
  Value* r;
  if (is_unsigned) {
    Value* safe = b_.CreateSelect(is_zero, c(1), y);
    r = rem ? b_.CreateURem(a, safe) : b_.CreateUDiv(a, safe);
  } else {
    Value* minus_one = b_.CreateICmpEQ(y, c(-1));
    Value* safe = b_.CreateSelect(b_.CreateOr(is_zero, minus_one), c(1), y);
    r = rem ? b_.CreateSRem(a, safe) : b_.CreateSDiv(a, safe);
    r = b_.CreateSelect(minus_one, rem ? c(0) : b_.CreateNeg(a), r);
  }
  return b_.CreateSelect(is_zero, rem ? a : c(0), r);
}

Value* Emitter::binary(ir::BinaryOp k, DType t, Value* a, Value* y) {
  using ir::BinaryOp;
  using I = llvm::Intrinsic::ID;
  // A storage float computes in f32 and rounds once: the exact result of add, sub, mul of two
  // fp8 values fits f32's significand or lies far from a tie, so this is the interpreter's
  // single rounding from the exact value.
  if (t.is_storage_float())
    return encode(binary(k, DType(ScalarKind::F32), decode(a, t), decode(y, t)), t);
  if (t.is_float()) {
    switch (k) {
    case BinaryOp::Add:
      return round(b_.CreateFAdd(a, y), t);
    case BinaryOp::Sub:
      return round(b_.CreateFSub(a, y), t);
    case BinaryOp::Mul:
      return round(b_.CreateFMul(a, y), t);
    case BinaryOp::Div:
      return round(b_.CreateFDiv(a, y), t);
    case BinaryOp::Rem:
      return round(b_.CreateFRem(a, y), t);
    case BinaryOp::Min:
      return round(b_.CreateBinaryIntrinsic(I(llvm::Intrinsic::minnum), a, y), t);
    case BinaryOp::Max:
      return round(b_.CreateBinaryIntrinsic(I(llvm::Intrinsic::maxnum), a, y), t);
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
    case BinaryOp::Umulhi:
      throw Error(fmt::format("internal error: '{}' on floating-point values",
                              ir::op_name(ir::kind_of(k))));
    }
  }
  const bool u = t.is_unsigned() || t.is_ptr();
  const unsigned bits = static_cast<unsigned>(t.bits());
  if (bits == 8 && target_.narrow_ints_in_i32() && k != BinaryOp::Div && k != BinaryOp::Rem &&
      k != BinaryOp::Umulhi) {
    // The low 8 bits of the 32-bit result are the 8-bit op's; shifts by 8 or more give 0 (or
    // the sign) either way.
    const DType wide(u ? ScalarKind::U32 : ScalarKind::I32);
    Value* r = binary(k, wide, b_.CreateIntCast(a, b_.getInt32Ty(), !u),
                      b_.CreateIntCast(y, b_.getInt32Ty(), !u));
    return b_.CreateTrunc(r, a->getType());
  }
  auto c = [&](int64_t v) {
    return llvm::ConstantInt::get(a->getType(), static_cast<uint64_t>(v), true);
  };
  switch (k) {
  case BinaryOp::Add:
    return b_.CreateAdd(a, y);
  case BinaryOp::Sub:
    return b_.CreateSub(a, y);
  case BinaryOp::Mul:
    return b_.CreateMul(a, y);
  case BinaryOp::Div:
    return divide(false, u || bits == 1, a, y);
  case BinaryOp::Rem:
    return divide(true, u || bits == 1, a, y);
  case BinaryOp::And:
    return b_.CreateAnd(a, y);
  case BinaryOp::Or:
    return b_.CreateOr(a, y);
  case BinaryOp::Xor:
    return b_.CreateXor(a, y);
  case BinaryOp::Shl: {
    // By the width or more: 0 (LLVM's shl would be poison).
    Value* big = b_.CreateICmpUGE(y, c(bits));
    return b_.CreateSelect(big, c(0), b_.CreateShl(a, b_.CreateSelect(big, c(0), y)));
  }
  case BinaryOp::Shr: {
    Value* big = b_.CreateICmpUGE(y, c(bits));
    if (u || bits == 1)
      return b_.CreateSelect(big, c(0), b_.CreateLShr(a, b_.CreateSelect(big, c(0), y)));
    // Signed: by the width or more fills with the sign, as a shift by width - 1 does.
    return b_.CreateAShr(a, b_.CreateSelect(big, c(bits - 1), y));
  }
  case BinaryOp::Min:
    return b_.CreateBinaryIntrinsic(u ? I(llvm::Intrinsic::umin) : I(llvm::Intrinsic::smin), a, y);
  case BinaryOp::Max:
    return b_.CreateBinaryIntrinsic(u ? I(llvm::Intrinsic::umax) : I(llvm::Intrinsic::smax), a, y);
  case BinaryOp::Umulhi: {
    llvm::Type* wide = b_.getIntNTy(2 * bits);
    Value* p = b_.CreateMul(b_.CreateZExt(a, wide), b_.CreateZExt(y, wide));
    return b_.CreateTrunc(b_.CreateLShr(p, bits), a->getType());
  }
  }
  return nullptr;
}

Value* Emitter::compare(ir::CmpPred pred, DType t, Value* a, Value* y) {
  if (t.is_storage_float())
    return compare(pred, DType(ScalarKind::F32), decode(a, t), decode(y, t));
  using P = llvm::CmpInst::Predicate;
  const bool f = t.is_float(), u = t.is_unsigned() || t.is_ptr();
  P p = P::ICMP_EQ;
  switch (pred) {
  case ir::CmpPred::Eq:
    p = f ? P::FCMP_OEQ : P::ICMP_EQ;
    break;
  case ir::CmpPred::Ne: // unordered: true with NaN, as Triton
    p = f ? P::FCMP_UNE : P::ICMP_NE;
    break;
  case ir::CmpPred::Lt:
    p = f ? P::FCMP_OLT : u ? P::ICMP_ULT : P::ICMP_SLT;
    break;
  case ir::CmpPred::Le:
    p = f ? P::FCMP_OLE : u ? P::ICMP_ULE : P::ICMP_SLE;
    break;
  case ir::CmpPred::Gt:
    p = f ? P::FCMP_OGT : u ? P::ICMP_UGT : P::ICMP_SGT;
    break;
  case ir::CmpPred::Ge:
    p = f ? P::FCMP_OGE : u ? P::ICMP_UGE : P::ICMP_SGE;
    break;
  }
  return f ? b_.CreateFCmp(p, a, y) : b_.CreateICmp(p, a, y);
}

Value* Emitter::unary(const ir::Op& op, DType t, Value* a) {
  if (t.is_storage_float()) // through f32: fnuz formats have no -0 to flip a sign bit into
    return encode(unary(op, DType(ScalarKind::F32), decode(a, t)), t);
  using ir::UnaryOp;
  const UnaryOp k = ir::as<UnaryOp>(op.kind);
  if (!t.is_float()) {
    switch (k) {
    case UnaryOp::Neg:
      return b_.CreateNeg(a);
    case UnaryOp::Not:
      return b_.CreateNot(a);
    case UnaryOp::Abs:
      return t.is_unsigned() ? a : b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b_.getFalse());
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
      unreachable(op, "a floating-point op on integers");
    }
  }
  switch (k) {
  case UnaryOp::Neg:
    return b_.CreateFNeg(a);
  case UnaryOp::Abs:
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
  case UnaryOp::Floor:
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a);
  case UnaryOp::Ceil:
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a);
  case UnaryOp::Sqrt:
    return round(b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a), t);
  case UnaryOp::Rsqrt:
    return target_.math(op.kind, t, {a}, op);
  case UnaryOp::Not:
    unreachable(op, "bitwise not of floating-point values");
  }
  return nullptr;
}

Value* Emitter::fma(DType t, Value* a, Value* x, Value* c) {
  if (!in_f32(t) && !t.is_storage_float())
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, c});
  // f16/bf16 in f32 registers, and fp8 decoded: the exact product and sum in double, rounded
  // once to t.
  auto* d = b_.getDoubleTy();
  auto wide = [&](Value* v) { return b_.CreateFPExt(decode(v, t), d); };
  Value* r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {d}, {wide(a), wide(x), wide(c)});
  return round_from_double(r, t);
}

Value* Emitter::convert(Value* a, DType from, DType to) {
  if (from == to)
    return a;
  if (from.is_storage_float()) { // every fp8 value is an f32 exactly
    a = decode(a, from);
    from = DType(ScalarKind::F32);
    if (from == to)
      return a;
  }
  if (to.is_storage_float()) {
    if (from.kind == ScalarKind::F64)
      return round_from_double(a, to);
    if (from.is_float()) // f16, bf16 and f32 hold their values in f32 exactly: one rounding
      return encode(a->getType()->isFloatTy() ? a : b_.CreateFPExt(a, b_.getFloatTy()), to);
    if (from.is_ptr()) {
      a = b_.CreatePtrToInt(a, b_.getInt64Ty());
      from = DType(ScalarKind::U64);
    }
    return round_from_double(from.is_unsigned() ? b_.CreateUIToFP(a, b_.getDoubleTy())
                                                : b_.CreateSIToFP(a, b_.getDoubleTy()),
                             to);
  }
  llvm::Type* tt = type(to);
  if (to.is_bool()) {
    if (from.is_float())
      return b_.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
    if (from.is_ptr())
      return b_.CreateIsNotNull(a);
    return b_.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
  }
  if (from.is_float() && to.is_float()) {
    if (to.kind == ScalarKind::F64)
      return b_.CreateFPExt(a, tt);
    if (target_.narrow_floats_in_f32()) // f32/f16/bf16 share f32 registers
      return from.kind == ScalarKind::F64 ? round_from_double(a, to) : round_from_float(a, to);
    if (narrow(from) && narrow(to)) // f16 <-> bf16: through f32, which holds both exactly
      a = b_.CreateFPExt(a, b_.getFloatTy());
    return a->getType()->getPrimitiveSizeInBits() > tt->getPrimitiveSizeInBits()
               ? b_.CreateFPTrunc(a, tt)
               : b_.CreateFPExt(a, tt);
  }
  if (from.is_ptr() && to.is_ptr())
    return a;
  if (from.is_ptr()) { // to an integer: the address's low bits
    a = b_.CreatePtrToInt(a, b_.getInt64Ty());
    from = DType(ScalarKind::U64);
  }
  if (to.is_ptr())
    return b_.CreateIntToPtr(b_.CreateIntCast(a, b_.getInt64Ty(), from.is_signed_int()), tt);
  if (to.is_float()) {
    const bool u = from.is_unsigned();
    if (from.bits() == 8 && target_.narrow_ints_in_i32()) {
      a = b_.CreateIntCast(a, b_.getInt32Ty(), !u);
      from = DType(u ? ScalarKind::U32 : ScalarKind::I32);
    }
    if (!in_f32(to))
      return u ? b_.CreateUIToFP(a, tt) : b_.CreateSIToFP(a, tt);
    // To f16/bf16 in an f32 register: through double, rounded once.
    Value* d = u ? b_.CreateUIToFP(a, b_.getDoubleTy()) : b_.CreateSIToFP(a, b_.getDoubleTy());
    return round_from_double(d, to);
  }
  if (from.is_float()) {
    // Truncation toward zero, saturating, NaN to 0: the interpreter's (and cvt.rzi's) rule.
    auto id = to.is_unsigned() ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {tt, a->getType()}, {a});
  }
  // Integer to integer: the source's value re-wrapped; extension follows the source's sign.
  return b_.CreateIntCast(a, tt, from.is_signed_int());
}

Value* Emitter::bitcast(Value* a, DType from, DType to) {
  if (from == to || (from.is_ptr() && to.is_ptr()))
    return a;
  Value* bits = to_bits(a, from);
  // 16-bit floats: f16 <-> bf16 folds into one bitcast, f16 = bitcast bf16, which LLVM 19's
  // NVPTX backend cannot select (it aborts); and an i16 load whose users are stores and a
  // bitcast to bfloat becomes a bfloat load, whose stores round on hosts without bf16 (the
  // gpu-emulator's x86). The target keeps the bits apart.
  if ((from.is_float() && from.bits() == 16) || (to.is_float() && to.bits() == 16))
    bits = target_.opaque_bits(bits);
  return from_bits(bits, to);
}

Value* Emitter::add_ptr(Value* p, Value* offset, DType pointee, DType offset_type) {
  offset = b_.CreateIntCast(offset, b_.getInt64Ty(), offset_type.is_signed_int());
  return b_.CreateGEP(memory_type(pointee), p, offset);
}

// Every elementwise op is handled here: each category's enum is switched over without a
// default, so an op added to ops.def that this misses does not compile.
Value* Emitter::elementwise(const ir::Op& op, const std::vector<Value*>& a) {
  const DType t = op.operands[0]->type.elem;
  switch (ir::op_category(op.kind)) {
  case ir::OpCategory::Binary:
    return binary(ir::as<ir::BinaryOp>(op.kind), t, a[0], a[1]);
  case ir::OpCategory::Compare:
    switch (ir::as<ir::CompareOp>(op.kind)) {
    case ir::CompareOp::Cmp:
      return compare(op.enum_attr<ir::CmpPred>(), t, a[0], a[1]);
    }
    break;
  case ir::OpCategory::Unary:
    return unary(op, t, a[0]);
  case ir::OpCategory::Math:
  case ir::OpCategory::Extern: // the C function named by the op's symbol
    if (t.is_storage_float()) {
      std::vector<Value*> f;
      for (Value* v : a)
        f.push_back(decode(v, t));
      return encode(target_.math(op.kind, DType(ScalarKind::F32), f, op), t);
    }
    return target_.math(op.kind, t, a, op); // the target's library or expansion

  case ir::OpCategory::Ternary:
    switch (ir::as<ir::TernaryOp>(op.kind)) {
    case ir::TernaryOp::Fma:
      return fma(t, a[0], a[1], a[2]);
    }
    break;
  case ir::OpCategory::Select:
    switch (ir::as<ir::SelectOp>(op.kind)) {
    case ir::SelectOp::Select:
      return b_.CreateSelect(a[0], a[1], a[2]);
    }
    break;
  case ir::OpCategory::Convert: {
    DType to = op.result()->type.elem;
    switch (ir::as<ir::ConvertOp>(op.kind)) {
    case ir::ConvertOp::Cast:
      return convert(a[0], t, to);
    case ir::ConvertOp::Bitcast:
      return bitcast(a[0], t, to);
    }
    break;
  }
  case ir::OpCategory::Hint:
    switch (ir::as<ir::HintOp>(op.kind)) {
    case ir::HintOp::Hint:
      return a[0];
    case ir::HintOp::DescHint:
      break;
    }
    break;
  case ir::OpCategory::Memory:
    if (op.kind == ir::OpKind::AddPtr)
      return add_ptr(a[0], a[1], t.element_of_pointer(), op.operands[1]->type.elem);
    break;
  case ir::OpCategory::Source:
  case ir::OpCategory::Shape:
  case ir::OpCategory::Shared:
  case ir::OpCategory::Collective:
  case ir::OpCategory::Control:
  case ir::OpCategory::Terminator:
  case ir::OpCategory::Debug:
    break;
  }
  unreachable(op, "not an elementwise op");
}

} // namespace tritium::scalar
