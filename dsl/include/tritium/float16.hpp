// Host-side storage types for f16 and bf16, with round-to-nearest-even conversions so that
// the interpreter and host reference code round exactly as GPU hardware does.
#pragma once

#include <cstdint>

namespace tritium {

float f16_bits_to_float(uint16_t bits);
uint16_t float_to_f16_bits(float f);   // round to nearest even; overflow to inf; NaN kept
uint16_t double_to_f16_bits(double d); // rounds once from double (no double rounding)
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float f);
uint16_t double_to_bf16_bits(double d);

struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(float_to_f16_bits(f)) {}
  half(double d) : bits(double_to_f16_bits(d)) {}
  half(int i) : half(static_cast<double>(i)) {}
  operator float() const { return f16_bits_to_float(bits); }
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(float_to_bf16_bits(f)) {}
  bfloat16(double d) : bits(double_to_bf16_bits(d)) {}
  bfloat16(int i) : bfloat16(static_cast<double>(i)) {}
  operator float() const { return bf16_bits_to_float(bits); }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

} // namespace tritium
