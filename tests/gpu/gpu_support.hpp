// The GPUs this program tests on. Without any (CI), every test case returns at once with a
// message saying why, so the program still prints doctest's summary and exits 0.
#pragma once

#include "support/devices.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace tritium::testing {

inline std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const Device& d : test_devices())
    if (d.name() == "cuda" || d.name() == "hip")
      out.push_back(d);
  return out;
}

// Why no GPU is usable, from the backends' own reasons.
inline std::string no_gpu_reason() {
  std::string why;
  for (const auto& [name, state] : list_devices())
    if (name == "cuda" || name == "hip")
      why += (why.empty() ? "" : "; ") + name + ": " + state;
  return why.empty() ? "no GPU backend is built in" : why;
}

} // namespace tritium::testing

// Returns from the test case when no GPU is usable here.
#define TRITIUM_REQUIRE_GPU(devices)                                                               \
  auto devices = ::tritium::testing::gpu_devices();                                                \
  if (devices.empty()) {                                                                           \
    MESSAGE("skipped, no GPU: " << ::tritium::testing::no_gpu_reason());                           \
    return;                                                                                        \
  }
