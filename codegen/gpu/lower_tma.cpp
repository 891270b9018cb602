// TMA copies (tma_create, tma_copy) and the mbarriers they complete on (mbar_init, mbar_wait).
// The pipeliner makes these ops for tensor-descriptor loads on targets with TMA; what the
// hardware does is the TargetInfo's (target_info.hpp), the shape of the copies is here.
//
// A tensor map lives in this program's part of the global scratch (one 128-byte slot per
// tma_create) and is written by thread 0, the one thread that issues copies through it.
#include "gpu/lowering.hpp"

#include <algorithm>

namespace tritium::gpu {

namespace {

constexpr int kTmaMapBytes = 128;

const SharedLayout& tile_layout(const ir::Value* v) {
  auto* s = dynamic_cast<const SharedLayout*>(v->type.layout.get());
  if (!s)
    throw Error("GPU lowering: a TMA copy into a value that is not in shared memory (internal)");
  return *s;
}

} // namespace

int TmaLowering::tma_scratch_bytes() const {
  int64_t slots = 0;
  ir::walk(const_cast<ir::Block&>(f_.entry()), [&](ir::Op& op) {
    if (op.kind == ir::OpKind::TmaCreate)
      slots = std::max(slots, op.int_attr(attr::slot) + 1);
  });
  return static_cast<int>(slots * kTmaMapBytes);
}

void TmaLowering::in_thread0(const std::function<void()>& body) {
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "thread0", s_.fn);
  auto* cont = llvm::BasicBlock::Create(ctx_, "thread0.end", s_.fn);
  b_.CreateCondBr(b_.CreateICmpEQ(s_.tid, b_.getInt32(0)), then_bb, cont);
  b_.SetInsertPoint(then_bb);
  body();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

void TmaLowering::tma_create(const ir::Op& op) {
  if (!s_.program_scratch)
    fail(op, "a tensor map without global scratch (internal)");
  const auto box = std::get<std::vector<int64_t>>(op.attrs.at(attr::box));
  AsyncOps::TmaBox tb{static_cast<int>(mem_bytes(op.operand(0)->type.elem.element_of_pointer())),
                      static_cast<int>(box.at(0)), static_cast<int>(box.at(1)),
                      static_cast<int>(op.int_attr(attr::swizzle))};
  LV* map = b_.CreateGEP(b_.getInt8Ty(), s_.program_scratch,
                         b_.getInt64(op.int_attr(attr::slot) * kTmaMapBytes));
  auto i64 = [&](int k) { return b_.CreateSExtOrTrunc(get(op.operand(k))[0], b_.getInt64Ty()); };
  LV* base = get(op.operand(0))[0];
  LV* inner = i64(1);
  LV* outer = i64(2);
  LV* stride = b_.CreateMul(i64(3), b_.getInt64(tb.elem_bytes));
  in_thread0([&] { ti_.async().tma_create(b_, map, base, inner, outer, stride, tb); });
  set(op.result(), {map});
}

// One box per block of the tile's layout: a row longer than the swizzle is cut into blocks of
// block_cols elements (SharedLayout), each a box of its own, one after the other.
void TmaLowering::tma_copy(const ir::Op& op) {
  const ir::Value* tile = op.operand(0);
  const SharedLayout& s = tile_layout(tile);
  const int fast = s.order[0];
  const int64_t cols = tile->type.shape[fast], rows = tile->type.shape[1 - fast];
  const int64_t block = s.block_cols ? std::min<int64_t>(s.block_cols, cols) : cols;
  const int64_t eb = mem_bytes(tile->type.elem);
  LV* dst = get(tile)[0];
  LV* map = get(op.operand(1))[0];
  LV* inner = get(op.operand(2))[0];
  LV* outer = get(op.operand(3))[0];
  LV* bar = get(op.operand(4))[0];
  LV* pred = get(op.operand(5))[0];
  auto* go = llvm::BasicBlock::Create(ctx_, "tma.issue", s_.fn);
  auto* cont = llvm::BasicBlock::Create(ctx_, "tma.end", s_.fn);
  b_.CreateCondBr(b_.CreateAnd(pred, b_.CreateICmpEQ(s_.tid, b_.getInt32(0))), go, cont);
  b_.SetInsertPoint(go);
  // The whole tile counts, boxes partly out of bounds too (TMA fills them with zeros).
  ti_.async().mbar_arrive_expect(b_, bar, cols * rows * eb);
  for (int64_t c = 0; c < cols; c += block) {
    LV* at = b_.CreateGEP(b_.getInt8Ty(), dst, b_.getInt32(static_cast<uint32_t>(c * rows * eb)));
    ti_.async().tma_copy(b_, at, map, b_.CreateAdd(inner, b_.getInt32(static_cast<uint32_t>(c))),
                         outer, bar);
  }
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

void TmaLowering::mbar_init(const ir::Op& op) {
  const ir::Type& t = op.operand(0)->type;
  LV* base = get(op.operand(0))[0];
  const int64_t n = t.shape[0];
  const int count = static_cast<int>(op.int_attr(attr::count)); // arrivals per phase
  in_thread0([&] {
    for (int64_t i = 0; i < n; ++i)
      ti_.async().mbar_init(
          b_, b_.CreateGEP(b_.getInt8Ty(), base, b_.getInt32(static_cast<uint32_t>(8 * i))), count);
  });
  // The inits, visible to every thread and to the copies' completions, before any use.
  ti_.async().fence_shared_for_async(b_);
  ti_.barrier(b_);
}

// Shared memory that held mbarriers may be reused (a later loop's ring or barriers, scratch)
// only once they are invalidated; every thread has passed its last wait (the drain's barrier).
void TmaLowering::mbar_inval(const ir::Op& op) {
  LV* base = get(op.operand(0))[0];
  const int64_t n = op.operand(0)->type.shape[0];
  in_thread0([&] {
    for (int64_t i = 0; i < n; ++i)
      ti_.async().mbar_inval(
          b_, b_.CreateGEP(b_.getInt8Ty(), base, b_.getInt32(static_cast<uint32_t>(8 * i))));
  });
  ti_.barrier(b_);
}

void TmaLowering::mbar_wait(const ir::Op& op) {
  ti_.async().mbar_wait(b_, get(op.operand(0))[0], get(op.operand(1))[0]);
}

} // namespace tritium::gpu
