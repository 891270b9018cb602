// Moves a narrowing conversion that feeds only a phi to after the phi's block: phi(0, trunc x)
// becomes trunc(phi(0, x)), undoing InstCombine's fold of the cast into the join.
//
// A K loop's zero-trip guard joins the accumulator's initial constant with the loop's result;
// InstCombine then converts the result in the loop's exit block, every element at once, and
// joins the converted values. On AMD a 16-bit value holds a full VGPR, so the narrow phis save
// nothing, and the conversions, taken away from the stores that use them, read all of the
// accumulator out of its AGPRs in one place: gfx942's fp8 GEMM 128x128x64 on 4 warps took
// 180 + 64 AGPR registers (Triton's 156 + 64); with the conversions after the join, next to
// their stores, 144 + 64. Only scalars of at most 32 bits, where the wide phi costs no more
// registers than the narrow one; runs after LLVM's optimizations (InstCombine would fold back).
#include "gpu/target_info.hpp"

#include <llvm/Analysis/ConstantFolding.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>

#include <vector>

namespace tritium::gpu {
namespace {

bool narrowing(const llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::CastInst>(v);
  return c && c->hasOneUse() &&
         (c->getOpcode() == llvm::Instruction::FPTrunc ||
          c->getOpcode() == llvm::Instruction::Trunc);
}

// A constant of the wide type that the cast maps back onto c exactly, or null.
llvm::Constant* widened(llvm::Constant* c, llvm::CastInst& like, const llvm::DataLayout& dl) {
  llvm::Type* wide = like.getSrcTy();
  if (llvm::isa<llvm::PoisonValue>(c))
    return llvm::PoisonValue::get(wide);
  if (llvm::isa<llvm::UndefValue>(c))
    return llvm::UndefValue::get(wide);
  const auto back = like.getOpcode() == llvm::Instruction::FPTrunc ? llvm::Instruction::FPExt
                                                                   : llvm::Instruction::ZExt;
  llvm::Constant* w = llvm::ConstantFoldCastOperand(back, c, wide, dl);
  if (!w)
    return nullptr;
  llvm::Constant* again = llvm::ConstantFoldCastOperand(like.getOpcode(), w, c->getType(), dl);
  return again == c ? w : nullptr;
}

bool sink(llvm::PHINode& phi, const llvm::DataLayout& dl) {
  if (!phi.getType()->isIntegerTy() && !phi.getType()->isFloatingPointTy())
    return false;
  llvm::CastInst* like = nullptr;
  for (llvm::Value* in : phi.incoming_values()) {
    if (llvm::isa<llvm::Constant>(in))
      continue;
    if (!narrowing(in))
      return false;
    auto* c = llvm::cast<llvm::CastInst>(in);
    if (like && (c->getOpcode() != like->getOpcode() || c->getSrcTy() != like->getSrcTy()))
      return false;
    like = c;
  }
  if (!like || like->getSrcTy()->getPrimitiveSizeInBits() > 32)
    return false;
  std::vector<llvm::Value*> wide_in;
  for (llvm::Value* in : phi.incoming_values()) {
    if (auto* c = llvm::dyn_cast<llvm::Constant>(in)) {
      llvm::Constant* w = widened(c, *like, dl);
      if (!w)
        return false;
      wide_in.push_back(w);
    } else {
      wide_in.push_back(llvm::cast<llvm::CastInst>(in)->getOperand(0));
    }
  }
  auto* wide = llvm::PHINode::Create(like->getSrcTy(), phi.getNumIncomingValues(),
                                     phi.getName() + ".wide", phi.getIterator());
  for (unsigned i = 0; i < phi.getNumIncomingValues(); ++i)
    wide->addIncoming(wide_in[i], phi.getIncomingBlock(i));
  llvm::IRBuilder<> b(phi.getParent(), phi.getParent()->getFirstInsertionPt());
  auto* narrow = llvm::cast<llvm::Instruction>(
      b.CreateCast(llvm::Instruction::CastOps(like->getOpcode()), wide, phi.getType()));
  narrow->copyIRFlags(like);
  std::vector<llvm::Instruction*> casts;
  for (llvm::Value* in : phi.incoming_values())
    if (auto* c = llvm::dyn_cast<llvm::CastInst>(in))
      casts.push_back(c);
  phi.replaceAllUsesWith(narrow);
  phi.eraseFromParent();
  for (llvm::Instruction* c : casts)
    c->eraseFromParent();
  return true;
}

} // namespace

void sink_casts_past_joins(llvm::Function& f) {
  std::vector<llvm::PHINode*> phis;
  for (llvm::BasicBlock& bb : f)
    for (llvm::PHINode& phi : bb.phis())
      phis.push_back(&phi);
  const llvm::DataLayout& dl = f.getDataLayout();
  for (llvm::PHINode* phi : phis)
    sink(*phi, dl);
}

} // namespace tritium::gpu
