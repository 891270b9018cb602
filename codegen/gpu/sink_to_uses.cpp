// Orders each basic block so that a pure value is computed right before its first use.
//
// The lowering emits a block op by op: all 32 conversions of a tile, then all 32 exponentials,
// then all 32 divisions. Every intermediate of the tile is then live at once, and the NVPTX
// back end keeps that order (source-order scheduling) while ptxas does not undo it: the zoo's
// SwiGLU forward took 123 registers a thread where Triton's, the same kernel, takes 35, and at
// 512 threads a block that is one block an SM instead of three on a memory-bound kernel.
//
// The order built here keeps every instruction that touches memory, has side effects or is
// used outside its block (the anchors) where it was, relative to the others; each pure
// instruction moves down to just before its first user in the block, its own pure operands
// just before it. Loads stay early and stores stay in order, so latency hiding that the
// pipeline planned is untouched; only register lifetimes shrink.
//
// Sinking alone leaves a value shared by two anchors live from the first to the second's pure
// users; after each anchor, the pure values that would free more registers than they take are
// computed at once (complete_ready_values).
#include "gpu/target_info.hpp"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium::gpu {
namespace {

// An inline-asm call is pure when it declares no side effects and no memory operand or
// clobber (cvt, div.full, prmt as the targets write them).
bool pure_asm(const llvm::CallBase& call) {
  const auto* ia = llvm::dyn_cast<llvm::InlineAsm>(call.getCalledOperand());
  if (!ia || ia->hasSideEffects())
    return false;
  const std::string& cons = ia->getConstraintString();
  return cons.find("memory") == std::string::npos && cons.find("*m") == std::string::npos;
}

bool movable(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::PHINode>(inst) || inst.isTerminator() || llvm::isa<llvm::AllocaInst>(inst) ||
      inst.isEHPad())
    return false;
  if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
    if (pure_asm(*call))
      return true;
    if (call->isConvergent())
      return false;
  }
  if (inst.mayHaveSideEffects() || inst.mayReadFromMemory())
    return false;
  // Used only by non-PHI instructions of its own block: a value leaving the block, or reaching
  // a PHI (a loop's next iteration), is an anchor.
  if (inst.use_empty())
    return false;
  for (const llvm::User* u : inst.users()) {
    const auto* ui = llvm::dyn_cast<llvm::Instruction>(u);
    if (!ui || ui->getParent() != inst.getParent() || llvm::isa<llvm::PHINode>(ui))
      return false;
  }
  return true;
}

// Registers a value takes: 32-bit words, at least one (a predicate too).
unsigned words(const llvm::Value* v, const llvm::DataLayout& dl) {
  const llvm::Type* t = v->getType();
  if (!t->isSized())
    return 1;
  const uint64_t bits = dl.getTypeSizeInBits(const_cast<llvm::Type*>(t)).getKnownMinValue();
  return std::max<unsigned>(1, static_cast<unsigned>((bits + 31) / 32));
}

class BlockOrder {
public:
  BlockOrder(llvm::BasicBlock& bb, bool complete_values)
      : bb_(bb), dl_(bb.getModule()->getDataLayout()), complete_values_(complete_values) {
    for (llvm::Instruction& inst : bb)
      original_.push_back(&inst);
    for (llvm::Instruction* inst : original_) {
      if (movable(*inst))
        sinkable_.insert(inst);
      for (const llvm::Use& use : inst->uses()) {
        const auto* u = llvm::dyn_cast<llvm::Instruction>(use.getUser());
        if (!u || u->getParent() != &bb || llvm::isa<llvm::PHINode>(u))
          escapes_.insert(inst);
        else
          ++pending_[inst];
      }
    }
  }

  void run() {
    if (sinkable_.empty())
      return;
    order_.reserve(original_.size());
    for (llvm::Instruction* inst : original_)
      if (!sinkable_.count(inst)) {
        fresh_.clear();
        place(inst);
        if (complete_values_ && !llvm::isa<llvm::PHINode>(inst)) // PHIs stay at the top
          complete_ready_values();
      }
    if (order_.size() != original_.size())
      return; // a pure value with no anchored user (cannot happen: users are in-block)
    for (llvm::Instruction* inst : order_)
      inst->moveBefore(bb_, bb_.end());
  }

private:
  bool in_block(const llvm::Value* v) const {
    const auto* i = llvm::dyn_cast<llvm::Instruction>(v);
    return i && i->getParent() == &bb_;
  }

