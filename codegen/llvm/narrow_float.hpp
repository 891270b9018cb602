// The rounding of float_format.hpp as LLVM IR, for formats whose every value an f32 holds
// exactly (f16, bf16, the fp8 formats): the software path every device shares, and the
// reference the hardware conversions (TargetInfo::pair) are checked against. Internal to
// codegen.
#pragma once

#include <tritium/float_format.hpp>

#include <llvm/IR/IRBuilder.h>

namespace tritium::scalar {

// An f32 value rounded to the format once, to nearest even, with its overflow and NaN rules;
// the code as an integer of the format's width.
llvm::Value* encode_float(llvm::IRBuilder<>& b, llvm::Value* x, const FloatFormat& f);
// A code (an integer of the format's width) as the f32 it stands for, exactly.
llvm::Value* decode_float(llvm::IRBuilder<>& b, llvm::Value* code, const FloatFormat& f);

} // namespace tritium::scalar
