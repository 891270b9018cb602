// Takes a tile's register constants out of its products with a uniform scalar:
// (x + c) * s becomes x * s + c * s, where s is the same for every thread of the kernel.
//
// A thread's registers of `offs[:, None] * stride` are (t | 4i | base) * stride for i = 0..15:
// the thread's part, the register's constant (the layout's register bits) and the program's
// base, joined by disjoint ors. LLVM keeps sixteen multiplies (v_mul_lo_u32, a quarter-rate
// instruction on CDNA) and sixteen live products; its straight-line strength reduction only
// sees `add` with a constant on top. Here each such product becomes one shared
// (t | base) * stride plus a constant times stride, which the scalar unit computes once:
// transpose_2d's unaligned tile on gfx942 took 32 v_mul_lo_u32 where Triton's takes 10.
// Runs after LLVM's optimizations (InstCombine would factor the products back together).
#include "distribute_uniform_products.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/ValueHandle.h>
#include <llvm/Transforms/Utils/Local.h>

#include <algorithm>
#include <map>
#include <vector>

namespace tritium::gpu {
namespace {

// The same value in every thread: arguments, constants, program ids and what only they make.
bool uniform(const llvm::Value* v, int depth = 8) {
  if (llvm::isa<llvm::Argument>(v) || llvm::isa<llvm::Constant>(v))
    return true;
  if (depth == 0)
    return false;
  if (auto* c = llvm::dyn_cast<llvm::IntrinsicInst>(v)) {
    const auto id = c->getIntrinsicID();
    return id == llvm::Intrinsic::amdgcn_workgroup_id_x ||
           id == llvm::Intrinsic::amdgcn_workgroup_id_y ||
           id == llvm::Intrinsic::amdgcn_workgroup_id_z;
  }
  auto* i = llvm::dyn_cast<llvm::Instruction>(v);
  if (!i || !(llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::CastInst>(i)))
    return false;
  for (const llvm::Value* op : i->operands())
    if (!uniform(op, depth - 1))
      return false;
  return true;
}

bool additive(const llvm::Value* v) {
  auto* b = llvm::dyn_cast<llvm::BinaryOperator>(v);
  return b && (b->getOpcode() == llvm::Instruction::Add ||
               (b->getOpcode() == llvm::Instruction::Or &&
                llvm::cast<llvm::PossiblyDisjointInst>(b)->isDisjoint()));
}

// v as a sum: its non-constant leaves through adds and disjoint ors (in the order met) and the
// sum of its constant ones. Leaves follow replacements: one may be a product rewritten first.
struct Sum {
  std::vector<llvm::WeakTrackingVH> leaves;
  uint64_t constant = 0;
};

void flatten(llvm::Value* v, Sum& sum, int depth) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) {
    sum.constant += c->getZExtValue();
    return;
  }
  if (depth == 0 || !additive(v)) {
    sum.leaves.push_back(v);
    return;
  }
  auto* b = llvm::cast<llvm::BinaryOperator>(v);
  flatten(b->getOperand(0), sum, depth - 1);
  flatten(b->getOperand(1), sum, depth - 1);
}

struct Product {
  llvm::BinaryOperator* mul;
  llvm::Value* scale;
  Sum sum;
};

} // namespace

void distribute_uniform_products(llvm::Function& f) {
  for (llvm::BasicBlock& bb : f) {
    // Products of a uniform scale and a sum with a constant part, grouped by the scale and the
    // sum's other leaves (as a set: adds and disjoint ors commute).
    std::map<std::pair<llvm::Value*, std::vector<llvm::Value*>>, std::vector<Product>> groups;
    std::vector<std::pair<llvm::Value*, std::vector<llvm::Value*>>> order;
    for (llvm::Instruction& i : bb) {
      auto* m = llvm::dyn_cast<llvm::BinaryOperator>(&i);
      if (!m || m->getOpcode() != llvm::Instruction::Mul || !m->getType()->isIntegerTy(32))
        continue;
      for (unsigned k = 0; k < 2; ++k) {
        llvm::Value* s = m->getOperand(1 - k);
        llvm::Value* x = m->getOperand(k);
        if (llvm::isa<llvm::Constant>(s) || !uniform(s) || uniform(x) || !additive(x))
          continue;
        Product p{m, s, {}};
        flatten(x, p.sum, 6);
        if (p.sum.constant == 0 || p.sum.leaves.empty())
          continue;
        std::vector<llvm::Value*> leaves(p.sum.leaves.begin(), p.sum.leaves.end());
        std::sort(leaves.begin(), leaves.end());
        auto key = std::make_pair(s, std::move(leaves));
        auto& g = groups[key];
        if (g.empty())
          order.push_back(key);
        g.push_back(std::move(p));
        break;
      }
    }
    for (const auto& key : order) {
      std::vector<Product>& g = groups[key];
      if (g.size() < 2) // one product: x * s + c * s is an add more than (x + c) * s
        continue;
      llvm::IRBuilder<> b(g.front().mul);
      llvm::Value* rest = nullptr;
      for (llvm::Value* leaf : g.front().sum.leaves)
        rest = rest ? b.CreateAdd(rest, leaf) : leaf;
      llvm::Value* shared = b.CreateMul(rest, key.first);
      for (Product& p : g) {
        b.SetInsertPoint(p.mul);
        llvm::Value* c = b.CreateMul(b.getInt32(static_cast<uint32_t>(p.sum.constant)), p.scale);
        llvm::Value* r = b.CreateAdd(shared, c);
        r->takeName(p.mul);
        llvm::Value* old = p.mul->getOperand(p.mul->getOperand(0) == p.scale ? 1 : 0);
        p.mul->replaceAllUsesWith(r);
        p.mul->eraseFromParent();
        llvm::RecursivelyDeleteTriviallyDeadInstructions(old);
      }
    }
  }
}

} // namespace tritium::gpu
