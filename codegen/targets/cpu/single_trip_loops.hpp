// A copy of a kernel with its single-trip loops inlined, for the CPU backend's second version.
#pragma once

#include <tritium/ir/ir.hpp>

#include <array>
#include <memory>
#include <vector>

namespace tritium::cpu {

struct SingleTripVersion {
  std::unique_ptr<ir::Function> function; // null: no loop to inline
  // Per inlined loop, in the copy: lower bound, upper bound, step (function arguments or
  // rank-0 constants, so that the version can be chosen at the kernel's entry).
  std::vector<std::array<const ir::Value*, 3>> bounds;
};

SingleTripVersion inline_single_trip_loops(const ir::Function& f);

} // namespace tritium::cpu
