// The element semantics of tritium's elementwise ops in LLVM IR, shared by the CPU lowering
// (codegen/targets/cpu) and the GPU lowering (codegen/gpu): what one lane of add, cmp, cast,
// exp, … computes, bit for bit as the reference interpreter defines it (docs/ir.md). Internal
// to codegen (LLVM allowed).
//
// A target supplies only what truly differs (scalar::Target):
//  * how f16/bf16 live in registers: the CPU keeps them in f32 registers holding exactly
//    representable values and rounds after every op; GPUs keep half / bfloat registers;
//  * the address space of global pointers;
//  * the math functions (ops.def's Math and Extern categories) and rsqrt: the CPU calls the C
//  library in
//    double and rounds once, GPUs call TargetInfo::math (libdevice, or expansions).
//
// Integer semantics are the interpreter's and hold on every device: wrap-around at the width,
// shifts by the width or more give 0 (or -1 for a negative signed value shifted right),
// x / 0 == 0, x % 0 == x, INT_MIN / -1 == INT_MIN, INT_MIN % -1 == 0, all without LLVM's
// undefined behaviour or poison.
#pragma once

#include <tritium/ir/ir.hpp>

#include <llvm/IR/IRBuilder.h>

#include <vector>

namespace tritium::scalar {

class Target {
public:
  virtual ~Target() = default;
  // True: f16 and bf16 are f32 registers holding exactly representable values, rounded after
  // each op. False: they are LLVM half and bfloat.
  virtual bool narrow_floats_in_f32() const = 0;
  // True: 8-bit integer arithmetic is done on 32-bit registers (extended, computed, truncated),
  // where the target has no 8-bit registers and LLVM would otherwise legalize each i8 op into
  // 16-bit ones with a mask after every step (NVPTX: bfe, cvt.u16.u32, and 255 before a shift
  // of an unpacked byte). A vector CPU keeps i8: four times the lanes.
  virtual bool narrow_ints_in_i32() const { return false; }
  virtual unsigned global_address_space() const = 0;
  // `kind` (a Math op, an Extern op naming its function in op's symbol, or Rsqrt) on `args`,
  // registers of element type `t`.
  virtual llvm::Value* math(ir::OpKind kind, ir::DType t, const std::vector<llvm::Value*>& args,
                            const ir::Op& op) = 0;
  // `bits` (an integer), hidden from the optimizer where a backend cannot select what folding
  // through it would make (see Emitter::bitcast).
  virtual llvm::Value* opaque_bits(llvm::Value* bits) { return bits; }
};

class Emitter {
public:
  Emitter(llvm::IRBuilder<>& b, Target& target) : b_(b), target_(target) {}

  // Types: in registers, and in memory (i1 is a byte; f16/bf16 are 16 bits).
  llvm::Type* type(ir::DType t);
  llvm::Type* memory_type(ir::DType t);

  // One lane of an elementwise op (ir::is_elementwise): `args` are its operands' lanes.
  llvm::Value* elementwise(const ir::Op& op, const std::vector<llvm::Value*>& args);

  llvm::Value* binary(ir::BinaryOp k, ir::DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* compare(ir::CmpPred pred, ir::DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* unary(const ir::Op& op, ir::DType t, llvm::Value* a);
  llvm::Value* fma(ir::DType t, llvm::Value* a, llvm::Value* b, llvm::Value* c);
  // Value conversion (cast), as the interpreter's: float -> int truncates and saturates, NaN
  // to 0; every rounding to a float type is to nearest even, once.
  llvm::Value* convert(llvm::Value* a, ir::DType from, ir::DType to);
  llvm::Value* bitcast(llvm::Value* a, ir::DType from, ir::DType to);
  // p + offset elements of `pointee`.
  llvm::Value* add_ptr(llvm::Value* p, llvm::Value* offset, ir::DType pointee,
                       ir::DType offset_type);

  // Constants of type t: a constant op's value, zero.
  llvm::Value* constant(const ir::Op& op, ir::DType t);
  llvm::Value* zero(ir::DType t);

  // The storage bits of a register as iN, and back.
  llvm::Value* to_bits(llvm::Value* v, ir::DType t);
  llvm::Value* from_bits(llvm::Value* bits, ir::DType t);
  // For f16/bf16 in f32 registers: round an f32 (f64) value to t, to nearest even, once.
  llvm::Value* round_from_float(llvm::Value* f, ir::DType t);
  llvm::Value* round_from_double(llvm::Value* d, ir::DType t);

private:
  bool in_f32(ir::DType t) const; // a narrow float held in an f32 register
  // A storage float's code from an f32 value (rounded once), and its f32 value from the code.
  llvm::Value* encode(llvm::Value* f, ir::DType t);
  llvm::Value* decode(llvm::Value* code, ir::DType t);
  // The result of an IEEE op computed in the register type, rounded to t.
  llvm::Value* round(llvm::Value* r, ir::DType t);
  llvm::Value* divide(bool rem, bool is_unsigned, llvm::Value* a, llvm::Value* y);

  llvm::IRBuilder<>& b_;
  Target& target_;
};

} // namespace tritium::scalar
