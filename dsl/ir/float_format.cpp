#include <tritium/float_format.hpp>

#include <array>
#include <bit>
#include <cmath>

namespace tritium {
namespace {

constexpr FloatFormat make(int e, int m, int bias, FloatSpecials s, FloatOverflow o) {
  return FloatFormat{e, m, bias, s, o};
}

struct Entry {
  bool present = false;
  FloatFormat format{};
};

constexpr auto formats = [] {
  std::array<Entry, ir::kNumScalarKinds> t{};
#define TRITIUM_FLOAT_FORMAT(Kind, e, m, bias, specials, overflow)                                 \
  t[static_cast<size_t>(ir::ScalarKind::Kind)] = {                                                 \
      true, make(e, m, bias, FloatSpecials::specials, FloatOverflow::overflow)};
#include <tritium/ir/dtypes.def>
  return t;
}();

double pow2(int k) { // 2^k for a normal double
  return std::bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52);
}

} // namespace

const FloatFormat* float_format(ir::ScalarKind kind) {
  const Entry& e = formats[static_cast<size_t>(kind)];
  return e.present ? &e.format : nullptr;
}

double decode_float(uint32_t code, const FloatFormat& f) {
  const int m = f.mantissa_bits;
  const bool negative = (code & f.sign_bit()) != 0;
  const uint32_t magnitude = code & (f.sign_bit() - 1);
  const uint32_t e = magnitude >> m, man = magnitude & ((uint32_t{1} << m) - 1);
  const uint32_t e_max = (uint32_t{1} << f.exponent_bits) - 1;
  double v;
  if (f.specials == FloatSpecials::NegZeroNan && code == f.sign_bit())
    return std::nan("");
  if (f.specials == FloatSpecials::AllOnesNan && magnitude == f.sign_bit() - 1)
    v = std::nan("");
  else if (f.specials == FloatSpecials::Ieee && e == e_max)
    v = man ? std::nan("") : INFINITY;
  else if (e == 0) // zero or subnormal: man quanta of 2^(1 - bias - m)
    v = static_cast<double>(man) * pow2(1 - f.bias - m);
  else
    v = static_cast<double>((uint32_t{1} << m) | man) * pow2(static_cast<int>(e) - f.bias - m);
  return negative ? -v : v;
}

// In the double's bits: below the smallest normal the significand counts quanta of
// 2^(1 - bias - m) (scaling by a power of two is exact and nearbyint rounds to nearest even;
// a carry into 1 << m encodes the smallest normal); above it the exponent moves to the new
// bias and the dropped bits round to nearest even, a carry stepping the exponent.
uint32_t encode_float(double d, const FloatFormat& f) {
  const int m = f.mantissa_bits;
  const uint64_t in = std::bit_cast<uint64_t>(d);
  const bool negative = (in >> 63) != 0;
  const uint64_t a = in & ~(uint64_t{1} << 63);
  constexpr uint64_t kDoubleInf = uint64_t{0x7ff} << 52;
  if (a > kDoubleInf)
    return f.nan_code(negative);
  const uint32_t max_code = f.max_finite_code();
  const double magnitude = std::bit_cast<double>(a);
  uint32_t r;
  if (f.overflow == FloatOverflow::Saturate && magnitude >= decode_float(max_code, f))
    r = max_code;
  else if (magnitude < pow2(1 - f.bias))
    r = static_cast<uint32_t>(std::nearbyint(magnitude * pow2(f.bias - 1 + m)));
  else {
    const int drop = 52 - m;
    const uint64_t rebiased = a - (static_cast<uint64_t>(1023 - f.bias) << 52);
    const uint64_t half = uint64_t{1} << (drop - 1);
    const uint64_t q = (rebiased + half - 1 + ((rebiased >> drop) & 1)) >> drop;
    // Past the largest finite only a ToInf format gets here: infinity is the next code.
    const uint64_t inf = static_cast<uint64_t>(max_code) + 1;
    r = static_cast<uint32_t>(q > inf ? inf : q);
  }
  if (r == 0 && f.specials == FloatSpecials::NegZeroNan)
    return 0; // no -0: the sign's code is the NaN
  return (negative ? f.sign_bit() : 0) | r;
}

uint32_t code_of(double value, const FloatFormat& f) {
  if (std::isinf(value) && f.specials == FloatSpecials::Ieee)
    return (value < 0 ? f.sign_bit() : 0) | (f.max_finite_code() + 1);
  return encode_float(value, f);
}

} // namespace tritium
