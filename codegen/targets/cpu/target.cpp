// Host detection through LLVM's generic API: no ISA is named here, so an AArch64 host needs
// nothing but LLVM's AArch64 backend linked in (its triple comes from the process).
#include "target.hpp"

#include <tritium/error.hpp>

#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>

namespace tritium::cpu {

namespace {

CpuTarget detect() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  CpuTarget t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  std::string features;
  for (const auto& [name, on] : llvm::sys::getHostCPUFeatures())
    features += (features.empty() ? "" : ",") + std::string(on ? "+" : "-") + name.str();
  t.features = features;
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target)
    throw Error("cpu backend: no LLVM target for host triple " + t.triple + ": " + err);
  llvm::TargetOptions opts;
  t.machine.reset(target->createTargetMachine(t.triple, t.cpu, t.features, opts, llvm::Reloc::PIC_,
                                              std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!t.machine)
    throw Error("cpu backend: cannot create a target machine for " + t.triple);
  // Ask the cost model (not a table of ISAs) how wide a vector register is.
  llvm::LLVMContext ctx;
  llvm::Module m("probe", ctx);
  m.setDataLayout(t.machine->createDataLayout());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                    llvm::Function::ExternalLinkage, "probe", m);
  fn->addFnAttr("target-cpu", t.cpu);
  fn->addFnAttr("target-features", t.features);
  auto tti = t.machine->getTargetTransformInfo(*fn);
  auto bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector);
  t.vector_bits = std::max<int>(128, static_cast<int>(bits.getFixedValue()));
  // glibc's libmvec names are x86-64 only in LLVM 19's tables; elsewhere math stays scalar.
  llvm::Triple triple(t.triple);
  t.libmvec = triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() &&
              !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  return t;
}

} // namespace

const CpuTarget& host_target() {
  static CpuTarget t = detect();
  return t;
}

} // namespace tritium::cpu
