// Structured control flow on the CPU: for, if and while over views and scalars, loop-carried
// buffers written in place where no one else reads them, and combine regions inlined.
#include "lowering.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpCategory;
using ir::OpKind;

void KernelLowering::yield_into(const std::vector<const ir::Value*>& yielded,
                                const std::vector<View>& dst,
                                const std::unordered_set<int>& clobbered) {
  // A yielded view that reads a buffer about to be overwritten goes through a temporary.
  std::vector<View> src(yielded.size());
  for (size_t i = 0; i < yielded.size(); ++i) {
    if (!dst[i].base)
      continue;
    src[i] = view(yielded[i]);
    bool same = src[i].base == dst[i].base && src[i].offset == dst[i].offset &&
                src[i].strides == dst[i].strides;
    if (!same && clobbered.count(src[i].root)) {
      View tmp = new_buffer(yielded[i]->type.elem, yielded[i]->type.shape);
      copy(src[i], tmp, yielded[i]->type.elem);
      src[i] = tmp;
    }
  }
  for (size_t i = 0; i < yielded.size(); ++i)
    if (dst[i].base)
      copy(src[i], dst[i], yielded[i]->type.elem);
}

llvm::Value* KernelLowering::loop_bound(llvm::Value* v, DType t) {
  return t.is_unsigned() ? builder_.CreateZExt(v, builder_.getInt64Ty())
                         : builder_.CreateSExtOrTrunc(v, builder_.getInt64Ty());
}

KernelLowering::LoopSpan KernelLowering::loop_span(llvm::Value* lb, llvm::Value* ub,
                                                   llvm::Value* step) {
  auto& b = builder_;
  llvm::Value* neg = b.CreateICmpSLT(step, i64(0));
  llvm::Value* span = b.CreateSub(ub, lb);
  return {b.CreateSelect(neg, b.CreateNeg(span), span),
          b.CreateSelect(neg, b.CreateNeg(step), step)};
}

void KernelLowering::lower_for(const Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  DType it = o[0]->type.elem;
  llvm::Value* lb = loop_bound(scalar(o[0]), it);
  llvm::Value* ub = loop_bound(scalar(o[1]), it);
  llvm::Value* step = loop_bound(scalar(o[2]), it);
  fail_if(b.CreateICmpEQ(step, i64(0)), op, "tl::range step is zero");
  // At least 1, for streaming stores' estimate of a launch's bytes (lower_streaming_store.cpp).
  auto [span, stride] = loop_span(lb, ub, step);
  llvm::Value* trips =
      b.CreateSDiv(span, b.CreateSelect(b.CreateICmpEQ(stride, i64(0)), i64(1), stride));
  trips = b.CreateSelect(b.CreateICmpSGT(trips, i64(1)), trips, i64(1));

  const ir::Block& body = op.body();
  size_t n = o.size() - 3;
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  std::vector<bool> lazy(n, false);
  for (size_t i = 0; i < n; ++i)
    if (lazy_init_slot(op, i)) {
      lazy[i] = true;
      carry[i] = new_buffer(o[3 + i]->type.elem, o[3 + i]->type.shape);
      roots.insert(carry[i].root);
    } else if (!is_rank0(o[3 + i])) {
      // A group's buffer read by nothing but this loop becomes the carried buffer itself.
      const ir::Value* init = o[3 + i];
      const View& v = view(init);
      bool adopt = init->def && fusible(*init->def) && users_[init].size() == 1 && v.offset == 0 &&
                   v.shape == init->type.shape && v.strides == row_major(v.shape);
      if (adopt) {
        carry[i] = v;
      } else {
        carry[i] = new_buffer(init->type.elem, init->type.shape);
        copy(v, carry[i], init->type.elem);
      }
      roots.insert(carry[i].root);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for", fn_);
  auto* loop_body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  auto* iv = b.CreatePHI(b.getInt64Ty(), 2, "iv");
  iv->addIncoming(lb, pre);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base) {
      phis[i] = b.CreatePHI(reg_type(o[3 + i]->type.elem), 2);
      phis[i]->addIncoming(scalar(o[3 + i]), pre);
    }
  llvm::Value* up = b.CreateAnd(b.CreateICmpSGT(step, i64(0)), b.CreateICmpSLT(iv, ub));
  llvm::Value* down = b.CreateAnd(b.CreateICmpSLT(step, i64(0)), b.CreateICmpSGT(iv, ub));
  b.CreateCondBr(b.CreateOr(up, down), loop_body, exit);

  b.SetInsertPoint(loop_body);
  llvm::Value* first = b.CreateICmpEQ(iv, lb, "first");
  loop_trips_.push_back(trips);
  for (size_t i = 0; i < n; ++i)
    if (lazy[i])
      lazy_init_[body.args[1 + i]] = {splat_value(o[3 + i]), first, carry[i]};
  set_scalar(body.args[0], b.CreateTrunc(iv, reg_type(it)));
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      set_view(body.args[1 + i], carry[i]);
    else
      set_scalar(body.args[1 + i], phis[i]);
  }
  lower_block(body);
  flush();
  loop_trips_.pop_back();
  const Op* y = body.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next_scalars(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next_scalars[i] = scalar(yielded[i]);
  yield_into(yielded, carry, roots);
  llvm::Value* next = b.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  iv->addIncoming(next, latch);
  for (size_t i = 0; i < n; ++i)
    if (phis[i])
      phis[i]->addIncoming(next_scalars[i], latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < n; ++i)
    if (lazy[i]) {
      // A loop that ran no iteration leaves its init, which no one wrote yet.
      lazy_init_.erase(body.args[1 + i]);
      fill_if(b.CreateICmpEQ(iv, lb), carry[i], splat_value(o[3 + i]), o[3 + i]->type.elem);
    }
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      set_view(op.results[i], carry[i]);
    else
      set_scalar(op.results[i], phis[i]);
  }
}

