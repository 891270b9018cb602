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

void ControlLowering::yield_into(const std::vector<const ir::Value*>& yielded,
                                 const std::vector<View>& dst,
                                 const std::unordered_set<int>& clobbered) {
  // A yielded view that reads a buffer about to be overwritten goes through a temporary.
  std::vector<View> src(yielded.size());
  for (size_t i = 0; i < yielded.size(); ++i) {
    if (!dst[i].base)
      continue;
    src[i] = k_.view(yielded[i]);
    bool same = src[i].base == dst[i].base && src[i].offset == dst[i].offset &&
                src[i].strides == dst[i].strides;
    if (!same && clobbered.count(src[i].root)) {
      View tmp = k_.new_buffer(yielded[i]->type.elem, yielded[i]->type.shape);
      k_.copy(src[i], tmp, yielded[i]->type.elem);
      src[i] = tmp;
    }
  }
  for (size_t i = 0; i < yielded.size(); ++i)
    if (dst[i].base)
      k_.copy(src[i], dst[i], yielded[i]->type.elem);
}

llvm::Value* ControlLowering::loop_bound(llvm::Value* v, DType t) {
  return t.is_unsigned() ? k_.builder_.CreateZExt(v, k_.builder_.getInt64Ty())
                         : k_.builder_.CreateSExtOrTrunc(v, k_.builder_.getInt64Ty());
}

ControlLowering::LoopSpan ControlLowering::loop_span(llvm::Value* lb, llvm::Value* ub,
                                                     llvm::Value* step) {
  auto& b = k_.builder_;
  llvm::Value* neg = b.CreateICmpSLT(step, k_.i64(0));
  llvm::Value* span = b.CreateSub(ub, lb);
  return {b.CreateSelect(neg, b.CreateNeg(span), span),
          b.CreateSelect(neg, b.CreateNeg(step), step)};
}

void ControlLowering::lower_for(const Op& op) {
  auto& b = k_.builder_;
  const auto& o = op.operands;
  DType it = o[0]->type.elem;
  llvm::Value* lb = loop_bound(k_.scalar(o[0]), it);
  llvm::Value* ub = loop_bound(k_.scalar(o[1]), it);
  llvm::Value* step = loop_bound(k_.scalar(o[2]), it);
  k_.fail_if(b.CreateICmpEQ(step, k_.i64(0)), op, "tl::range step is zero");
  // At least 1, for streaming stores' estimate of a launch's bytes (lower_streaming_store.cpp).
  auto [span, stride] = loop_span(lb, ub, step);
  llvm::Value* trips =
      b.CreateSDiv(span, b.CreateSelect(b.CreateICmpEQ(stride, k_.i64(0)), k_.i64(1), stride));
  trips = b.CreateSelect(b.CreateICmpSGT(trips, k_.i64(1)), trips, k_.i64(1));

  const ir::Block& body = op.body();
  size_t n = o.size() - 3;
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  std::vector<bool> lazy(n, false);
  for (size_t i = 0; i < n; ++i)
    if (k_.fusion_.lazy_init_slot(op, i)) {
      lazy[i] = true;
      carry[i] = k_.new_buffer(o[3 + i]->type.elem, o[3 + i]->type.shape);
      roots.insert(carry[i].root);
    } else if (!is_rank0(o[3 + i])) {
      // A group's buffer read by nothing but this loop becomes the carried buffer itself.
      const ir::Value* init = o[3 + i];
      const View& v = k_.view(init);
      bool adopt = init->def && fusible(*init->def) && k_.users_[init].size() == 1 &&
                   v.offset == 0 && v.shape == init->type.shape && v.strides == row_major(v.shape);
      if (adopt) {
        carry[i] = v;
      } else {
        carry[i] = k_.new_buffer(init->type.elem, init->type.shape);
        k_.copy(v, carry[i], init->type.elem);
      }
      roots.insert(carry[i].root);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(k_.ctx_, "for", k_.fn_);
  auto* loop_body = llvm::BasicBlock::Create(k_.ctx_, "for.body", k_.fn_);
  auto* exit = llvm::BasicBlock::Create(k_.ctx_, "for.exit", k_.fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  auto* iv = b.CreatePHI(b.getInt64Ty(), 2, "iv");
  iv->addIncoming(lb, pre);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base) {
      phis[i] = b.CreatePHI(k_.elements_.reg_type(o[3 + i]->type.elem), 2);
      phis[i]->addIncoming(k_.scalar(o[3 + i]), pre);
    }
  llvm::Value* up = b.CreateAnd(b.CreateICmpSGT(step, k_.i64(0)), b.CreateICmpSLT(iv, ub));
  llvm::Value* down = b.CreateAnd(b.CreateICmpSLT(step, k_.i64(0)), b.CreateICmpSGT(iv, ub));
  b.CreateCondBr(b.CreateOr(up, down), loop_body, exit);

  b.SetInsertPoint(loop_body);
  llvm::Value* first = b.CreateICmpEQ(iv, lb, "first");
  k_.loop_trips_.push_back(trips);
  for (size_t i = 0; i < n; ++i)
    if (lazy[i])
      k_.lazy_init_[body.args[1 + i]] = {k_.fusion_.splat_value(o[3 + i]), first, carry[i]};
  k_.set_scalar(body.args[0], b.CreateTrunc(iv, k_.elements_.reg_type(it)));
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      k_.set_view(body.args[1 + i], carry[i]);
    else
      k_.set_scalar(body.args[1 + i], phis[i]);
  }
  k_.lower_block(body);
  k_.flush();
  k_.loop_trips_.pop_back();
  const Op* y = body.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next_scalars(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next_scalars[i] = k_.scalar(yielded[i]);
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
      k_.lazy_init_.erase(body.args[1 + i]);
      k_.fusion_.fill_if(b.CreateICmpEQ(iv, lb), carry[i], k_.fusion_.splat_value(o[3 + i]),
                         o[3 + i]->type.elem);
    }
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      k_.set_view(op.results[i], carry[i]);
    else
      k_.set_scalar(op.results[i], phis[i]);
  }
}

