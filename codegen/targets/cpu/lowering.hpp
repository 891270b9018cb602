// Internal to the CPU backend: the state shared by the files that lower tritium IR to LLVM IR.
//
// Representation. A scalar (rank-0) IR value is one LLVM SSA value. A tensor is a *view*: a
// base pointer into the per-thread scratch arena plus compile-time shape, strides and offset.
// Shape ops (broadcast, expand_dims, trans, split, reshape of contiguous data) only make new
// views. Elementwise ops (and loads, stores, splats, aranges) of one shape are collected into
// a *fusion group* and emitted as one loop nest whose body works on one element at a time;
// only values used outside the group get a scratch buffer. LLVM's loop vectorizer turns those
// loops into SIMD code. Collectives (reduce, scan, dot) and atomics get loops of their own.
//
// Element representation in registers: i1..i64 and unsigned kinds as LLVM integers of their
// width; f32 and f64 as float and double; f16 and bf16 as a float holding an exactly
// representable value (they are only 16 bits wide in user memory).
#pragma once

#include "runtime_abi.hpp"
#include "llvm/scalar.hpp"

#include <tritium/ir/ir.hpp>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium::cpu {

struct CpuTarget;

// The signature of every compiled kernel:
//   void kernel(const uint64_t* args,
//               const int64_t* pid_and_grid /*px,py,pz,gx,gy,gz,streaming (cpu_codegen.hpp)*/,
//               char* scratch, void* launch_state)
using KernelFn = void (*)(const uint64_t*, const int64_t*, char*, void*);

struct View {
  llvm::Value* base = nullptr; // element pointer (scratch or a carried buffer)
  llvm::Type* ty = nullptr;    // element type in scratch
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  int root = -1; // id of the scratch buffer it points into (for aliasing decisions)
};

struct Lowered {
  llvm::Value* scalar = nullptr; // rank 0
  View view;                     // rank >= 1
};

// Contiguous in row-major order, ignoring dimensions of size 1 (their stride is never used).
bool contiguous(const View& v);
inline std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}
inline int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
inline bool is_rank0(const ir::Value* v) {
  return v->type.is_scalar();
}
// Whether lower_op puts `op` into a fusion group.
bool fusible(const ir::Op& op);
// A rank-1 load or store at `base + arange [+ s]`: access_span bounds its addresses.
bool affine_access(const ir::Op& access);

class KernelLowering;
class CollectiveLowering; // lower_collective.cpp
class GroupLowering;      // lower_group.cpp

// Element semantics: codegen/llvm/scalar.hpp with the CPU's choices (lower_scalar.cpp): f16 and
// bf16 in f32 registers, math in double through the C library or vector variants.
class ElementLowering : private scalar::Target {
public:
  explicit ElementLowering(KernelLowering& k, llvm::IRBuilder<>& b) : k_(k), scalar_(b, *this) {}

  llvm::Type* reg_type(ir::DType t) { return scalar_.type(t); } // in registers
  llvm::Type* scratch_type(ir::DType t);                        // in scratch buffers (i1: a byte)
  llvm::Value* to_scratch(llvm::Value* v, ir::DType t);
  llvm::Value* from_scratch(llvm::Value* v, ir::DType t);
  llvm::Value* load_user(llvm::Value* ptr, ir::DType t); // from user memory
  void store_user(llvm::Value* ptr, llvm::Value* v, ir::DType t);
  int64_t memory_bytes(ir::DType t); // an element's size in user memory
  // One element of an elementwise op (ir::is_elementwise).
  llvm::Value* elementwise(const ir::Op& op, const std::vector<llvm::Value*>& args);
  llvm::FunctionCallee libm(const char* name, int args); // double name(double...)

private:
  // scalar::Target
  bool narrow_floats_in_f32() const override { return true; }
  unsigned global_address_space() const override { return 0; }
  llvm::Value* math(ir::OpKind kind, ir::DType t, const std::vector<llvm::Value*>& args,
                    const ir::Op& op) override;
  void add_vector_variants(llvm::CallInst* call);
  llvm::Value* exp_f32(llvm::Value* x, bool base2 = false); // e^x, or 2^x

