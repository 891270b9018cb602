// NVPTX: sm_80 / sm_90 / sm_90a. PTX text comes from LLVM; the CUDA driver (or ptxas) makes the
// cubin. Math functions come from libdevice when the CUDA toolkit's libdevice.10.bc is found
// (linked only-needed, internalized, __nvvm_reflect resolved by LLVM's NVVMReflect pass);
// without it, from the PTX approximate instructions (ex2/lg2/sin/cos.approx, ~2 ulp) and the
// shared expansions.
#include "gpu/target_info.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdlib>
#include <filesystem>

namespace tritium::gpu {
namespace {

std::string find_libdevice() {
  if (const char* off = std::getenv("TRITIUM_NO_LIBDEVICE"); off && *off && *off != '0')
    return {};
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TRITIUM_LIBDEVICE"))
    candidates.push_back(p);
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

class NvptxTarget final : public TargetInfo {
public:
  explicit NvptxTarget(const GpuTarget& t) : arch_(t.arch) {
    int sm = std::atoi(arch_.c_str() + 3);
    if (sm != 80 && sm != 86 && sm != 89 && sm != 90)
      throw Error(fmt::format("NVPTX: unsupported architecture '{}' (sm_80, sm_86, sm_89, sm_90, "
                              "sm_90a)",
                              arch_));
    // The lowest PTX ISA that knows the architecture (CUDA 11.0 for sm_80, 11.8 for sm_90).
    std::string ptx = sm >= 90 ? (arch_ == "sm_90a" ? "+ptx80" : "+ptx78") : "+ptx70";
    tm_ = make_target_machine(triple(), arch_, ptx);
    libdevice_ = find_libdevice();
  }

  std::string arch() const override { return arch_; }
  std::string triple() const override { return "nvptx64-nvidia-cuda"; }
  std::string data_layout() const override {
    return tm_->createDataLayout().getStringRepresentation();
  }
  int warp_size() const override { return 32; }
  // Opt-in maximum per block (cuFuncSetAttribute): 227 KiB on sm_90, 163 KiB on sm_80.
  int max_shared_bytes() const override {
    return arch_.rfind("sm_9", 0) == 0 ? 227 * 1024 : 163 * 1024;
  }

  llvm::Value* sreg(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
    return b.CreateIntrinsic(id, {}, {});
  }
  llvm::Value* thread_id(llvm::IRBuilder<>& b) override {
    return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
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

  llvm::SyncScope::ID sync_scope(llvm::LLVMContext&, const std::string&) override {
    // LLVM 19's NVPTX backend emits system-scope atomics only; that is correct for every scope.
    return llvm::SyncScope::System;
  }

  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    bool f64 = args[0]->getType()->isDoubleTy();
    if (!libdevice_.empty()) {
      const char* base = nullptr;
      switch (kind) {
      case ir::OpKind::Exp:
        base = "exp";
        break;
      case ir::OpKind::Exp2:
        base = "exp2";
        break;
      case ir::OpKind::Log:
        base = "log";
        break;
      case ir::OpKind::Log2:
        base = "log2";
        break;
      case ir::OpKind::Sin:
        base = "sin";
        break;
      case ir::OpKind::Cos:
        base = "cos";
        break;
      case ir::OpKind::Tanh:
        base = "tanh";
        break;
      case ir::OpKind::Erf:
        base = "erf";
        break;
      case ir::OpKind::Pow:
        base = "pow";
        break;
      default:
        break;
      }
      if (base) {
        std::string name = fmt::format("__nv_{}{}", base, f64 ? "" : "f");
        std::vector<llvm::Type*> tys(args.size(), args[0]->getType());
        auto* fty = llvm::FunctionType::get(args[0]->getType(), tys, false);
        llvm::Module* m = b.GetInsertBlock()->getModule();
        return b.CreateCall(m->getOrInsertFunction(name, fty), args);
      }
    }
    llvm::Value* x = args[0];
    if (f64 && kind != ir::OpKind::Tanh && kind != ir::OpKind::Erf && kind != ir::OpKind::Pow)
      return expand_math_f64(b, kind, x, op);
    auto approx = [&](llvm::Intrinsic::ID id, llvm::Value* v) {
      return b.CreateIntrinsic(id, {}, {v});
    };
    switch (kind) {
    case ir::OpKind::Exp2:
      return approx(llvm::Intrinsic::nvvm_ex2_approx_f, x);
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
      return expand_math(b, kind, args, *this, op);
    }
  }

  void make_kernel(llvm::Function& f, int num_threads) override {
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
  }

  void prepare_module(llvm::Module& m) override {
    bool needed = false;
    for (auto& f : m)
      needed |= f.isDeclaration() && f.getName().starts_with("__nv_");
    if (!needed)
      return;
    auto buf = llvm::MemoryBuffer::getFile(libdevice_);
    if (!buf)
      throw Error("NVPTX: cannot read libdevice at " + libdevice_);
    auto lib = llvm::parseBitcodeFile(buf.get()->getMemBufferRef(), m.getContext());
    if (!lib)
      throw Error("NVPTX: cannot parse libdevice at " + libdevice_);
    (*lib)->setTargetTriple(m.getTargetTriple());
    (*lib)->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
      throw Error("NVPTX: linking libdevice failed");
    // Denormals are kept (no flush to zero), as the interpreter does.
    m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
    for (auto& f : m)
      if (!f.isDeclaration() && f.getName().starts_with("__nv_")) {
        f.setLinkage(llvm::GlobalValue::InternalLinkage);
        f.addFnAttr(llvm::Attribute::AlwaysInline);
      }
  }

  void optimize(llvm::Module& m) override { optimize_module(m, *tm_); }

  void emit(llvm::Module& m, GpuKernelBinary& out) override {
    out.assembly = emit_to_string(m, *tm_, false);
    out.stages.emplace_back("ptx", out.assembly);
  }

private:
  std::string arch_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::string libdevice_;
};

} // namespace

std::unique_ptr<TargetInfo> make_nvptx_target(const GpuTarget& t) {
  return std::make_unique<NvptxTarget>(t);
}

} // namespace tritium::gpu
