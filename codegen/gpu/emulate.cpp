// The host emulation of the GPU lowering (see emulate.hpp). The TargetInfo below answers
// thread ids, barriers and shuffles with calls into this file; the kernel is JIT-compiled for
// the host and run by one OS thread per GPU thread.
#include "gpu/emulate.hpp"

#include "gpu/target_info.hpp"

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <barrier>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace tritium::gpu {
namespace {

struct Launch {
  int64_t num[3];
  int threads, warp_size;
  std::barrier<>* bar;
  std::vector<uint8_t>* smem;
  std::vector<uint32_t>* xchg;
};
Launch* g_launch = nullptr;
thread_local int t_tid = 0;
thread_local int64_t t_pid[3] = {0, 0, 0};

extern "C" {
int32_t tritium_emu_tid() {
  return t_tid;
}
int32_t tritium_emu_pid(int32_t axis) {
  return static_cast<int32_t>(t_pid[axis]);
}
int32_t tritium_emu_nprog(int32_t axis) {
  return static_cast<int32_t>(g_launch->num[axis]);
}
void tritium_emu_barrier() {
  g_launch->bar->arrive_and_wait();
}
void* tritium_emu_smem() {
  return g_launch->smem->data();
}
uint32_t tritium_emu_shfl_xor(uint32_t v, int32_t mask) {
  auto& x = *g_launch->xchg;
  int ws = g_launch->warp_size;
  x[t_tid] = v;
  g_launch->bar->arrive_and_wait();
  uint32_t r = x[(t_tid & ~(ws - 1)) | ((t_tid & (ws - 1)) ^ mask)];
  g_launch->bar->arrive_and_wait();
  return r;
}
uint32_t tritium_emu_shfl_idx(uint32_t v, int32_t src) {
  auto& x = *g_launch->xchg;
  int ws = g_launch->warp_size;
  x[t_tid] = v;
  g_launch->bar->arrive_and_wait();
  uint32_t r = x[(t_tid & ~(ws - 1)) | (src & (ws - 1))];
  g_launch->bar->arrive_and_wait();
  return r;
}
// bf16 conversions: LLVM emits libcalls for them on x86 without AVX512-BF16, and the process
// has no compiler-rt. bf16 travels in an XMM register like _Float16, hence the signatures.
_Float16 tritium_emu_truncsfbf2(float f) {
  return std::bit_cast<_Float16>(float_to_bf16_bits(f));
}
_Float16 tritium_emu_truncdfbf2(double d) {
  return std::bit_cast<_Float16>(double_to_bf16_bits(d));
}
}

class HostEmuTarget final : public TargetInfo {
public:
  HostEmuTarget(int warp_size, std::string dl) : ws_(warp_size), dl_(std::move(dl)) {}
  std::string arch() const override { return "host-emulation"; }
  std::string triple() const override { return llvm::sys::getProcessTriple(); }
  std::string data_layout() const override { return dl_; }
  int warp_size() const override { return ws_; }
  int max_shared_bytes() const override { return 1 << 30; }
  unsigned global_address_space() const override { return 0; }
  unsigned shared_address_space() const override { return 0; }

  llvm::Value* call(llvm::IRBuilder<>& b, const char* name, llvm::Type* ret,
                    std::vector<llvm::Value*> args) {
    std::vector<llvm::Type*> tys;
    for (auto* a : args)
      tys.push_back(a->getType());
    auto* m = b.GetInsertBlock()->getModule();
    return b.CreateCall(m->getOrInsertFunction(name, llvm::FunctionType::get(ret, tys, false)),
                        args);
  }
  llvm::Value* thread_id(llvm::IRBuilder<>& b) override {
    return call(b, "tritium_emu_tid", b.getInt32Ty(), {});
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) override {
    return call(b, "tritium_emu_pid", b.getInt32Ty(), {b.getInt32(axis)});
  }
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) override {
    return call(b, "tritium_emu_nprog", b.getInt32Ty(), {b.getInt32(axis)});
  }
  void barrier(llvm::IRBuilder<>& b) override { call(b, "tritium_emu_barrier", b.getVoidTy(), {}); }
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) override {
    return call(b, "tritium_emu_shfl_xor", b.getInt32Ty(), {v, b.getInt32(lane_mask)});
  }
  llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src) override {
    return call(b, "tritium_emu_shfl_idx", b.getInt32Ty(), {v, src});
  }
  llvm::Value* shared_memory_base(llvm::IRBuilder<>& b) override {
    return call(b, "tritium_emu_smem", b.getPtrTy(), {});
  }
  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    llvm::Intrinsic::ID id = llvm_math_intrinsic(kind);
    if (id == llvm::Intrinsic::not_intrinsic)
      return expand_math(b, kind, args, *this, op); // what AMDGPU uses
    if (args[0]->getType()->isDoubleTy()) // AMDGPU's (and libdevice-less NVPTX's) f64 path
      return expand_math_f64(b, kind, args[0], op);
    return b.CreateUnaryIntrinsic(id, args[0]);
  }
  bool printf(llvm::IRBuilder<>& b, const std::string& format,
              const std::vector<llvm::Value*>& args) override {
    auto* m = b.GetInsertBlock()->getModule();
    std::vector<llvm::Value*> all{b.CreateGlobalString(format, "printf_format", 0, m)};
    all.insert(all.end(), args.begin(), args.end());
    auto* fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, true);
    b.CreateCall(m->getOrInsertFunction("printf", fty), all);
    return true;
  }
  llvm::SyncScope::ID sync_scope(llvm::LLVMContext&, const std::string&) override {
    return llvm::SyncScope::System;
  }
  void make_kernel(llvm::Function&, int) override {}
  void prepare_module(llvm::Module&) override {}
  void optimize(llvm::Module&) override {}
  void emit(llvm::Module&, GpuKernelBinary&) override {}

