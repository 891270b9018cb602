// Very large kernels: their outermost loops become functions of their own before optimization.
#pragma once

namespace llvm {
class Module;
}

namespace tritium::cpu {

// In each function of `m` of at least `min_instructions` LLVM instructions, every outermost loop
// becomes a separate, never-inlined function. LLVM's passes are linear in the number of
// functions but not in the size of one: sequential loops make a deep dominator tree (walked by
// SCEV's guard search and updated by every loop transform) and one long register-allocation
// problem, so a kernel of 20k IR ops compiled 4x slower than 20 kernels of 1k. Returns the number
// of loops outlined.
int outline_loops(llvm::Module& m, unsigned min_instructions);

} // namespace tritium::cpu
