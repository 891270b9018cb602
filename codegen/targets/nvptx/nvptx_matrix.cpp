// The NVPTX target's matrix instructions: mma.sync through LLVM's NVVM intrinsics, ldmatrix,
// stmatrix, and sm_90a's wgmma through inline PTX (NvptxTarget::matrix()).
#include "targets/nvptx/nvptx_ops.hpp"
#include "targets/nvptx/ptx_asm.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tritium::gpu {
namespace {

class NvptxMatrix final : public MatrixOps {
public:
  explicit NvptxMatrix(const Arch& model) : MatrixOps(std::string(model.name)), model_(model) {}

  // wgmma.mma_async through inline PTX (LLVM 19 has no intrinsics for it), as CUTLASS writes it.
  std::vector<llvm::Value*> mma_shared(llvm::IRBuilder<>& b, const MmaInstr& in,
                                       const SmemMatrix& a, const SmemMatrix& bm,
                                       const std::vector<llvm::Value*>& c) override {
    return wgmma(b, in, {descriptor(b, a)}, &a, bm, c);
  }
  std::vector<llvm::Value*> mma_shared_regs(llvm::IRBuilder<>& b, const MmaInstr& in,
                                            const std::vector<llvm::Value*>& a_words,
                                            const SmemMatrix& bm,
                                            const std::vector<llvm::Value*>& c) override {
    if (a_words.size() != 4)
      throw Error("NVPTX: wgmma with a in registers of the wrong shape (internal)");
    return wgmma(b, in, a_words, nullptr, bm, c);
  }
  void mma_shared_fence(llvm::IRBuilder<>& b) override {
    ptx_statement(b, "wgmma.fence.sync.aligned;");
  }
  void mma_shared_commit(llvm::IRBuilder<>& b) override {
    ptx_statement(b, "wgmma.commit_group.sync.aligned;");
  }
  // The live registers pass through the wait's inline asm as tied operands, as Triton's "wait
  // for regs": LLVM then cannot move a read of an accumulator above the wait.
  std::vector<llvm::Value*> mma_shared_wait(llvm::IRBuilder<>& b, int pending,
                                            const std::vector<llvm::Value*>& live) override {
    const std::string text = fmt::format("wgmma.wait_group.sync.aligned {};", pending);
    if (live.empty()) {
      ptx_statement(b, text);
      return live;
    }
    std::vector<llvm::Type*> types;
    std::string outs, ins;
    for (size_t i = 0; i < live.size(); ++i) {
      llvm::Type* t = live[i]->getType();
      types.push_back(t);
      const char* c = t->isFloatTy()                        ? "f"
                      : t->isDoubleTy()                     ? "d"
                      : t->isHalfTy() || t->isIntegerTy(16) ? "h"
                      : t->isIntegerTy(64)                  ? "l"
                                                            : "r";
      outs += fmt::format("{}={}", i ? "," : "", c);
      ins += fmt::format(",{}", i);
    }
    auto* st = llvm::StructType::get(b.getContext(), types);
    auto* fty = llvm::FunctionType::get(st, types, false);
    llvm::Value* r =
        b.CreateCall(llvm::InlineAsm::get(fty, text, outs + ins + ",~{memory}", true), live);
    std::vector<llvm::Value*> out;
    for (unsigned i = 0; i < live.size(); ++i)
      out.push_back(b.CreateExtractValue(r, {i}));
    return out;
  }
  // One wgmma: operands d (the accumulator registers), a (a descriptor, or four registers
  // in braces), b's descriptor, scale-d, the scales, the transposition flags (16-bit operands;
  // a's only with a in shared memory, `am`); c is tied to d.
  std::vector<llvm::Value*> wgmma(llvm::IRBuilder<>& b, const MmaInstr& in,
                                  const std::vector<llvm::Value*>& a, const SmemMatrix* am,
                                  const SmemMatrix& bm, const std::vector<llvm::Value*>& c) {
    const int regs = in.n / 2;
    if (static_cast<int>(c.size()) != regs || in.acc.kind != ir::ScalarKind::F32)
      throw Error("NVPTX: wgmma accumulator of the wrong shape (internal)");
    const int na = static_cast<int>(a.size());
    // 8-bit operands have no transposed form: both K-major (widen_dot_operands saw to it).
    const bool half = in.a.bits() == 16;
    if (!half && (!am || !am->k_major || !bm.k_major))
      throw Error("NVPTX: fp8 wgmma needs both operands K-major in shared memory (internal)");
    std::string text = fmt::format("{{\n.reg .pred p;\nsetp.ne.b32 p, ${}, 0;\n"
                                   "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} {{",
                                   regs + na + 1, in.n, in.k, ptx_type(in.a), ptx_type(in.b));
    std::string cons;
    for (int i = 0; i < regs; ++i) {
      text += fmt::format("{}${}", i ? ", " : "", i);
      cons += "=f,";
    }
    std::string a_text;
    for (int i = 0; i < na; ++i)
      a_text += fmt::format("{}${}", i ? ", " : "", regs + i);
    if (na > 1)
      a_text = "{" + a_text + "}";
    std::string trans = half ? fmt::format(", {}", bm.k_major ? 0 : 1) : "";
    if (half && am)
      trans = fmt::format(", {}{}", am->k_major ? 0 : 1, trans);
    text += fmt::format("}}, {}, ${}, p, 1, 1{};\n}}", a_text, regs + na, trans);
    cons += na > 1 ? "r,r,r,r,l,r" : "l,l,r";
    for (int i = 0; i < regs; ++i)
      cons += fmt::format(",{}", i);
    std::vector<llvm::Type*> outs(regs, b.getFloatTy());
    auto* ret = llvm::StructType::get(b.getContext(), outs);
    std::vector<llvm::Value*> args(a.begin(), a.end());
    args.push_back(descriptor(b, bm));
    args.push_back(b.getInt32(1));
    args.insert(args.end(), c.begin(), c.end());
    std::vector<llvm::Type*> arg_types;
    for (auto* v : args)
      arg_types.push_back(v->getType());
    auto* asm_fn = llvm::InlineAsm::get(llvm::FunctionType::get(ret, arg_types, false), text, cons,
                                        /*hasSideEffects=*/true);
    llvm::Value* r = b.CreateCall(asm_fn, args);
    std::vector<llvm::Value*> d;
    for (int i = 0; i < regs; ++i)
      d.push_back(b.CreateExtractValue(r, static_cast<unsigned>(i)));
    return d;
  }

