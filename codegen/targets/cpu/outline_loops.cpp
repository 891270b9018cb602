#include "outline_loops.hpp"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/CodeExtractor.h>

#include <vector>

namespace tritium::cpu {

int outline_loops(llvm::Module& m, unsigned min_instructions) {
  std::vector<llvm::Function*> large;
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.getInstructionCount() >= min_instructions)
      large.push_back(&f);
  int outlined = 0;
  for (llvm::Function* f : large) {
    llvm::DominatorTree dt(*f);
    llvm::LoopInfo loops(dt);
    const std::vector<llvm::Loop*> outermost(loops.begin(), loops.end());
    // One analysis cache for the function, as LLVM's hot-cold splitting keeps one: building it
    // per loop would walk the whole function each time.
    llvm::CodeExtractorAnalysisCache cache(*f);
    for (llvm::Loop* loop : outermost) {
      llvm::CodeExtractor extractor(loop->getBlocks(), &dt, /*AggregateArgs=*/false,
                                    /*BFI=*/nullptr, /*BPI=*/nullptr, /*AC=*/nullptr,
                                    /*AllowVarArgs=*/false, /*AllowAlloca=*/false,
                                    /*AllocationBlock=*/nullptr, "loop");
      if (!extractor.isEligible())
        continue;
      if (llvm::Function* g = extractor.extractCodeRegion(cache)) {
        // The inliner would put a loop called once straight back.
        g->addFnAttr(llvm::Attribute::NoInline);
        ++outlined;
      }
    }
  }
  return outlined;
}

} // namespace tritium::cpu
