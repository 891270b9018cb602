// Internal to the GPU lowering: the classes that turn IR with layouts into LLVM IR for one
// kernel. Every tensor value becomes the list of registers its layout gives this thread
// (gpu_ir/layout.hpp); scalars are one register, the same in every thread. Target specifics
// come only through TargetInfo.
//
// One kernel's state is a KernelState. Each op family lowers through its own object (a
// Context over that state, plus what only the family keeps): ElementwiseLowering
// (lower_elementwise.cpp), ShapeLowering (lower_shape.cpp, lower_convert.cpp), MemoryLowering
// (lower_memory.cpp), CollectiveLowering (lower_collective.cpp, lower_scan.cpp,
// lower_histogram.cpp), SharedLowering (lower_shared.cpp), TmaLowering (lower_tma.cpp),
// DotLowering (lower_dot.cpp). Lowering (lower.cpp) is the driver: the kernel function,
// dispatch over ops and structured control flow.
#pragma once

#include "gpu/target_info.hpp"
#include "gpu_ir/conversion_plan.hpp"
#include "gpu_ir/layout.hpp"
#include "passes/passes.hpp"
#include "llvm/guarded.hpp"
#include "llvm/scalar.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium::gpu {

using LV = llvm::Value;
using Regs = std::vector<LV*>;

// Shared-memory scratch is placed in 16-byte steps.
inline int64_t align16(int64_t v) {
  return (v + 15) / 16 * 16;
}

class Lowering;
class MemoryLowering;
class SharedLowering;
class DotLowering;
class ShapeLowering;

// Pointers known as (uniform base, non-negative i32 element offsets): what buffer
// instructions take.
struct BaseOffset {
  LV* base;
  Regs offsets;
  bool at_argument = false; // base is a range32 kernel argument itself
};

// What every op family of one kernel reads and writes.
struct KernelState {
  KernelState(const ir::Function& f, TargetInfo& ti, llvm::LLVMContext& ctx, int num_warps,
              bool fp_fusion)
      : f(f), ti(ti), ctx(ctx), b(ctx), num_warps(num_warps), ws(ti.warp_size()),
        fp_fusion(fp_fusion) {}

  const ir::Function& f;
  TargetInfo& ti;
  llvm::LLVMContext& ctx;
  llvm::IRBuilder<> b;
  const int num_warps, ws;
  const bool fp_fusion; // CompileOptions::enable_fp_fusion
  llvm::Module* m = nullptr;
  llvm::Function* fn = nullptr;
  LV *tid = nullptr, *lane = nullptr, *warp = nullptr;
  AxisInfoMap axis;
  std::unordered_map<const ir::Value*, Regs> vals;
  std::map<std::string, Regs> bases; // thread_base, by layout
  std::unordered_map<const ir::Value*, BaseOffset> split;
  int64_t shared_bytes = 0;
  // Shared memory: local_alloc buffers first (SharedLowering places them), then scratch for
  // conversions, reductions and FMA dots, above every buffer that is live at or after the
  // top-level op being lowered (scratch_base: an epilogue after the last loop reuses its rings).
  int64_t buffers_bytes = 0;
  std::unordered_map<const ir::Op*, int64_t> scratch_base_at; // per op
  int64_t scratch_base = 0;
  bool wgmma_in_flight = false; // a dot left wgmma groups running (drained by async_wait 0)
  // Values whose registers a wgmma group left running may still write: the carried
  // accumulator of a loop whose dot stays in flight (pipeline.cpp's deferred_wgmma), in the
  // body until the next full wait, and after the loop until the drain.
  std::vector<const ir::Value*> wgmma_live;
  LV* program_scratch = nullptr; // this program's part of the global scratch (TMA maps)
  // The families, for the few calls from one to another (set by Lowering).
  Lowering* driver = nullptr;
  MemoryLowering* memory = nullptr;
  SharedLowering* shared = nullptr;
  DotLowering* dots = nullptr;
};

