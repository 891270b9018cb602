// LLVM plumbing shared by the GPU targets: target machines, the O3 pipeline, code emission.
#include "gpu/target_info.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

namespace tritium::gpu {

std::unique_ptr<llvm::TargetMachine> make_target_machine(const std::string& triple,
                                                         const std::string& cpu,
                                                         const std::string& features) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
    // 32-bit pointers to shared, constant and local memory on NVPTX (Triton compiles with the
    // same flag): shared addresses, wgmma descriptors and cp.async destinations in 32-bit
    // arithmetic, where 64-bit adds and bit-field extracts cost two to four instructions each
    // (the 128 x 256 GEMM executed 64 % more instructions than Triton's). The option is read
    // when an NVPTX target machine is made, so it is set before the first.
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("nvptx-short-ptr"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    throw Error(fmt::format("GPU target {}: {}", triple, err));
  llvm::TargetOptions opts;
  auto* tm = target->createTargetMachine(triple, cpu, features, opts, llvm::Reloc::PIC_,
                                         std::nullopt, llvm::CodeGenOptLevel::Aggressive);
  if (!tm)
    throw Error(
        fmt::format("GPU target {} ({}): LLVM cannot create a target machine", triple, cpu));
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, bool slp) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.SLPVectorization = slp;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string emit_to_string(llvm::Module& m, llvm::TargetMachine& tm, bool object,
                           bool strength_reduction) {
  // Loop strength reduction is a pass of the code generator that only a process-wide option
  // turns off; it is set for this emission and restored, emissions serialized so that kernels
  // compiled on two threads do not see each other's setting.
  static std::mutex emitting;
  std::lock_guard<std::mutex> lock(emitting);
  auto* lsr =
      static_cast<llvm::cl::opt<bool>*>(llvm::cl::getRegisteredOptions().lookup("disable-lsr"));
  const bool was = lsr && lsr->getValue();
  if (lsr)
    lsr->setValue(!strength_reduction);
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  const bool failed = tm.addPassesToEmitFile(pm, os, nullptr,
                                             object ? llvm::CodeGenFileType::ObjectFile
                                                    : llvm::CodeGenFileType::AssemblyFile);
  if (!failed)
    pm.run(m);
  if (lsr)
    lsr->setValue(was);
  if (failed)
    throw Error(fmt::format("LLVM cannot emit {} for {}", object ? "object code" : "assembly",
                            tm.getTargetTriple().str()));
  return std::string(buf.str());
}

std::vector<llvm::Value*> MatrixOps::mma(llvm::IRBuilder<>&, const MmaInstr& instr,
                                         const std::vector<llvm::Value*>&,
                                         const std::vector<llvm::Value*>&,
                                         const std::vector<llvm::Value*>&) {
  throw Error(fmt::format("GPU lowering: {} has no {} matrix instructions", arch_,
                          matrix_unit_name(instr.unit)));
}

std::vector<llvm::Value*> MatrixOps::mma_shared(llvm::IRBuilder<>&, const MmaInstr& instr,
                                                const SmemMatrix&, const SmemMatrix&,
                                                const std::vector<llvm::Value*>&) {
  throw Error(fmt::format("GPU lowering: {} has no {} matrix instructions on shared memory", arch_,
                          matrix_unit_name(instr.unit)));
}

std::vector<llvm::Value*> MatrixOps::mma_shared_regs(llvm::IRBuilder<>&, const MmaInstr& instr,
                                                     const std::vector<llvm::Value*>&,
                                                     const SmemMatrix&,
                                                     const std::vector<llvm::Value*>&) {
  throw Error(fmt::format("GPU lowering: {} has no {} matrix instructions with a in registers",
                          arch_, matrix_unit_name(instr.unit)));
}

// Parsed whole, libdevice (470 KB of bitcode) was 40 % of a cold GeGLU compile for sm_90a on
// the build machine (105 ms, 62 read lazily): the linker materializes only what it links.
void link_bitcode_library(llvm::Module& m, const std::string& path, std::string_view what) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    throw Error(fmt::format("{}: cannot read {}: {}", what, path, buf.getError().message()));
  auto lib = llvm::getOwningLazyBitcodeModule(std::move(*buf), m.getContext());
  if (!lib)
    throw Error(
        fmt::format("{}: cannot parse {}: {}", what, path, llvm::toString(lib.takeError())));
  (*lib)->setDataLayout(m.getDataLayout());
  (*lib)->setTargetTriple(m.getTargetTriple());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    throw Error(fmt::format("{}: linking {} failed", what, path));
}

std::vector<llvm::Value*> pack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& elems) {
  std::vector<llvm::Value*> words;
  const unsigned bits = elems.at(0)->getType()->getPrimitiveSizeInBits();
  const size_t per = 32 / bits;
  for (size_t w = 0; w < elems.size(); w += per) {
    llvm::Value* word = b.getInt32(0);
    for (size_t i = 0; i < per; ++i) {
      llvm::Value* e = b.CreateBitCast(elems[w + i], b.getIntNTy(bits));
      word = b.CreateOr(word, b.CreateShl(b.CreateZExt(e, b.getInt32Ty()), i * bits));
    }
    words.push_back(word);
  }
  return words;
}

std::vector<llvm::Value*> unpack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& words,
                                       llvm::Type* elem) {
  std::vector<llvm::Value*> out;
  const unsigned bits = elem->getPrimitiveSizeInBits();
  for (llvm::Value* w : words)
    for (unsigned i = 0; i < 32 / bits; ++i)
      out.push_back(
          b.CreateBitCast(b.CreateTrunc(b.CreateLShr(b.CreateBitCast(w, b.getInt32Ty()), i * bits),
                                        b.getIntNTy(bits)),
                          elem));
  return out;
}

} // namespace tritium::gpu
