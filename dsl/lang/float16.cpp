// Round to nearest even on the bit patterns: the interpreter rounds every f16/bf16 result
// through these, and host reference code every element, so they must be cheap (frexp, ldexp
// and nearbyint per element took 30 % of a fused-attention example's CPU run).
#include <tritium/float16.hpp>

#include <bit>
#include <cmath>
#include <cstdint>

namespace tritium {
namespace {

double pow2(int k) { // 2^k for a normal double
  return std::bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52);
}

// Rounds a double to a binary format of `mant` explicit mantissa bits and `exp_bits` exponent
// bits in one step (no double rounding). NaN becomes the format's quiet NaN with d's sign.
uint16_t round_double(double d, int mant, int exp_bits) {
  const uint64_t in = std::bit_cast<uint64_t>(d);
  const uint16_t sign = static_cast<uint16_t>((in >> 63) << (mant + exp_bits));
  const uint64_t a = in & ~(uint64_t{1} << 63);
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t inf = ((1u << exp_bits) - 1) << mant;
  constexpr uint64_t kDoubleInf = uint64_t{0x7ff} << 52;
  if (a > kDoubleInf)
    return sign | static_cast<uint16_t>(inf | (1u << (mant - 1)));
  // Below the smallest normal, the significand counts quanta of 2^(1 - bias - mant): scaling
  // by a power of two is exact, and nearbyint rounds to nearest even. 1 << mant, the carry
  // into the smallest normal, encodes it.
  const double min_normal = pow2(1 - bias);
  const double magnitude = std::bit_cast<double>(a);
  if (magnitude < min_normal)
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * pow2(bias - 1 + mant)));
  // Normal: move the exponent to the new bias, then round the dropped bits to nearest even; a
  // carry out of the mantissa steps the exponent, up to infinity.
  const int drop = 52 - mant;
  const uint64_t rebiased = a - (static_cast<uint64_t>(1023 - bias) << 52);
  const uint64_t half = uint64_t{1} << (drop - 1);
  const uint64_t r = (rebiased + half - 1 + ((rebiased >> drop) & 1)) >> drop;
  return sign | static_cast<uint16_t>(r >= inf ? inf : r);
}

} // namespace

float f16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
  uint32_t out;
  if (e == 0x1f) // infinity, or NaN (quiet, payload dropped)
    out = m ? 0x7fc00000u : 0x7f800000u;
  else if (e == 0) // zero or subnormal: m * 2^-24, exact in f32
    out = std::bit_cast<uint32_t>(static_cast<float>(m) * 0x1p-24f);
  else
    out = ((e + 127 - 15) << 23) | (m << 13);
  return std::bit_cast<float>(sign | out);
}
uint16_t double_to_f16_bits(double d) {
  return round_double(d, 10, 5);
}
uint16_t float_to_f16_bits(float f) {
  return round_double(f, 10, 5);
}
float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
uint16_t double_to_bf16_bits(double d) {
  return round_double(d, 7, 8);
}
uint16_t float_to_bf16_bits(float f) {
  return round_double(f, 7, 8);
}

} // namespace tritium
