// The host functions compiled kernels may call, by the names lowering.hpp gives them.
#pragma once

#include <utility>
#include <vector>

namespace tritium::cpu {

std::vector<std::pair<const char*, void*>> runtime_symbols();

} // namespace tritium::cpu
