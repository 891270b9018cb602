// Loop-carried pointer tensors as their initial value plus one carried offset.
#pragma once

#include <tritium/ir/ir.hpp>

#include <memory>

namespace tritium::cpu {

// A copy of `f` in which every `for` argument that is a tensor of pointers advanced each trip
// by a loop-invariant amount (`ptrs = ptrs + BK`, yielded) is carried as an i64 offset from
// its initial value instead; null where `f` has none.
std::unique_ptr<ir::Function> carry_pointer_offsets(const ir::Function& f);

} // namespace tritium::cpu