// The helpers every family uses: values and their layouts, coordinates, scratch shared memory,
// shuffles, guarded code; and the scalar layer (codegen/llvm/scalar.hpp) with math through
// TargetInfo.
class Context : private scalar::Target {
public:
  explicit Context(KernelState& s)
      : s_(s), f_(s.f), ti_(s.ti), ctx_(s.ctx), b_(s.b), num_warps_(s.num_warps), ws_(s.ws) {}

  [[noreturn]] void fail(const ir::Op& op, const std::string& what) const {
    throw Error(fmt::format("{}: kernel '{}', op '{}': GPU lowering: {}", op.loc.str(), f_.name,
                            ir::op_name(op.kind), what));
  }

  // --- types and values (lower.cpp) ------------------------------------------------------
  llvm::Type* type(ir::DType t) { return scalar_.type(t); }
  // In memory, i1 is a byte.
  llvm::Type* mem_type(ir::DType t) { return t.is_bool() ? b_.getInt8Ty() : type(t); }
  static int64_t mem_bytes(ir::DType t) { return elem_bytes(t); }
  LV* to_mem(LV* v, ir::DType t) { return t.is_bool() ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  LV* from_mem(LV* v, ir::DType t) { return t.is_bool() ? b_.CreateTrunc(v, b_.getInt1Ty()) : v; }
  const Regs& get(const ir::Value* v);
  void set(const ir::Value* v, Regs r) { s_.vals[v] = std::move(r); }
  LV* cast(LV* x, ir::DType from, ir::DType to) { return scalar_.convert(x, from, to); }
  const AxisInfo& axis_info(const ir::Value* v); // lower_memory.cpp

  // --- layouts (lower.cpp) ---------------------------------------------------------------
  LinearLayout dist(const ir::Value* v) { return resolve(v->type.layout, v->type.shape); }
  int nregs(const ir::Value* v) { return v->type.is_scalar() ? 1 : dist(v).num_regs(); }
  const Regs& thread_base(const LinearLayout& d);
  // ORs into `coords` the coordinate bits that the set bits of `id` (i32) select in `bases`.
  void place_bits(Regs& coords, LV* id, const std::vector<LinearLayout::Coord>& bases);
  // The coordinates of register r (i32 each), and their row-major index.
  Regs coords(const LinearLayout& d, int r);
  LV* linear(const Regs& c, const std::vector<int64_t>& shape);
  LV* is_owner(const LinearLayout& d);

  // --- scratch shared memory (lower.cpp) -------------------------------------------------
  LV* smem_ptr(LV* index, int64_t byte_offset, int64_t elem_bytes);
  void need_shared(int64_t bytes) {
    s_.shared_bytes = std::max(s_.shared_bytes, s_.scratch_base + bytes);
  }
  int64_t to_smem(const ir::Value* v, const Regs& regs, int64_t byte_offset);
  LV* from_smem(ir::DType e, LV* index, int64_t byte_offset);

  // --- lanes (lower_collective.cpp) ------------------------------------------------------
  template <class F>
  LV* shuffle_any(LV* v, F shfl32);
  LV* shuffle_xor(LV* v, int lane_mask);
  LV* shuffle_idx(LV* v, LV* src_lane);

  // Runs `body` only where `cond` holds (null: always); returns body's value or `otherwise`.
  template <class F>
  LV* guarded(LV* cond, F body, LV* otherwise) {
    return llvm_ir::guarded(b_, cond, "g.then", body, otherwise, "g.cont");
  }

protected:
  KernelState& s_;
  // The kernel's constants and builder, under short names.
  const ir::Function& f_;
  TargetInfo& ti_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<>& b_;
  const int num_warps_, ws_;
  scalar::Emitter scalar_{b_, *this};

private:
  // scalar::Target: half / bfloat registers; math through TargetInfo::math.
  bool narrow_floats_in_f32() const override { return false; }
  bool narrow_ints_in_i32() const override { return ti_.narrow_ints_in_i32(); }
  unsigned global_address_space() const override { return ti_.global_address_space(); }
  LV* opaque_bits(LV* bits) override { return ti_.opaque_bits(b_, bits); }
  // lower_elementwise.cpp
  LV* math(ir::OpKind kind, ir::DType t, const std::vector<LV*>& args, const ir::Op& op) override;
};

// Binary, unary, compare, select, convert, math and extern ops: the scalar layer per register.
class ElementwiseLowering : public Context {
public:
  using Context::Context;
  void elementwise(const ir::Op& op);
};

// broadcast, convert_layout, trans, reshape, expand_dims, join, split, cat; and the layout
// conversions they end in (lower_convert.cpp).
class ShapeLowering : public Context {
public:
  using Context::Context;
  void broadcast(const ir::Op& op);
  void convert_layout(const ir::Op& op);
  // trans, reshape, expand_dims, join, split: the operand's registers under the layout the op
  // makes of it (linear_layouts.cpp), then converted to the result's.
  void shape_op(const ir::Op& op);
  void cat(const ir::Op& op);

private:
  Regs convert_regs(const Regs& x, const LinearLayout& from, const LinearLayout& to, ir::DType e);
  std::optional<Regs> swap_lanes(const Regs& x, const LinearLayout& from, const LinearLayout& to);
  LV* thread_offset(const std::vector<int64_t>& lane, const std::vector<int64_t>& warp);
  Regs smem_side(const ConversionPlan::Side& s, ir::DType e, const Regs* regs);
  Regs smem_matrices(const ConversionPlan::Side& s, ir::DType e, const Regs* regs);
};

// Global memory: load, store, atomics; pointers tracked as base + offsets.
class MemoryLowering : public Context {
public:
  using Context::Context;
  void track_base_offset(const ir::Op& op);
  void load(const ir::Op& op);
  void store(const ir::Op& op);
  void atomic(const ir::Op& op);
  LV* load_vector(const ir::Value* ptr, size_t r, llvm::Type* vt, LV* mask, LV* fallback, bool vol);
  int vector_width(const ir::Value* ptr, const ir::Value* mask, const LinearLayout& d,
                   ir::DType elem);

private:
  bool nonneg(const ir::Value* v);
  bool range32_argument(const ir::Value* p);
  LV* byte_offset(const BaseOffset& s, size_t r, int64_t elem_bytes);
  llvm::AtomicRMWInst::BinOp rmw_kind(const ir::Op& op, ir::DType e);

