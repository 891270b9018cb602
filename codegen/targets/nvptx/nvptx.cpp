// NVPTX: the NVIDIA targets of the architecture model (gpu_ir/arch.hpp). PTX text comes from LLVM;
// the CUDA driver (or ptxas) makes the cubin. Math functions come from libdevice when the CUDA
// toolkit's libdevice.10.bc is found (linked only-needed, internalized, __nvvm_reflect resolved by
// LLVM's NVVMReflect pass); without it, from the PTX approximate instructions
// (ex2/lg2/sin/cos.approx, ~2 ulp) and the shared expansions.
#include "gpu/target_info.hpp"
#include "gpu_ir/arch.hpp"
#include "targets/nvptx/nvptx_ops.hpp"
#include "targets/nvptx/ptx_asm.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdlib>
#include <filesystem>

namespace tritium::gpu {
namespace {

std::string find_libdevice() {
  if (const char* off = std::getenv("TRITIUM_NO_LIBDEVICE"); off && *off && *off != '0')
    return {};
  if (const char* p = std::getenv("TRITIUM_LIBDEVICE"); p && *p) {
    // Named explicitly: a missing file is a mistake, not a reason to look elsewhere.
    if (!std::filesystem::is_regular_file(p))
      throw Error(fmt::format("NVPTX: TRITIUM_LIBDEVICE={} is not a file; point it at the CUDA "
                              "toolkit's nvvm/libdevice/libdevice.10.bc, or set "
                              "TRITIUM_NO_LIBDEVICE=1 to compile without it",
                              p));
    return p;
  }
  std::vector<std::string> candidates;
  for (const char* root : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* p = std::getenv(root))
      candidates.push_back(std::string(p) + "/nvvm/libdevice/libdevice.10.bc");
  candidates.push_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  candidates.push_back("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
  for (const auto& c : candidates)
    if (std::filesystem::exists(c))
      return c;
  return {};
}

// sm_89's fp8 conversions, two lanes each (PTX 7.8): f32 or f16x2 to e4m3x2 / e5m2x2 with
// .satfinite (NaN to 0x7f, past the largest finite to it: Triton's rule, dtypes.def's
// Saturate), and back to f16x2 (exact; to f32 through it, exact too). The first lane is the
// low byte or half, as a <2 x ...> bitcast lays it out. The fnuz formats have none here.
llvm::Value* fp8_pair(llvm::IRBuilder<>& b, std::array<llvm::Value*, 2> lanes, ir::DType from,
                      ir::DType to) {
  auto* i8x2 = llvm::FixedVectorType::get(b.getInt8Ty(), 2);
  auto* f16x2 = llvm::FixedVectorType::get(b.getHalfTy(), 2);
  auto pack = [&](llvm::VectorType* vt, llvm::Type* word) {
    llvm::Value* v = llvm::PoisonValue::get(vt);
    v = b.CreateInsertElement(v, lanes[0], uint64_t{0});
    return b.CreateBitCast(b.CreateInsertElement(v, lanes[1], uint64_t{1}), word);
  };
  if (to.is_storage_float()) {
    const char* f8 = ptx_type(to);
    if (!f8)
      return nullptr;
    llvm::CallInst* r;
    if (from.kind == ir::ScalarKind::F32) {
      auto* f32 = b.getFloatTy();
      auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getInt16Ty(), {f32, f32}, false),
                                      fmt::format("cvt.rn.satfinite.{}x2.f32 $0, $2, $1;", f8),
                                      "=h,f,f", false);
      r = b.CreateCall(fn, {lanes[0], lanes[1]});
    } else if (from.kind == ir::ScalarKind::F16) {
      auto* fn = llvm::InlineAsm::get(
          llvm::FunctionType::get(b.getInt16Ty(), {b.getInt32Ty()}, false),
          fmt::format("cvt.rn.satfinite.{}x2.f16x2 $0, $1;", f8), "=h,r", false);
      r = b.CreateCall(fn, {pack(f16x2, b.getInt32Ty())});
    } else {
      return nullptr;
    }
    return b.CreateBitCast(r, i8x2);
  }
  const char* f8 = from.is_storage_float() ? ptx_type(from) : nullptr;
  if (!f8 || (to.kind != ir::ScalarKind::F16 && to.kind != ir::ScalarKind::F32))
    return nullptr;
  auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getInt32Ty(), {b.getInt16Ty()}, false),
                                  fmt::format("cvt.rn.f16x2.{}x2 $0, $1;", f8), "=r,h", false);
  llvm::Value* h = b.CreateBitCast(b.CreateCall(fn, {pack(i8x2, b.getInt16Ty())}), f16x2);
  return to.kind == ir::ScalarKind::F16
             ? h
             : b.CreateFPExt(h, llvm::FixedVectorType::get(b.getFloatTy(), 2));
}