  // wgmma's 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start
  // address, leading and stride byte offsets (all >> 4), and the swizzle mode in bits 62-63.
  // Built as two 32-bit halves and paired (a register pair, no instructions): only the low
  // half depends on the address.
  //
  // Shared addresses are below 2^18 (228 KiB), so the address field (addr >> 4, 14 bits)
  // needs no mask and cannot carry into the offset field: it is an add. A tile's K steps then
  // differ only by a constant, split off the address here, so that every descriptor of a tile
  // is its first plus a constant, in uniform registers (as Triton's are), not each rebuilt
  // with a shift and a bit-field extract (bmm: 20 uniform instructions an iteration).
  static llvm::Value* descriptor(llvm::IRBuilder<>& b, const SmemMatrix& m) {
    const llvm::DataLayout& dl = b.GetInsertBlock()->getModule()->getDataLayout();
    llvm::APInt offset(dl.getIndexTypeSizeInBits(m.addr->getType()), 0);
    llvm::Value* base = m.addr->stripAndAccumulateConstantOffsets(dl, offset, true);
    if (offset.getSExtValue() % 16 != 0) // a descriptor's address is 16-byte aligned
      base = m.addr, offset = 0;
    const uint32_t lbo = ((static_cast<uint32_t>(m.lbo) >> 4) & 0x3FFF) << 16;
    llvm::Value* lo =
        b.CreateAdd(b.CreateLShr(shared_u32(b, base), 4),
                    b.getInt32(lbo + static_cast<uint32_t>(offset.getSExtValue() >> 4)));
    const uint32_t mode = m.swizzle == 128 ? 1 : m.swizzle == 64 ? 2 : m.swizzle == 32 ? 3 : 0;
    const uint32_t hi = ((static_cast<uint32_t>(m.sbo) >> 4) & 0x3FFF) | mode << 30;
    // (As a vector bitcast, instcombine turns the pair back into a 64-bit zext and or.)
    auto* fty = llvm::FunctionType::get(b.getInt64Ty(), {b.getInt32Ty(), b.getInt32Ty()}, false);
    return b.CreateCall(llvm::InlineAsm::get(fty, "mov.b64 $0, {$1, $2};", "=l,r,r", false),
                        {lo, b.getInt32(hi)});
  }

