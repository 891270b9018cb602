#include <tritium/float16.hpp>

#include <bit>
#include <cmath>
#include <cstring>

namespace tritium {
namespace {

// Rounds a finite or infinite double to a binary format with `mant` explicit mantissa bits,
// exponent bias `bias` and `exp_bits` exponent bits, in one step (no double rounding).
uint16_t round_double(double d, int mant, int exp_bits) {
  uint64_t in = std::bit_cast<uint64_t>(d);
  uint16_t sign = static_cast<uint16_t>((in >> 63) << (mant + exp_bits));
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint16_t inf = static_cast<uint16_t>(((1u << exp_bits) - 1) << mant);
  if (std::isnan(d))
    return sign | inf | static_cast<uint16_t>(1u << (mant - 1));
  double a = std::fabs(d);
  if (std::isinf(a))
    return sign | inf;
  if (a == 0.0)
    return sign;
  int e;
  std::frexp(a, &e); // a = f * 2^e, f in [0.5, 1)
  int exp = e - 1;   // a = 1.x * 2^exp
  int min_exp = 1 - bias;
  // Quantum (value of one unit in the last place) for this binade, or for subnormals.
  int q_exp = (exp < min_exp ? min_exp : exp) - mant;
  double scaled = std::ldexp(a, -q_exp); // integer part is the significand in ulps
  double r = std::nearbyint(scaled);     // default rounding mode: to nearest even
  uint64_t sig = static_cast<uint64_t>(r);
  int biased = (exp < min_exp ? 0 : exp + bias);
  if (biased == 0) {
    // Subnormal: sig may carry into the normal range, which the encoding handles.
    return sign | static_cast<uint16_t>(sig);
  }
  if (sig >= (2ull << mant)) { // carried into the next binade
    sig >>= 1;
    ++biased;
  }
  if (biased >= (1 << exp_bits) - 1)
    return sign | inf;
  return sign | static_cast<uint16_t>((static_cast<uint64_t>(biased) << mant) |
                                      (sig & ((1ull << mant) - 1)));
}

double decode(uint16_t bits, int mant, int exp_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  bool neg = bits >> (mant + exp_bits);
  int e = (bits >> mant) & ((1 << exp_bits) - 1);
  uint32_t m = bits & ((1u << mant) - 1);
  double v;
  if (e == (1 << exp_bits) - 1)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - mant);
  else
    v = std::ldexp(static_cast<double>(m | (1u << mant)), e - bias - mant);
  return neg ? -v : v;
}

} // namespace

float f16_bits_to_float(uint16_t bits) {
  return static_cast<float>(decode(bits, 10, 5));
}
uint16_t double_to_f16_bits(double d) {
  return round_double(d, 10, 5);
}
uint16_t float_to_f16_bits(float f) {
  return round_double(f, 10, 5);
}
float bf16_bits_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  return std::bit_cast<float>(u);
}
uint16_t double_to_bf16_bits(double d) {
  return round_double(d, 7, 8);
}
uint16_t float_to_bf16_bits(float f) {
  return round_double(f, 7, 8);
}

} // namespace tritium
