// TargetInfo: everything the GPU lowering needs to know about a target, behind one interface
// (Triton's TargetInfoBase is the model). The lowering in lower.cpp never asks which target
// it is compiling for; codegen/targets/{nvptx,amdgpu} implement this.
#pragma once

#include "gpu/compile.hpp"
#include "gpu_ir/matrix.hpp"
#include "passes/passes.hpp"

#include <tritium/ir/ir.hpp>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <array>
#include <functional>
#include <memory>
#include <string>

namespace tritium::gpu {

// The instructions of a target's matrix unit (mma.sync, wgmma, MFMA, WMMA) and the shared-memory
// loads made for them (TargetInfo::matrix()). The defaults: no such instructions; `arch` names the
// target in the error the lowering then gets.
class MatrixOps {
public:
  explicit MatrixOps(std::string arch) : arch_(std::move(arch)) {}
  virtual ~MatrixOps() = default;

  // One matrix instruction, d = a x b + c, on this lane's fragments: `a`, `b` and `c` hold the
  // elements the DotOperand / Mma layouts give one instruction's tile, in register order (a
  // and b in instr.a's LLVM type, c in instr.acc's); returns d's elements in c's order.
  virtual std::vector<llvm::Value*> mma(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                        const std::vector<llvm::Value*>& a,
                                        const std::vector<llvm::Value*>& bv,
                                        const std::vector<llvm::Value*>& c);

  // One operand of a matrix instruction that reads shared memory (wgmma), in the hardware's
  // canonical layout: rows of `swizzle` bytes (128, 64 or 32) swizzled in 16-byte chunks, in
  // groups of eight rows `sbo` bytes apart; K-major (K the contiguous dimension), or MN-major
  // with `lbo` bytes between blocks of swizzle-byte width along M (N).
  struct SmemMatrix {
    llvm::Value* addr; // the instruction's first element, a shared-memory pointer
    int swizzle = 128;
    bool k_major = true;
    int64_t lbo = 0, sbo = 0;
  };
  // d = a x b + c for one warpgroup (Wgmma): a and b in shared memory, c and d this thread's
  // accumulator registers (the Mma layout's order). Issued asynchronously: the fence comes
  // before the first, the commit after the last of a group, and a wait before d is read.
  virtual std::vector<llvm::Value*> mma_shared(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                               const SmemMatrix& a, const SmemMatrix& bm,
                                               const std::vector<llvm::Value*>& c);
  // The same with a in registers: `a_words` are this thread's four 32-bit words of its warp's
  // 16 rows x 16 K (mma.sync's m16n8k16 a fragment: rows +0/+8, K +0/+8, pairs of K per word).
  virtual std::vector<llvm::Value*> mma_shared_regs(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                                    const std::vector<llvm::Value*>& a_words,
                                                    const SmemMatrix& bm,
                                                    const std::vector<llvm::Value*>& c);
  virtual void mma_shared_fence(llvm::IRBuilder<>& b) {}
  virtual void mma_shared_commit(llvm::IRBuilder<>& b) {}
  // Waits until at most `pending` groups are in flight. `live` are registers that groups may
  // still be writing (accumulators); the wait returns them as it leaves them, so that nothing
  // reads them before it.
  virtual std::vector<llvm::Value*> mma_shared_wait(llvm::IRBuilder<>& b, int pending,
                                                    const std::vector<llvm::Value*>& live) {
    return live;
  }
  // ldmatrix: `count` (2 or 4) 8x8 matrices of 16-bit elements from shared memory, lane l
  // giving the address of row l % 8 of matrix l / 8; returns `count` 32-bit words: word j holds
  // row lane / 4, columns 2 * (lane % 4) and + 1 of matrix j (transposed: rows 2 * (lane % 4)
  // and + 1 of column lane / 4).
  virtual bool has_ldmatrix() const { return false; }
  virtual std::vector<llvm::Value*> load_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr,
                                                int count, bool trans) {
    return {};
  }
  // stmatrix: load_matrix's inverse, untransposed: word j of each lane goes to matrix j (four),
  // lane l giving the address of row l % 8 of matrix l / 8.
  virtual bool has_stmatrix() const { return false; }
  virtual void store_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr,
                            const std::vector<llvm::Value*>& words) {}

