// The CPU pipeline, one named stage per line:
//   lower     tritium IR -> LLVM IR (fusion groups, views, micro-kernels)   lower_kernel.cpp
//   outline   a very large kernel's outermost loops as functions        outline_loops.cpp
//   optimize  LLVM O3 with the host's cost model (vectorizers)              optimize.cpp
//   object    machine code, a relocatable object (what the disk cache keeps) target.cpp
//   jit       the object linked into the process by ORC LLJIT             jit_load.cpp
// TRITIUM_LOG_STAGES=1 prints each stage's time; TRITIUM_DUMP keeps the "ll" and "ll.opt" texts
// and the host assembly, "asm" (the JIT's code as the host TargetMachine emits it: what a
// profile's addresses and the instruction selector's choices are checked against).
#include "cpu_codegen.hpp"
#include "env_flag.hpp"
#include "jit_load.hpp"
#include "lowering.hpp"
#include "optimize.hpp"
#include "outline_loops.hpp"
#include "target.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>

namespace tritium::cpu {
namespace {

std::string text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

class StageLog {
public:
  explicit StageLog(const ir::Function& f) : f_(f), on_(env_flag("TRITIUM_LOG_STAGES")) {}
  template <class F>
  auto operator()(const char* stage, F&& f) {
    auto t0 = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      report(stage, t0);
    } else {
      auto r = f();
      report(stage, t0);
      return r;
    }
  }

private:
  void report(const char* stage, std::chrono::steady_clock::time_point t0) {
    if (!on_)
      return;
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "[tritium cpu] %s: %-8s %.2f ms\n", f_.name.c_str(), stage, ms);
  }
  const ir::Function& f_;
  bool on_;
};

} // namespace

std::string host_arch() {
  return llvm::Triple(host_target().triple).getArchName().str();
}

CpuKernelObject compile_kernel_object(const ir::Function& f, bool fp_fusion) {
  static std::atomic<int> counter{0};
  const CpuTarget& target = host_target();
  const bool dump = env_flag("TRITIUM_DUMP");
  StageLog stage(f);
  CpuKernelObject out;
  llvm::LLVMContext ctx;
  out.symbol = fmt::format("tritium_{}_{}", f.name, counter++);

  LoweredModule lowered =
      stage("lower", [&] { return lower_to_llvm(f, target, ctx, out.symbol, fp_fusion); });
  out.scratch_bytes = lowered.scratch_bytes;
  // Kernels below this size keep one function (every benchmarked kernel lowers to fewer than
  // 10k instructions); above it compile time stays linear in the kernel's size.
  constexpr unsigned kOutlineInstructions = 20000;
  stage("outline", [&] { outline_loops(*lowered.module, kOutlineInstructions); });
  if (dump)
    out.artifacts["ll"] = text(*lowered.module);
  std::lock_guard<std::mutex> lock(*target.machine_mutex);
  stage("optimize", [&] { optimize_module(*lowered.module, target); });
  if (dump) {
    out.artifacts["ll.opt"] = text(*lowered.module);
    out.artifacts["asm"] = emit_file(*llvm::CloneModule(*lowered.module), *target.machine,
                                     llvm::CodeGenFileType::AssemblyFile)
                               .value_or("");
  }
  std::optional<std::string> object = stage("object", [&] {
    return emit_file(*lowered.module, *target.machine, llvm::CodeGenFileType::ObjectFile);
  });
  if (!object)
    throw Error(fmt::format("kernel '{}': this LLVM cannot emit object files for {}", f.name,
                            target.triple));
  out.object = std::move(*object);
  return out;
}

CpuCode load_kernel_object(CpuKernelObject object) {
  JitResult jitted = jit_load(object.object, object.symbol);
  CpuCode code;
  code.entry = reinterpret_cast<KernelEntry>(jitted.address);
  code.scratch_bytes = object.scratch_bytes;
  code.artifacts = std::move(object.artifacts);
  code.keep_alive = std::move(jitted.keep_alive);
  return code;
}

CpuCode compile_kernel(const ir::Function& f, bool fp_fusion) {
  return load_kernel_object(compile_kernel_object(f, fp_fusion));
}

std::string code_identity() {
  const CpuTarget& t = host_target();
  return fmt::format("LLVM {} {} {} {}", LLVM_VERSION_STRING, t.triple, t.cpu, t.features);
}

} // namespace tritium::cpu