  void emit(llvm::Instruction* inst) {
    order_.push_back(inst);
    done_.insert(inst);
    fresh_.push_back(inst);
    if (llvm::isa<llvm::PHINode>(inst)) // its uses were not counted (escapes_)
      return;
    for (llvm::Value* op : inst->operands())
      if (in_block(op))
        --pending_[llvm::cast<llvm::Instruction>(op)];
  }

  // `root` after its pure operands not yet placed, depth first, iteratively: long chains (a
  // 32k-element sort network) would overflow the stack by recursion.
  void place(llvm::Instruction* root) {
    std::vector<std::pair<llvm::Instruction*, unsigned>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      if (next < inst->getNumOperands()) {
        auto* op = llvm::dyn_cast<llvm::Instruction>(inst->getOperand(next++));
        if (op && sinkable_.count(op) && visited_.insert(op).second)
          stack.push_back({op, 0});
        continue;
      }
      emit(inst);
      stack.pop_back();
    }
  }

  // Sinking alone computes a value shared by two stores (SwiGLU backward's sigmoid, for `db`
  // and `da`) before the first, and keeps it live until the second's pure users run: 32 f32
  // values a thread for each such tile. After each anchor, a pure value that is the last
  // pending user of something already computed is computed at once, with the pure operands it
  // still lacks, when that frees more registers than it takes (Triton's PTX for the same kernel
  // finishes both outputs of an element before the next). Values are only moved earlier, after
  // all their operands; anchors keep their order.
  void complete_ready_values() {
    for (size_t k = 0; k < fresh_.size(); ++k) {
      llvm::Instruction* x = fresh_[k];
      for (llvm::User* u : x->users())
        try_complete(u);
      for (llvm::Value* op : x->operands())
        if (in_block(op)) {
          auto* o = llvm::cast<llvm::Instruction>(op);
          const unsigned left = pending_[o];
          if (left > 0 && left <= 2 && !escapes_.count(o))
            for (llvm::User* u : o->users())
              try_complete(u);
        }
    }
  }

  void try_complete(llvm::User* user) {
    auto* c = llvm::dyn_cast<llvm::Instruction>(user);
    if (!c || c->getParent() != &bb_ || !sinkable_.count(c) || visited_.count(c))
      return;
    if (!last_user_of_something(c))
      return;
    // The pure values c needs that are not computed yet; none may wait for an anchor.
    constexpr size_t kMaxClosure = 32;
    std::vector<llvm::Instruction*> closure{c};
    std::unordered_set<llvm::Instruction*> in{c};
    for (size_t i = 0; i < closure.size(); ++i)
      for (llvm::Value* op : closure[i]->operands()) {
        if (!in_block(op))
          continue;
        auto* o = llvm::cast<llvm::Instruction>(op);
        if (done_.count(o) || in.count(o))
          continue;
        if (!sinkable_.count(o) || visited_.count(o) || closure.size() == kMaxClosure)
          return;
        closure.push_back(o);
        in.insert(o);
      }
    std::unordered_map<llvm::Instruction*, unsigned> uses_inside;
    for (llvm::Instruction* m : closure)
      for (llvm::Value* op : m->operands())
        if (in_block(op))
          ++uses_inside[llvm::cast<llvm::Instruction>(op)];
    unsigned taken = 0, freed = 0;
    for (llvm::Instruction* m : closure)
      if (pending_[m] > uses_inside[m])
        taken += words(m, dl_);
    for (auto [o, n] : uses_inside)
      if (!in.count(o) && !escapes_.count(o) && pending_[o] == n)
        freed += words(o, dl_);
    if (freed <= taken)
      return;
    visited_.insert(c);
    place(c);
  }

  // Whether c is the last user yet to run of one of the values already computed.
  bool last_user_of_something(llvm::Instruction* c) {
    for (llvm::Value* op : c->operands()) {
      if (!in_block(op))
        continue;
      auto* o = llvm::cast<llvm::Instruction>(op);
      if (!done_.count(o) || escapes_.count(o))
        continue;
      unsigned by_c = 0;
      for (llvm::Value* again : c->operands())
        by_c += again == op;
      if (pending_[o] == by_c)
        return true;
    }
    return false;
  }

  llvm::BasicBlock& bb_;
  const llvm::DataLayout& dl_;
  const bool complete_values_;
  std::vector<llvm::Instruction*> original_, order_, fresh_;
  std::unordered_set<llvm::Instruction*> sinkable_, visited_, done_, escapes_;
  std::unordered_map<llvm::Instruction*, unsigned> pending_; // uses in the block not yet placed
};

} // namespace

void sink_to_uses(llvm::Function& f, bool complete_values) {
  for (llvm::BasicBlock& bb : f)
    BlockOrder(bb, complete_values).run();
}

} // namespace tritium::gpu
