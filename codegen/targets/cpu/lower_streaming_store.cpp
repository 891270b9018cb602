// Streaming stores. A row-wise kernel's output is written once and read by the next kernel, if
// at all; a plain store first reads each line it writes into the cache (a read for ownership),
// so storing a row costs the memory system twice its bytes. A non-temporal store writes whole
// lines past the caches and reads nothing. On the 2-core Zen 4 VM of bench/RESULTS.md a plain
// -O3 scale loop moved 25-30 GB/s with plain stores and 36-42 GB/s with non-temporal ones, and
// a row kernel that reads its row, reduces it and writes the scaled row moved 16-30 % more.
//
// When: output that the last-level cache could hold is better left in it for its reader, so a
// site streams only where the launch writes at least pid_grid[6] (range[5]) bytes through it
// (programs x block bytes x the trip counts of the loops around it; three quarters of the
// last-level cache by default, cpu_codegen.hpp). That is decided at run time, per group execution.
//
// Which lanes: the lanes that store unconditionally (a split group's leading lanes, every lane
// of an unmasked one) from the first lane whose address is 64-byte aligned, whole lines of
// them; the lanes before and after store as before. The aligned lanes' addresses are computed
// from an address LLVM can see is aligned (llvm.ptrmask), and their stores are marked, so that
// after vectorization optimize.cpp's pass can make exactly the vector stores it can prove
// aligned non-temporal (x86 has no unaligned non-temporal vector store: LLVM splits one into
// 8-byte pieces).
//
// Ordering: non-temporal stores are weakly ordered. A kernel with atomics (programs that talk
// to each other) never streams; the launchers fence each thread's stores before the launch
// ends. A program that reads what it streamed sees it (a core sees its own stores in order).
#include "lowering.hpp"

#include "optimize.hpp"

#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <bit>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpKind;

namespace {
constexpr int64_t kLine = 64; // bytes: a non-temporal store should fill whole lines
}

bool StreamingStores::may_stream(const Op& store) {
  if (has_atomics_ || store.kind != OpKind::Store || !affine_access(store))
    return false;
  DType t = store.operand(1)->type.elem;
  if (t.is_bool())
    return false;
  const int64_t size = k_.elements_.memory_bytes(t);
  const int64_t lanes = store.operand(0)->type.shape[0];
  // A few lines per program: the split loops would cost more than they save.
  return (size == 2 || size == 4 || size == 8) && lanes * size >= 4 * kLine;
}

const Op* StreamingStores::streaming_store(const std::vector<const Op*>& ops, bool flat_1d) {
  if (!flat_1d)
    return nullptr;
  const Op* store = nullptr;
  for (const Op* op : ops)
    if (op->kind == OpKind::Store) {
      if (store)
        return nullptr; // one aligned address per loop
      store = op;
    }
  return store && may_stream(*store) ? store : nullptr;
}

llvm::Value* StreamingStores::launch_streams(const Op& store) {
  auto& b = k_.builder_;
  llvm::Type* f64 = b.getDoubleTy();
  DType t = store.operand(1)->type.elem;
  const int64_t size = k_.elements_.memory_bytes(t);
  const int64_t lanes = store.operand(0)->type.shape[0];
  // In double: no product of sizes can wrap around.
  llvm::Value* programs = b.CreateMul(b.CreateMul(k_.pid(3), k_.pid(4)), k_.pid(5));
  llvm::Value* bytes = b.CreateFMul(b.CreateSIToFP(programs, f64),
                                    llvm::ConstantFP::get(f64, static_cast<double>(lanes * size)));
  for (llvm::Value* trips : k_.loop_trips_)
    bytes = b.CreateFMul(bytes, b.CreateSIToFP(trips, f64));
  return b.CreateFCmpOGE(bytes, b.CreateSIToFP(streaming_bytes_, f64));
}

void StreamingStores::store_loop(const Op* store, llvm::Value* lo, llvm::Value* hi,
                                 const std::function<void(llvm::Value*)>& body) {
  if (!store)
    return k_.loop(lo, hi, 1, body, true);
  auto& b = k_.builder_;
  DType t = store->operand(1)->type.elem;
  const int64_t size = k_.elements_.memory_bytes(t);
  llvm::Value* on = launch_streams(*store);
  ReloadLowering::Span span = k_.reloads_.access_span(*store);
  on = b.CreateAnd(on, span.exact);
  llvm::Value* addr = b.CreateAdd(span.lo, b.CreateMul(lo, k_.i64(size)));
  on = b.CreateAnd(on, b.CreateICmpEQ(b.CreateAnd(addr, k_.i64(size - 1)), k_.i64(0)));

  // [lo, start): up to the first aligned lane; [start, end): whole lines; [end, hi): the rest.
  llvm::Value* peel = b.CreateLShr(b.CreateAnd(b.CreateNeg(addr), k_.i64(kLine - 1)),
                                   k_.i64(std::countr_zero(static_cast<uint64_t>(size))));
  llvm::Value* start = b.CreateAdd(lo, peel);
  start = b.CreateSelect(b.CreateICmpSLT(start, hi), start, hi);
  llvm::Value* left = b.CreateSub(hi, start);
  llvm::Value* whole = b.CreateMul(b.CreateSDiv(left, k_.i64(kLine / size)), k_.i64(kLine / size));
  start = b.CreateSelect(on, start, hi);
  llvm::Value* count = b.CreateSelect(on, whole, k_.i64(0));
  llvm::Value* end = b.CreateAdd(start, count);

  k_.loop(lo, start, 1, body, true);
  llvm::Value* aligned =
      b.CreateIntrinsic(llvm::Intrinsic::ptrmask, {b.getPtrTy(), b.getInt64Ty()},
                        {k_.reloads_.lane_address(*store, start), k_.i64(-kLine)});
  k_.prefetch_.prefetch_offset_ = start; // prefetch shares go by lane
  k_.loop(
      k_.i64(0), count, 1,
      [&](llvm::Value* j) {
        streaming_ = {store, aligned, j};
        body(b.CreateAdd(start, j, "", true, true));
        streaming_ = {};
      },
      true);
  k_.prefetch_.prefetch_offset_ = nullptr;
  k_.loop(end, hi, 1, body, true);
}

llvm::Value* StreamingStores::streaming_pointer(const Op& store) {
  if (streaming_.store != &store)
    return nullptr;
  DType t = store.operand(1)->type.elem;
  return k_.builder_.CreateInBoundsGEP(k_.elements_.scalar_.memory_type(t), streaming_.base,
                                       streaming_.j);
}

void StreamingStores::mark_streaming(llvm::Instruction* store) {
  if (!streaming_scope_) {
    llvm::MDBuilder md(k_.ctx_);
    llvm::MDNode* domain = md.createAliasScopeDomain(kStreamingDomain);
    streaming_scope_ = llvm::MDNode::get(k_.ctx_, {md.createAliasScope("store", domain)});
  }
  store->setMetadata(llvm::LLVMContext::MD_alias_scope, streaming_scope_);
}

} // namespace tritium::cpu
