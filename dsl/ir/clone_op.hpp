// One op copied with its regions, inside a function being rewritten.
#pragma once

#include <tritium/ir/builder.hpp>

#include <unordered_map>

namespace tritium::ir {

// A copy of `op` (and of the ops in its regions) appended where `b` is. `map` sends values to
// their copies; an operand it does not list is used as it is. It gains the copies' results.
Op& clone_op(Builder& b, const Op& op, std::unordered_map<const Value*, Value*>& map);

} // namespace tritium::ir
