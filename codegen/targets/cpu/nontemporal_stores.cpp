// After O3: the vector stores lower_streaming_store.cpp marked become non-temporal where their
// address is provably aligned to their size (the vectorized body of its aligned loop; not the
// scalar remainder, nor a vector store LLVM cannot prove aligned, which would be split).
#include "optimize.hpp"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Metadata.h>
#include <llvm/Transforms/Utils/Local.h>

namespace tritium::cpu {
namespace {

bool marked(const llvm::StoreInst& store) {
  const llvm::MDNode* scopes = store.getMetadata(llvm::LLVMContext::MD_alias_scope);
  if (!scopes)
    return false;
  for (const llvm::MDOperand& op : scopes->operands()) {
    const auto* scope = llvm::dyn_cast<llvm::MDNode>(op);
    if (!scope || scope->getNumOperands() < 2)
      continue;
    // A named domain is {name}; an anonymous one {self, description}.
    const auto* domain = llvm::dyn_cast<llvm::MDNode>(scope->getOperand(1));
    if (!domain)
      continue;
    for (const llvm::MDOperand& d : domain->operands())
      if (const auto* name = llvm::dyn_cast<llvm::MDString>(d);
          name && name->getString() == kStreamingDomain)
        return true;
  }
  return false;
}

} // namespace

void make_streaming_stores_nontemporal(llvm::Module& m) {
  const llvm::DataLayout& dl = m.getDataLayout();
  llvm::LLVMContext& ctx = m.getContext();
  llvm::MDNode* nontemporal = llvm::MDNode::get(
      ctx, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))});
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb) {
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        if (!store || !store->getValueOperand()->getType()->isVectorTy() || !marked(*store))
          continue;
        const uint64_t bytes = dl.getTypeStoreSize(store->getValueOperand()->getType());
        if (bytes < 16 || bytes > 64 || (bytes & (bytes - 1)))
          continue;
        llvm::Align known = llvm::getKnownAlignment(store->getPointerOperand(), dl, store);
        if (known.value() < bytes)
          continue;
        store->setAlignment(llvm::Align(bytes));
        store->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
      }
}

} // namespace tritium::cpu
