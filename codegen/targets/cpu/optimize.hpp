// Stage "optimize": LLVM's O3 pipeline with the host's cost model (so that the loop and SLP
// vectorizers pick the host's vector width).
#pragma once

#include <llvm/IR/Module.h>

namespace tritium::cpu {
struct CpuTarget;
void optimize_module(llvm::Module& m, const CpuTarget& target);
} // namespace tritium::cpu
