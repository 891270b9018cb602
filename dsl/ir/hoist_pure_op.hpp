// Moving an op without side effects up its block.
#pragma once

#include <tritium/ir/ir.hpp>

namespace tritium::ir {

// Moves `op` of `block` (an op without side effects; its regions' too) up the block, with the
// pure ops it depends on, to just after the last op it depends on that cannot move (a load, a
// loop, an op with effects or regions). The other ops keep their order.
void hoist_pure_op(Block& block, const Op& op);

// Moves the pure scalar ops of each `for` loop nested in `block` that read nothing made in the
// loop out of it, ahead of it (inner loops first, so an invariant leaves the whole nest). A
// traced `p += BLOCK_K * stride` computes its step inside the loop; out of it, the step is a
// value the loop's trips can be bounded by ahead of the loop. (Every pure op is defined on any
// operands, integer division by zero included, so running one for a loop of no trip is safe.)
void hoist_loop_invariants(Block& block);

} // namespace tritium::ir
