// f16 and bf16 through the generic rounding of float_format.hpp. The interpreter rounds every
// f16/bf16 result through these, and host reference code every element, so the rounding works
// on the bit patterns (frexp, ldexp and nearbyint per element once took 30 % of a
// fused-attention example's CPU run).
#include <tritium/float16.hpp>
#include <tritium/float_format.hpp>

#include <bit>
#include <cmath>
#include <cstdint>

namespace tritium {
namespace {

const FloatFormat& f16() {
  static const FloatFormat& f = *float_format(ir::ScalarKind::F16);
  return f;
}
const FloatFormat& bf16() {
  static const FloatFormat& f = *float_format(ir::ScalarKind::BF16);
  return f;
}

} // namespace

// Decoding stays on the bits: it is exact, and the two formats are one shift (bf16) or one
// rebias (f16) from f32.
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
  return static_cast<uint16_t>(encode_float(d, f16()));
}
uint16_t float_to_f16_bits(float f) {
  return static_cast<uint16_t>(encode_float(f, f16()));
}
float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
uint16_t double_to_bf16_bits(double d) {
  return static_cast<uint16_t>(encode_float(d, bf16()));
}
uint16_t float_to_bf16_bits(float f) {
  return static_cast<uint16_t>(encode_float(f, bf16()));
}

double storage_float_to_double(ir::ScalarKind kind, uint32_t code) {
  return decode_float(code, *float_format(kind));
}
uint32_t double_to_storage_float(ir::ScalarKind kind, double d) {
  return encode_float(d, *float_format(kind));
}

} // namespace tritium