class NvptxTarget final : public TargetInfo {
public:
  explicit NvptxTarget(const GpuTarget& t) : model_(arch_of(t.arch)), arch_(model_.name) {
    if (!model_.is_nvidia())
      throw Error(fmt::format("NVPTX: '{}' is not an NVIDIA architecture", t.arch));
    tm_ = make_target_machine(triple(), arch_, fmt::format("+ptx{}", model_.ptx_version));
    libdevice_ = find_libdevice();
    matrix_ = make_nvptx_matrix(model_);
    async_ = make_nvptx_async(model_);
  }

  std::string arch() const override { return arch_; }
  std::string triple() const override { return "nvptx64-nvidia-cuda"; }
  std::string data_layout() const override {
    return tm_->createDataLayout().getStringRepresentation();
  }
  int warp_size() const override { return 32; }
  // No 8-bit registers: an unpacked byte computes in 32 bits (bfe, shr, and, cvt: w4a16 M16's
  // loop 740 -> 610 instructions) where i8 took a cvt.u16.u32 and an and 255 more each step.
  bool narrow_ints_in_i32() const override { return true; }
  // Opt-in maximum per block (cuFuncSetAttribute).
  int max_shared_bytes() const override { return model_.shared_bytes; }

  // sm_90a: warpgroup MMA from shared memory; before it (and for what wgmma cannot take),
  // mma.sync.
  MatrixUnit matrix_unit() const override { return model_.matrix.unit; }
  MatrixOps& matrix() override { return *matrix_; }
  AsyncOps& async() override { return *async_; }

