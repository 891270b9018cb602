// tl::histogram: the bins in shared memory, one atomic add per element its owner counts, then
// each thread reads the bins its layout gives it. Triton counts the same way; the one-hot
// [n, num_bins] sum it replaces cost n x num_bins compares and (gfx942, 4096 x 256) 86 s of
// compile time with spilled SGPRs.
#include "gpu/lowering.hpp"

namespace tritium::gpu {

void CollectiveLowering::histogram(const ir::Op& op) {
  const ir::Value* x = op.operand(0);
  const ir::Value* mask = op.operands.size() > 1 ? op.operand(1) : nullptr;
  const int64_t bins = op.int_attr(attr::num_bins);
  const int threads = num_warps_ * ws_;
  auto bin_ptr = [&](LV* i) { return smem_ptr(i, 0, 4); };
  ti_.barrier(b_); // earlier readers of the scratch are done
  need_shared(bins * 4);
  for (int64_t first = 0; first < bins; first += threads) {
    LV* i = b_.CreateAdd(s_.tid, b_.getInt32(static_cast<uint32_t>(first)));
    LV* in = first + threads <= bins
                 ? nullptr
                 : b_.CreateICmpULT(i, b_.getInt32(static_cast<uint32_t>(bins)));
    guarded(
        in,
        [&]() -> LV* {
          b_.CreateStore(b_.getInt32(0), bin_ptr(i));
          return nullptr;
        },
        nullptr);
  }
  ti_.barrier(b_);
  // Every element once: replicated lanes and warps leave it to the owner.
  const LinearLayout d = dist(x);
  LV* owner = d.replica_lane_mask() || d.replica_warp_mask() ? is_owner(d) : nullptr;
  const Regs& xs = get(x);
  const Regs* ms = mask ? &get(mask) : nullptr;
  for (int r = 0; r < d.num_regs(); ++r) {
    // Out of [0, bins) is not counted: compared as a 64-bit unsigned, negatives are huge.
    LV* v = x->type.elem.is_unsigned() ? b_.CreateZExt(xs[r], b_.getInt64Ty())
                                       : b_.CreateSExt(xs[r], b_.getInt64Ty());
    LV* ok = b_.CreateICmpULT(v, b_.getInt64(static_cast<uint64_t>(bins)));
    if (ms)
      ok = b_.CreateAnd(ok, (*ms)[static_cast<size_t>(r)]);
    if (owner)
      ok = b_.CreateAnd(ok, owner);
    guarded(
        ok,
        [&]() -> LV* {
          b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, bin_ptr(b_.CreateTrunc(v, b_.getInt32Ty())),
                             b_.getInt32(1), llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic);
          return nullptr;
        },
        nullptr);
  }
  ti_.barrier(b_);
  const ir::Value* res = op.result();
  const LinearLayout dr = dist(res);
  Regs out;
  for (int i = 0; i < dr.num_regs(); ++i)
    out.push_back(b_.CreateLoad(b_.getInt32Ty(), bin_ptr(coords(dr, i)[0])));
  set(res, std::move(out));
}

} // namespace tritium::gpu
