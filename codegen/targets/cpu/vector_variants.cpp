#include "vector_variants.hpp"

#include <fmt/format.h>

#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/VFABIDemangler.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

namespace tritium::cpu {

void add_vector_versions(llvm::CallInst* call, const std::vector<VectorVersion>& versions) {
  llvm::Function* scalar_fn = call->getCalledFunction();
  llvm::Module& m = *scalar_fn->getParent();
  std::vector<std::string> names;
  for (const VectorVersion& v : versions) {
    auto* ret = llvm::FixedVectorType::get(call->getType(), v.lanes);
    std::vector<llvm::Type*> params;
    for (const llvm::Use& a : call->args())
      params.push_back(llvm::FixedVectorType::get(a->getType(), v.lanes));
    auto callee = m.getOrInsertFunction(v.name, llvm::FunctionType::get(ret, params, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee()); fn && fn->use_empty()) {
      fn->copyAttributesFrom(scalar_fn);
      llvm::appendToCompilerUsed(m, {fn});
    }
    names.push_back(fmt::format("_ZGV_LLVM_N{}{}_{}({})", v.lanes, std::string(params.size(), 'v'),
                                scalar_fn->getName().str(), v.name));
  }
  if (!names.empty())
    llvm::VFABI::setVectorVariantNames(call, names);
}

} // namespace tritium::cpu