protected:
  std::string arch_;
};

// Copies that run beside the threads (TargetInfo::async()): cp.async groups, TMA and its
// mbarriers. The defaults: none (copies are loads and stores of the threads).
class AsyncOps {
public:
  virtual ~AsyncOps() = default;

  // Makes this thread's ordinary shared-memory stores visible to the asynchronous readers
  // (wgmma); before the barrier that publishes them.
  virtual void fence_shared_for_async(llvm::IRBuilder<>& b) {}

  // Asynchronous copies from global to shared memory (cp.async). Without them the lowering
  // loads into registers where the copy is issued and stores to shared memory at the commit.
  virtual bool has_async_copy() const { return false; }
  // Copies `bytes` (4, 8 or 16) from `src` (global) to `dst` (shared); zeros where `pred` is
  // false (null: always copies).
  virtual void async_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes,
                          llvm::Value* pred) {}
  virtual void async_commit(llvm::IRBuilder<>& b) {}
  // Waits until at most `pending` committed groups of this thread are in flight.
  virtual void async_wait(llvm::IRBuilder<>& b, int pending) {}
  // TMA (the Tensor Memory Accelerator, sm_90a): a tensor map describes a 2-D global tensor
  // and the box one copy moves; a copy lands in shared memory in the hardware's swizzle of
  // `swizzle` bytes (the 128-, 64- and 32-byte patterns wgmma reads) and completes on an
  // mbarrier, counting its bytes. Out-of-bounds parts of a box read zeros.
  virtual bool has_tma() const { return false; }
  // Writes, from this thread, the tensor map at `map` (a global pointer, 128 bytes, 128-byte
  // aligned) of the tensor at `base` (global) with elements of `elem_bytes`: `inner` x `outer`
  // elements (i64), the outer stride `outer_stride_bytes` (i64), boxes of box_inner x box_outer;
  // the map is ready for this thread's copies after it returns.
  struct TmaBox {
    int elem_bytes, box_inner, box_outer, swizzle;
  };
  virtual void tma_create(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* base,
                          llvm::Value* inner, llvm::Value* outer, llvm::Value* outer_stride_bytes,
                          const TmaBox& box) {}
  // Copies the box at (inner, outer) (i32 element coordinates) to `dst` (shared, 1024-byte
  // aligned) and completes its bytes on the mbarrier `bar` (shared). One thread issues it.
  virtual void tma_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map,
                        llvm::Value* inner, llvm::Value* outer, llvm::Value* bar) {}
  // mbarriers (8 bytes of shared memory each): init to expect `count` arrivals (one thread;
  // made visible to the other threads and to TMA by the barrier after); one arrival that also
  // expects `bytes` of copies; waiting (every thread) until the phase of parity `phase` (i32,
  // 0 or 1) has completed.
  virtual void mbar_init(llvm::IRBuilder<>& b, llvm::Value* bar, int count) {}
  virtual void mbar_arrive_expect(llvm::IRBuilder<>& b, llvm::Value* bar, int64_t bytes) {}
  virtual void mbar_wait(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* phase) {}
  // After the last use (one thread): the 8 bytes are ordinary shared memory again.
  virtual void mbar_inval(llvm::IRBuilder<>& b, llvm::Value* bar) {}
};

class TargetInfo {
public:
  virtual ~TargetInfo() = default;

  virtual std::string arch() const = 0;
  virtual std::string triple() const = 0;
  virtual std::string data_layout() const = 0;
  virtual int warp_size() const = 0;
  // Shared memory (LDS) one block may use.
  virtual int max_shared_bytes() const = 0;
  // 8-bit integer arithmetic on 32-bit registers (scalar::Target::narrow_ints_in_i32): where the
  // target has no 8-bit registers and LLVM's legalization masks each i8 step in 16 bits
  // (NVPTX). AMD keeps i8: its byte selects (SDWA) do better (w4a16 M16 gfx942: 351 loop
  // instructions against 383 in i32).
  virtual bool narrow_ints_in_i32() const { return false; }
  // Address space of global memory pointers (kernel pointer arguments) and of shared memory.
  virtual unsigned global_address_space() const { return 1; }
  virtual unsigned shared_address_space() const { return 3; }

