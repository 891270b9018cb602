// The NVPTX target's copies beside the threads: cp.async groups (sm_80+), and sm_90a's TMA and
// mbarriers through inline PTX (NvptxTarget::async()).
#include "targets/nvptx/nvptx_ops.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::gpu {
namespace {

class NvptxAsync final : public AsyncOps {
public:
  explicit NvptxAsync(const Arch& model) : model_(model) {}

  void fence_shared_for_async(llvm::IRBuilder<>& b) override {
    if (model_.has(Feature::Wgmma)) // only wgmma reads through the async proxy
      ptx_statement(b, "fence.proxy.async.shared::cta;");
  }

  // TMA through inline PTX (LLVM 19 has no intrinsics for it). The map is built in global
  // memory in place: zeroed, each field set with tensormap.replace, then published to the
  // tensor-map proxy that cp.async.bulk.tensor reads it through.
  bool has_tma() const override { return model_.has(Feature::Tma); }
  void tma_create(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* base, llvm::Value* inner,
                  llvm::Value* outer, llvm::Value* outer_stride_bytes, const TmaBox& box) override {
    auto* v4 = llvm::FixedVectorType::get(b.getInt32Ty(), 4);
    for (int i = 0; i < 8; ++i)
      b.CreateAlignedStore(llvm::Constant::getNullValue(v4),
                           b.CreateGEP(b.getInt8Ty(), map, b.getInt64(16 * i)), llvm::Align(16));
    auto replace = [&](const std::string& field, const std::string& ord, llvm::Value* v) {
      const bool wide = v->getType()->isIntegerTy(64) || v->getType()->isPointerTy();
      if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) { // some fields take only immediates
        std::string text =
            fmt::format("tensormap.replace.tile.{}.global.b1024.{} [$0], {}{};", field,
                        wide ? "b64" : "b32", ord.empty() ? "" : ord + ", ", c->getSExtValue());
        auto* fty = llvm::FunctionType::get(b.getVoidTy(), {map->getType()}, false);
        b.CreateCall(llvm::InlineAsm::get(fty, text, "l,~{memory}", true), {map});
        return;
      }
      std::string text = fmt::format("tensormap.replace.tile.{}.global.b1024.{} [$0], {}$1;", field,
                                     wide ? "b64" : "b32", ord.empty() ? "" : ord + ", ");
      auto* fty = llvm::FunctionType::get(b.getVoidTy(), {map->getType(), v->getType()}, false);
      b.CreateCall(llvm::InlineAsm::get(fty, text, wide ? "l,l,~{memory}" : "l,r,~{memory}", true),
                   {map, v});
    };
    auto i32 = [&](int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); };
    auto dim = [&](llvm::Value* v) { return b.CreateTrunc(v, b.getInt32Ty()); };
    replace("global_address", "", base);
    replace("rank", "", i32(1)); // rank - 1
    replace("box_dim", "0", i32(box.box_inner));
    replace("box_dim", "1", i32(box.box_outer));
    replace("global_dim", "0", dim(inner));
    replace("global_dim", "1", dim(outer));
    // Bytes between rows, as the PTX ISA says. (Triton shifts them right by 4 for PTX ISA 8.5
    // and older, a ptxas workaround; with the 580 driver's JIT that reads rows 16 times too
    // close: measured on an H200, every TMA GEMM and attention wrong.)
    replace("global_stride", "0", outer_stride_bytes);
    replace("element_stride", "0", i32(1));
    replace("element_stride", "1", i32(1));
    // Elements as raw bits of their width (u8, u16, u32): copies do not convert.
    replace("elemtype", "", i32(box.elem_bytes == 1 ? 0 : box.elem_bytes == 2 ? 1 : 2));
    replace("interleave_layout", "", i32(0));
    replace("swizzle_mode", "",
            i32(box.swizzle == 128  ? 3
                : box.swizzle == 64 ? 2
                : box.swizzle == 32 ? 1
                                    : 0));
    replace("fill_mode", "", i32(0)); // zeros out of bounds
    ptx_statement(b, "fence.proxy.tensormap::generic.release.gpu;");
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {map->getType()}, false);
    b.CreateCall(llvm::InlineAsm::get(fty, "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;",
                                      "l,~{memory}", true),
                 {map});
  }
  void tma_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, llvm::Value* inner,
                llvm::Value* outer, llvm::Value* bar) override {
    auto* i32 = b.getInt32Ty();
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {i32, map->getType(), i32, i32, i32}, false);
    b.CreateCall(llvm::InlineAsm::get(fty,
                                      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                                      "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
                                      "r,l,r,r,r,~{memory}", true),
                 {shared_u32(b, dst), map, inner, outer, shared_u32(b, bar)});
  }
  void mbar_init(llvm::IRBuilder<>& b, llvm::Value* bar, int count) override {
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
    b.CreateCall(llvm::InlineAsm::get(fty,
                                      fmt::format("mbarrier.init.shared::cta.b64 [$0], {};", count),
                                      "r,~{memory}", true),
                 {shared_u32(b, bar)});
  }
  void mbar_arrive_expect(llvm::IRBuilder<>& b, llvm::Value* bar, int64_t bytes) override {
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
    b.CreateCall(llvm::InlineAsm::get(
                     fty,
                     fmt::format("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {};", bytes),
                     "r,~{memory}", true),
                 {shared_u32(b, bar)});
  }
  void mbar_inval(llvm::IRBuilder<>& b, llvm::Value* bar) override {
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty()}, false);
    b.CreateCall(
        llvm::InlineAsm::get(fty, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}", true),
        {shared_u32(b, bar)});
  }
  void mbar_wait(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* phase) override {
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty(), b.getInt32Ty()}, false);
    b.CreateCall(llvm::InlineAsm::get(fty,
                                      "{\n.reg .pred done;\nwait_${:uid}:\n"
                                      "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                                      "@!done bra wait_${:uid};\n}",
                                      "r,r,~{memory}", true),
                 {shared_u32(b, bar), phase});
  }
  // cp.async (sm_80+): the form with a source size reads that many bytes, 0 where masked (zero
  // fill). Inline PTX: LLVM 19 selects its intrinsic only for 64-bit shared addresses, and
  // shared pointers are 32-bit here (make_target_machine).
  bool has_async_copy() const override { return model_.has(Feature::AsyncCopy); }
  void async_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes,
                  llvm::Value* pred) override {
    if (bytes != 4 && bytes != 8 && bytes != 16)
      throw Error(fmt::format("NVPTX: cp.async of {} bytes (internal)", bytes));
    llvm::Value* n = pred ? b.CreateSelect(pred, b.getInt32(bytes), b.getInt32(0))
                          : static_cast<llvm::Value*>(b.getInt32(bytes));
    auto* i32 = b.getInt32Ty();
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {i32, src->getType(), i32}, false);
    const std::string text = fmt::format("cp.async.{}.shared.global [$0], [$1], {}, $2;",
                                         bytes == 16 ? "cg" : "ca", bytes);
    b.CreateCall(llvm::InlineAsm::get(fty, text, "r,l,r,~{memory}", true),
                 {shared_u32(b, dst), src, n});
  }
  void async_commit(llvm::IRBuilder<>& b) override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
  }
  void async_wait(llvm::IRBuilder<>& b, int pending) override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b.getInt32(pending)});
    // The copies are ordinary shared-memory writes: wgmma reads through the async proxy.
    fence_shared_for_async(b);
  }

private:
  const Arch& model_;
};

} // namespace

std::unique_ptr<AsyncOps> make_nvptx_async(const Arch& model) {
  return std::make_unique<NvptxAsync>(model);
}

} // namespace tritium::gpu