  llvm::Value* sreg(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
    return b.CreateIntrinsic(id, {}, {});
  }
  llvm::Value* thread_id(llvm::IRBuilder<>& b) override {
    return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  }
  // shfl.sync.idx from lane 0, as Triton writes the warp index: ptxas then knows the value is
  // warp-uniform (bmm's wgmma descriptors were rebuilt in every lane's registers and moved
  // to uniform ones by R2UR, 4 an iteration).
  llvm::Value* warp_uniform(llvm::IRBuilder<>& b, llvm::Value* v) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {},
                             {b.getInt32(-1), v, b.getInt32(0), b.getInt32(31)});
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) override {
    static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    return sreg(b, ids[axis]);
  }
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) override {
    static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                              llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
    return sreg(b, ids[axis]);
  }
  void barrier(llvm::IRBuilder<>& b) override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  }
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                             {b.getInt32(0xffffffffu), v, b.getInt32(lane_mask), b.getInt32(0x1f)});
  }
  llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src_lane) override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {},
                             {b.getInt32(0xffffffffu), v, src_lane, b.getInt32(0x1f)});
  }
  llvm::Value* shared_memory_base(llvm::IRBuilder<>& b) override {
    llvm::Module* m = b.GetInsertBlock()->getModule();
    if (auto* g = m->getNamedGlobal("tritium_smem"))
      return g;
    // Dynamic shared memory: `extern .shared .align 16 .b8 tritium_smem[]`, sized at launch.
    auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
    auto* g = new llvm::GlobalVariable(*m, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                       "tritium_smem", nullptr, llvm::GlobalValue::NotThreadLocal,
                                       shared_address_space());
    g->setAlignment(llvm::Align(16));
    return g;
  }
  bool printf(llvm::IRBuilder<>& b, const std::string& format,
              const std::vector<llvm::Value*>& args) override {
    // CUDA's vprintf(format, packed arguments): each argument at its natural alignment.
    llvm::Module* m = b.GetInsertBlock()->getModule();
    llvm::Value* fmt_global = b.CreateGlobalString(format, "printf_format", 1, m);
    llvm::Value* fmt_generic = b.CreateAddrSpaceCast(fmt_global, b.getPtrTy());
    std::vector<llvm::Type*> tys;
    for (auto* a : args)
      tys.push_back(a->getType());
    auto* st = llvm::StructType::get(b.getContext(), tys);
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
    llvm::Value* buf = entry.CreateAlloca(st);
    for (size_t i = 0; i < args.size(); ++i)
      b.CreateStore(args[i], b.CreateStructGEP(st, buf, static_cast<unsigned>(i)));
    auto* fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false);
    b.CreateCall(m->getOrInsertFunction("vprintf", fty), {fmt_generic, buf});
    return true;
  }

  llvm::SyncScope::ID sync_scope(llvm::LLVMContext&, ir::MemScope) override {
    // LLVM 19's NVPTX backend emits system-scope atomics only; that is correct for every scope.
    return llvm::SyncScope::System;
  }

  // LLVM 19's NVPTX backend also drops the ordering: a cmpxchg acq_rel becomes a relaxed
  // atom.global.cas, so a spin lock (Triton's layer norm backward) let the next holder read
  // partial sums its SM's L1 still held from before (seen on an H200: dw off by 6x its fp16
  // bound). PTX fences restore it; acq_rel is the weakest fence that serves both sides.
  // A 16-bit move: keeps f16 <-> bf16 bitcasts from folding into one NVPTX cannot select.
  llvm::Value* opaque_bits(llvm::IRBuilder<>& b, llvm::Value* bits) override {
    if (!bits->getType()->isIntegerTy(16))
      return bits;
    auto* fn =
        llvm::InlineAsm::get(llvm::FunctionType::get(b.getInt16Ty(), {b.getInt16Ty()}, false),
                             "mov.b16 $0, $1;", "=h,h", false);
    return b.CreateCall(fn, {bits});
  }

  void atomic_fence(llvm::IRBuilder<>& b, ir::MemScope scope) override {
    const std::string text = fmt::format("fence.acq_rel.{};", ptx_scope(scope));
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), false), text,
                                    "~{memory}", true);
    b.CreateCall(fn);
  }

  // Predicated ld.global / st.global of 32, 64 or 128 bits, moved as 32-bit words; masked
  // lanes of a load keep `other`, moved in before the load. Both are marked as having side
  // effects: LLVM must not move them across barriers or other memory accesses (the assembler,
  // which sees plain loads and stores, still schedules them).
  static int words(llvm::Module& m, llvm::Type* t) {
    uint64_t bits = m.getDataLayout().getTypeSizeInBits(t);
    return bits % 32 == 0 && bits >= 32 && bits <= 128 && bits != 96 ? static_cast<int>(bits / 32)
                                                                     : 0;
  }
  static std::vector<llvm::Value*> to_words(llvm::IRBuilder<>& b, llvm::Value* v, int n) {
    llvm::Value* w = b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), n));
    std::vector<llvm::Value*> out;
    for (int i = 0; i < n; ++i)
      out.push_back(b.CreateExtractElement(w, i));
    return out;
  }

  llvm::Value* masked_load(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* ptr,
                           llvm::Value* mask, llvm::Value* other) override {
    llvm::Module& m = *b.GetInsertBlock()->getModule();
    int n = words(m, type);
    if (!n || !mask)
      return nullptr;
    // $0..$n-1: the words; $n: the address; $n+1: the predicate; $n+2…: other's words.
    std::string text, cons;
    std::vector<llvm::Value*> args = {ptr, mask};
    std::vector<llvm::Type*> arg_types = {ptr->getType(), b.getInt1Ty()};
    for (int i = 0; i < n; ++i)
      cons += "=r,";
    cons += "l,b";
    if (other) {
      for (llvm::Value* w : to_words(b, other, n)) {
        text += fmt::format("mov.b32 ${}, ${};\n\t", args.size() - 2, n + args.size());
        args.push_back(w);
        arg_types.push_back(b.getInt32Ty());
        cons += ",r";
      }
    }
    text += fmt::format("@${} ld.global{}.b32 {}, [${}];", n + 1,
                        n > 1 ? fmt::format(".v{}", n) : "", ptx_reg_list(0, n), n);
    llvm::Type* ret =
        n == 1 ? static_cast<llvm::Type*>(b.getInt32Ty())
               : llvm::StructType::get(b.getContext(), std::vector<llvm::Type*>(n, b.getInt32Ty()));
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(ret, arg_types, false), text, cons,
                                    /*hasSideEffects=*/true);
    llvm::Value* r = b.CreateCall(fn, args);
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt32Ty(), n));
    for (int i = 0; i < n; ++i)
      vec = b.CreateInsertElement(vec, n == 1 ? r : b.CreateExtractValue(r, i), i);
    return b.CreateBitCast(vec, type);
  }
  bool masked_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr,
                    llvm::Value* mask) override {
    llvm::Module& m = *b.GetInsertBlock()->getModule();
    int n = words(m, value->getType());
    if (!n || !mask)
      return false;
    // $0: the address; $1: the predicate; $2…: the words.
    std::vector<llvm::Value*> args = {ptr, mask};
    std::vector<llvm::Type*> arg_types = {ptr->getType(), b.getInt1Ty()};
    std::string cons = "l,b";
    for (llvm::Value* w : to_words(b, value, n)) {
      args.push_back(w);
      arg_types.push_back(b.getInt32Ty());
      cons += ",r";
    }
    std::string text = fmt::format("@$1 st.global{}.b32 [$0], {};",
                                   n > 1 ? fmt::format(".v{}", n) : "", ptx_reg_list(2, n));
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), arg_types, false), text,
                                    cons, /*hasSideEffects=*/true);
    b.CreateCall(fn, args);
    return true;
  }

  // red.<scope>.global.add (ptx_asm.cpp).
  bool reduce_add(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
                  ir::MemScope scope) override {
    return red_add(b, model_.sm() >= 90 && model_.ptx_version >= 81, value, ptr, mask, scope);
  }

  llvm::Value* pair(llvm::IRBuilder<>& b, ir::OpKind kind,
                    const std::vector<std::array<llvm::Value*, 2>>& lanes, ir::DType from,
                    ir::DType to) override {
    if (kind == ir::OpKind::Cast && (from.is_storage_float() || to.is_storage_float()))
      return model_.sm() >= 89 && model_.ptx_version >= 78 ? fp8_pair(b, lanes[0], from, to)
                                                           : nullptr;
    if (to.kind != ir::ScalarKind::F16 && to.kind != ir::ScalarKind::BF16)
      return nullptr;
    const bool bf16 = to.kind == ir::ScalarKind::BF16;
    auto* half_type = bf16 ? b.getBFloatTy() : b.getHalfTy();
    auto* v2 = llvm::FixedVectorType::get(half_type, 2);
    if (kind == ir::OpKind::Cast) { // (sm_80 and later, as every target here)
      auto* f32 = b.getFloatTy();
      // cvt.rn.f16x2.f32 d, a, b puts a in the upper half and b in the lower.
      auto* fn = llvm::InlineAsm::get(
          llvm::FunctionType::get(b.getInt32Ty(), {f32, f32}, false),
          bf16 ? "cvt.rn.bf16x2.f32 $0, $2, $1;" : "cvt.rn.f16x2.f32 $0, $2, $1;", "=r,f,f", false);
      return b.CreateBitCast(b.CreateCall(fn, {lanes[0][0], lanes[0][1]}), v2);
    }
    // <2 x half> arithmetic: LLVM selects the f16x2 (bf16x2 on sm_90) instructions, and
    // registers that loads and conversions deliver in pairs stay packed.
    std::vector<llvm::Value*> v;
    for (const auto& l : lanes)
      v.push_back(b.CreateInsertElement(
          b.CreateInsertElement(llvm::PoisonValue::get(v2), l[0], uint64_t{0}), l[1], uint64_t{1}));
    switch (kind) {
    case ir::OpKind::Add:
      return b.CreateFAdd(v[0], v[1]);
    case ir::OpKind::Sub:
      return b.CreateFSub(v[0], v[1]);
    case ir::OpKind::Mul:
      return b.CreateFMul(v[0], v[1]);
    case ir::OpKind::Fma:
      return b.CreateIntrinsic(llvm::Intrinsic::fma, {v2}, v);
    default:
      return nullptr;
    }
  }

  // Triton's f32 `/`: div.full.f32, within 2 ulp over the whole range, a third of the
  // instructions of div.rn.f32 (which LLVM emits for fdiv); LLVM 19 has no intrinsic for it.
  // Triton's f32 tl.sqrt: sqrt.approx.ftz.f32, one MUFU.RSQ and a multiply where sqrt.rn.f32
  // is a refinement with a slow path (in a row-wise layer norm it cost 5 of 53 registers).
  llvm::Value* approx(llvm::IRBuilder<>& b, ir::OpKind kind,
                      const std::vector<llvm::Value*>& args) override {
    if (!args[0]->getType()->isFloatTy())
      return nullptr;
    if (kind == ir::OpKind::Sqrt)
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_sqrt_approx_ftz_f, {}, {args[0]});
    auto* f32 = b.getFloatTy();
    auto* asm_fn = llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32, f32}, false),
                                        "div.full.f32 $0, $1, $2;", "=f,f,f", false);
    return b.CreateCall(asm_fn, {args[0], args[1]});
  }

  // libdevice's __nv_<fn>[f] for every math op (ops.def names them by their C function) when
  // the toolkit's libdevice is there; else the approximate instructions for f32 exp2, log2,
  // sin, cos (and exp, log through them) and the shared expansions for the rest.
  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    bool f64 = args[0]->getType()->isDoubleTy();
    if (ir::op_category(kind) == ir::OpCategory::Extern) {
      // tl::extern_elementwise: the C math function of that name from libdevice.
      const std::string& sym = op.str_attr(attr::symbol);
      if (sym == "round" && args[0]->getType()->isFloatTy())
        return round_half_away(b, args[0]);
      if (libdevice_.empty())
        throw Error(fmt::format("{}: NVPTX: the C math function '{}' comes from CUDA's libdevice, "
                                "which was not found (set TRITIUM_LIBDEVICE to libdevice.10.bc, "
                                "or CUDA_HOME)",
                                op.loc.str(), sym));
      std::string name = fmt::format("__nv_{}{}", sym, f64 ? "" : "f");
      std::vector<llvm::Type*> tys(args.size(), args[0]->getType());
      auto* fty = llvm::FunctionType::get(args[0]->getType(), tys, false);
      return b.CreateCall(b.GetInsertBlock()->getModule()->getOrInsertFunction(name, fty), args);
    }
    // Triton's f32 tl.exp ("think __expf"): ex2.approx.f32 of x * log2(e), two instructions
    // where libdevice's expf takes eleven. Relative error: ex2.approx's 2^-22, plus the
    // rounding of x * log2(e) (up to 3e-6 near |x| = 88).
    if (kind == ir::OpKind::Exp && !f64)
      return b.CreateIntrinsic(
          llvm::Intrinsic::nvvm_ex2_approx_f, {},
          {b.CreateFMul(args[0], llvm::ConstantFP::get(args[0]->getType(), 1.4426950408889634))});
    // Triton's f32 tl.math.exp2: ex2.approx.ftz.f32, one MUFU instruction. Without ftz, ptxas
    // wraps it in a range check and two scalings for subnormal results (about 2^-126 and
    // below, which become 0 here); in attention's inner loop that is a third more instructions.
    if (kind == ir::OpKind::Exp2 && !f64)
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {args[0]});
    if (!libdevice_.empty()) {
      std::string name = fmt::format("__nv_{}{}", ir::op_name(kind), f64 ? "" : "f");
      std::vector<llvm::Type*> tys(args.size(), args[0]->getType());
      auto* fty = llvm::FunctionType::get(args[0]->getType(), tys, false);
      llvm::Module* m = b.GetInsertBlock()->getModule();
      return b.CreateCall(m->getOrInsertFunction(name, fty), args);
    }
    llvm::Value* x = args[0];
    auto approx = [&](llvm::Intrinsic::ID id, llvm::Value* v) {
      return b.CreateIntrinsic(id, {}, {v});
    };
    if (!f64)
      switch (kind) {
      case ir::OpKind::Log2:
        return approx(llvm::Intrinsic::nvvm_lg2_approx_f, x);
      case ir::OpKind::Exp:
        return approx(llvm::Intrinsic::nvvm_ex2_approx_f,
                      b.CreateFMul(x, llvm::ConstantFP::get(x->getType(), 1.4426950408889634)));
      case ir::OpKind::Log:
        return b.CreateFMul(approx(llvm::Intrinsic::nvvm_lg2_approx_f, x),
                            llvm::ConstantFP::get(x->getType(), 0.6931471805599453));
      case ir::OpKind::Sin:
        return approx(llvm::Intrinsic::nvvm_sin_approx_f, x);
      case ir::OpKind::Cos:
        return approx(llvm::Intrinsic::nvvm_cos_approx_f, x);
      default:
        break;
      }
    return expand_math(b, kind, args, *this, op);
  }

  // The SM's registers, given out to warps in steps of 256 (8 a thread), and its resident
  // threads bound the blocks.
  int blocks_per_cu(int num_threads, int registers) const override {
    const int per_thread = (std::max(registers, 1) + 7) / 8 * 8;
    return std::max(1, std::min(model_.registers_per_cu / (per_thread * num_threads),
                                model_.max_threads_per_cu / num_threads));
  }

  void make_kernel(llvm::Function& f, int num_threads, int min_blocks) override {
    llvm::Module& m = *f.getParent();
    llvm::LLVMContext& ctx = m.getContext();
    auto* md = m.getOrInsertNamedMetadata("nvvm.annotations");
    auto i32 = [&](int v) {
      return llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), v));
    };
    md->addOperand(llvm::MDNode::get(
        ctx, {llvm::ConstantAsMetadata::get(&f), llvm::MDString::get(ctx, "kernel"), i32(1)}));
    md->addOperand(
        llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(&f),
                                llvm::MDString::get(ctx, "maxntidx"), i32(num_threads)}));
    if (min_blocks > 1) // PTX's .minnctapersm
      md->addOperand(
          llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(&f),
                                  llvm::MDString::get(ctx, "minctasm"), i32(min_blocks)}));
  }

  void prepare_module(llvm::Module& m) override {
    bool needed = false;
    for (auto& f : m)
      needed |= f.isDeclaration() && f.getName().starts_with("__nv_");
    if (!needed)
      return;
    link_bitcode_library(m, libdevice_, "NVPTX: libdevice");
    // Denormals are kept (no flush to zero), as the interpreter does.
    m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
    for (auto& f : m)
      if (!f.isDeclaration() && f.getName().starts_with("__nv_")) {
        f.setLinkage(llvm::GlobalValue::InternalLinkage);
        f.addFnAttr(llvm::Attribute::AlwaysInline);
      }
  }

  // NVPTX schedules in the IR's order and ptxas does not shorten lifetimes the order made long
  // (sink_to_uses.cpp); AMDGPU's scheduler weighs register pressure itself.
  // Values are completed early (sink_to_uses's complete_values) only in kernels without matrix
  // instructions: there it freed the registers of elementwise chains shared by two stores
  // (SwiGLU backward 125 -> 64 a thread, H200), but around mma and wgmma it cost ptxas
  // registers (a 128x256 GEMM 196 -> 254, attention's 64x64 D128 tiles 173 -> 204).
  void optimize(llvm::Module& m) override {
    optimize_module(m, *tm_);
    const BarrierRules barriers{llvm::Intrinsic::nvvm_barrier0, shared_address_space(),
                                asm_touches_shared};
    for (llvm::Function& f : m)
      if (!f.isDeclaration()) {
        native_float_to_int(f);
        sink_into_cold_paths(f);
        sink_to_uses(f, !uses_matrix_units(f));
        remove_idle_barriers(f, barriers);
      }
  }

  // Inline PTX stays out of shared memory when it names only global memory (the lowering's
  // predicated ld.global/st.global/atom.global) and nothing that reads or writes shared memory
  // or waits on it.
  static bool asm_touches_shared(const std::string& text) {
    for (const char* s : {"shared", "ldmatrix", "stmatrix", "cp.", "wgmma", "mbarrier", "bar.",
                          "barrier", "fence", "tensormap", "tcgen"})
      if (text.find(s) != std::string::npos)
        return true;
    return text.find(".global") == std::string::npos;
  }

  static bool uses_matrix_units(const llvm::Function& f) {
    for (const llvm::BasicBlock& bb : f)
      for (const llvm::Instruction& inst : bb) {
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
        if (!call)
          continue;
        if (const auto* ia = llvm::dyn_cast<llvm::InlineAsm>(call->getCalledOperand())) {
          const std::string& text = ia->getAsmString();
          if (text.find("wgmma") != std::string::npos || text.find("mma.sync") != std::string::npos)
            return true;
        } else if (const llvm::Function* callee = call->getCalledFunction();
                   callee && callee->getName().starts_with("llvm.nvvm.mma")) {
          return true;
        }
      }
    return false;
  }

  // With fp fusion on, the float multiplies and adds left unfused are mul.f32 and add.f32, which
  // ptxas may still fuse (Triton compiles so); with it off they are mul.rn / add.rn, which it
  // may not. LLVM chooses by the target machine's AllowFPOpFusion alone, not by each
  // instruction's contract flag. Measured on an H200 (SwiGLU backward 4096x11008, the same PTX
  // but the rounding suffixes): 155.6 -> 143.1 us, Triton 112.8.
  //
  // Without loop strength reduction: it rewrote the pipelined GEMM loops' pointer tiles (each
  // carried at the address its copy reads, carry_ahead.cpp) into one base and loop-invariant
  // 64-bit offsets, 13 64-bit adds an iteration where 8 suffice (bmm 16x1024^3). H200, the PTX
  // with and without in one harness, paired with Triton 3.6, two rounds: bmm 1.11 -> 1.02 x
  // Triton, split-K GEMM 1024x1024x32768 1.03 -> 0.98, the rest of a sample of 16 GEMM-like and
  // row kernels within 2 %.
  void emit(llvm::Module& m, GpuKernelBinary& out, bool fp_fusion) override {
    tm_->Options.AllowFPOpFusion = fp_fusion ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
    out.assembly = emit_to_string(m, *tm_, false, /*strength_reduction=*/false);
    out.stages.emplace_back("ptx", out.assembly);
  }

private:
  const Arch& model_;
  std::string arch_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::string libdevice_;
  std::unique_ptr<MatrixOps> matrix_; // nvptx_matrix.cpp
  std::unique_ptr<AsyncOps> async_;   // nvptx_async.cpp
};

} // namespace

std::unique_ptr<TargetInfo> make_nvptx_target(const GpuTarget& t) {
  return std::make_unique<NvptxTarget>(t);
}

} // namespace tritium::gpu
