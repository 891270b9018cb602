// The JIT behind an ahead-of-time launcher built with JIT_FALLBACK: a launch whose
// specialization was not built is traced and compiled as tritium::jit does (and cached there).
// Included by the generated *_jit.cpp, which links libtritium.
#pragma once

#include <tritium/aot.hpp>
#include <tritium/tritium.hpp>

#include <span>
#include <string_view>

namespace tritium::aot {

template <class... P>
void jit_launch(JitFunction<P...>& kernel, const Launch& launch, std::string_view device,
                std::span<const ArgSlot> params) {
  Device dev = tritium::device(device);
  if (launch.stream)
    kernel.launch_slots(dev.wrap_stream(launch.stream), launch.grid, params);
  else
    kernel.launch_slots(dev.stream(), launch.grid, params);
}

} // namespace tritium::aot