void KernelLowering::lower_if(const Op& op) {
  auto& b = builder_;
  size_t n = op.results.size();
  std::vector<View> out(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(op.results[i])) {
      out[i] = new_buffer(op.results[i]->type.elem, op.results[i]->type.shape);
      roots.insert(out[i].root);
    }
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
  auto* merge = llvm::BasicBlock::Create(ctx_, "endif", fn_);
  b.CreateCondBr(scalar(op.operand(0)), then_bb, else_bb);
  std::vector<std::pair<std::vector<llvm::Value*>, llvm::BasicBlock*>> incoming;
  for (unsigned r = 0; r < 2; ++r) {
    b.SetInsertPoint(r == 0 ? then_bb : else_bb);
    const ir::Block& blk = op.body(r);
    lower_block(blk);
    flush();
    const Op* y = blk.terminator();
    std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
    std::vector<llvm::Value*> scalars(n, nullptr);
    for (size_t i = 0; i < n; ++i)
      if (!out[i].base)
        scalars[i] = scalar(yielded[i]);
    yield_into(yielded, out, roots);
    incoming.emplace_back(scalars, b.GetInsertBlock());
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (size_t i = 0; i < n; ++i) {
    if (out[i].base) {
      set_view(op.results[i], out[i]);
      continue;
    }
    auto* phi = b.CreatePHI(reg_type(op.results[i]->type.elem), 2);
    for (auto& [vals, bb] : incoming)
      phi->addIncoming(vals[i], bb);
    set_scalar(op.results[i], phi);
  }
}

void KernelLowering::lower_while(const Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  size_t n = o.size();
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(o[i])) {
      carry[i] = new_buffer(o[i]->type.elem, o[i]->type.shape);
      roots.insert(carry[i].root);
      copy(view(o[i]), carry[i], o[i]->type.elem);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "while", fn_);
  auto* after = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  const ir::Block& before = op.body(0);
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base) {
      set_view(before.args[i], carry[i]);
      continue;
    }
    phis[i] = b.CreatePHI(reg_type(o[i]->type.elem), 2);
    phis[i]->addIncoming(scalar(o[i]), pre);
    set_scalar(before.args[i], phis[i]);
  }
  lower_block(before);
  flush();
  const Op* c = before.terminator();
  llvm::Value* go = scalar(c->operand(0));
  std::vector<const ir::Value*> passed(c->operands.begin() + 1, c->operands.end());
  // Tensors passed on are views; make sure none is still pending.
  for (const ir::Value* v : passed)
    if (!is_rank0(v))
      (void)view(v);
  b.CreateCondBr(go, after, exit);

  b.SetInsertPoint(after);
  const ir::Block& ab = op.body(1);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      set_scalar(ab.args[i], scalar(passed[i]));
    else
      set_view(ab.args[i], view(passed[i]));
  }
  lower_block(ab);
  flush();
  const Op* y = ab.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next[i] = scalar(yielded[i]);
  yield_into(yielded, carry, roots);
  for (size_t i = 0; i < n; ++i)
    if (phis[i])
      phis[i]->addIncoming(next[i], b.GetInsertBlock());
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      set_scalar(op.results[i], scalar(passed[i]));
    else
      set_view(op.results[i], view(passed[i]));
  }
}

std::vector<llvm::Value*> KernelLowering::inline_region(const ir::Block& blk,
                                                        const std::vector<llvm::Value*>& args) {
  for (size_t i = 0; i < blk.args.size(); ++i)
    set_scalar(blk.args[i], args[i]);
  lower_block(blk);
  flush();
  std::vector<llvm::Value*> out;
  for (ir::Value* v : blk.terminator()->operands)
    out.push_back(scalar(v));
  return out;
}

} // namespace tritium::cpu