  KernelLowering& k_;

public:
  scalar::Emitter scalar_;
};

// Structured control flow (lower_control.cpp): for, if, while, and combine regions.
class ControlLowering {
public:
  explicit ControlLowering(KernelLowering& k) : k_(k) {}
  void lower_for(const ir::Op& op);
  void lower_if(const ir::Op& op);
  void lower_while(const ir::Op& op);
  llvm::Value* loop_bound(llvm::Value* v, ir::DType t); // a `for` bound or step in i64
  // ub - lb in the direction of the step (negated for a negative step), and |step|: the loop
  // runs ceil(span / stride) trips where span > 0, none otherwise.
  struct LoopSpan {
    llvm::Value *span, *stride;
  };
  LoopSpan loop_span(llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
  // Applies a scalar region (a combine function) to arguments; returns its yielded values.
  std::vector<llvm::Value*> inline_region(const ir::Block& b,
                                          const std::vector<llvm::Value*>& args);

private:
  // Copies the yielded tensors into carried buffers, through a temporary where they alias.
  void yield_into(const std::vector<const ir::Value*>& yielded, const std::vector<View>& dst,
                  const std::unordered_set<int>& clobbered_roots);

  KernelLowering& k_;
};

// Fusion groups (lower_fusion.cpp): which ops join the pending group, and the per-element
// recomputation (rematerialization) of cheap values inside a group's loop.
class FusionLowering {
public:
  explicit FusionLowering(KernelLowering& k) : k_(k) {}
  void fuse(const ir::Op& op);
  bool rematerializable(const ir::Value* v);
  bool division_leaf(const ir::Value* v);
  llvm::Value* remat(const ir::Value* v, const std::vector<llvm::Value*>& idx, bool same_index,
                     std::unordered_map<const ir::Value*, llvm::Value*>& in_group);
  // Whether an op reads `v` from a buffer (see lower_fusion.cpp).
  bool read_from_buffer(const ir::Value* v);
  llvm::Value* group_element(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                             llvm::Value* flat,
                             std::unordered_map<const ir::Value*, llvm::Value*>& in_group);
  llvm::Value* all_masks_off_from(const std::vector<const ir::Value*>& masks, int64_t size);
  llvm::Value* masked_lanes_needed(const std::vector<const ir::Op*>& ops,
                                   const std::vector<const ir::Value*>& masks, bool only_stores,
                                   int64_t size);
  llvm::Value* leading_true_lanes(const std::vector<const ir::Value*>& masks, int64_t n);
  llvm::Value* prefix_lanes(const ir::Value* mask, int64_t size, llvm::Value** exact = nullptr);
  // The loop-carried buffer `r` may be written to in place by its group (see flush).
  const View* carried_in_place(const ir::Value* r, const std::unordered_set<const ir::Op*>& group);
  // Masks whose value every lane of the loop being emitted knows (the leading lanes where all
  // masks hold, the lanes past them all): a `where` on such a mask folds away.
  std::optional<bool> known_mask(const ir::Value* v); // also a mask computed the same way
  std::unordered_map<const ir::Value*, bool> known_masks_;

