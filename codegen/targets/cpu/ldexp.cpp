#include "ldexp.hpp"

#include "target.hpp"
#include "vector_variants.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <string>

namespace tritium::cpu {
namespace {

constexpr const char* kScalar = "tritium.ldexp.f32";

std::string vector_name(int lanes) {
  return fmt::format("tritium.ldexp.v{}f32", lanes);
}

// vscalefps / vscalefss: p * 2^floor(k) with one rounding, subnormal results included. The
// scalar form serves the loops the vectorizer leaves scalar (a remainder, a short row).
llvm::Value* scalef(llvm::IRBuilderBase& b, llvm::Value* p, llvm::Value* k) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(p->getType());
  const int lanes = vt ? static_cast<int>(vt->getNumElements()) : 1;
  llvm::Value* all = b.getInt8(0xff);
  llvm::Value* current_rounding = b.getInt32(4); // _MM_FROUND_CUR_DIRECTION
  switch (lanes) {
  case 16:
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {p, k, p, b.getInt16(0xffff), current_rounding});
  case 8:
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_256, {}, {p, k, p, all});
  case 4:
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_128, {}, {p, k, p, all});
  case 1: {
    auto* v4 = llvm::FixedVectorType::get(b.getFloatTy(), 4);
    llvm::Value* pv = b.CreateInsertElement(llvm::PoisonValue::get(v4), p, uint64_t{0});
    llvm::Value* kv = b.CreateInsertElement(llvm::PoisonValue::get(v4), k, uint64_t{0});
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ss, {},
                                       {pv, kv, pv, all, current_rounding});
    return b.CreateExtractElement(r, uint64_t{0});
  }
  default:
    throw Error(
        fmt::format("cpu backend: internal error: {} lanes of {} (no such width)", lanes, kScalar));
  }
}

} // namespace

std::vector<int> ldexp_lanes(const llvm::TargetMachine& machine) {
  if (machine.getTargetTriple().getArch() != llvm::Triple::x86_64)
    return {};
  const llvm::MCSubtargetInfo& st = *machine.getMCSubtargetInfo();
  if (!st.checkFeatures("+avx512f"))
    return {};
  if (!st.checkFeatures("+avx512vl"))
    return {16};
  return {4, 8, 16};
}

llvm::Value* call_ldexp(llvm::IRBuilderBase& b, const CpuTarget& target, llvm::Value* p,
                        llvm::Value* k) {
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  llvm::Type* f = b.getFloatTy();
  llvm::Function* fn = m.getFunction(kScalar);
  if (!fn) {
    fn = llvm::Function::Create(llvm::FunctionType::get(f, {f, f}, false),
                                llvm::Function::ExternalLinkage, kScalar, m);
    // Pure and speculatable, so that calls vectorize, hoist and if-convert like arithmetic.
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
    fn->addFnAttr(llvm::Attribute::Speculatable);
    fn->addFnAttr(llvm::Attribute::NoFree);
    fn->addFnAttr(llvm::Attribute::NoSync);
  }
  llvm::CallInst* call = b.CreateCall(fn, {p, k});
  std::vector<VectorVersion> versions;
  for (int lanes : target.ldexp_lanes)
    versions.push_back({lanes, vector_name(lanes)});
  add_vector_versions(call, versions);
  return call;
}

void lower_ldexp_calls(llvm::Module& m) {
  std::vector<llvm::Function*> ours;
  for (llvm::Function& fn : m.functions())
    if (fn.getName().starts_with("tritium.ldexp."))
      ours.push_back(&fn);
  if (ours.empty())
    return;
  for (llvm::Function* fn : ours) {
    for (llvm::User* u : llvm::make_early_inc_range(fn->users())) {
      auto* call = llvm::dyn_cast<llvm::CallInst>(u);
      if (!call)
        continue; // llvm.compiler.used, dropped below
      llvm::IRBuilder<> b(call);
      call->replaceAllUsesWith(scalef(b, call->getArgOperand(0), call->getArgOperand(1)));
      call->eraseFromParent();
    }
  }
  llvm::removeFromUsedLists(m, [&](llvm::Constant* c) {
    return std::find(ours.begin(), ours.end(), c->stripPointerCasts()) != ours.end();
  });
  for (llvm::Function* fn : ours) {
    fn->removeDeadConstantUsers(); // the used list's old array
    if (!fn->use_empty())
      throw Error(
          fmt::format("cpu backend: internal error: {} is still used", fn->getName().str()));
    fn->eraseFromParent();
  }
}

} // namespace tritium::cpu
