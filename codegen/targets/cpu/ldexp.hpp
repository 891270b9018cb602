// f32 times a power of two in one instruction where the host has one (x86 AVX-512's vscalefps),
// for exp_f32's last step. LLVM 19 does not vectorize llvm.ldexp, and would call ldexpf once per
// lane if it did; the two exact multiplies that exp_f32 uses elsewhere take nine operations on
// vectors. So the kernel calls a function of ours whose vector versions the loop vectorizer knows
// by their VFABI names (as it knows libmvec's), and after the optimizer every call to any of them
// becomes the instruction (ldexp.cpp).
#pragma once

#include <vector>

namespace llvm {
class IRBuilderBase;
class Module;
class TargetMachine;
class Value;
} // namespace llvm

namespace tritium::cpu {

struct CpuTarget;

// The vector widths (f32 lanes) that have the instruction on this machine; none where it has
// none (then call_ldexp must not be used).
std::vector<int> ldexp_lanes(const llvm::TargetMachine& machine);

// p * 2^floor(k), rounded once, for f32 p and k; a NaN in either gives NaN.
llvm::Value* call_ldexp(llvm::IRBuilderBase& b, const CpuTarget& target, llvm::Value* p,
                        llvm::Value* k);

// After the optimizer: every call that call_ldexp emitted, scalar or vector, becomes the
// instruction, and the functions it declared are gone.
void lower_ldexp_calls(llvm::Module& m);

} // namespace tritium::cpu