void ControlLowering::lower_if(const Op& op) {
  auto& b = k_.builder_;
  size_t n = op.results.size();
  std::vector<View> out(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(op.results[i])) {
      out[i] = k_.new_buffer(op.results[i]->type.elem, op.results[i]->type.shape);
      roots.insert(out[i].root);
    }
  auto* then_bb = llvm::BasicBlock::Create(k_.ctx_, "then", k_.fn_);
  auto* else_bb = llvm::BasicBlock::Create(k_.ctx_, "else", k_.fn_);
  auto* merge = llvm::BasicBlock::Create(k_.ctx_, "endif", k_.fn_);
  b.CreateCondBr(k_.scalar(op.operand(0)), then_bb, else_bb);
  std::vector<std::pair<std::vector<llvm::Value*>, llvm::BasicBlock*>> incoming;
  for (unsigned r = 0; r < 2; ++r) {
    b.SetInsertPoint(r == 0 ? then_bb : else_bb);
    const ir::Block& blk = op.body(r);
    k_.lower_block(blk);
    k_.flush();
    const Op* y = blk.terminator();
    std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
    std::vector<llvm::Value*> scalars(n, nullptr);
    for (size_t i = 0; i < n; ++i)
      if (!out[i].base)
        scalars[i] = k_.scalar(yielded[i]);
    yield_into(yielded, out, roots);
    incoming.emplace_back(scalars, b.GetInsertBlock());
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (size_t i = 0; i < n; ++i) {
    if (out[i].base) {
      k_.set_view(op.results[i], out[i]);
      continue;
    }
    auto* phi = b.CreatePHI(k_.elements_.reg_type(op.results[i]->type.elem), 2);
    for (auto& [vals, bb] : incoming)
      phi->addIncoming(vals[i], bb);
    k_.set_scalar(op.results[i], phi);
  }
}

void ControlLowering::lower_while(const Op& op) {
  auto& b = k_.builder_;
  const auto& o = op.operands;
  size_t n = o.size();
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(o[i])) {
      carry[i] = k_.new_buffer(o[i]->type.elem, o[i]->type.shape);
      roots.insert(carry[i].root);
      k_.copy(k_.view(o[i]), carry[i], o[i]->type.elem);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(k_.ctx_, "while", k_.fn_);
  auto* after = llvm::BasicBlock::Create(k_.ctx_, "while.body", k_.fn_);
  auto* exit = llvm::BasicBlock::Create(k_.ctx_, "while.exit", k_.fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  const ir::Block& before = op.body(0);
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base) {
      k_.set_view(before.args[i], carry[i]);
      continue;
    }
    phis[i] = b.CreatePHI(k_.elements_.reg_type(o[i]->type.elem), 2);
    phis[i]->addIncoming(k_.scalar(o[i]), pre);
    k_.set_scalar(before.args[i], phis[i]);
  }
  k_.lower_block(before);
  k_.flush();
  const Op* c = before.terminator();
  llvm::Value* go = k_.scalar(c->operand(0));
  std::vector<const ir::Value*> passed(c->operands.begin() + 1, c->operands.end());
  // Tensors passed on are views; make sure none is still pending.
  for (const ir::Value* v : passed)
    if (!is_rank0(v))
      (void)k_.view(v);
  b.CreateCondBr(go, after, exit);

  b.SetInsertPoint(after);
  const ir::Block& ab = op.body(1);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      k_.set_scalar(ab.args[i], k_.scalar(passed[i]));
    else
      k_.set_view(ab.args[i], k_.view(passed[i]));
  }
  k_.lower_block(ab);
  k_.flush();
  const Op* y = ab.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next[i] = k_.scalar(yielded[i]);
  yield_into(yielded, carry, roots);
  for (size_t i = 0; i < n; ++i)
    if (phis[i])
      phis[i]->addIncoming(next[i], b.GetInsertBlock());
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      k_.set_scalar(op.results[i], k_.scalar(passed[i]));
    else
      k_.set_view(op.results[i], k_.view(passed[i]));
  }
}

std::vector<llvm::Value*> ControlLowering::inline_region(const ir::Block& blk,
                                                         const std::vector<llvm::Value*>& args) {
  for (size_t i = 0; i < blk.args.size(); ++i)
    k_.set_scalar(blk.args[i], args[i]);
  k_.lower_block(blk);
  k_.flush();
  std::vector<llvm::Value*> out;
  for (ir::Value* v : blk.terminator()->operands)
    out.push_back(k_.scalar(v));
  return out;
}

} // namespace tritium::cpu
