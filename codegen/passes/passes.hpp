// The GPU passes over tritium's IR, one per file, one entry function each. They run in the
// order codegen/gpu/compile.cpp lists them (make_ttgir's equivalent).
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tritium::gpu {

// What is known about a value's elements along each dimension (one entry for a scalar):
//   contiguity[d]:   runs of this many elements along d increase by exactly 1;
//   divisibility[d]: the first element of each such run is a multiple of this (pointers: bytes);
//   constancy[d]:    runs of this many elements along d are equal.
struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;
  std::optional<int64_t> constant; // every element equals this integer
};
using AxisInfoMap = std::unordered_map<const ir::Value*, AxisInfo>;

// axis_info.cpp: the analysis, seeded by Function::arg_info and hint ops.
AxisInfoMap analyze_axis_info(const ir::Function& f);

// assign_layouts.cpp: gives every tensor value a distributed layout (default blocked, slices
// for reductions) and inserts convert_layout where an op needs its operands in one layout.
void assign_layouts(ir::Function& f, int num_warps, int warp_size);

// coalesce.cpp: each load, store and atomic gets the blocked layout that makes its accesses
// contiguous per thread (up to 128 bits) and coalesced per warp, with conversions around it.
void coalesce(ir::Function& f, int num_warps, int warp_size);
// The layout coalesce gives an access through `ptr` (also used by assign_layouts to start
// from the memory accesses' layouts).
ir::LayoutPtr coalesced_layout(const ir::Value* ptr, const AxisInfo& info, int num_warps,
                               int warp_size);

// remove_layout_conversions.cpp: rematerializes cheap producers in the layout their consumer
// wants, folds chains of conversions, and drops dead ops.
void remove_layout_conversions(ir::Function& f);

} // namespace tritium::gpu
