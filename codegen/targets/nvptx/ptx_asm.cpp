// Inline-asm PTX for what LLVM 19's NVPTX backend lacks or expands at length (ptx_asm.hpp).
#include "targets/nvptx/ptx_asm.hpp"
#include "targets/nvptx/nvptx_ops.hpp"

#include <fmt/format.h>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicInst.h>

#include <vector>

namespace tritium::gpu {

const char* ptx_scope(ir::MemScope scope) {
  return scope == ir::MemScope::Cta ? "cta" : scope == ir::MemScope::Sys ? "sys" : "gpu";
}

const char* ptx_type(ir::DType t) {
  switch (t.kind) {
  case ir::ScalarKind::F16:
    return "f16";
  case ir::ScalarKind::BF16:
    return "bf16";
  case ir::ScalarKind::F8E4NV:
    return "e4m3";
  case ir::ScalarKind::F8E5:
    return "e5m2";
  default:
    return nullptr;
  }
}

std::string ptx_reg_list(int first, int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += fmt::format("{}${}", i ? ", " : "", first + i);
  return n == 1 ? s : "{" + s + "}";
}

// libdevice's roundf (half away from zero) on f32: x + copysign(0.5, x) added toward zero, then
// truncated. LLVM 19 builds the copysign from a shift, an and, a compare and a select (seven
// instructions in all, against Triton's three); the sign is one and-or here.
llvm::Value* round_half_away(llvm::IRBuilder<>& b, llvm::Value* x) {
  auto* f32 = b.getFloatTy();
  auto* i32 = b.getInt32Ty();
  // $1: x; $2: its bits.
  auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32, i32}, false),
                                  "{\n\t.reg .b32 rnd_s;\n\t.reg .f32 rnd_h;\n\t"
                                  "and.b32 rnd_s, $2, 0x80000000;\n\t"
                                  "or.b32 rnd_s, rnd_s, 0x3F000000;\n\t"
                                  "mov.b32 rnd_h, rnd_s;\n\t"
                                  "add.rz.f32 $0, $1, rnd_h;\n\t"
                                  "cvt.rzi.f32.f32 $0, $0;\n\t}",
                                  "=f,f,r", false);
  return b.CreateCall(fn, {x, b.CreateBitCast(x, i32)});
}

// A float-to-integer cast (llvm.fpto[su]i.sat, the lowering's rule: toward zero, saturating,
// NaN to 0) as the one cvt.rzi that already does exactly that, where LLVM 19 clamps with a
// max, a min, a NaN test and a select around it (five instructions a cast: a quantization
// kernel's largest cost). After the optimizer, which still folds the intrinsics it knows.
void native_float_to_int(llvm::Function& f) {
  std::vector<llvm::IntrinsicInst*> casts;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (auto* c = llvm::dyn_cast<llvm::IntrinsicInst>(&i);
          c && (c->getIntrinsicID() == llvm::Intrinsic::fptosi_sat ||
                c->getIntrinsicID() == llvm::Intrinsic::fptoui_sat))
        casts.push_back(c);
  for (llvm::IntrinsicInst* c : casts) {
    llvm::Type* from = c->getArgOperand(0)->getType();
    auto* to = llvm::dyn_cast<llvm::IntegerType>(c->getType());
    if (!to || !(from->isFloatTy() || from->isDoubleTy()))
      continue;
    const unsigned bits = to->getBitWidth();
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
      continue;
    llvm::IRBuilder<> b(c);
    const bool u = c->getIntrinsicID() == llvm::Intrinsic::fptoui_sat;
    // 8-bit integers live in 16-bit registers.
    llvm::Type* reg = bits == 8 ? b.getInt16Ty() : static_cast<llvm::Type*>(to);
    std::string text = fmt::format("cvt.rzi.{}{}.{} $0, $1;", u ? 'u' : 's', bits,
                                   from->isFloatTy() ? "f32" : "f64");
    std::string cons = fmt::format("={},{}",
                                   bits <= 16   ? 'h'
                                   : bits == 32 ? 'r'
                                                : 'l',
                                   from->isFloatTy() ? 'f' : 'd');
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(reg, {from}, false), text, cons, false);
    llvm::Value* v = b.CreateCall(fn, {c->getArgOperand(0)});
    if (reg != to)
      v = b.CreateTrunc(v, to);
    c->replaceAllUsesWith(v);
    c->eraseFromParent();
  }
}

// red.<scope>.global.add: one f32, i32 or i64; on sm_90 (PTX 8.1) also 2 or 4 f32 and 2 to 8
// f16 or bf16 at once. Relaxed: the lowering fences around it where the program asks.
bool red_add(llvm::IRBuilder<>& b, bool vectors, llvm::Value* value, llvm::Value* ptr,
             llvm::Value* mask, ir::MemScope scope) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(value->getType());
  const int n = vt ? static_cast<int>(vt->getNumElements()) : 1;
  llvm::Type* e = vt ? vt->getElementType() : value->getType();
  std::string type, reg;
  if (e->isFloatTy() && (n == 1 || (vectors && (n == 2 || n == 4))))
    type = "f32", reg = "f";
  else if ((e->isHalfTy() || e->isBFloatTy()) && vectors && n >= 2 && n <= 8)
    type = e->isHalfTy() ? "f16" : "bf16", reg = "h";
  else if (e->isIntegerTy(32) && n == 1)
    type = "u32", reg = "r";
  else if (e->isIntegerTy(64) && n == 1)
    type = "u64", reg = "l";
  else
    return false;
  // $0: the address; $1: the predicate, if any; then the elements.
  std::vector<llvm::Value*> args = {ptr};
  std::vector<llvm::Type*> arg_types = {ptr->getType()};
  std::string cons = "l";
  if (mask) {
    args.push_back(mask);
    arg_types.push_back(b.getInt1Ty());
    cons += ",b";
  }
  const int first = static_cast<int>(args.size());
  for (int i = 0; i < n; ++i) {
    llvm::Value* x = vt ? b.CreateExtractElement(value, i) : value;
    if (reg == "h")
      x = b.CreateBitCast(x, b.getInt16Ty());
    args.push_back(x);
    arg_types.push_back(x->getType());
    cons += "," + reg;
  }
  std::string text = fmt::format("{}red.relaxed.{}.global.add{}{}.{} [$0], {};", mask ? "@$1 " : "",
                                 ptx_scope(scope), reg == "h" ? ".noftz" : "",
                                 n > 1 ? fmt::format(".v{}", n) : "", type, ptx_reg_list(first, n));
  auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), arg_types, false), text,
                                  cons + ",~{memory}", /*hasSideEffects=*/true);
  b.CreateCall(fn, args);
  return true;
}

void ptx_statement(llvm::IRBuilder<>& b, const std::string& text) {
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), false);
  b.CreateCall(llvm::InlineAsm::get(fty, text, "~{memory}", true), {});
}

llvm::Value* shared_u32(llvm::IRBuilder<>& b, llvm::Value* p) {
  return b.CreateTrunc(b.CreatePtrToInt(p, b.getInt64Ty()), b.getInt32Ty());
}

} // namespace tritium::gpu
