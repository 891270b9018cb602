// PTX that LLVM 19's NVPTX backend does not emit, or emits at length, written as inline asm:
// what the NVPTX target (nvptx.cpp) hands the lowering and the module after optimization.
#pragma once

#include <tritium/ir/attrs.hpp>
#include <tritium/ir/types.hpp>

#include <llvm/IR/IRBuilder.h>

#include <string>

namespace tritium::gpu {

// PTX's name of a memory scope: "cta", "gpu", "sys".
const char* ptx_scope(ir::MemScope scope);

// PTX's name of a 16- or 8-bit float type in conversions and matrix instructions: "f16",
// "bf16", "e4m3", "e5m2"; null for the others (the fnuz fp8 formats have none).
const char* ptx_type(ir::DType t);

// "{$first, ..., $first+n-1}" (or "$first" alone): an inline-asm operand list.
std::string ptx_reg_list(int first, int n);

// libdevice's roundf (half away from zero) on an f32 value, in three instructions.
llvm::Value* round_half_away(llvm::IRBuilder<>& b, llvm::Value* x);

// Every llvm.fpto[su]i.sat of `f` from f32/f64 to 8- to 64-bit integers as one cvt.rzi.
void native_float_to_int(llvm::Function& f);

// red.relaxed.<scope>.global.add of `value` (a scalar, or where `vectors` (sm_90, PTX 8.1) a
// vector of 2 or 4 f32, 2 to 8 f16/bf16) at `ptr` where `mask` (null: always) holds; false for
// types and widths it has no instruction for.
bool red_add(llvm::IRBuilder<>& b, bool vectors, llvm::Value* value, llvm::Value* ptr,
             llvm::Value* mask, ir::MemScope scope);

} // namespace tritium::gpu
