// Moving an op without side effects up its block.
#pragma once

#include <tritium/ir/ir.hpp>

namespace tritium::ir {

// Moves `op` of `block` (an op without side effects; its regions' too) up the block, with the
// pure ops it depends on, to just after the last op it depends on that cannot move (a load, a
// loop, an op with effects or regions). The other ops keep their order.
void hoist_pure_op(Block& block, const Op& op);

} // namespace tritium::ir