  // The matrix instructions dot can use (None: dot runs on FMA units).
  virtual MatrixUnit matrix_unit() const { return MatrixUnit::None; }
  // Keeps the instruction scheduler from moving instructions across this point (AMDGPU's
  // sched_barrier), where overlapping more work than written would cost registers.
  virtual void schedule_barrier(llvm::IRBuilder<>& b) {}

  // The matrix unit's instructions and the copies that run beside the threads, each a small
  // object of the target's (the defaults: none of either).
  virtual MatrixOps& matrix() = 0;
  virtual AsyncOps& async() = 0;

  // Index of this thread in the block (0 .. num_threads-1), i32.
  virtual llvm::Value* thread_id(llvm::IRBuilder<>& b) = 0;
  // `v`, the same in every lane of a warp (the warp's index), marked so for the backend: what
  // is computed from it (wgmma's descriptors) then stays in the uniform datapath (NVIDIA's
  // uniform registers) instead of every lane's. AMD keeps `v` (no wgmma; v_readfirstlane on
  // the warp index everywhere split what LLVM had folded into one thread-index product:
  // gfx942's vector add 29 -> 33 instructions).
  virtual llvm::Value* warp_uniform(llvm::IRBuilder<>&, llvm::Value* v) { return v; }
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

  // Two lanes of `kind` computed by one instruction, as a <2 x register type of `to`>: operand
  // k's lanes are lanes[k] (registers of `from`). Cast: two f32 values rounded to nearest-even
  // f16/bf16 (NVIDIA's cvt.rn.f16x2.f32), and fp8 to and from f32 and f16 with exactly the
  // rounding of narrow_float.hpp (cvt.rn.satfinite.e4m3x2.f32, v_cvt_pk_fp8_f32); Add, Sub,
  // Mul, Fma on f16/bf16: 16-bit arithmetic rounded per lane as the scalar op is (mul.f16x2).
  // Null where the target has no such instruction, or forms them itself (AMD's SLP
  // vectorizer): the lowering then computes lane by lane.
  virtual llvm::Value* pair(llvm::IRBuilder<>& b, ir::OpKind kind,
                            const std::vector<std::array<llvm::Value*, 2>>& lanes, ir::DType from,
                            ir::DType to) {
    return nullptr;
  }

  // x / y (kind Div) or sqrt(x) (Sqrt) on f32 where the program allows an approximate result
  // (Triton's `/` and tl.sqrt; div_rn / sqrt_rn ask for the correctly rounded ones); null where
  // the target has nothing faster than LLVM's fdiv and llvm.sqrt.
  virtual llvm::Value* approx(llvm::IRBuilder<>& b, ir::OpKind kind,
                              const std::vector<llvm::Value*>& args) {
    return nullptr;
  }

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

