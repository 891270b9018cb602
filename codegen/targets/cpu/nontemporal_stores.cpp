// After O3: the vector stores lower_streaming_store.cpp marked become non-temporal where their
// address is provably aligned to their size (the vectorized body of its aligned loop; not the
// scalar remainder, nor a vector store LLVM cannot prove aligned, which would be split).
#include "optimize.hpp"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Metadata.h>
#include <llvm/TargetParser/Triple.h>
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

bool has_feature(const llvm::Function& f, llvm::StringRef feature) {
  llvm::SmallVector<llvm::StringRef> features;
  f.getFnAttribute("target-features").getValueAsString().split(features, ',');
  return llvm::is_contained(features, ("+" + feature).str());
}

// Stores whose non-temporal hint LLVM 19's x86 instruction selector drops, selecting a plain
// vmovaps or vpmov*: those of half vectors where AVX512-FP16 makes them a legal type (Sapphire
// Rapids and later), of bfloat vectors, and of a truncated value (a truncating store, which has
// no non-temporal form). A bitcast to integer lanes is folded back into the store before
// selection, so on x86 these stores are written as the instruction itself.
bool hint_dropped_on_x86(const llvm::StoreInst& store) {
  const llvm::Value* value = store.getValueOperand();
  const llvm::Type* elem = value->getType()->getScalarType();
  return elem->isHalfTy() || elem->isBFloatTy() || llvm::isa<llvm::TruncInst>(value);
}

// Returns whether `store` was replaced (and erased).
bool store_nontemporal_as_asm(llvm::StoreInst& store, uint64_t bytes) {
  llvm::Value* value = store.getValueOperand();
  const llvm::Function& f = *store.getFunction();
  if (!hint_dropped_on_x86(store) ||
      llvm::Triple(f.getParent()->getTargetTriple()).getArch() != llvm::Triple::x86_64 ||
      !has_feature(f, "avx") || (bytes == 64 && !has_feature(f, "avx512f")))
    return false;
  auto* lanes = llvm::FixedVectorType::get(llvm::Type::getInt64Ty(store.getContext()), bytes / 8);
  auto* asm_type = llvm::FunctionType::get(llvm::Type::getVoidTy(store.getContext()),
                                           {store.getPointerOperandType(), lanes}, false);
  // "=*m": the asm writes the memory its pointer operand points to (of type `lanes`); "v": any
  // vector register (xmm16-31 included where AVX-512 has them).
  auto* movnt = llvm::InlineAsm::get(asm_type, "vmovntdq $1, $0", "=*m,v", false);
  llvm::IRBuilder<> b(&store);
  llvm::CallInst* call =
      b.CreateCall(movnt, {store.getPointerOperand(), b.CreateBitCast(value, lanes)});
  call->addParamAttr(0,
                     llvm::Attribute::get(store.getContext(), llvm::Attribute::ElementType, lanes));
  store.eraseFromParent();
  return true;
}

} // namespace

void make_streaming_stores_nontemporal(llvm::Module& m) {
  const llvm::DataLayout& dl = m.getDataLayout();
  llvm::LLVMContext& ctx = m.getContext();
  llvm::MDNode* nontemporal = llvm::MDNode::get(
      ctx, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))});
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : llvm::make_early_inc_range(bb)) {
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
        if (!store_nontemporal_as_asm(*store, bytes))
          store->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
      }
}

} // namespace tritium::cpu
