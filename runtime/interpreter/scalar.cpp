#include "scalar.hpp"

#include <tritium/error.hpp>
#include <tritium/float_format.hpp>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string_view>

namespace tritium::interp {

using ir::DType;
using ir::ScalarKind;

// Wraps or rounds a raw value to the representation of type t.
Scalar normalize(Scalar s, DType t) {
  if (const FloatFormat* f = float_format(t.kind)) // f16, bf16, fp8: rounded to the format
    return float_scalar(decode_float(encode_float(s.f, *f), *f));
  switch (t.kind) {
  case ScalarKind::I1:
    return int_scalar(s.i & 1);
  case ScalarKind::I8:
    return int_scalar(static_cast<int8_t>(s.i));
  case ScalarKind::I16:
    return int_scalar(static_cast<int16_t>(s.i));
  case ScalarKind::I32:
    return int_scalar(static_cast<int32_t>(s.i));
  case ScalarKind::U8:
    return int_scalar(static_cast<uint8_t>(s.i));
  case ScalarKind::U16:
    return int_scalar(static_cast<uint16_t>(s.i));
  case ScalarKind::U32:
    return int_scalar(static_cast<uint32_t>(s.i));
  case ScalarKind::I64:
  case ScalarKind::U64:
  case ScalarKind::Ptr:
    return s;
  case ScalarKind::F32:
    return float_scalar(static_cast<float>(s.f));
  default: // f64; the narrow floats, above
    return s;
  }
}

uint64_t to_bits(Scalar s, DType t) {
  if (const FloatFormat* f = float_format(t.kind))
    return code_of(s.f, *f);
  switch (t.kind) {
  case ScalarKind::F32:
    return std::bit_cast<uint32_t>(static_cast<float>(s.f));
  case ScalarKind::F64:
    return std::bit_cast<uint64_t>(s.f);
  default: {
    int b = t.bits();
    uint64_t u = static_cast<uint64_t>(s.i);
    return b == 64 ? u : u & ((uint64_t{1} << b) - 1);
  }
  }
}

Scalar from_bits(uint64_t bits, DType t) {
  if (const FloatFormat* f = float_format(t.kind))
    return float_scalar(decode_float(static_cast<uint32_t>(bits), *f));
  switch (t.kind) {
  case ScalarKind::F32:
    return float_scalar(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  case ScalarKind::F64:
    return float_scalar(std::bit_cast<double>(bits));
  default:
    return normalize(int_scalar(static_cast<int64_t>(bits)), t);
  }
}

size_t elem_bytes(DType t) {
  return t.kind == ScalarKind::I1 ? 1 : t.bits() / 8;
}

namespace {

[[noreturn]] void unreachable(std::string_view what) {
  throw Error(
      fmt::format("interpreter: internal error: {} (the verifier admits no such op)", what));
}

} // namespace

Scalar binary(ir::BinaryOp k, DType t, Scalar a, Scalar b) {
  using ir::BinaryOp;
  if (t.is_float()) {
    double x = a.f, y = b.f, r = 0;
    // f32 add/sub/mul/div round once in f32, as the hardware does.
    const bool f32 = t.kind == ScalarKind::F32;
    const float fx = static_cast<float>(x), fy = static_cast<float>(y);
    switch (k) {
    case BinaryOp::Add:
      r = f32 ? fx + fy : x + y;
      break;
    case BinaryOp::Sub:
      r = f32 ? fx - fy : x - y;
      break;
    case BinaryOp::Mul:
      r = f32 ? fx * fy : x * y;
      break;
    case BinaryOp::Div:
      r = f32 ? fx / fy : x / y;
      break;
    case BinaryOp::Rem:
      r = std::fmod(x, y);
      break;
    case BinaryOp::Min:
      r = std::fmin(x, y);
      break;
    case BinaryOp::Max:
      r = std::fmax(x, y);
      break;
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
    case BinaryOp::Umulhi:
      unreachable("an integer op on floating-point values");
    }
    return normalize(float_scalar(r), t);
  }
  const bool u = t.is_unsigned();
  const int bits = t.bits();
  int64_t x = a.i, y = b.i;
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  int64_t r = 0;
  switch (k) {
  case BinaryOp::Add:
    r = static_cast<int64_t>(ux + uy);
    break;
  case BinaryOp::Sub:
    r = static_cast<int64_t>(ux - uy);
    break;
  case BinaryOp::Mul:
    r = static_cast<int64_t>(ux * uy);
    break;
  case BinaryOp::Div:
  case BinaryOp::Rem: {
    // x / 0 == 0 and x % 0 == x, so that x == (x / y) * y + x % y holds for every y; the
    // most negative value over -1 wraps (its remainder is 0). docs/language.md.
    const bool div = k == BinaryOp::Div;
    if (y == 0)
      r = div ? 0 : x;
    else if (u && bits == 64)
      r = static_cast<int64_t>(div ? ux / uy : ux % uy);
    else if (!u && x == std::numeric_limits<int64_t>::min() && y == -1)
      r = div ? x : 0;
    else
      r = div ? x / y : x % y;
    break;
  }
  case BinaryOp::And:
    r = x & y;
    break;
  case BinaryOp::Or:
    r = x | y;
    break;
  case BinaryOp::Xor:
    r = x ^ y;
    break;
  case BinaryOp::Shl:
    r = uy >= static_cast<uint64_t>(bits) ? 0 : static_cast<int64_t>(ux << uy);
    break;
  case BinaryOp::Shr:
    if (uy >= static_cast<uint64_t>(bits))
      r = (u || x >= 0) ? 0 : -1;
    else
      r = u ? static_cast<int64_t>(ux >> uy) : (x >> y);
    break;
  case BinaryOp::Min:
    r = (u && bits == 64) ? static_cast<int64_t>(std::min(ux, uy)) : std::min(x, y);
    break;
  case BinaryOp::Max:
    r = (u && bits == 64) ? static_cast<int64_t>(std::max(ux, uy)) : std::max(x, y);
    break;
  case BinaryOp::Umulhi: {
    uint64_t mx = to_bits(a, t), my = to_bits(b, t);
    if (bits == 64)
      r = static_cast<int64_t>((static_cast<unsigned __int128>(mx) * my) >> 64);
    else
      r = static_cast<int64_t>((mx * my) >> bits);
    break;
  }
  }
  return normalize(int_scalar(r), t);
}

namespace {

template <class T>
bool compare_values(ir::CmpPred pred, T x, T y) {
  switch (pred) {
  case ir::CmpPred::Eq:
    return x == y;
  case ir::CmpPred::Ne:
    return x != y; // unordered: true with NaN, as Triton
  case ir::CmpPred::Lt:
    return x < y;
  case ir::CmpPred::Le:
    return x <= y;
  case ir::CmpPred::Gt:
    return x > y;
  case ir::CmpPred::Ge:
    return x >= y;
  }
  return false;
}

} // namespace

bool compare(ir::CmpPred pred, DType t, Scalar a, Scalar b) {
  if (t.is_float())
    return compare_values(pred, a.f, b.f);
  if (t.is_unsigned() || t.is_ptr())
    return compare_values(pred, static_cast<uint64_t>(a.i), static_cast<uint64_t>(b.i));
  return compare_values(pred, a.i, b.i);
}

Scalar unary(ir::UnaryOp k, DType t, Scalar a) {
  using ir::UnaryOp;
  if (!t.is_float()) {
    switch (k) {
    case UnaryOp::Neg:
      return normalize(int_scalar(static_cast<int64_t>(0 - static_cast<uint64_t>(a.i))), t);
    case UnaryOp::Not:
      return normalize(int_scalar(~a.i), t);
    case UnaryOp::Abs:
      if (t.is_unsigned()) // u64 values above 2^63 look negative in a.i
        return a;
      return normalize(
          int_scalar(a.i < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(a.i)) : a.i), t);
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
      unreachable("a floating-point op on integers");
    }
  }
  double x = a.f, r = 0;
  switch (k) {
  case UnaryOp::Neg:
    r = -x;
    break;
  case UnaryOp::Abs:
    r = std::fabs(x);
    break;
  case UnaryOp::Sqrt:
    r = std::sqrt(x);
    break;
  case UnaryOp::Rsqrt:
    r = 1.0 / std::sqrt(x);
    break;
  case UnaryOp::Floor:
    r = std::floor(x);
    break;
  case UnaryOp::Ceil:
    r = std::ceil(x);
    break;
  case UnaryOp::Not:
    unreachable("bitwise not of floating-point values");
  }
  return normalize(float_scalar(r), t);
}

namespace {

// The C library's function in double, rounded once to t (ops.def names the function).
template <int N, class F>
double call(F f, double x, double y) {
  if constexpr (N == 1)
    return f(x);
  else
    return f(x, y);
}

} // namespace
Scalar math(ir::MathOp k, DType t, Scalar a, Scalar b) {
  double r = 0;
  switch (k) {
#define TRITIUM_MATH(Kind, fn, operands, n, ...)                                                   \
  case ir::MathOp::Kind:                                                                           \
    r = call<n>([](auto... x) { return std::fn(x...); }, a.f, b.f);                                \
    break;
#include <tritium/ir/ops.def>
  }
  return normalize(float_scalar(r), t);
}

Scalar convert(Scalar a, DType from, DType to) {
  if (to.is_bool()) {
    if (from.is_float())
      return int_scalar(a.f != 0.0);
    return int_scalar(a.i != 0);
  }
  if (from.is_float() && to.is_float())
    return normalize(a, to);
  if (!from.is_float() && to.is_float()) {
    double d = (from.kind == ScalarKind::U64) ? static_cast<double>(static_cast<uint64_t>(a.i))
                                              : static_cast<double>(a.i);
    // An integer above 2^53 rounds twice through double; convert via float when exact.
    if (to.kind == ScalarKind::F32)
      return float_scalar(from.kind == ScalarKind::U64
                              ? static_cast<float>(static_cast<uint64_t>(a.i))
                              : static_cast<float>(a.i));
    return normalize(float_scalar(d), to);
  }
  if (from.is_float() && !to.is_float()) {
    // Truncation toward zero, saturating, NaN to 0: what NVIDIA's cvt.rzi does.
    double x = std::trunc(a.f);
    if (std::isnan(x))
      return int_scalar(0);
    int bits = to.bits();
    double lo, hi;
    if (to.is_unsigned()) {
      lo = 0;
      hi = std::ldexp(1.0, bits) - 1;
    } else {
      lo = -std::ldexp(1.0, bits - 1);
      hi = std::ldexp(1.0, bits - 1) - 1;
    }
    if (x <= lo)
      x = lo;
    if (x >= hi) {
      if (to.kind == ScalarKind::U64)
        return int_scalar(-1);
      if (to.kind == ScalarKind::I64)
        return int_scalar(std::numeric_limits<int64_t>::max());
      x = hi;
    }
    if (to.kind == ScalarKind::U64 && x >= std::ldexp(1.0, 63))
      return int_scalar(static_cast<int64_t>(static_cast<uint64_t>(x)));
    return normalize(int_scalar(static_cast<int64_t>(x)), to);
  }
  // integer <-> integer (and pointers): the normalized value re-wrapped; i1 is unsigned.
  return normalize(a, to);
}

} // namespace tritium::interp