  // A global load of `type` through `ptr` where `mask` (i1) holds, else `other` (of `type`),
  // and a global store where `mask` holds, each one predicated instruction
  // (NVIDIA's @p ld / @p st, as Triton emits them): no branch splits the kernel into blocks
  // that the assembler schedules one by one. Null / false where the target has none (or not
  // for this type); the lowering then branches around an ordinary load or store.
  virtual llvm::Value* masked_load(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* ptr,
                                   llvm::Value* mask, llvm::Value* other) {
    return nullptr;
  }
  virtual bool masked_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr,
                            llvm::Value* mask) {
    return false;
  }

  // `value` (a scalar or a vector of consecutive elements) added into global memory at `ptr`
  // where `mask` (i1, null: always) holds, relaxed at `scope`, with no old value read back
  // (NVIDIA's red.global.add: on sm_90 four f32 or eight f16 in one instruction, as Triton
  // emits for an atomic_add whose result nobody reads). False where the target has no such
  // instruction for this type and width; the lowering then branches around atomicrmw.
  virtual bool reduce_add(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr,
                          llvm::Value* mask, ir::MemScope scope) {
    return false;
  }

  // printf(format, args...) from one thread, args already promoted (i32/i64, double, ptr).
  // False where the target has no device printf (the lowering then reports an error).
  virtual bool printf(llvm::IRBuilder<>& b, const std::string& format,
                      const std::vector<llvm::Value*>& args) {
    return false;
  }

  // The synchronization scope of an atomic with Triton's scope (gpu, cta, sys).
  virtual llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, ir::MemScope scope) = 0;
  // A fence that gives an atomic its ordering where the backend drops the ordering of the
  // atomic itself: called before a release (or acq_rel) atomic and after an acquire (or
  // acq_rel) one. Nothing where the atomic instruction carries its ordering.
  virtual void atomic_fence(llvm::IRBuilder<>& b, ir::MemScope scope) {}
  // `bits` through an instruction the optimizer does not look into (scalar::Target).
  virtual llvm::Value* opaque_bits(llvm::IRBuilder<>& b, llvm::Value* bits) { return bits; }

  // How many blocks of `num_threads` threads fit on one multiprocessor when each thread keeps
  // `registers` registers (threads and the register file bound it); 1 where the target has
  // no use for make_kernel's min_blocks.
  virtual int blocks_per_cu(int num_threads, int registers) const { return 1; }
  // Turns `f` into a kernel entry point launched with `num_threads` threads per block, asking
  // the assembler to fit `min_blocks` blocks per multiprocessor (registers) when above 1.
  virtual void make_kernel(llvm::Function& f, int num_threads, int min_blocks) = 0;
  // Links device libraries (only what is used) and sets module-level flags, before O3.
  virtual void prepare_module(llvm::Module& m) = 0;
  // Optimizes the module (LLVM's O3 with the target's own passes).
  virtual void optimize(llvm::Module& m) = 0;
  // Emits assembly and the binary; fills out.assembly, out.binary and target stages.
  // fp_fusion: CompileOptions::enable_fp_fusion (the assembler may fuse what is left).
  virtual void emit(llvm::Module& m, GpuKernelBinary& out, bool fp_fusion) = 0;
};

std::unique_ptr<TargetInfo> make_nvptx_target(const GpuTarget& t);
std::unique_ptr<TargetInfo> make_amdgpu_target(const GpuTarget& t);

// Every math op (ops.def's Math category) on f32 or f64 for targets without a device library
// (math_expansions.cpp): LLVM's intrinsics for exp, exp2, log, log2, sin and cos on f32, our
// f64 expansions of those, and the rest built from them. A switch over ir::MathOp without a
// default: a new math op without an expansion does not compile.
llvm::Value* expand_math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                         TargetInfo& ti, const ir::Op& op);

// The LLVM intrinsic for exp, exp2, log, log2, sin and cos; not_intrinsic for any other op.
llvm::Intrinsic::ID llvm_math_intrinsic(ir::OpKind kind);

// exp, exp2, log, log2, sin, cos on f64 from fma, ldexp, frexp and polynomials (within a few
// ulp; sin/cos for |x| up to about 1e9), for targets with no f64 math library.
llvm::Value* expand_math_f64(llvm::IRBuilder<>& b, ir::OpKind kind, llvm::Value* x,
                             const ir::Op& op);

// Matrix fragments as the instructions take them (llvm_util.cpp): elements of 8, 16 or 32 bits
// packed into 32-bit words, the first element in the low bits, and back.
std::vector<llvm::Value*> pack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& elems);
std::vector<llvm::Value*> unpack_words(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& words,
                                       llvm::Type* elem);

