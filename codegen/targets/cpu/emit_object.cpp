// Ahead of time: kernels lowered and optimized as the JIT does (pipeline.cpp), then linked into
// one module and emitted as a relocatable object for the host, which the build links into the
// user's program. The object calls only the C library and the hooks of runtime_abi.hpp.
#include "cpu_codegen.hpp"
#include "lowering.hpp"
#include "optimize.hpp"
#include "target.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

namespace tritium::cpu {

CpuObject compile_kernels_to_object(std::span<const ObjectKernel> kernels, const std::string& cpu) {
  CpuTarget own;
  if (!cpu.empty())
    own = make_cpu_target(cpu);
  const CpuTarget& target = cpu.empty() ? host_target() : own;
  std::lock_guard<std::mutex> lock(*target.machine_mutex);
  llvm::LLVMContext ctx;
  auto all = std::make_unique<llvm::Module>("tritium_aot", ctx);
  CpuObject out;
  for (const ObjectKernel& k : kernels) {
    LoweredModule lowered = lower_to_llvm(*k.function, target, ctx, k.symbol, k.fp_fusion);
    optimize_module(*lowered.module, target);
    if (all->getDataLayout().isDefault()) {
      all->setDataLayout(lowered.module->getDataLayout());
      all->setTargetTriple(lowered.module->getTargetTriple());
    }
    if (llvm::Linker::linkModules(*all, std::move(lowered.module)))
      throw Error(
          fmt::format("kernel '{}': cannot link its CPU code into the object", k.function->name));
    out.scratch_bytes.push_back(lowered.scratch_bytes);
  }
  std::optional<std::string> object =
      emit_file(*all, *target.machine, llvm::CodeGenFileType::ObjectFile);
  if (!object)
    throw Error("cpu: this LLVM cannot emit object files for " + target.triple);
  out.object.assign(object->begin(), object->end());
  out.cpu = target.cpu;
  return out;
}

} // namespace tritium::cpu
