// What a launch is, independent of any device: the grid, the options that shape compiled code,
// and the argument slots. The compiler (codegen) and the devices (runtime) both speak these
// types, so they live here, below both.
#pragma once

#include <cstdint>

namespace tritium {

struct LaunchGrid {
  int64_t x = 1, y = 1, z = 1;
};

// Options that shape the compiled code; part of every cache key.
struct CompileOptions {
  int num_warps = 4;
  int num_stages = 3;
  // Triton's enable_fp_fusion: a float multiply feeding an add may become one fma (rounded
  // once), on every compiled backend. Off: every op rounds as the interpreter does.
  bool enable_fp_fusion = true;
  // Every load, store and atomic checked against the buffer its pointer came from; an access
  // outside it is skipped and the launch raises an Error naming it. TRITIUM_CHECK=1 turns it
  // on for every kernel. Off: no cost at all.
  bool check_bounds = false;
  friend bool operator==(const CompileOptions&, const CompileOptions&) = default;
};

// One launch argument per kernel parameter, in a 64-bit slot: integers sign- (or zero-)
// extended, floating-point values as the bits of a double, pointers as device addresses.
using ArgSlot = uint64_t;

} // namespace tritium
