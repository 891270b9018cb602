// The kernel's entry point: a loop over a range of programs around one program's code.
#pragma once

#include "cpu_codegen.hpp"

#include <llvm/IR/Function.h>

#include <string>

namespace tritium::cpu {

// Defines `symbol`, a KernelEntry running programs range[0] .. range[1] - 1 (cpu_codegen.hpp)
// through `program` (the lowered kernel: one program, returns whether it failed), which it
// marks for inlining.
llvm::Function* emit_grid_loop(llvm::Function& program, const std::string& symbol);

} // namespace tritium::cpu
