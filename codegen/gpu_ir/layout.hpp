// Distributed layouts: how the elements of a block-level tensor are spread over the registers,
// lanes and warps of one program (a CTA / work-group). They are attributes on ir::Type
// (Type::layout), assigned by codegen/passes and read by the lowering to LLVM.
//
// Every layout kind resolves, for one shape, to a LinearLayout (Triton's linear layouts,
// restricted to what distributed layouts need): each bit of the register index, of the lane id
// and of the warp id selects one coordinate bit (or nothing: a replica), and a thread's element
// is at the OR of the selected bits. The lowering works only on LinearLayouts, so a new layout
// kind is one `resolve` case, not new lowering code.
//
// Kinds:
//  * Blocked (Triton's #blocked): each thread holds size_per_thread contiguous elements per
//    dimension; threads_per_warp and warps_per_cta tile the tensor, dimensions listed fastest
//    first in `order`; the tile repeats over larger tensors and wraps (replicas) over smaller.
//  * Slice: the parent layout with one dimension removed (a reduction's result; expand_dims
//    undoes it for free).
//  * Mma: the accumulator of a matrix instruction (mma.sync, wgmma, MFMA, WMMA), tiled over
//    warps_per_cta and repeated over the tensor.
//  * DotOperand: operand a (0) or b (1) of such an instruction, in registers.
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::gpu {

// The matrix instructions a target has (GpuFeatures::matrix), and what an Mma layout is for.
enum class MatrixUnit : uint8_t {
  None,
  MmaSync, // NVIDIA sm_80+: mma.sync.aligned.m16n8kK, one warp
  Wgmma,   // NVIDIA sm_90a: wgmma.mma_async.m64nNk16, a warpgroup of four warps
  Mfma,    // AMD CDNA (gfx908, gfx90a, gfx94x): v_mfma_*_32x32x8 / 16x16x16, one wave64
  Wmma,    // AMD RDNA3/3.5 (v1), RDNA4 (v2, other fragments): v_wmma_*_16x16x16, one wave32
};
// Whether the unit reads its operands from shared memory with K fastest (AMD's MFMA and WMMA
// read K runs; NVIDIA's ldmatrix.trans and wgmma read either order): the pipeline lays the
// operand tiles out so, and coalesce gives tiles loaded along M or N pairs along K to write.
inline bool operands_k_major(MatrixUnit u) {
  return u == MatrixUnit::Mfma || u == MatrixUnit::Wmma;
}

const char* matrix_unit_name(MatrixUnit u);

struct BlockedLayout final : ir::Layout {
  std::vector<int> size_per_thread, threads_per_warp, warps_per_cta, order;
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

struct SliceLayout final : ir::Layout {
  int dim = 0;
  ir::LayoutPtr parent;
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

struct MmaLayout final : ir::Layout {
  MatrixUnit unit = MatrixUnit::MmaSync;
  // The unit's generation (arch.hpp's MatrixModel::version); written "wmma_v2" when above 1,
  // so that IR text says which fragments it means (WMMA v2's differ from v1's).
  int version = 1;
  std::vector<int> warps_per_cta; // {along M, along N}
  // The tile one instruction computes per warp (Wgmma: per warpgroup): {m, n}.
  std::vector<int> instr;
  // MFMA computing the transposed product (b^T a^T, the instruction's operands swapped): its
  // operand fragments are the same (MFMA's a and b are laid out alike), but each lane then
  // holds runs of one row's columns instead of one column's rows, so that row reductions stay
  // in a thread, the result is the next dot's a operand as it is, and stores are vectors.
  // (Triton's isTransposed.)
  bool transposed = false;
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

struct DotOperandLayout final : ir::Layout {
  int op_idx = 0;       // 0: a [M, K], 1: b [K, N]
  ir::LayoutPtr parent; // an MmaLayout
  int k_width = 1;      // consecutive K elements a thread holds (32 bits of them on NVIDIA)
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

// A tile in shared memory (the layout of a value that lives there; its one "register" is its
// address). Elements are stored row by row, order[0] the fastest dimension, in chunks of `vec`
// elements; a chunk's index within its row is XORed with (row / per_phase) % max_phase, which
// spreads the rows a warp reads at once over the banks (Triton's swizzled shared layout; with
// 16-byte chunks and 128-byte rows it is the hardware's 128B swizzle). Leading dimensions
// beyond the tile's two (pipeline stages) are whole tiles one after another. With block_cols,
// rows are cut into blocks of that many elements, each block a [rows, block_cols] tile of its
// own, one after another (the canonical layouts of wgmma's shared-memory operands: 128-byte
// swizzle atoms).
struct SharedLayout final : ir::Layout {
  int vec = 1, per_phase = 1, max_phase = 1;
  std::vector<int> order; // of the tile's two dimensions
  int block_cols = 0;     // 0: rows are not cut
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

struct LinearLayout;

// A layout given by its bases for one shape (Triton's #linear): what a reshape, transpose,
// join or split makes of its operand's layout, so that those ops move no data. Over another
// shape it shrinks (bases past the shape become replicas) or repeats in registers, as a
// blocked layout does.
struct LinearLayoutAttr final : ir::Layout {
  std::shared_ptr<const LinearLayout> bases;
  std::string str() const override;
  bool equals(const ir::Layout& other) const override;
};

// Bytes an element of `t` takes in memory (booleans: one).
inline int64_t elem_bytes(ir::DType t) {
  return t.is_bool() ? 1 : t.bits() / 8;
}

// Bytes a tile of `t` takes in shared memory as the lowering places tiles (1 KiB aligned: the
// 128-byte swizzle of wgmma and TMA needs it); the pipeliner budgets with the same number.
inline int64_t shared_tile_bytes(const ir::Type& t) {
  return (t.numel() * elem_bytes(t.elem) + 1023) / 1024 * 1024;
}

// The swizzle for a [rows, cols] tile (cols contiguous) of `elem_bytes` elements: 16-byte
// chunks, rows of 128 bytes (or what the tile has) swizzled over 8 phases. `atoms`: rows longer
// than 128 bytes are cut into 128-byte blocks (what wgmma reads).
ir::LayoutPtr shared_layout(int64_t cols, int elem_bytes, std::vector<int> order,
                            bool atoms = false);

// The layout of a transposed view of a 2-D tile in shared memory laid out as `shared` (the same
// bytes: the order follows the dimensions), `perm` as trans's order (result dim d is operand
// dim perm[d]).
ir::LayoutPtr transposed_shared(const ir::LayoutPtr& shared, const std::vector<int64_t>& perm);

// A layout resolved for one shape. Bases are coordinates (one entry per dimension) with at most
// one non-zero entry, a power of two; zero bases replicate. Register r of a thread holds the
// coordinate OR(reg[i] for each set bit i of r) | OR(lane[j] for each set bit j of the lane id)
// | OR(warp[j] for each set bit j of the warp id). No two non-zero bases are equal, so the OR
// is also a sum.
struct LinearLayout {
  using Coord = std::vector<int64_t>;
  std::vector<int64_t> shape;
  std::vector<Coord> reg, lane, warp;

  int rank() const { return static_cast<int>(shape.size()); }
  int num_regs() const { return 1 << reg.size(); }
  Coord reg_offset(int r) const;
  // The register holding `offset` (a sum of register bases), or -1.
  int reg_index(const Coord& offset) const;
  // Lane / warp id bits that only replicate (their basis is zero).
  unsigned replica_lane_mask() const;
  unsigned replica_warp_mask() const;
  // The dimension a basis points along, and log2 of its value; -1 for a zero basis.
  static int dim_of(const Coord& basis);
  static int bit_of(const Coord& basis);
  // How many consecutive registers (from any multiple of it) hold consecutive elements along
  // `dim`: 2^n where reg[0..n) are 1, 2, 4, ... along dim.
  int contiguous_regs(int dim) const;
  std::string str() const;
  friend bool operator==(const LinearLayout&, const LinearLayout&) = default;
};

// Resolves `layout` for `shape`; throws tritium::Error for a non-power-of-two shape or a layout
// that does not fit the shape's rank.
LinearLayout resolve(const ir::LayoutPtr& layout, const std::vector<int64_t>& shape);

// Triton's default: one element per thread, threads and warps over the dimensions from the
// last (fastest) to the first.
ir::LayoutPtr default_layout(const std::vector<int64_t>& shape, int num_warps, int warp_size);
// A layout with `vec` elements per thread along order[0] (and `second` along order[1]) and
// threads along `order`.
ir::LayoutPtr blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& order,
                             int vec, int num_warps, int warp_size, int second = 1);
ir::LayoutPtr slice_layout(int dim, ir::LayoutPtr parent);
ir::LayoutPtr mma_layout(MatrixUnit unit, std::vector<int> warps_per_cta, std::vector<int> instr,
                         int version = 1, bool transposed = false);
ir::LayoutPtr dot_operand_layout(int op_idx, ir::LayoutPtr parent, int k_width);
ir::LayoutPtr linear_layout(LinearLayout bases);

// What shape ops make of their operand's layout (linear_layouts.cpp): the same registers in the
// same threads, described over the result's shape. Each is exact: register r of the result is
// register r of the operand (join: of a, then of b; split: the registers whose bit `bit` is 0,
// then 1).
LinearLayout trans_layout(const LinearLayout& l, const std::vector<int64_t>& order);
LinearLayout reshape_layout(const LinearLayout& l, const std::vector<int64_t>& shape);
LinearLayout expand_dims_layout(const LinearLayout& l, int axis);
LinearLayout join_layout(const LinearLayout& l);
// Split needs the last dimension (of size 2) in a register; `reg_bit` returns which, or -1.
int split_reg_bit(const LinearLayout& l);
LinearLayout split_layout(const LinearLayout& l);
// `l` with the last dimension's bit moved into the registers (for a split): a lane or warp
// basis that held it swaps with a register basis, or becomes a replica when there is none.
LinearLayout split_ready(const LinearLayout& l);
// The layout of result `index` of a trans, reshape, expand_dims, join or split whose operands
// have their layouts (null for other ops, or a join of two layouts). A split whose pair sits
// in two lanes or warps moves it into registers first (split_ready).
ir::LayoutPtr induced_layout(const ir::Op& op, size_t index = 0);

using ir::same_layout;

// Reads what Layout::str() writes ("#blocked<spt=[1, 4], …>"), for ir::parse; throws
// tritium::Error naming what it does not understand.
ir::LayoutPtr parse_layout(std::string_view text);
bool is_pow2(int64_t v);
int log2_exact(int64_t v);

} // namespace tritium::gpu
