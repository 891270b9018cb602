#include "optimize.hpp"

#include "ldexp.hpp"
#include "target.hpp"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>

namespace tritium::cpu {
namespace {

// Fused loops carry a vector width (lower_kernel.cpp's full_width_hint), and the loop
// vectorizer reports why it could not vectorize such a loop as a remark that is always
// printed (to stderr, from inside a user's program). The kernel is correct either way: remarks
// are dropped, everything else takes LLVM's default path.
struct DropRemarks : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    return di.getSeverity() == llvm::DS_Remark;
  }
};

} // namespace

void optimize_module(llvm::Module& m, const CpuTarget& target) {
  m.getContext().setDiagnosticHandler(std::make_unique<DropRemarks>());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  // LLVM's unroller fully unrolls the many constant-trip tile loops: it tripled compile time
  // (random kernels: 48 -> 15 ms on average) for no measured speedup (bench/RESULTS.md); the
  // loop vectorizer still interleaves, and the dot micro-kernel is blocked by hand.
  tuning.LoopUnrolling = false;
  llvm::PassBuilder pb(target.machine.get(), tuning);
  llvm::Triple triple(target.triple);
  llvm::TargetLibraryInfoImpl tlii(triple);
  tlii.addVectorizableFunctionsFromVecLib(target.vector_library, triple);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
  lower_ldexp_calls(m);
  make_streaming_stores_nontemporal(m);
}

} // namespace tritium::cpu