  // mma.sync.aligned.m16n8kK.row.col through LLVM's NVVM intrinsics; operands packed into the
  // 32-bit registers the instruction reads (<2 x half> for f16).
  std::vector<llvm::Value*> mma(llvm::IRBuilder<>& b, const MmaInstr& in,
                                const std::vector<llvm::Value*>& a,
                                const std::vector<llvm::Value*>& bv,
                                const std::vector<llvm::Value*>& c) override {
    using ir::ScalarKind;
    if (in.a.is_storage_float())
      return mma_fp8(b, in, pack_words(b, a), pack_words(b, bv), c);
    llvm::Intrinsic::ID id;
    const bool f16_acc = in.acc.kind == ScalarKind::F16;
    if (in.tf32)
      id = llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;
    else if (in.a.kind == ScalarKind::F16)
      id = f16_acc ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f16_f16
                   : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32; // d, c types
    else if (in.a.kind == ScalarKind::BF16)
      id = llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
    else if (in.a.kind == ScalarKind::I8)
      id = llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8;
    else
      id = llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_u8;
    llvm::Function* fn = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(), id);
    std::vector<llvm::Value*> args = pack_words(b, a);
    for (llvm::Value* w : pack_words(b, bv))
      args.push_back(w);
    if (f16_acc)
      for (llvm::Value* w : pack_words(b, c))
        args.push_back(w);
    else
      args.insert(args.end(), c.begin(), c.end());
    llvm::FunctionType* fty = fn->getFunctionType();
    if (args.size() != fty->getNumParams())
      throw Error(fmt::format("NVPTX: mma takes {} operands, given {} (internal)",
                              fty->getNumParams(), args.size()));
    for (unsigned i = 0; i < args.size(); ++i)
      if (args[i]->getType() != fty->getParamType(i))
        args[i] = b.CreateBitCast(args[i], fty->getParamType(i));
    llvm::Value* r = b.CreateCall(fn, args);
    std::vector<llvm::Value*> out;
    auto* st = llvm::cast<llvm::StructType>(r->getType());
    for (unsigned i = 0; i < st->getNumElements(); ++i)
      out.push_back(b.CreateExtractValue(r, i));
    if (f16_acc)
      out = unpack_words(b, out, b.getHalfTy());
    return out;
  }

  // mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32 (sm_89+, PTX 8.4), which LLVM 19 has no
  // intrinsic for: four words of a, two of b (four fp8 each, the 8-bit integers' fragments)
  // and four f32 accumulators.
  std::vector<llvm::Value*> mma_fp8(llvm::IRBuilder<>& b, const MmaInstr& in,
                                    const std::vector<llvm::Value*>& a,
                                    const std::vector<llvm::Value*>& bv,
                                    const std::vector<llvm::Value*>& c) {
    if (a.size() != 4 || bv.size() != 2 || c.size() != 4 || in.acc.kind != ir::ScalarKind::F32 ||
        !ptx_type(in.a) || !ptx_type(in.b))
      throw Error("NVPTX: fp8 mma.sync operands of the wrong shape or type (internal)");
    const std::string text =
        fmt::format("mma.sync.aligned.m16n8k32.row.col.f32.{}.{}.f32 {}, {}, {}, {};",
                    ptx_type(in.a), ptx_type(in.b), ptx_reg_list(0, 4), ptx_reg_list(4, 4),
                    ptx_reg_list(8, 2), ptx_reg_list(10, 4));
    std::vector<llvm::Value*> args;
    for (llvm::Value* w : a)
      args.push_back(b.CreateBitCast(w, b.getInt32Ty()));
    for (llvm::Value* w : bv)
      args.push_back(b.CreateBitCast(w, b.getInt32Ty()));
    args.insert(args.end(), c.begin(), c.end());
    std::vector<llvm::Type*> types;
    for (auto* v : args)
      types.push_back(v->getType());
    auto* ret = llvm::StructType::get(b.getContext(), std::vector<llvm::Type*>(4, b.getFloatTy()));
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(ret, types, false), text,
                                    "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", false);
    llvm::Value* r = b.CreateCall(fn, args);
    std::vector<llvm::Value*> d;
    for (unsigned i = 0; i < 4; ++i)
      d.push_back(b.CreateExtractValue(r, i));
    return d;
  }

  bool has_ldmatrix() const override { return model_.has(Feature::Ldmatrix); }
  std::vector<llvm::Value*> load_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count,
                                        bool trans) override {
    using I = llvm::Intrinsic::ID;
    I id = count == 4 ? (trans ? I(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16)
                               : I(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16))
                      : (trans ? I(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16)
                               : I(llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16));
    llvm::Value* r = b.CreateIntrinsic(id, {row_ptr->getType()}, {row_ptr});
    std::vector<llvm::Value*> words;
    for (int i = 0; i < count; ++i)
      words.push_back(b.CreateExtractValue(r, static_cast<unsigned>(i)));
    return words;
  }

  bool has_stmatrix() const override { return model_.has(Feature::Stmatrix); }
  // Inline PTX: LLVM 19 has no stmatrix intrinsic. Shared pointers are 32 bits (short pointers).
  void store_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr,
                    const std::vector<llvm::Value*>& words) override {
    std::vector<llvm::Value*> args{b.CreatePtrToInt(row_ptr, b.getInt32Ty())};
    args.insert(args.end(), words.begin(), words.end());
    std::vector<llvm::Type*> types(args.size(), b.getInt32Ty());
    auto* fn =
        llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), types, false),
                             "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
                             "r,r,r,r,r,~{memory}", true);
    b.CreateCall(fn, args);
  }

private:
  const Arch& model_;
};

} // namespace

std::unique_ptr<MatrixOps> make_nvptx_matrix(const Arch& model) {
  return std::make_unique<NvptxMatrix>(model);
}

} // namespace tritium::gpu
