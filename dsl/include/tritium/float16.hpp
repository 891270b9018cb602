// Host-side storage types for f16, bf16 and the fp8 formats, with round-to-nearest-even
// conversions so that the interpreter and host reference code round exactly as GPU hardware
// does.
#pragma once

#include <tritium/ir/types.hpp>

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

double storage_float_to_double(ir::ScalarKind kind, uint32_t code);
uint32_t double_to_storage_float(ir::ScalarKind kind, double d); // dtypes.def's rules

// An fp8 element of one of dtypes.def's formats: its 8-bit code. Conversions from float round
// to nearest even and saturate as Triton's (docs/language.md, "fp8").
template <ir::ScalarKind K>
struct float8 {
  uint8_t bits = 0;
  float8() = default;
  float8(double d) : bits(static_cast<uint8_t>(double_to_storage_float(K, d))) {}
  float8(float f) : float8(static_cast<double>(f)) {}
  float8(int i) : float8(static_cast<double>(i)) {}
  float8(half h) : float8(static_cast<double>(static_cast<float>(h))) {}
  float8(bfloat16 h) : float8(static_cast<double>(static_cast<float>(h))) {}
  operator float() const { return static_cast<float>(storage_float_to_double(K, bits)); }
  static float8 from_bits(uint8_t b) {
    float8 h;
    h.bits = b;
    return h;
  }
};

using float8e4nv = float8<ir::ScalarKind::F8E4NV>;   // e4m3fn: max 448, no infinity
using float8e5 = float8<ir::ScalarKind::F8E5>;       // e5m2: max 57344, IEEE specials
using float8e4b8 = float8<ir::ScalarKind::F8E4B8>;   // e4m3fnuz: max 240
using float8e5b16 = float8<ir::ScalarKind::F8E5B16>; // e5m2fnuz: max 57344

} // namespace tritium