  // Carried tensors that start as a constant (KernelLowering::LazyInit).
  bool lazy_init_slot(const ir::Op& loop, size_t slot) const;
  // Where `cond` holds: every element of the contiguous buffer `dst` becomes `value`.
  void fill_if(llvm::Value* cond, const View& dst, llvm::Value* value, ir::DType t);
  llvm::Value* splat_value(const ir::Value* v); // the element of a splat or tensor constant

private:
  KernelLowering& k_;
  std::unordered_map<const ir::Value*, int64_t> remat_; // tree size, -1: not
};

// Reloaded rows (lower_reload.cpp): a 1-D tensor computed by cheap elementwise ops from loads
// is re-issued from memory where a later group or reduction reads it, instead of being written
// to a scratch buffer.
class ReloadLowering {
public:
  explicit ReloadLowering(KernelLowering& k) : k_(k) {}
  bool try_reload(const ir::Value* v, const std::unordered_set<const ir::Op*>& group);
  bool is_reloaded(const ir::Value* v) const { return reloaded_.count(v) != 0; }
  // Element i of a reloaded value. masks_true: every mask of its loads holds at i.
  // from_snapshots: the loads whose rows were copied before an overlapping store read the copy.
  llvm::Value* reload(const ir::Value* v, llvm::Value* i, bool masks_true, bool from_snapshots,
                      std::unordered_map<const ir::Value*, llvm::Value*>& in);
  // Whether reloaded value v is the same in every lane where each mask in `off` is off (its
  // loads read their `other` there): it reads no lane index and no memory per lane.
  bool same_where_masks_off(const ir::Value* v, const std::vector<const ir::Value*>& off) const;
  // The loads that reloaded values re-issue, each once.
  std::vector<const ir::Op*> reloaded_loads(const std::vector<const ir::Value*>& values);
  // Whether readers of those loads take the second version of their loop (an i1), or nullptr:
  // never. It reads the rows copied aside, and the addresses as the loads computed them (the
  // first version computes them in 64 bits, exact only when no 32-bit offset wraps around).
  llvm::Value* reload_slow_path(const std::vector<const ir::Op*>& loads);
  // Emits `emit(false)`, or where reload_slow_path may be taken both versions behind a branch
  // on it: `emit(true)` for the rows copied aside, `emit(false)` for the rows in memory. The
  // values `emit` returns (as many from either version) are merged where the versions meet.
  using VersionValues = std::vector<llvm::Value*>;
  VersionValues emit_reload_versions(const std::vector<const ir::Op*>& loads,
                                     const std::string& tag,
                                     const std::function<VersionValues(bool from_snapshots)>& emit);
  // Before `write` (a store) runs: copies the rows it may overwrite that are still to be
  // reloaded, when the addresses overlap at run time.
  void guard_reloads(const ir::Op& write);
  struct Span {
    llvm::Value *lo, *hi, *exact; // byte addresses [lo, hi); exact: no offset wrapped around
  };
  Span access_span(const ir::Op& access);
  // The address of lane `lane` of an affine access's block (valid where access_span is exact).
  llvm::Value* lane_address(const ir::Op& access, llvm::Value* lane);

  bool reload_masks_false_ = false; // while set, every reloaded load's mask is off
  // While a 1-D reduction emits one chunk of its partials in registers (lower_collective.cpp):
  // the chunk's first element, its size and the lane being emitted. A reloaded f32, f16 or
  // bf16 load then reads the whole chunk as one vector, converted to f32 at once, and each lane
  // takes its element, so the SLP vectorizer finds the chunk's loads already vectorized. Left to
  // itself it vectorized an f16 row's plain sum 4 lanes wide on an AVX-512 host (LLVM 19 prices
  // a 16-lane f16 -> f32 conversion as if scalarized), and that sum cost as much as the rest of
  // the reduction.
  struct RegisterChunk {
    llvm::Value* first = nullptr;
    int64_t size = 0, lane = 0;
    std::unordered_map<const ir::Op*, llvm::Value*> rows; // per load: the chunk in f32
  };
  RegisterChunk* register_chunk_ = nullptr;

private:
  // Element register_chunk_->lane of `load`'s chunk starting at element `first` of its row.
  llvm::Value* chunk_element(const ir::Op& load, llvm::Value* row, llvm::Value* first);

