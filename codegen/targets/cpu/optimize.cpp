#include "optimize.hpp"

#include "target.hpp"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>

namespace tritium::cpu {

void optimize_module(llvm::Module& m, const CpuTarget& target) {
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
  if (target.libmvec)
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

} // namespace tritium::cpu
