// Atomics and device printing: per-element code with effects, never fused.
//
// Every read-modify-write except exchange is a compare-exchange loop around the same element
// semantics as the arithmetic ops (lower_scalar.cpp), so f16/bf16/f32 atomics round exactly
// as the interpreter does; a hardware fetch-add would not be simpler on every host.
#include "lowering.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

namespace tritium::cpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

namespace {

llvm::Type* bits_type(llvm::IRBuilder<>& b, DType t) {
  if (t.is_bool())
    return b.getInt8Ty();
  return b.getIntNTy(static_cast<unsigned>(t.is_ptr() ? 64 : t.bits()));
}

} // namespace

void KernelLowering::lower_atomic(const ir::Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  DType t = op.result()->type.elem;
  bool cas = op.kind == OpKind::AtomicCas;
  size_t mask_at = cas ? 3 : 2;
  bool masked = o.size() > mask_at;
  const bool xchg = !cas && op.enum_attr<ir::AtomicOp>() == ir::AtomicOp::Xchg;
  ir::BinaryOp combine = ir::BinaryOp::Add;
  if (!cas)
    switch (op.enum_attr<ir::AtomicOp>()) {
    case ir::AtomicOp::Add:
      combine = ir::BinaryOp::Add;
      break;
    case ir::AtomicOp::Max:
      combine = ir::BinaryOp::Max;
      break;
    case ir::AtomicOp::Min:
      combine = ir::BinaryOp::Min;
      break;
    case ir::AtomicOp::And:
      combine = ir::BinaryOp::And;
      break;
    case ir::AtomicOp::Or:
      combine = ir::BinaryOp::Or;
      break;
    case ir::AtomicOp::Xor:
      combine = ir::BinaryOp::Xor;
      break;
    case ir::AtomicOp::Xchg:
      break;
    }
  llvm::Type* bt = bits_type(b, t);
  auto to_mem = [&](llvm::Value* v) {
    return t.is_bool() ? b.CreateZExt(v, bt)
                       : b.CreateZExtOrTrunc(elements_.scalar_.to_bits(v, t), bt);
  };
  auto from_mem = [&](llvm::Value* v) {
    return t.is_bool() ? b.CreateTrunc(v, b.getInt1Ty()) : elements_.scalar_.from_bits(v, t);
  };
  const auto order = llvm::AtomicOrdering::SequentiallyConsistent;

  // One lane: returns the old value.
  auto lane = [&](llvm::Value* p, llvm::Value* v, llvm::Value* cmp, llvm::Value* mask) {
    llvm::BasicBlock* from = b.GetInsertBlock();
    llvm::BasicBlock *yes = nullptr, *done = nullptr;
    if (mask) {
      yes = llvm::BasicBlock::Create(ctx_, "atomic", fn_);
      done = llvm::BasicBlock::Create(ctx_, "atomic.done", fn_);
      b.CreateCondBr(mask, yes, done);
      b.SetInsertPoint(yes);
    }
    llvm::Value* old;
    if (cas) {
      auto* x = b.CreateAtomicCmpXchg(p, to_mem(cmp), to_mem(v), llvm::MaybeAlign(), order, order);
      old = from_mem(b.CreateExtractValue(x, 0));
    } else if (xchg) {
      old = from_mem(
          b.CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, p, to_mem(v), llvm::MaybeAlign(), order));
    } else {
      llvm::Value* first = b.CreateLoad(bt, p);
      llvm::BasicBlock* entry = b.GetInsertBlock();
      auto* retry = llvm::BasicBlock::Create(ctx_, "cas.loop", fn_);
      auto* out = llvm::BasicBlock::Create(ctx_, "cas.done", fn_);
      b.CreateBr(retry);
      b.SetInsertPoint(retry);
      auto* cur = b.CreatePHI(bt, 2);
      cur->addIncoming(first, entry);
      llvm::Value* nv = to_mem(elements_.scalar_.binary(combine, t, from_mem(cur), v));
      auto* x = b.CreateAtomicCmpXchg(p, cur, nv, llvm::MaybeAlign(), order, order);
      cur->addIncoming(b.CreateExtractValue(x, 0), retry);
      b.CreateCondBr(b.CreateExtractValue(x, 1), out, retry);
      b.SetInsertPoint(out);
      old = from_mem(cur);
    }
    if (!mask)
      return old;
    llvm::BasicBlock* yes_end = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    auto* phi = b.CreatePHI(old->getType(), 2);
    phi->addIncoming(old, yes_end);
    phi->addIncoming(elements_.scalar_.zero(t), from);
    return static_cast<llvm::Value*>(phi);
  };

  if (op.result()->type.is_scalar()) {
    llvm::Value* r = lane(scalar(o[0]), scalar(o[cas ? 2 : 1]), cas ? scalar(o[1]) : nullptr,
                          masked ? scalar(o[mask_at]) : nullptr);
    return set_scalar(op.result(), r);
  }
  std::vector<View> in;
  for (const ir::Value* v : o)
    in.push_back(view(v));
  View r = new_buffer(t, op.result()->type.shape);
  loop_nest(r.shape, [&](const std::vector<llvm::Value*>& idx) {
    auto get = [&](size_t i) {
      return elements_.from_scratch(b.CreateLoad(in[i].ty, element_ptr(in[i], idx)),
                                    o[i]->type.elem);
    };
    llvm::Value* old =
        lane(get(0), get(cas ? 2 : 1), cas ? get(1) : nullptr, masked ? get(mask_at) : nullptr);
    b.CreateStore(elements_.to_scratch(old, t), element_ptr(r, idx));
  });
  set_view(op.result(), r);
}

void KernelLowering::lower_print(const ir::Op& op) {
  auto& b = builder_;
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  auto* i64t = b.getInt64Ty();
  b.CreateCall(host_fn(kPrintBeginFn, b.getVoidTy(), {ptr, ptr}),
               {global_string(op.str_attr(attr::prefix)), fn_->getArg(1)});
  auto print_one = [&](llvm::Value* v, DType t) {
    if (t.is_float()) {
      llvm::Value* d = t.kind == ScalarKind::F64 ? v : b.CreateFPExt(v, b.getDoubleTy());
      b.CreateCall(host_fn(kPrintFloatFn, b.getVoidTy(), {b.getDoubleTy()}), {d});
    } else if (t.is_ptr()) {
      b.CreateCall(host_fn(kPrintIntFn, b.getVoidTy(), {i64t}), {b.CreatePtrToInt(v, i64t)});
    } else {
      bool u = t.is_unsigned();
      llvm::Value* w = u ? b.CreateZExt(v, i64t) : b.CreateSExtOrTrunc(v, i64t);
      b.CreateCall(host_fn(kPrintIntFn, // signed, as the interpreter prints
                           b.getVoidTy(), {i64t}),
                   {w});
    }
  };
  for (const ir::Value* v : op.operands) {
    b.CreateCall(host_fn(kPrintTensorFn, b.getVoidTy(), {}), {});
    if (v->type.is_scalar()) {
      print_one(scalar(v), v->type.elem);
      continue;
    }
    const View& w = view(v);
    loop_nest(w.shape, [&](const std::vector<llvm::Value*>& idx) {
      print_one(elements_.from_scratch(b.CreateLoad(w.ty, element_ptr(w, idx)), v->type.elem),
                v->type.elem);
    });
  }
  b.CreateCall(host_fn(kPrintEndFn, b.getVoidTy(), {}), {});
}

} // namespace tritium::cpu
