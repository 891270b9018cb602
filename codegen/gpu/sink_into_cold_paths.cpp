// Moves pure values that only cold paths use into those paths, one copy per using block.
//
// A branch weighted as unlikely (an If with `likely`: TRITIUM_CHECK's reporting branches)
// reads values of the hot path, a tile's element offsets say; LLVM computes each once, in the
// block that dominates all its users, and keeps it live across the hot path to the cold
// blocks, where no pass recomputes it: a checked vector add took 56 registers a thread for
// the 26 of the unchecked one, all its element offsets held from the kernel's entry for
// the checks that never fail. Here a pure instruction whose every user sits in a cold block
// is copied into each such block and the original goes; its operands, now used by the
// copies alone, follow, so that only what the hot path computes anyway stays live into the
// cold paths.
#include "gpu/target_info.hpp"

#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/ProfDataUtils.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium::gpu {
namespace {

// How many edges weighted at least 2^10 : 1 against them lead to each block (blocks reached
// through none are absent): a cold path nested in a cold region (a fault report inside the
// checked copy of a loop that TRITIUM_CHECK versions) is colder than the region's own path.
std::unordered_map<const llvm::BasicBlock*, int> coldness(llvm::Function& f) {
  llvm::DominatorTree dt(f);
  std::unordered_map<const llvm::BasicBlock*, int> cold;
  for (llvm::BasicBlock& bb : f) {
    auto* br = llvm::dyn_cast<llvm::BranchInst>(bb.getTerminator());
    llvm::SmallVector<uint32_t, 2> w;
    if (!br || !br->isConditional() || !llvm::extractBranchWeights(*br, w) || w.size() != 2)
      continue;
    for (unsigned k = 0; k < 2; ++k) {
      llvm::BasicBlock* s = br->getSuccessor(k);
      if (uint64_t{w[k]} << 10 > w[1 - k] || !s->getSinglePredecessor())
        continue;
      for (llvm::BasicBlock& b : f)
        if (dt.dominates(s, &b))
          ++cold[&b];
    }
  }
  return cold;
}

bool pure(const llvm::Instruction& i) {
  if (llvm::isa<llvm::PHINode>(i) || i.isTerminator() || i.mayHaveSideEffects() ||
      i.mayReadFromMemory() || llvm::isa<llvm::AllocaInst>(i))
    return false;
  const auto* call = llvm::dyn_cast<llvm::CallBase>(&i);
  return !call || !call->isConvergent();
}

// The block a use needs its value in: a PHI's incoming block, else the user's.
llvm::BasicBlock* use_block(const llvm::Use& u) {
  auto* user = llvm::cast<llvm::Instruction>(u.getUser());
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user))
    return phi->getIncomingBlock(u);
  return user->getParent();
}

} // namespace

void sink_into_cold_paths(llvm::Function& f) {
  const auto cold = coldness(f);
  if (cold.empty())
    return;
  auto depth = [&](const llvm::BasicBlock* b) {
    auto it = cold.find(b);
    return it == cold.end() ? 0 : it->second;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (llvm::BasicBlock* bb : llvm::post_order(&f)) {
      const int here = depth(bb);
      for (auto it = bb->rbegin(); it != bb->rend();) {
        llvm::Instruction& i = *it++;
        if (!pure(i) || i.use_empty())
          continue;
        bool all_colder = true;
        for (const llvm::Use& u : i.uses())
          all_colder = all_colder && depth(use_block(u)) > here;
        if (!all_colder)
          continue;
        // Copies go first in their blocks: an operand sunk later lands above its user's copy.
        std::unordered_map<llvm::BasicBlock*, llvm::Instruction*> copies;
        for (llvm::Use& u : llvm::make_early_inc_range(i.uses())) {
          llvm::BasicBlock* b = use_block(u);
          llvm::Instruction*& c = copies[b];
          if (!c) {
            c = i.clone();
            c->setName(i.getName());
            c->insertBefore(*b, b->getFirstInsertionPt());
          }
          u.set(c);
        }
        i.eraseFromParent();
        changed = true;
      }
    }
  }
}

} // namespace tritium::gpu
