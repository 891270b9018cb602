// Included before an example's source, which a cross-compilation TU then includes inside its
// own namespace (so that the examples' like-named functions do not collide): every header the
// examples include is included here first, at global scope, so that their own #includes are
// no-ops inside the namespace. An example that includes something new fails to compile here
// until it is added.
#pragma once

#include "offline_device.hpp"

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace tritium::xcompile {

// Launches every kernel of one example at the shapes its benchmark uses, on `dev`.
using ExampleRun = void (*)(const Device& dev);
struct Example {
  const char* name;
  ExampleRun run;
};

} // namespace tritium::xcompile
