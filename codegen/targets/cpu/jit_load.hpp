// Stage "jit": hands an optimized module to ORC's LLJIT (one per process, shared by every
// kernel) and returns the kernel's address. Machine code is generated here, at O3.
#pragma once

#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>

#include <memory>
#include <string>

namespace tritium::cpu {

struct JitResult {
  void* address = nullptr;
  std::shared_ptr<void> keep_alive; // removing it frees the kernel's code
};

JitResult jit_load(llvm::orc::ThreadSafeModule module, const std::string& symbol);

} // namespace tritium::cpu
