// tritium: Triton's block-level kernel language, embedded in C++.
#pragma once

#include <tritium/error.hpp>
#include <tritium/lang/block_ptr.hpp>
#include <tritium/lang/control.hpp>
#include <tritium/lang/kernel.hpp>
#include <tritium/lang/ops.hpp>
#include <tritium/lang/random.hpp>
#include <tritium/lang/tensor.hpp>
#include <tritium/runtime/autotune.hpp>
#include <tritium/runtime/bench.hpp>
#include <tritium/runtime/device.hpp>
#include <tritium/runtime/jit.hpp>

namespace tritium {
namespace tl = lang;
} // namespace tritium
