// Fuses a float multiply into the accumulation that is its only user (an add or subtract
// whose other operand is a loop-carried value), as llvm.fmuladd, ahead of LLVM's vectorizers,
// where both allow contraction (CompileOptions::enable_fp_fusion).
//
// The backend contracts fmul + fadd into an fma late, in instruction selection; by then the
// SLP vectorizer may have packed the add with an unrelated one. GroupNorm's loop accumulates
// `sum += x` and `sum_sq += x * x` for four elements a thread: SLP paired each sum with its
// sum of squares, {sum, sum_sq} += {x, x * x}, and on gfx942 the loop took four v_mul_f32 and
// four v_pk_add_f32 (26 VGPRs) where Triton's has two v_pk_add_f32 and two v_pk_fma_f32 (18).
// As an intrinsic call the multiply-add is no longer an fadd, so SLP only packs it with its
// like: sums with sums, multiply-adds with multiply-adds. Only accumulations: in straight-line
// code the change only moved SLP's choices around (RoPE, whose rotations are multiply-adds of
// loaded values: 60 -> 76 VGPRs on gfx942 for the 40-head shape, 47 -> 42 for the 32-head
// half-split one).
#include "gpu/target_info.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include <vector>

namespace tritium::gpu {

void contract_mul_add(llvm::Function& f) {
  std::vector<llvm::Instruction*> dead;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb) {
      if (!i.hasAllowContract() || !i.getType()->isFPOrFPVectorTy())
        continue;
      // A single-use contractable fmul operand of `i` (an fadd or an fsub), else null.
      auto mul_of = [&](llvm::Value* v) -> llvm::BinaryOperator* {
        auto* m = llvm::dyn_cast<llvm::BinaryOperator>(v);
        if (!m || m->getOpcode() != llvm::Instruction::FMul || !m->hasOneUse() ||
            !m->hasAllowContract() || m->getParent() != &bb)
          return nullptr;
        return m;
      };
      const unsigned op = i.getOpcode();
      if (op != llvm::Instruction::FAdd && op != llvm::Instruction::FSub)
        continue;
      llvm::Value* lhs = i.getOperand(0);
      llvm::Value* rhs = i.getOperand(1);
      llvm::IRBuilder<> b(&i);
      b.setFastMathFlags(i.getFastMathFlags());
      llvm::BinaryOperator* m = llvm::isa<llvm::PHINode>(rhs) ? mul_of(lhs) : nullptr;
      llvm::Value* a = nullptr;
      llvm::Value* c = nullptr;
      if (m) { // a*b + c, a*b - c
        a = m->getOperand(0);
        c = op == llvm::Instruction::FAdd ? rhs : b.CreateFNeg(rhs);
      } else if (llvm::isa<llvm::PHINode>(lhs) && (m = mul_of(rhs))) { // c + a*b, c - a*b
        a = op == llvm::Instruction::FAdd ? m->getOperand(0) : b.CreateFNeg(m->getOperand(0));
        c = lhs;
      } else {
        continue;
      }
      llvm::Value* fused =
          b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {i.getType()}, {a, m->getOperand(1), c});
      fused->takeName(&i);
      i.replaceAllUsesWith(fused);
      dead.push_back(&i);
      dead.push_back(m);
    }
  for (llvm::Instruction* i : dead)
    i->eraseFromParent();
}

} // namespace tritium::gpu
