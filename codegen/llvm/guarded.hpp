// A branch around code that runs only where a condition holds: masked loads and stores on the
// CPU and the GPU (a masked-off lane must not touch memory at all, so no select and no masked
// vector access).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string>

namespace tritium::llvm_ir {

// Emits `body` in a block entered where `cond` holds (null: always, no branch). A body returning
// a value (a load) gives that value where it ran and `otherwise` where it did not; one returning
// nullptr (a store) gives nullptr. The blocks are `name` and `done_name` (`name.done` by
// default).
template <class Body>
llvm::Value* guarded(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, Body&& body,
                     llvm::Value* otherwise = nullptr, const char* done_name = nullptr) {
  if (!cond)
    return body();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* from = b.GetInsertBlock();
  auto* yes = llvm::BasicBlock::Create(b.getContext(), name, fn);
  auto* done = llvm::BasicBlock::Create(
      b.getContext(), done_name ? std::string(done_name) : std::string(name) + ".done", fn);
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

} // namespace tritium::llvm_ir
