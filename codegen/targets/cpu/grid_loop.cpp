// The kernel's entry point runs a range of programs, not one. Called once per program, every
// program paid for a call, the host's divisions that split a linear index into (x, y, z), the
// argument loads and everything else a kernel computes from its arguments alone (row lengths,
// chunk counts, mask bounds, w and b's addresses). With the program inlined into a loop over
// the range, LLVM hoists what does not depend on the program id out of that loop, and the ids
// advance by increments: an empty kernel went from 7.8 to 0.9 ns a program, a 32-column f16
// layer norm from 53 to 27 ns a row (2 threads; bench/RESULTS.md).
#include "grid_loop.hpp"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace tritium::cpu {

llvm::Function* emit_grid_loop(llvm::Function& program, const std::string& symbol) {
  llvm::Module& m = *program.getParent();
  llvm::LLVMContext& ctx = m.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, ptr}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, symbol, m);
  // The program's target attributes (the inliner refuses to inline it without them), and its
  // vector width: the optimizer vectorizes the program where it has been inlined, here.
  for (const char* a :
       {"target-cpu", "target-features", "prefer-vector-width", "min-legal-vector-width"})
    if (program.hasFnAttribute(a))
      fn->addFnAttr(program.getFnAttribute(a));
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  // A load through a null pointer is not undefined behaviour here: LLVM would delete the
  // whole kernel, stores included, and the launch would return as if it had run.
  fn->addFnAttr(llvm::Attribute::NullPointerIsValid);
  program.addFnAttr(llvm::Attribute::NullPointerIsValid);
  for (unsigned i = 0; i < 3; ++i)
    fn->addParamAttr(i, llvm::Attribute::NoAlias);
  fn->addParamAttr(1, llvm::Attribute::ReadOnly);
  fn->addParamAttr(2, llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
  program.addFnAttr(llvm::Attribute::AlwaysInline);

  llvm::IRBuilder<> b(ctx);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* body = llvm::BasicBlock::Create(ctx, "program", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Value* range = fn->getArg(1);
  auto slot = [&](int i) { return b.CreateLoad(i64, b.CreateConstGEP1_64(i64, range, i)); };
  llvm::Value* lo = slot(kRangeFirst);
  llvm::Value* hi = slot(kRangeEnd);
  // The program reads its ids and the grid from a pid_grid array (and passes it to the host's
  // failure report); inlined, its loads of it fold into the values stored here.
  llvm::Value* pid_grid = b.CreateAlloca(llvm::ArrayType::get(i64, kPidGridSlots));
  llvm::Value* gx = slot(kRangeGridX);
  llvm::Value* gy = slot(kRangeGridX + 1);
  llvm::Value* launch[4] = {gx, gy, slot(kRangeGridX + 2), slot(kRangeStreaming)};
  for (int i = 0; i < 4; ++i)
    b.CreateStore(launch[i], b.CreateConstGEP1_64(i64, pid_grid, 3 + i));
  llvm::Value* row = b.CreateUDiv(lo, gx);
  llvm::Value* x0 = b.CreateURem(lo, gx);
  llvm::Value* y0 = b.CreateURem(row, gy);
  llvm::Value* z0 = b.CreateUDiv(row, gy);
  b.CreateCondBr(b.CreateICmpSLT(lo, hi), body, exit);

  b.SetInsertPoint(body);
  auto* p = b.CreatePHI(i64, 2, "p");
  auto* x = b.CreatePHI(i64, 2, "pid.x");
  auto* y = b.CreatePHI(i64, 2, "pid.y");
  auto* z = b.CreatePHI(i64, 2, "pid.z");
  b.CreateStore(x, b.CreateConstGEP1_64(i64, pid_grid, 0));
  b.CreateStore(y, b.CreateConstGEP1_64(i64, pid_grid, 1));
  b.CreateStore(z, b.CreateConstGEP1_64(i64, pid_grid, 2));
  llvm::Value* failed =
      b.CreateCall(&program, {fn->getArg(0), pid_grid, fn->getArg(2), fn->getArg(3)});
  llvm::Value* next = b.CreateAdd(p, b.getInt64(1));
  // x advances fastest, then y, then z: the order of the linear index.
  llvm::Value* x1 = b.CreateAdd(x, b.getInt64(1));
  llvm::Value* wrap_x = b.CreateICmpEQ(x1, gx);
  llvm::Value* y1 = b.CreateAdd(y, b.CreateZExt(wrap_x, i64));
  llvm::Value* wrap_y = b.CreateICmpEQ(y1, gy);
  x->addIncoming(x0, entry);
  x->addIncoming(b.CreateSelect(wrap_x, b.getInt64(0), x1), body);
  y->addIncoming(y0, entry);
  y->addIncoming(b.CreateSelect(wrap_y, b.getInt64(0), y1), body);
  z->addIncoming(z0, entry);
  z->addIncoming(b.CreateAdd(z, b.CreateZExt(wrap_y, i64)), body);
  p->addIncoming(lo, entry);
  p->addIncoming(next, body);
  // A program that failed ends the range; the host ends the launch.
  b.CreateCondBr(b.CreateOr(failed, b.CreateICmpEQ(next, hi)), exit, body);

  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return fn;
}

} // namespace tritium::cpu
