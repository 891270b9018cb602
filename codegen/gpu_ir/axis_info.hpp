// AxisInfo: what is known of the elements of every value along each dimension (contiguity,
// divisibility, constancy): what coalescing, vectorized access and the pipeliner's addressing
// read. An analysis over tritium's IR, below both the passes and the lowering.
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <optional>
#include <string>
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

// The analysis, seeded by Function::arg_info and hint ops.
AxisInfoMap analyze_axis_info(const ir::Function& f);
// "contiguity=[4] divisibility=[16] constancy=[1]" (and "constant=N" when known).
std::string to_string(const AxisInfo& info);

} // namespace tritium::gpu