  KernelLowering& k_;
  // A load that reloaded values re-issue. Writes in its block after it and up to live_end are
  // checked against its addresses at run time (guard_reloads).
  struct ReloadSource {
    const ir::Op* load = nullptr;
    size_t live_end = 0;
    View snapshot;                // lane i: the loaded element (allocated at the first check)
    llvm::Value* taken = nullptr; // i1: the snapshot holds the row; nullptr: never
  };
  std::vector<ReloadSource> reload_sources_;
  std::unordered_map<const ir::Op*, size_t> reload_source_of_;
  std::unordered_set<const ir::Value*> reloaded_;     // read by later groups as reloads
  std::unordered_set<const ir::Value*> reload_nodes_; // in the trees those re-issue
};

// Streaming stores (lower_streaming_store.cpp).
class StreamingStores {
public:
  explicit StreamingStores(KernelLowering& k) : k_(k) {}
  // A group's store whose unmasked lanes may go past the caches with non-temporal stores: the
  // only store of a flat 1-D group, at `base + arange [+ s]`, of 2-, 4- or 8-byte elements,
  // in a kernel without atomics; else nullptr.
  const ir::Op* streaming_store(const std::vector<const ir::Op*>& ops, bool flat_1d);
  bool may_stream(const ir::Op& store); // the conditions on the store alone
  // Whether this launch writes enough through `store` to stream it (an i1, at run time).
  llvm::Value* launch_streams(const ir::Op& store);
  // Emits body(i) for i in [lo, hi): where the launch writes enough through `store`, the lanes
  // from its first 64-byte-aligned address on, whole lines of them, store non-temporally.
  void store_loop(const ir::Op* store, llvm::Value* lo, llvm::Value* hi,
                  const std::function<void(llvm::Value*)>& body);
  // While store_loop emits its aligned lanes: `store`'s element pointer, else nullptr.
  llvm::Value* streaming_pointer(const ir::Op& store);
  void mark_streaming(llvm::Instruction* store); // for optimize.cpp's non-temporal pass

  llvm::Value* streaming_bytes_ = nullptr; // pid_grid[6]
  bool has_atomics_ = false;

private:
  KernelLowering& k_;
  struct StreamingLoop {
    const ir::Op* store = nullptr;
    llvm::Value* base = nullptr; // the first aligned lane's address
    llvm::Value* j = nullptr;    // lanes from it
  } streaming_;
  llvm::MDNode* streaming_scope_ = nullptr;
};

// Memory streams prefetched across programs (lower_prefetch.cpp). A stream: the first load or
// store, per pointer argument and direction, whose block of addresses moves with the program or
// a loop. Its slot in scratch outlives the program.
class Prefetcher {
public:
  explicit Prefetcher(KernelLowering& k) : k_(k) {}
  void plan_streams();
  void stream_site(const ir::Op& access); // at the fused access: predicts the next block
  // Around an element loop over `total` elements (0: not one to prefetch in) that touches
  // `accesses`: which streams it prefetches, a share per strip of its elements.
  // only_if: prefetch only where this i1 holds at run time (nullptr: always). last_pass: the
  // loop is the program's last pass over its blocks (its store streams).
  void begin_prefetch(const std::vector<const ir::Op*>& accesses, int64_t total,
                      llvm::Value* only_if = nullptr, bool last_pass = false);
  void prefetch_share(llvm::Value* lo, int64_t n); // the lines of elements [lo, lo + n)
  void end_prefetch();
  void drop_unused_streams(); // after lowering: the sites of streams no loop prefetches