  std::unordered_map<const ir::Value*, bool> nonneg_;
};

class ScanLowering; // lower_scan.cpp

// Reductions, scans and histograms: within a thread, across lanes, across warps.
class CollectiveLowering : public Context {
  friend class ScanLowering;

public:
  using Context::Context;
  void reduce(const ir::Op& op);
  void scan(const ir::Op& op);
  void histogram(const ir::Op& op);

private:
  // An optional tuple of values: `has` is null when statically absent, else an i1.
  struct Partial {
    std::vector<LV*> v;
    LV* has = nullptr;
  };
  Partial then(const ir::Op& op, const Partial& a, const Partial& b);
  void read_partials(const ir::Op& op, const LinearLayout& d, int axis, int64_t warps,
                     int64_t out_numel, const std::vector<int64_t>& base,
                     const std::vector<LV*>& out_idx, std::vector<std::vector<LV*>>& acc);
};

// Shared-memory buffers: placement, stores, async copies and the loads a dot reads.
class SharedLowering : public Context {
public:
  using Context::Context;
  void plan_buffers();
  void local_alloc(const ir::Op& op);
  void local_store(const ir::Op& op);
  void memdesc_index(const ir::Op& op);
  void async_copy(const ir::Op& op);
  void async_commit(const ir::Op& op);
  void async_wait(const ir::Op& op);
  void local_load(const ir::Op& op);
  void store_to_shared(const ir::Op& op);
  Regs operand_regs(const ir::Value* v, int r, int n);

private:
  LV* shared_addr(LV* base, const ir::Type& tile, const Regs& coords, int64_t chunk_xor = 0);
  LV* shared_addr(LV* base, const ir::Type& tile, const LinearLayout& d, int r);
  void write_tile(const ir::Value* x, LV* base, const ir::Type& tile);
  void store_runs(const LinearLayout& d, const Regs& elems, LV* base, const ir::Type& tile,
                  const std::function<void(LV*, LV*)>& store);
  bool local_load_ldmatrix(const ir::Op& op);
  bool ldmatrix_ok(const ir::Op& op);
  Regs ldmatrix_group(const ir::Op& op, int r0, int count);
  Regs shared_run(const ir::Op& op, int r0);