private:
  int ws_;
  std::string dl_;
};

// void tritium_emu_entry(ptr slots): loads each parameter from its 64-bit slot and calls the
// kernel.
void add_entry(llvm::Module& m, llvm::Function& kernel) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false);
  auto* entry =
      llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "tritium_emu_entry", m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (unsigned i = 0; i < kernel.arg_size(); ++i) {
    llvm::Type* t = kernel.getArg(i)->getType();
    llvm::Value* slot =
        b.CreateLoad(b.getInt64Ty(), b.CreateConstGEP1_64(b.getInt64Ty(), entry->getArg(0), i));
    if (t->isPointerTy())
      args.push_back(b.CreateIntToPtr(slot, t));
    else if (t->isFloatingPointTy()) {
      llvm::Value* d = b.CreateBitCast(slot, b.getDoubleTy());
      args.push_back(t->isDoubleTy() ? d : b.CreateFPTrunc(d, t));
    } else
      args.push_back(b.CreateTrunc(slot, t));
  }
  b.CreateCall(&kernel, args);
  b.CreateRetVoid();
}

// One kernel compiled for emulation: the JIT that holds its code, and how to run it.
class EmulatedProgram {
public:
  EmulatedProgram(const ir::Function& f, const CompileOptions& options, int warp_size)
      : warps_(options.num_warps), ws_(warp_size) {
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit)
      throw Error("GPU emulation: cannot create a JIT: " + llvm::toString(jit.takeError()));
    jit_ = std::move(*jit);
    jit_->getExecutionSession().setErrorReporter(
        [this](llvm::Error e) { jit_errors_ += llvm::toString(std::move(e)) + "\n"; });
    auto g = prepare_gpu_ir(f, warps_, ws_, nullptr);
    ir_ = ir::print(*g);
    HostEmuTarget ti(ws_, jit_->getDataLayout().getStringRepresentation());
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto m = lower_to_llvm(*g, ti, *ctx, warps_, &shared_bytes_);
    add_entry(*m, *m->getFunction(f.name));
    {
      llvm::raw_string_ostream os(ll_);
      m->print(os, nullptr);
    }
    auto& jd = jit_->getMainJITDylib();
    llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
    llvm::orc::SymbolMap syms;
    auto def = [&](const char* name, auto* fn) {
      syms[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
    };
    def("tritium_emu_tid", &tritium_emu_tid);
    def("tritium_emu_pid", &tritium_emu_pid);
    def("tritium_emu_nprog", &tritium_emu_nprog);
    def("tritium_emu_barrier", &tritium_emu_barrier);
    def("tritium_emu_smem", &tritium_emu_smem);
    def("tritium_emu_shfl_xor", &tritium_emu_shfl_xor);
    def("tritium_emu_shfl_idx", &tritium_emu_shfl_idx);
    def("__truncsfbf2", &tritium_emu_truncsfbf2);
    def("__truncdfbf2", &tritium_emu_truncdfbf2);
    if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
      throw Error("GPU emulation: " + llvm::toString(std::move(err)));
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!gen)
      throw Error("GPU emulation: " + llvm::toString(gen.takeError()));
    jd.addGenerator(std::move(*gen));
    if (auto err = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
      throw Error("GPU emulation: " + llvm::toString(std::move(err)));
    auto sym = jit_->lookup("tritium_emu_entry");
    if (!sym)
      throw Error("GPU emulation: " + llvm::toString(sym.takeError()) + "\n" + jit_errors_);
    entry_ = sym->toPtr<void (*)(const uint64_t*)>();
  }