  std::vector<size_t> prefetching_;        // streams of the loop being emitted
  bool prefetch_strips_ = false;           // loop() strip-mines full-width loops for prefetch_share
  llvm::Value* prefetch_offset_ = nullptr; // a loop over lanes from it (store_loop's aligned part)
  static constexpr int64_t kPrefetchStrip = 64; // elements: the vector loop's setup stays small

private:
  KernelLowering& k_;
  struct Stream {
    const ir::Op* site = nullptr;
    bool store = false;
    int64_t lines = 0;           // cache lines of the site's block
    llvm::Value* slot = nullptr; // i64 {last block's address, next one's, next one's bytes}
    enum class State { Unseen, Read, Done } state = State::Unseen;
    bool prefetched = false;                // some loop prefetches it
    std::vector<llvm::Instruction*> writes; // the site's updates of the slot
  };
  std::vector<Stream> streams_;
  std::unordered_map<const ir::Op*, size_t> stream_of_;
  std::vector<llvm::Value*> prefetch_next_, prefetch_lines_; // theirs: address, lines to fetch
  std::vector<int> prefetch_locality_;                       // and llvm.prefetch's locality
  static constexpr int64_t kPrefetchL1Bytes = 16 << 10;      // half of a 32 KiB L1
  int64_t prefetch_total_ = 0;
};

// One kernel's lowering: its values and scratch, loops and views, dispatch over ops; the
// families above do the rest.
class KernelLowering {
  friend class CollectiveLowering;
  friend class GroupLowering;
  friend class ElementLowering;
  friend class ControlLowering;
  friend class FusionLowering;
  friend class ReloadLowering;
  friend class StreamingStores;
  friend class Prefetcher;
  friend class InnerLanes;

public:
  // `name`: the internal LLVM function of one program (grid_loop.cpp's entry point calls it).
  KernelLowering(const ir::Function& f, const CpuTarget& target, llvm::LLVMContext& ctx,
                 llvm::Module& m, std::string name, bool fp_fusion);
  void run();
  int64_t scratch_bytes() const { return scratch_size_; }
  // This kernel is the single-trip version (single_trip_loops.hpp): where one of its inlined
  // loops would not run exactly once, it calls `general` instead.
  void set_general(llvm::Function* general,
                   std::vector<std::array<const ir::Value*, 3>> single_trip) {
    general_ = general;
    single_trip_ = std::move(single_trip);
  }

  // --- loops and views (lower_kernel.cpp) ---
  // Emits for (i = lo; i < hi; i += step) body(i) with i64 induction, constant step.
  // full_width: the loop vectorizer is told to use whole vector registers of f32 (see
  // full_width_hint) where the body allows it.
  void loop(llvm::Value* lo, llvm::Value* hi, int64_t step,
            const std::function<void(llvm::Value*)>& body, bool full_width = false);
  void loop_nest(const std::vector<int64_t>& shape,
                 const std::function<void(const std::vector<llvm::Value*>&)>& body,
                 bool full_width = false);
  llvm::Value* element_ptr(const View& v, const std::vector<llvm::Value*>& idx);
  View new_buffer(ir::DType t, const std::vector<int64_t>& shape);
  void copy(const View& src, const View& dst, ir::DType t);
  const View& view(const ir::Value* v); // flushes the pending group if it defines v
  llvm::Value* scalar(const ir::Value* v);
  void set_scalar(const ir::Value* v, llvm::Value* s) { values_[v].scalar = s; }
  void set_view(const ir::Value* v, View w) { values_[v].view = std::move(w); }
  void fail_if(llvm::Value* cond, const ir::Op& op, const std::string& what,
               llvm::Value* lane = nullptr);
  void lower_block(const ir::Block& b);
  void flush(); // lower_group.cpp

  // --- collectives and memory (lower_collective.cpp, lower_dot.cpp, lower_memory.cpp) ---
  void lower_reduce_or_scan(const ir::Op& op);
  void lower_dot(const ir::Op& op);
  void lower_atomic(const ir::Op& op);
  void lower_print(const ir::Op& op);

  llvm::IRBuilder<>& b() { return builder_; }
  llvm::LLVMContext& ctx() { return ctx_; }
  llvm::Module& module() { return module_; }
  const CpuTarget& target() const { return target_; }
  llvm::Function* fn() const { return fn_; }
  llvm::Value* launch_state() const { return state_arg_; }
  llvm::Value* pid(int axis) const { return pids_[axis]; }
  llvm::Value* i64(int64_t v) { return builder_.getInt64(v); }
  llvm::FunctionCallee host_fn(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args);
  llvm::Value* global_string(const std::string& s);
  const ir::Function& function() const { return f_; }
  std::string where(const ir::Op& op) const;

private:
  llvm::MDNode* full_width_hint(llvm::BasicBlock* first);
  void lower_op(const ir::Op& op);
  void lower_view_op(const ir::Op& op);
  void lower_join_or_cat(const ir::Op& op);
  void lower_check(const ir::Op& op); // assert, assume
  void lower_scalar_op(const ir::Op& op);
  // Picks this version or the general one at entry (set_general).
  void branch_to_general();