// LLVM helpers for the targets (llvm_util.cpp): O3 over a module with a TargetMachine (and the
// SLP vectorizer where `slp`), and
// emitting assembly / object code.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, bool slp = false);
// Each block reordered so that a pure value is computed right before its first use, memory
// and side-effecting instructions kept in place (sink_to_uses.cpp): for back ends that keep
// the IR's order, where the lowering's op-by-op order keeps a whole tile's intermediates live.
// With complete_values, a pure value that frees more registers than it takes is computed as
// soon as what it needs is.
void sink_to_uses(llvm::Function& f, bool complete_values);
// Pure values that only blocks behind an unlikely branch use are recomputed there, one copy a
// block, instead of kept live across the likely path (sink_into_cold_paths.cpp).
void sink_into_cold_paths(llvm::Function& f);

// A float multiply whose only user is an accumulation (an add or subtract of a loop-carried
// value), both allowing contraction, becomes llvm.fmuladd with it before LLVM's vectorizers
// run, which would otherwise pack the add with unrelated adds (contract_mul_add.cpp).
void contract_mul_add(llvm::Function& f);
// A narrowing conversion (trunc, fptrunc of at most 32 bits) whose only user is a phi moves
// past the phi's join, next to the conversion's uses (sink_casts_past_joins.cpp): for targets
// where a narrow value takes a register as wide as the unconverted one.
void sink_casts_past_joins(llvm::Function& f);
// The target's block-wide barrier (an intrinsic) and what touches its shared memory.
struct BarrierRules {
  unsigned barrier;      // llvm::Intrinsic::ID
  unsigned shared_space; // address space of shared memory (generic pointers count as it too)
  // Whether inline assembly with memory effects, of this text, may access shared memory.
  std::function<bool(const std::string&)> asm_touches_shared;
};
// Removes barriers that no shared memory access reaches since the kernel's entry or the
// barrier before (remove_idle_barriers.cpp); those keep_barriers tagged stay.
void remove_idle_barriers(llvm::Function& f, const BarrierRules& rules);
// The target's barrier where it orders global memory too (tl::debug_barrier): tagged so that
// remove_idle_barriers keeps it.
void ordering_barrier(TargetInfo& ti, llvm::IRBuilder<>& b);
// Links into `m` the functions it declares and the bitcode library at `path` (libdevice,
// ocml) defines, and what they call; the library is read lazily, so that only those are
// parsed. `what` names the library in errors.
void link_bitcode_library(llvm::Module& m, const std::string& path, std::string_view what);
// `strength_reduction`: whether LLVM's loop strength reduction runs in the code generator.
std::string emit_to_string(llvm::Module& m, llvm::TargetMachine& tm, bool object,
                           bool strength_reduction = true);
std::unique_ptr<llvm::TargetMachine>
make_target_machine(const std::string& triple, const std::string& cpu, const std::string& features);

// Lowers a function whose tensors carry layouts to an LLVM module with one kernel.
// Returns the dynamic shared memory the kernel needs in *shared_bytes, and in
// *global_scratch_bytes (when given) the global scratch per program (compile.hpp: then the
// kernel takes its pointer as one more, last parameter).
// fp_fusion: CompileOptions::enable_fp_fusion.
std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, TargetInfo& ti,
                                            llvm::LLVMContext& ctx, int num_warps, bool fp_fusion,
                                            int* shared_bytes, int* global_scratch_bytes = nullptr);

// make_ttgir + make_llir, what every GPU target's compile shares (compile_for_gpu for NVPTX and
// AMDGPU, the gpu-emulator's JIT): the GPU passes over a verified private copy of `f` that
// records `module` (prepare_gpu_ir; `after_pass` sees each pass's IR, may be null), then the
// lowering through `ti` into `ctx`.
struct LoweredKernel {
  std::unique_ptr<ir::Function> ir; // after the passes: what was lowered
  std::unique_ptr<llvm::Module> module;
  int shared_bytes = 0, global_scratch_bytes = 0;
};
LoweredKernel
lower_kernel(const ir::Function& f, TargetInfo& ti, const GpuFeatures& features,
             const ir::ModuleAttrs& module, llvm::LLVMContext& ctx, bool fp_fusion,
             const std::function<void(const std::string&, const ir::Function&)>& after_pass);

} // namespace tritium::gpu
