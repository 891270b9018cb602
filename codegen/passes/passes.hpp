// The GPU passes over tritium's IR, one per file, one entry function each. They run in the
// order codegen/gpu/compile.cpp lists them (make_ttgir's equivalent).
#pragma once

#include "../gpu_ir/axis_info.hpp"
#include "../gpu_ir/layout.hpp"

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tritium::gpu {

// What the passes know of the target.
struct GpuFeatures {
  int num_warps = 4;
  int warp_size = 32;
  MatrixUnit matrix = MatrixUnit::None;
  int num_stages = 3; // the kernel's; a loop's own num_stages option wins
  int max_shared_bytes = 48 * 1024;
  bool tma = false; // TMA copies and mbarriers (sm_90a)
  // Asynchronous global-to-shared copies (cp.async). Without them (AMD) a copy is a load into
  // registers and a store at its commit, and a pipeline's ring needs one slot fewer.
  bool async_copy = true;
  // The matrix unit's generation (gpu_ir/arch.hpp's MatrixModel::version): which operand types
  // it multiplies and, for WMMA, which fragment layouts it reads.
  int matrix_version = 1;
  // mma.sync's generation where wgmma is the unit: what wgmma cannot take runs on it.
  int mma_sync_version = 1;
  // AMD's buffer instructions: a base, 32-bit offsets, out-of-range offsets masked off.
  bool buffer_ops = false;
  // A gather (an access whose neighbours are not contiguous) and the loads of its class take one
  // width, the widest access's of the class, instead of the gather keeping one element a thread
  // and the rest converting into it (coalesce.cpp). AMD: that conversion is a trip of 64-bit
  // pointers through LDS between two barriers, and Triton's AMD backend widens as this does
  // (gfx942: gather 474 -> 218 instructions, scatter 496 -> 216, 8 KiB of LDS -> 0 for both;
  // gfx1100 index_select 65 -> 46 VGPRs). NVIDIA keeps the conversion: on an H200 (zoo.py,
  // 2026-11-29) it was faster for three of the zoo's four gathers and scatters, and widening an
  // index_select's gather was 1.6x slower.
  bool gathers_join_class = false;
  // Where passes say what they chose not to do and why (a pipeline's stages cut to fit shared
  // memory); compile.cpp keeps them in GpuKernelBinary::remarks. Null: not collected.
  std::vector<std::string>* remarks = nullptr;
};

// make_ttgir: the GPU passes in the order they run (gpu_pipeline.cpp). compile.cpp runs them
// all; `tritium opt --pass NAME` runs them one by one.
struct GpuPass {
  std::string_view name;
  void (*run)(ir::Function& f, const GpuFeatures& target);
};
std::span<const GpuPass> gpu_passes();
// make_ttgir: a verified private copy of `f` (ir::clone) after each GPU pass in order;
// `after_pass(name, ir)` sees the IR after each (may be null). The copy records `module` (what
// it is compiled for), so that its text runs through `tritium opt` as it is.
std::unique_ptr<ir::Function>
prepare_gpu_ir(const ir::Function& f, const GpuFeatures& target,
               const std::function<void(const std::string&, const ir::Function&)>& after_pass,
               const ir::ModuleAttrs& module = {});

// combine.cpp: algebraic rewrites before layouts (x + dot(a, b) -> dot(a, b, x)).
void combine(ir::Function& f);

// canonicalize_pointers.cpp: with buffer instructions, a loop carrying pointers base + o into a
// buffer under 2 GiB carries the 32-bit offsets o instead (and rebuilds base + o in the body).
void canonicalize_pointers(ir::Function& f, const GpuFeatures& target);
// widen_dot_operands.cpp: fp8 dot operands read as f16 (exact) where the target's fp8 matrix
// instruction cannot take the dot as laid out (after coalesce).
void widen_dot_operands(ir::Function& f, const GpuFeatures& target);
// Whether the scalar pointer `p` is a range32 kernel argument moved by scalar offsets (in-bounds
// accesses from it are less than 2^31 bytes away; the scalar offsets are not checked for sign,
// as Triton's AMD backend folds them into the buffer's base unchecked).
bool in_range32_buffer(const ir::Function& f, const ir::Value* p);
// Whether the tensor of pointers `ptrs` is such a pointer plus offsets (AMD's lowering then
// reads it with buffer instructions, masked by an out-of-range offset instead of a branch).
bool buffer_addressable(const ir::Function& f, const ir::Value* ptrs);

// assign_layouts.cpp: gives every tensor value a distributed layout (default blocked, slices
// for reductions) and inserts convert_layout where an op needs its operands in one layout.
void assign_layouts(ir::Function& f, const GpuFeatures& target);

// coalesce.cpp: each load, store and atomic gets the blocked layout that makes its accesses
// contiguous per thread (up to 128 bits) and coalesced per warp, with conversions around it.
// On AMD, a GEMM's operand loaded along M or N gets pairs along K in each thread as well, so
// that its tile is written into shared memory (where K is fastest) 32 bits at a time.
void coalesce(ir::Function& f, const GpuFeatures& target);
// The layouts coalesce gives the loads, stores and atomics of `f` (also where assign_layouts
// starts from, and where hoist_loads reads a hoisted load).
std::unordered_map<const ir::Op*, ir::LayoutPtr>
coalesced_layouts(const ir::Function& f, const AxisInfoMap& info, const GpuFeatures& target);

// remove_layout_conversions.cpp: rematerializes cheap producers in the layout their consumer
// wants, folds chains of conversions, and drops dead ops. `dot_operands_only`: only conversions
// into matrix-unit operands (and slices of them) move, and nothing is pulled back out of them
// (after pipelining, where hoisted loads and the rings' reads must stay where they are).
void remove_layout_conversions(ir::Function& f, bool dot_operands_only = false);

// accelerate_matmul.cpp: dots the target's matrix unit can compute get its accumulator layout
// and operand fragments (a loop-carried accumulator is carried in it).
void accelerate_matmul(ir::Function& f, const GpuFeatures& target);

// propagate_mma_layout.cpp: ops computed from a matrix instruction's accumulator (elementwise,
// broadcasts, reductions, loop-carried values) move into its layout.
void propagate_mma_layout(ir::Function& f);

// pipeline.cpp: loads feeding matrix instructions become asynchronous copies into a ring of
// num_stages shared-memory tiles, issued num_stages - 1 iterations ahead (where copies go
// through registers, AMD's: one tile, one iteration ahead).
void pipeline(ir::Function& f, const GpuFeatures& target);

// carry_ahead.cpp: a loop-carried pointer advanced by a loop-invariant step and read only some
// d iterations ahead (the pipeliner's copies) is carried d iterations ahead.
void carry_ahead(ir::Function& f);

// hoist_loads.cpp: global loads after a loop that do not depend on it are issued before it.
void hoist_loads(ir::Function& f, const GpuFeatures& target);

// expand_loads.cpp: where copies are asynchronous, a pipelined loop's 1-D load widened into a
// dot operand's tile (a quantized weight's scales) becomes a 2-D load the pipeliner rings.
void expand_loads(ir::Function& f, const GpuFeatures& target);

// optimize_dot_operands.cpp: after pipelining, operands of mma.sync computed in registers read
// the rings' tiles in their fragment layout, or go through a tile of their own read by ldmatrix.
void optimize_dot_operands(ir::Function& f, const GpuFeatures& target);

} // namespace tritium::gpu
