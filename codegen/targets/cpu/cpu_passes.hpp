// The CPU backend's passes over tritium's IR, in the order lower_kernel.cpp's lower_to_llvm
// runs them before lowering to LLVM: the list `tritium opt --target host` runs too.
#pragma once

#include <tritium/ir/ir.hpp>

#include <memory>
#include <span>
#include <string_view>

namespace tritium::cpu {

struct CpuPass {
  std::string_view name;
  // A rewritten copy of `f`, or null where the pass changes nothing.
  std::unique_ptr<ir::Function> (*run)(const ir::Function& f);
  // The copy is a second version of the kernel, chosen at its entry, not a replacement: the
  // pipeline lowers both (the last pass of the list; its bounds come from the pass's own entry).
  bool second_version = false;
};

std::span<const CpuPass> cpu_passes();

} // namespace tritium::cpu
