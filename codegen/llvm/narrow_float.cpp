#include "llvm/narrow_float.hpp"

#include <bit>
#include <cmath>

namespace tritium::scalar {

using llvm::Value;

namespace {
uint32_t f32_bits(double v) {
  return std::bit_cast<uint32_t>(static_cast<float>(v));
}
} // namespace

// As tritium::encode_float on the f32's bits (32-bit integer work, one float multiply and one
// roundeven for the subnormal range).
Value* encode_float(llvm::IRBuilder<>& b, Value* x, const FloatFormat& f) {
  const int m = f.mantissa_bits;
  auto c = [&](uint32_t v) { return b.getInt32(v); };
  Value* u = b.CreateBitCast(x, b.getInt32Ty());
  Value* negative = b.CreateICmpSLT(u, c(0));
  Value* a = b.CreateAnd(u, c(0x7fffffffu));
  Value* is_nan = b.CreateICmpUGT(a, c(0x7f800000u));
  const uint32_t max_code = f.max_finite_code();

  // Normal: rebias the exponent and round the dropped mantissa bits to nearest even.
  const int drop = 23 - m;
  Value* rebiased = b.CreateSub(a, c(static_cast<uint32_t>(127 - f.bias) << 23));
  Value* odd = b.CreateAnd(b.CreateLShr(rebiased, drop), c(1));
  Value* normal = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(rebiased, c((uint32_t{1} << (drop - 1)) - 1)), odd), drop);
  if (f.overflow == FloatOverflow::ToInf)
    normal = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, normal, c(max_code + 1));
  // Subnormal: quanta of 2^(1 - bias - m), counted by an exact scaling and roundeven; a carry
  // to 1 << m is the smallest normal's code.
  Value* scaled =
      b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                   llvm::ConstantFP::get(b.getFloatTy(), std::ldexp(1.0, f.bias - 1 + m)));
  Value* sub =
      b.CreateFPToUI(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, scaled), b.getInt32Ty());
  Value* is_normal = b.CreateICmpUGE(a, c(f32_bits(std::ldexp(1.0, 1 - f.bias))));
  Value* r = b.CreateSelect(is_normal, normal, sub);
  if (f.overflow == FloatOverflow::Saturate)
    r = b.CreateSelect(b.CreateICmpUGE(a, c(f32_bits(tritium::decode_float(max_code, f)))),
                       c(max_code), r);
  Value* sign = b.CreateSelect(negative, c(f.sign_bit()), c(0));
  if (f.specials == FloatSpecials::NegZeroNan) // no -0
    sign = b.CreateSelect(b.CreateICmpEQ(r, c(0)), c(0), sign);
  Value* nan = b.CreateSelect(negative, c(f.nan_code(true)), c(f.nan_code(false)));
  Value* code = b.CreateSelect(is_nan, nan, b.CreateOr(r, sign));
  return b.CreateTrunc(code, b.getIntNTy(static_cast<unsigned>(f.bits())));
}

Value* decode_float(llvm::IRBuilder<>& b, Value* code, const FloatFormat& f) {
  const int m = f.mantissa_bits, n = f.bits();
  auto c = [&](uint32_t v) { return b.getInt32(v); };
  Value* w = b.CreateZExt(code, b.getInt32Ty());
  Value* magnitude = b.CreateAnd(w, c(f.sign_bit() - 1));
  Value* e = b.CreateLShr(magnitude, m);
  Value* man = b.CreateAnd(magnitude, c((uint32_t{1} << m) - 1));
  // Normal: exponent and mantissa shifted into f32's fields and rebiased.
  Value* normal =
      b.CreateAdd(b.CreateShl(magnitude, 23 - m), c(static_cast<uint32_t>(127 - f.bias) << 23));
  // Subnormal: man quanta of 2^(1 - bias - m), a normal f32 for every format this serves.
  Value* sub = b.CreateBitCast(
      b.CreateFMul(b.CreateUIToFP(man, b.getFloatTy()),
                   llvm::ConstantFP::get(b.getFloatTy(), std::ldexp(1.0, 1 - f.bias - m))),
      b.getInt32Ty());
  Value* bits = b.CreateSelect(b.CreateICmpEQ(e, c(0)), sub, normal);
  const uint32_t e_max = (uint32_t{1} << f.exponent_bits) - 1;
  if (f.specials == FloatSpecials::Ieee)
    bits = b.CreateSelect(b.CreateICmpEQ(e, c(e_max)),
                          b.CreateSelect(b.CreateICmpEQ(man, c(0)), c(0x7f800000u), c(0x7fc00000u)),
                          bits);
  if (f.specials == FloatSpecials::AllOnesNan)
    bits = b.CreateSelect(b.CreateICmpEQ(magnitude, c(f.sign_bit() - 1)), c(0x7fc00000u), bits);
  bits = b.CreateOr(bits, b.CreateShl(b.CreateAnd(w, c(f.sign_bit())), 32 - n));
  if (f.specials == FloatSpecials::NegZeroNan)
    bits = b.CreateSelect(b.CreateICmpEQ(w, c(f.sign_bit())), c(0x7fc00000u), bits);
  return b.CreateBitCast(bits, b.getFloatTy());
}

} // namespace tritium::scalar