  void run(const LaunchGrid& grid, std::span<const ArgSlot> slots) {
    static std::mutex one_at_a_time; // the runtime hooks above are process-global
    std::lock_guard<std::mutex> lock(one_at_a_time);
    const int threads = warps_ * ws_;
    std::vector<uint8_t> smem(static_cast<size_t>(shared_bytes_) + 16);
    std::vector<uint32_t> xchg(threads);
    for (int64_t z = 0; z < grid.z; ++z)
      for (int64_t y = 0; y < grid.y; ++y)
        for (int64_t x = 0; x < grid.x; ++x) {
          std::barrier<> bar(threads);
          Launch launch{{grid.x, grid.y, grid.z}, threads, ws_, &bar, &smem, &xchg};
          g_launch = &launch;
          std::vector<std::thread> pool;
          for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
              t_tid = t;
              t_pid[0] = x;
              t_pid[1] = y;
              t_pid[2] = z;
              entry_(slots.data());
            });
          for (auto& th : pool)
            th.join();
          g_launch = nullptr;
        }
  }

  const std::string& ir() const { return ir_; }
  const std::string& ll() const { return ll_; }

private:
  int warps_, ws_;
  int shared_bytes_ = 0;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string jit_errors_, ir_, ll_;
  void (*entry_)(const uint64_t*) = nullptr;
};

// A device that runs kernels through the GPU lowering on the CPU ("gpu-emulator"), so that
// every test written against devices() also checks the GPU lowering against the interpreter.
// Never the default device (priority below the interpreter's). TRITIUM_EMULATOR_WARP=64
// emulates wave64.
class EmulatorKernel final : public CompiledKernel {
public:
  EmulatorKernel(const ir::Function& f, const CompileOptions& o, int ws)
      : name_(f.name), nparams_(f.args().size()), program_(f, o, ws) {}
  void launch(const LaunchGrid& grid, std::span<const ArgSlot> args) override {
    if (args.size() != nparams_)
      throw Error(
          fmt::format("kernel '{}': {} arguments for {} parameters", name_, args.size(), nparams_));
    program_.run(grid, args);
  }
  std::string artifact(std::string_view stage) const override {
    if (stage == "ir.opt")
      return program_.ir();
    if (stage == "ll")
      return program_.ll();
    return {};
  }

private:
  std::string name_;
  size_t nparams_;
  EmulatedProgram program_;
};

class EmulatorBackend final : public Backend {
public:
  std::string_view name() const override { return "gpu-emulator"; }
  std::string target() const override { return fmt::format("gpu-emulator-wave{}", warp_size()); }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p)
      throw Error(fmt::format("gpu-emulator: cannot allocate {} bytes", bytes));
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copy_to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_device_to_device(void* d, const void* s, size_t n) override { std::memmove(d, s, n); }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& o) override {
    // TRITIUM_EMULATOR_TARGETS=gfx90a,gfx942,gfx1100,sm_90: every kernel must also compile for
    // these real targets (what CI checks for every test kernel, without GPUs).
    if (const char* list = std::getenv("TRITIUM_EMULATOR_TARGETS"); list && *list) {
      std::string_view rest = list;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        GpuTarget t;
        t.arch = std::string(rest.substr(0, comma));
        t.keep_stages = false;
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (!t.arch.empty())
          compile_for_gpu(*f, t, o);
      }
    }
    return std::make_unique<EmulatorKernel>(*f, o, warp_size());
  }

private:
  static int warp_size() {
    const char* w = std::getenv("TRITIUM_EMULATOR_WARP");
    return w && std::string_view(w) == "64" ? 64 : 32;
  }
};

[[maybe_unused]] const bool registered = [] {
  register_backend({"gpu-emulator", -1, [](std::string*) -> std::unique_ptr<Backend> {
                      return std::make_unique<EmulatorBackend>();
                    }});
  return true;
}();

} // namespace

void emulate_gpu_kernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                        const LaunchGrid& grid, std::span<const ArgSlot> slots) {
  EmulatedProgram(f, options, warp_size).run(grid, slots);
}

} // namespace tritium::gpu
