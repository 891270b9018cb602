// The interpreter's elements and what one op does to them: Triton's semantics of each
// arithmetic, comparison, math and conversion op on one value, rounded to the result's type.
// The interpreter's reference: written to be obviously right, not fast.
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstddef>
#include <cstdint>

namespace tritium::interp {

// One element: integers (and pointers) in i, normalized to their type's width (signed types
// sign-extended, unsigned zero-extended); floating-point values in f, rounded to their type.
union Scalar {
  int64_t i;
  double f;
};

inline Scalar int_scalar(int64_t v) {
  Scalar s;
  s.i = v;
  return s;
}
inline Scalar float_scalar(double v) {
  Scalar s;
  s.f = v;
  return s;
}

// Wraps or rounds a raw value to the representation of type t.
Scalar normalize(Scalar s, ir::DType t);
// The bits of an element as memory holds it, and back.
uint64_t to_bits(Scalar s, ir::DType t);
Scalar from_bits(uint64_t bits, ir::DType t);
size_t elem_bytes(ir::DType t);

Scalar binary(ir::BinaryOp k, ir::DType t, Scalar a, Scalar b);
// NaN compares unordered: false but for Ne, as Triton.
bool compare(ir::CmpPred pred, ir::DType t, Scalar a, Scalar b);
Scalar unary(ir::UnaryOp k, ir::DType t, Scalar a);
// The C library's function in double, rounded once to t (ops.def names the function).
Scalar math(ir::MathOp k, ir::DType t, Scalar a, Scalar b);
// Triton's conversions: float to integer truncates toward zero and saturates (NaN to 0), as
// NVIDIA's cvt.rzi; to bool tests for non-zero.
Scalar convert(Scalar a, ir::DType from, ir::DType to);

} // namespace tritium::interp
