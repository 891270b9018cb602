// Distributed layouts: how the elements of a block-level tensor are spread over the registers,
// lanes and warps of one program (a CTA / work-group). They are attributes on ir::Type
// (Type::layout), assigned by codegen/passes and read by the lowering to LLVM.
//
// Blocked (Triton's #blocked): each thread holds size_per_thread contiguous elements per
// dimension; threads_per_warp and warps_per_cta tile the tensor, dimensions listed
// fastest-varying first in `order`; the tile repeats over larger tensors and wraps (the same
// element held by several threads) over smaller ones. Slice: the parent layout with one
// dimension removed (what a reduction along that dimension produces; expand_dims undoes it).
// MMA / MFMA / WMMA and dot-operand layouts would be further subclasses: the lowering only
// needs `resolve` below.
#pragma once

#include <tritium/ir/ir.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tritium::gpu {

struct BlockedLayout final : ir::Layout {
  std::vector<int> size_per_thread, threads_per_warp, warps_per_cta, order;
  std::string str() const override;
};

struct SliceLayout final : ir::Layout {
  int dim = 0;
  ir::LayoutPtr parent;
  std::string str() const override;
};

// A layout resolved for one shape: everything the lowering needs to know which elements a
// thread holds. All sizes are powers of two. Coordinate of register r along dimension d:
//   ((lane_d * spt_d + warp_d * spt_d * tpw_d) + (i_d / spt_d) * tile_d + i_d % spt_d) & (S_d - 1)
// where i_d is r's digit for d in the mixed radix `regs_per_dim` over `reg_order`, and
// lane_d = (lane / lane_stride_d) % tpw_d (warp_d likewise).
struct Dist {
  std::vector<int64_t> shape;
  std::vector<int> spt, tpw, wpc, lane_stride, warp_stride, regs_per_dim, reg_order;
  // Lanes / warps that only replicate (dimensions sliced away): (stride, count) pairs.
  std::vector<std::pair<int, int>> replica_lanes, replica_warps;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t tile(int d) const { return int64_t{spt[d]} * tpw[d] * wpc[d]; }
  int num_regs() const;
  // Register r's digit per dimension, and its constant coordinate offset (before masking).
  std::vector<int> reg_digits(int r) const;
  std::vector<int64_t> reg_offset(int r) const;
  int reg_index(const std::vector<int>& digits) const;
};

// Resolves `layout` for `shape`; throws tritium::Error for a non-power-of-two shape.
Dist resolve(const ir::LayoutPtr& layout, const std::vector<int64_t>& shape);

// Triton's default: one element per thread, threads and warps over the dimensions from the
// last (fastest) to the first.
ir::LayoutPtr default_layout(const std::vector<int64_t>& shape, int num_warps, int warp_size);
// A layout with `vec` elements per thread along order[0] and threads along `order`.
ir::LayoutPtr blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& order,
                             int vec, int num_warps, int warp_size);
ir::LayoutPtr slice_layout(int dim, ir::LayoutPtr parent);

bool same_layout(const ir::LayoutPtr& a, const ir::LayoutPtr& b);
bool is_pow2(int64_t v);

} // namespace tritium::gpu