  // --- carried tensors that start as a constant (lower_fusion.cpp, lower_control.cpp) ---
  // A `for` whose carried tensor starts as a splat of a scalar or a tensor constant (Triton's
  // `acc = tl.zeros(...)`) does not fill its carried buffer before the loop: in the first
  // iteration a fused group reads the scalar instead of the buffer, any other reader first
  // fills the buffer (only then, at its place in the body), and a loop that runs no iteration
  // fills it after. Triton's looped layer norm wrote and read two row-sized f32 buffers of
  // zeros per program for this. Decided before lowering: the inits whose only readers are such
  // loops get no buffer at all.
  struct LazyInit {
    llvm::Value* value = nullptr; // the splatted scalar
    llvm::Value* first = nullptr; // i1: the loop's first iteration
    View carry;
    bool filled = false; // the body already filled the buffer in its first iteration
  };
  std::unordered_map<const ir::Value*, LazyInit> lazy_init_; // body argument ->
  std::unordered_set<const ir::Value*> lazy_init_values_;    // inits read by no one else

  std::string name_;
  llvm::Function* general_ = nullptr;
  std::vector<std::array<const ir::Value*, 3>> single_trip_;

  const ir::Function& f_;
  const CpuTarget& target_;
  // The whole kernel is vectorized at target_.f16_convert_bits (narrow_kernel, lower_kernel.cpp).
  bool narrow_ = false;
  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  llvm::IRBuilder<> builder_;
  llvm::IRBuilder<> entry_builder_; // scratch addresses live in the entry block
  llvm::Function* fn_ = nullptr;
  llvm::Value* args_arg_ = nullptr;
  llvm::Value* scratch_arg_ = nullptr;
  llvm::Value* state_arg_ = nullptr;
  llvm::AllocaInst* failed_ = nullptr; // set where fail_if reports; the program returns it
  bool fp_fusion_;                     // float multiply-adds may fuse (CompileOptions)
  llvm::Value* pids_[6] = {};
  int64_t scratch_size_ = 0;
  int next_root_ = 0;
  std::unordered_map<const ir::Value*, Lowered> values_;
  std::unordered_map<const ir::Value*, std::vector<const ir::Op*>> users_;
  std::unordered_map<const ir::Op*, size_t> position_; // index of an op in its block
  std::vector<llvm::Value*> loop_trips_; // enclosing `for` loops' trip counts (at least 1)

  struct Group {
    std::vector<int64_t> shape;
    std::vector<const ir::Op*> ops;
    std::unordered_set<const ir::Value*> defines;
  } group_;

  // The op families, last: they refer to the state above.
  ElementLowering elements_{*this, builder_};
  ControlLowering control_{*this};
  FusionLowering fusion_{*this};
  ReloadLowering reloads_{*this};
  StreamingStores stores_{*this};
  Prefetcher prefetch_{*this};
};

// The lowering stage's entry point: one LLVM module holding one kernel's entry point (a loop over
// programs, grid_loop.cpp) and its program. fp_fusion: CompileOptions::enable_fp_fusion.
struct LoweredModule {
  std::unique_ptr<llvm::Module> module;
  std::string symbol;
  int64_t scratch_bytes = 0;
};
LoweredModule lower_to_llvm(const ir::Function& f, const CpuTarget& target, llvm::LLVMContext& ctx,
                            const std::string& symbol, bool fp_fusion);

} // namespace tritium::cpu
