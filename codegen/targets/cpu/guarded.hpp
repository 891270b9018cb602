// A branch around code that runs only where a mask holds: the CPU's masked loads and stores (a
// masked-off lane must not touch memory at all, so no select and no masked vector access).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string>

namespace tritium::cpu {

// Emits `body` in a block entered where `cond` holds. A body returning a value (a load) gives
// that value where it ran and `otherwise` where it did not; one returning nullptr (a store)
// gives nullptr. The blocks are `name` and `name.done`.
template <class Body>
llvm::Value* guarded(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, Body&& body,
                     llvm::Value* otherwise = nullptr) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* from = b.GetInsertBlock();
  auto* yes = llvm::BasicBlock::Create(b.getContext(), name, fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".done", fn);
  b.CreateCondBr(cond, yes, done);
  b.SetInsertPoint(yes);
  llvm::Value* v = body();
  llvm::BasicBlock* yes_end = b.GetInsertBlock();
  b.CreateBr(done);
  b.SetInsertPoint(done);
  if (!v)
    return nullptr;
  auto* phi = b.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, yes_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

} // namespace tritium::cpu