  std::unordered_map<const ir::Op*, int64_t> buffer_offset_; // of each local_alloc
  // Copies waiting for their async_commit, on targets without asynchronous copies.
  struct DeferredStore {
    LV* dst;
    LV* value;
  };
  std::vector<DeferredStore> deferred_;
  // local_loads whose fragments the dot reads on demand.
  struct Lazy {
    const ir::Op* op;
    Regs regs; // filled as loaded
  };
  std::unordered_map<const ir::Value*, Lazy> lazy_;
};

// TMA copies and mbarriers.
class TmaLowering : public Context {
public:
  using Context::Context;
  int tma_scratch_bytes() const;
  void tma_create(const ir::Op& op);
  void tma_copy(const ir::Op& op);
  void mbar_init(const ir::Op& op);
  void mbar_wait(const ir::Op& op);
  void mbar_inval(const ir::Op& op);

private:
  // Runs `body` in thread 0 of the block only.
  void in_thread0(const std::function<void()>& body);
};

// dot: matrix-unit instructions (mma, wgmma, MFMA, WMMA) or FMA.
class DotLowering : public Context {
public:
  using Context::Context;
  void dot(const ir::Op& op);
  Regs wgmma_wait(Regs own);

private:
  LV* round_tf32(LV* x);
  void dot_mma(const ir::Op& op, const MmaLayout& m);
  std::vector<const ir::Op*> siblings(const ir::Op& op) const;
  void dot_wgmma(const ir::Op& op, const MmaLayout& m);
  MatrixOps::SmemMatrix smem_matrix(const ir::Value* tile, LV* base, LV* r, int64_t k, int k_dim);
  LV* fma_acc(LV* x, LV* y, LV* s, ir::DType in, ir::DType acc);
  // Dots dot_mma computed with an earlier sibling.
  std::unordered_set<const ir::Op*> lowered_;
};

// The driver: the kernel function and its arguments, dispatch over ops to the families,
// structured control flow and debugging ops.
class Lowering : public Context {
public:
  explicit Lowering(KernelState& s) : Context(s) {
    s.driver = this;
    s.memory = &memory_;
    s.shared = &shared_;
    s.dots = &dots_;
  }

  std::unique_ptr<llvm::Module> run(int* shared_bytes, int* global_scratch_bytes);
  // Applies a combine region (reduce / scan) to scalars.
  std::vector<LV*> combine(const ir::Op& op, const std::vector<LV*>& a, const std::vector<LV*>& x);

private:
  // Occupancy asked of the assembler (make_kernel's min_blocks).
  int min_blocks_per_sm();
  int streaming_trip_words();
  void block(const ir::Block& blk);
  std::vector<Regs> region(const ir::Block& blk, const std::vector<Regs>& args);
  void lower(const ir::Op& op);
  void print(const ir::Op& op);
  std::vector<llvm::PHINode*> phis_for(const std::vector<Regs>& init, llvm::BasicBlock* from);
  static std::vector<Regs> regroup(const std::vector<llvm::PHINode*>& phis,
                                   const std::vector<Regs>& like, size_t skip = 0);
  static void add_incoming(const std::vector<llvm::PHINode*>& phis, const std::vector<Regs>& vals,
                           llvm::BasicBlock* from, size_t skip = 0);
  void for_loop(const ir::Op& op);
  void if_op(const ir::Op& op);
  void while_loop(const ir::Op& op);

  ElementwiseLowering elementwise_{s_};
  ShapeLowering shapes_{s_};
  MemoryLowering memory_{s_};
  CollectiveLowering collectives_{s_};
  SharedLowering shared_{s_};
  TmaLowering tma_{s_};
  DotLowering dots_{s_};
};

} // namespace tritium::gpu
