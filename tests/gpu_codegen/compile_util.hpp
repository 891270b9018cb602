// What the GPU codegen tests share: compiling a traced kernel for one architecture, and
// counting an instruction in its assembly.
#pragma once

#include "../../codegen/gpu/compile.hpp"

#include <string>

namespace gpu_test {

inline tritium::gpu::GpuKernelBinary compile(const tritium::ir::Function& f,
                                             const std::string& arch, int warps = 4,
                                             int code_object = 5) {
  tritium::gpu::GpuTarget t;
  t.arch = arch;
  t.code_object = code_object;
  tritium::CompileOptions o;
  o.num_warps = warps;
  return tritium::gpu::compile_for_gpu(f, t, o);
}

inline int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1))
    ++n;
  return n;
}

} // namespace gpu_test
