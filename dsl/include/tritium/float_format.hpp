// Narrow binary floating-point formats (f16, bf16 and the fp8 formats of dtypes.def) as data:
// exponent and mantissa widths, bias, which codes are special and what overflow gives. One
// generic conversion reads them; the interpreter, host reference code, kernel-argument packing
// and the compiler's constant folding all round through it, and codegen/llvm/narrow_float.cpp
// emits the same rounding as LLVM IR, so every device agrees bit for bit.
#pragma once

#include <tritium/ir/types.hpp>

#include <cstdint>

namespace tritium {

enum class FloatSpecials : uint8_t {
  Ieee,       // all-ones exponent: infinity (mantissa 0) and NaN
  AllOnesNan, // no infinity; the all-ones code of either sign is NaN (OCP e4m3fn)
  NegZeroNan, // no infinity and no -0: the code 1000...0 is the one NaN (the fnuz formats)
};
enum class FloatOverflow : uint8_t {
  ToInf,    // IEEE: a value that rounds past the largest finite is infinity
  Saturate, // the largest finite of the value's sign (infinity too); NaN stays NaN
};

struct FloatFormat {
  int exponent_bits, mantissa_bits, bias;
  FloatSpecials specials;
  FloatOverflow overflow;

  constexpr int bits() const { return 1 + exponent_bits + mantissa_bits; }
  constexpr uint32_t sign_bit() const { return uint32_t{1} << (bits() - 1); }
  // The code of the largest finite magnitude.
  constexpr uint32_t max_finite_code() const {
    const uint32_t all = sign_bit() - 1;
    switch (specials) {
    case FloatSpecials::Ieee:
      return all - (uint32_t{1} << mantissa_bits); // exponent all ones less one, mantissa full
    case FloatSpecials::AllOnesNan:
      return all - 1;
    case FloatSpecials::NegZeroNan:
      return all;
    }
    return all;
  }
  // The NaN that rounding produces: the quiet NaN of the input's sign for ToInf formats (as
  // the f16/bf16 conversions have always done); for saturating ones the canonical NaN,
  // 0 1...1 (NVIDIA's cvt.satfinite), or 1000...0 where that is the only NaN.
  constexpr uint32_t nan_code(bool negative) const {
    if (specials == FloatSpecials::NegZeroNan)
      return sign_bit();
    if (overflow == FloatOverflow::Saturate)
      return sign_bit() - 1;
    const uint32_t quiet = (((uint32_t{1} << exponent_bits) - 1) << mantissa_bits) |
                           (uint32_t{1} << (mantissa_bits - 1));
    return (negative ? sign_bit() : 0) | quiet;
  }
};

// The format of f16, bf16 and each storage float (dtypes.def); null for any other kind.
const FloatFormat* float_format(ir::ScalarKind kind);

// The value of `code` (NaN as a quiet NaN of the code's sign; fnuz's NaN is positive).
double decode_float(uint32_t code, const FloatFormat& f);
// `d` rounded once to nearest even, overflow and NaN by the format's rules.
uint32_t encode_float(double d, const FloatFormat& f);
// The code of a value already of the format (a store of what a register holds): encode_float,
// except that an IEEE format's infinity is itself even where the format saturates (an e5m2
// infinity loaded and stored again stays one; arithmetic and casts saturate it).
uint32_t code_of(double value, const FloatFormat& f);

} // namespace tritium
