// The CPU passes in pipeline order. A new pass is a file with one entry function, a line here
// and a `.tir` test under tests/passes with `// TARGET: host`.
#include "cpu_passes.hpp"

#include "expand_histogram.hpp"
#include "pointer_offsets.hpp"
#include "single_trip_loops.hpp"

namespace tritium::cpu {

std::span<const CpuPass> cpu_passes() {
  static constexpr CpuPass passes[] = {
      {"expand_histograms", expand_histograms},
      {"pointer_offsets", carry_pointer_offsets},
      {"single_trip_loops",
       [](const ir::Function& f) { return inline_single_trip_loops(f).function; }, true},
  };
  return passes;
}

} // namespace tritium::cpu
