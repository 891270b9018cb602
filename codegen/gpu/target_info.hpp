// TargetInfo: everything the GPU lowering needs to know about a target, behind one interface
// (Triton's TargetInfoBase is the model). The lowering in lower.cpp never asks which target
// it is compiling for; codegen/targets/{nvptx,amdgpu} implement this.
#pragma once

#include "gpu/compile.hpp"

#include <tritium/ir/ir.hpp>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <functional>
#include <memory>
#include <string>

namespace tritium::gpu {

class TargetInfo {
public:
  virtual ~TargetInfo() = default;

  virtual std::string arch() const = 0;
  virtual std::string triple() const = 0;
  virtual std::string data_layout() const = 0;
  virtual int warp_size() const = 0;
  // Shared memory (LDS) one block may use.
  virtual int max_shared_bytes() const = 0;
  // Address space of global memory pointers (kernel pointer arguments) and of shared memory.
  virtual unsigned global_address_space() const { return 1; }
  virtual unsigned shared_address_space() const { return 3; }

  // Index of this thread in the block (0 .. num_threads-1), i32.
  virtual llvm::Value* thread_id(llvm::IRBuilder<>& b) = 0;
  // program_id(axis) and num_programs(axis), i32.
  virtual llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) = 0;
  virtual llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) = 0;
  // A block-wide barrier that also orders shared memory accesses.
  virtual void barrier(llvm::IRBuilder<>& b) = 0;
  // The value of `v` (i32) held by lane (this lane ^ lane_mask) of the same warp.
  virtual llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) = 0;
  // The value of `v` (i32) held by lane `src_lane` (i32, 0 .. warp size - 1) of the same warp.
  virtual llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src_lane) = 0;
  // The block's dynamic shared memory, as a pointer in the shared address space.
  virtual llvm::Value* shared_memory_base(llvm::IRBuilder<>& b) = 0;
  // A math library call or expansion of `kind` (exp, exp2, log, log2, sin, cos, tanh, erf,
  // pow) on f32 or f64 operands. Targets answer from a device library when they have one.
  virtual llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                            const ir::Op& op) = 0;

  // Global loads and stores through a uniform base pointer and non-negative 32-bit byte
  // offsets, masked without branches (AMD's buffer instructions: an out-of-range offset reads 0
  // and writes nothing). A null mask means all lanes. Targets without such instructions return
  // null / false and the lowering branches around ordinary loads and stores instead.
  virtual llvm::Value* buffer_load(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* base,
                                   llvm::Value* byte_offset, llvm::Value* mask) {
    return nullptr;
  }
  virtual bool buffer_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base,
                            llvm::Value* byte_offset, llvm::Value* mask) {
    return false;
  }

  // printf(format, args...) from one thread, args already promoted (i32/i64, double, ptr).
  // False where the target has no device printf (the lowering then reports an error).
  virtual bool printf(llvm::IRBuilder<>& b, const std::string& format,
                      const std::vector<llvm::Value*>& args) {
    return false;
  }

  // The synchronization scope of an atomic with Triton's scope name ("gpu", "cta", "sys").
  virtual llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, const std::string& scope) = 0;

  // Turns `f` into a kernel entry point launched with `num_threads` threads per block.
  virtual void make_kernel(llvm::Function& f, int num_threads) = 0;
  // Links device libraries (only what is used) and sets module-level flags, before O3.
  virtual void prepare_module(llvm::Module& m) = 0;
  // Optimizes the module (LLVM's O3 with the target's own passes).
  virtual void optimize(llvm::Module& m) = 0;
  // Emits assembly and the binary; fills out.assembly, out.binary and target stages.
  virtual void emit(llvm::Module& m, GpuKernelBinary& out) = 0;
};

std::unique_ptr<TargetInfo> make_nvptx_target(const GpuTarget& t);
std::unique_ptr<TargetInfo> make_amdgpu_target(const GpuTarget& t);

// Math expansions in terms of exp2/log2 for targets without a device library
// (math_expansions.cpp).
llvm::Value* expand_math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                         TargetInfo& ti, const ir::Op& op);

// The LLVM intrinsic for exp, exp2, log, log2, sin and cos; not_intrinsic for any other op.
llvm::Intrinsic::ID llvm_math_intrinsic(ir::OpKind kind);

// exp, exp2, log, log2, sin, cos on f64 from fma, ldexp, frexp and polynomials (within a few
// ulp; sin/cos for |x| up to about 1e9), for targets with no f64 math library.
llvm::Value* expand_math_f64(llvm::IRBuilder<>& b, ir::OpKind kind, llvm::Value* x,
                             const ir::Op& op);

// LLVM helpers for the targets (llvm_util.cpp): O3 over a module with a TargetMachine, and
// emitting assembly / object code.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm);
std::string emit_to_string(llvm::Module& m, llvm::TargetMachine& tm, bool object);
std::unique_ptr<llvm::TargetMachine>
make_target_machine(const std::string& triple, const std::string& cpu, const std::string& features);

// make_ttgir: a verified private copy of `f` with layouts, after each GPU pass in order;
// `after_pass(name, ir)` sees the IR after each (may be null).
std::unique_ptr<ir::Function>
prepare_gpu_ir(const ir::Function& f, int num_warps, int warp_size,
               const std::function<void(const std::string&, const ir::Function&)>& after_pass);

// Lowers a function whose tensors carry layouts to an LLVM module with one kernel.
// Returns the dynamic shared memory the kernel needs in *shared_bytes.
std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, TargetInfo& ti,
                                            llvm::LLVMContext& ctx, int num_warps,
                                            int* shared_bytes);

} // namespace tritium::gpu
