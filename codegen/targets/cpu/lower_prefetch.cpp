// Memory streams prefetched across programs. A row-wise kernel reads its row from memory in its
// first pass, computes on the row in cache, and writes its output in its last pass; a thread
// runs the programs of its chunk one after another. While a program computes, memory idles:
// the hardware prefetchers follow misses, and a pass over cached data makes none. On a 2-core
// Zen 4 a hand-written softmax shaped so (exp into a buffer, then scaled into the output) moved
// 0.6 x the bytes of a plain loop from DRAM, and 0.75 to 0.85 x once its exp pass prefetched the
// next row for reading and the output row for writing, a few lines every 16 elements (all at
// once before the pass: 0.65 to 0.72 x).
//
// Which addresses: a stream's site (the first access of a pointer argument in one direction,
// with addresses `base + arange [+ s]` that move with program_id or a loop variable) keeps in a
// per-thread scratch slot the address its block started at. The difference to the new one
// predicts the next block, as a stride prefetcher predicts lines: the next program's row for
// programs that run one after another, the next iteration's block in a loop. Where the
// difference is 0 or past 4 GiB (the first program of a chunk), nothing is prefetched; a wrong
// prediction costs bandwidth, never a fault (prefetches do not fault).
//
// Where: in the first loop after a loop read a load stream that is either a flat fused loop
// computing a transcendental and storing nothing, or one whose store streams (the caller
// decides: flush in lower_kernel.cpp), or a reduction (lower_collective.cpp), spread over it, a
// share of the lines per strip of kPrefetchStrip elements or per chunk of partials. Store streams
// this program has not written yet are prefetched for writing there too: their slot holds what the
// previous program predicted, this program's block. Each prediction is prefetched once.

#include "lowering.hpp"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <map>

namespace tritium::cpu {

using ir::Op;
using ir::OpKind;

void Prefetcher::plan_streams() {
  std::unordered_set<const ir::Value*> params(k_.f_.args().begin(), k_.f_.args().end());
  std::unordered_map<const ir::Value*, bool> memo;
  std::function<bool(const ir::Value*)> moves = [&](const ir::Value* v) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    bool r;
    if (!v->def)
      r = !params.count(v); // a region's argument: a loop variable or a carried value
    else if (v->def->kind == OpKind::ProgramId)
      r = true;
    else
      r = std::any_of(v->def->operands.begin(), v->def->operands.end(), moves);
    return memo[v] = r;
  };
  std::map<std::pair<const ir::Value*, bool>, size_t> first; // (pointer root, store) -> stream
  ir::walk(k_.f_.entry(), [&](const Op& op) {
    if (!affine_access(op))
      return;
    if (!moves(op.operand(0)))
      return;
    const ir::Value* root = op.operand(0)->def->operand(0)->def->operand(0); // splat's operand
    while (root->def && root->def->kind == OpKind::AddPtr)
      root = root->def->operand(0);
    auto key = std::make_pair(root, op.kind == OpKind::Store);
    if (first.count(key))
      return;
    first[key] = streams_.size();
    stream_of_[&op] = streams_.size();
    const ir::Value* data = op.kind == OpKind::Load ? op.result() : op.operand(1);
    const int64_t bytes = data->type.shape[0] * data->type.elem.bits() / 8;
    streams_.push_back({&op, op.kind == OpKind::Store, (bytes + 63) / 64});
  });
  if (streams_.empty())
    return;
  int64_t at = (k_.scratch_size_ + 63) / 64 * 64;
  k_.scratch_size_ = at + 24 * static_cast<int64_t>(streams_.size());
  for (size_t k = 0; k < streams_.size(); ++k)
    streams_[k].slot = k_.entry_builder_.CreateConstInBoundsGEP1_64(
        k_.entry_builder_.getInt8Ty(), k_.scratch_arg_, at + 24 * static_cast<int64_t>(k));
}

void Prefetcher::stream_site(const Op& access) {
  auto it = stream_of_.find(&access);
  if (it == stream_of_.end())
    return;
  auto& b = k_.builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  llvm::Value* slot = streams_[it->second].slot;
  auto field = [&](int k) { return b.CreateConstInBoundsGEP1_64(i64_ty, slot, k); };
  ReloadLowering::Span span = k_.reloads_.access_span(access);
  llvm::Value* delta = b.CreateSub(span.lo, b.CreateLoad(i64_ty, field(0)));
  auto& writes = streams_[it->second].writes;
  writes.push_back(b.CreateStore(span.lo, field(0)));
  llvm::Value* near =
      b.CreateICmpULT(b.CreateAdd(delta, k_.i64(int64_t{1} << 32)), k_.i64(int64_t{1} << 33));
  llvm::Value* ok = b.CreateAnd(near, b.CreateICmpNE(delta, k_.i64(0)));
  writes.push_back(b.CreateStore(b.CreateAdd(span.lo, delta), field(1)));
  writes.push_back(
      b.CreateStore(b.CreateSelect(ok, b.CreateSub(span.hi, span.lo), k_.i64(0)), field(2)));
}

// A stream no loop prefetches costs its site's updates in every program (vector add lost up to
// 10 % to them in a noisy measurement): without its stores, the rest is dead code.
void Prefetcher::drop_unused_streams() {
  for (Stream& st : streams_)
    if (!st.prefetched)
      for (llvm::Instruction* w : st.writes)
        w->eraseFromParent();
}

void Prefetcher::begin_prefetch(const std::vector<const Op*>& accesses, int64_t total,
                                llvm::Value* only_if, bool last_pass) {
  using State = Stream::State;
  std::vector<bool> touched(streams_.size(), false);
  for (const Op* a : accesses)
    if (auto it = stream_of_.find(a); it != stream_of_.end())
      touched[it->second] = true;
  prefetching_.clear();
  if (total > 0) {
    for (size_t k = 0; k < streams_.size(); ++k)
      if (!streams_[k].store && streams_[k].state == State::Read)
        prefetching_.push_back(k);
    if (!prefetching_.empty())
      for (size_t k = 0; k < streams_.size(); ++k)
        if (streams_[k].store && streams_[k].state == State::Unseen && !touched[k])
          prefetching_.push_back(k);
  }
  prefetch_next_.clear();
  prefetch_lines_.clear();
  prefetch_locality_.clear();
  auto& b = k_.builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  for (size_t k : prefetching_) {
    Stream& st = streams_[k];
    st.state = State::Done;
    st.prefetched = true;
    auto field = [&](int f) { return b.CreateConstInBoundsGEP1_64(i64_ty, st.slot, f); };
    prefetch_next_.push_back(b.CreateLoad(i64_ty, field(1)));
    // Into L1 only for the next program's first pass, and only a block that leaves L1 room for
    // this pass: earlier passes still read this program's data from L1 (softmax's exp buffer),
    // and wide rows thrash it. Into L2 (1 MiB on Zen 4) otherwise: softmax at 12288 columns went
    // from 0.64 to 0.86 x the plain loop, and the norms' last passes at 16384 f16 columns gained
    // 10-15 %, while at 4096 those gained more from L1 (bench/RESULTS.md).
    prefetch_locality_.push_back(last_pass && st.lines * 64 <= kPrefetchL1Bytes ? 3 : 2);
    // At most the site's block: the slot is not initialized before a thread's first prediction
    // (and another kernel may have used its memory).
    llvm::Value* lines =
        b.CreateLShr(b.CreateAdd(b.CreateLoad(i64_ty, field(2)), k_.i64(63)), k_.i64(6));
    lines = b.CreateSelect(b.CreateICmpULT(lines, k_.i64(st.lines)), lines, k_.i64(st.lines));
    // A block that streaming stores will write is better not in cache: a non-temporal store to
    // a cached line writes it back first (softmax gained nothing from streaming with both).
    if (st.store && k_.stores_.may_stream(*st.site))
      lines = b.CreateSelect(k_.stores_.launch_streams(*st.site), k_.i64(0), lines);
    if (only_if)
      lines = b.CreateSelect(only_if, lines, k_.i64(0));
    prefetch_lines_.push_back(lines);
  }
  for (size_t k = 0; k < streams_.size(); ++k)
    if (touched[k] && streams_[k].state == State::Unseen)
      streams_[k].state = streams_[k].store ? State::Done : State::Read;
  prefetch_total_ = total;
}

void Prefetcher::prefetch_share(llvm::Value* lo, int64_t n) {
  auto& b = k_.builder_;
  for (size_t i = 0; i < prefetching_.size(); ++i) {
    const Stream& st = streams_[prefetching_[i]];
    // Lines in proportion to elements: this share's first line, and (at most) how many.
    const int64_t count =
        std::min<int64_t>(16, (st.lines * n + prefetch_total_ - 1) / prefetch_total_);
    llvm::Value* first =
        b.CreateUDiv(b.CreateMul(lo, k_.i64(st.lines), "", true, true), k_.i64(prefetch_total_));
    auto* issue = llvm::BasicBlock::Create(k_.ctx_, "prefetch", k_.fn_);
    auto* done = llvm::BasicBlock::Create(k_.ctx_, "prefetch.done", k_.fn_);
    b.CreateCondBr(b.CreateICmpULT(first, prefetch_lines_[i]), issue, done);
    b.SetInsertPoint(issue);
    llvm::Value* at = b.CreateAdd(prefetch_next_[i], b.CreateShl(first, k_.i64(6)));
    for (int64_t j = 0; j < count; ++j)
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {b.getPtrTy()},
                        {b.CreateIntToPtr(b.CreateAdd(at, k_.i64(64 * j)), b.getPtrTy()),
                         b.getInt32(st.store ? 1 : 0), b.getInt32(prefetch_locality_[i]),
                         b.getInt32(1)});
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
}

void Prefetcher::end_prefetch() {
  // Prefetched once: a loop around the prefetching loop finds nothing left to prefetch.
  for (size_t k : prefetching_)
    k_.builder_.CreateStore(k_.i64(0), k_.builder_.CreateConstInBoundsGEP1_64(
                                           k_.builder_.getInt64Ty(), streams_[k].slot, 2));
  prefetching_.clear();
  prefetch_strips_ = false;
}

} // namespace tritium::cpu
