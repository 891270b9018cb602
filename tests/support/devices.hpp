// The devices a test runs on: the interpreter (the oracle) and every other available backend.
// TRITIUM_TEST_DEVICES=cpu,interpreter restricts the list.
#pragma once

#include <tritium/tritium.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace tritium::testing {

inline std::vector<Device> test_devices() {
  std::vector<std::string> wanted;
  if (const char* env = std::getenv("TRITIUM_TEST_DEVICES"); env && *env) {
    std::stringstream ss(env);
    for (std::string s; std::getline(ss, s, ',');)
      wanted.push_back(s);
  } else {
    wanted = {"interpreter", "cpu", "cuda", "hip"};
  }
  std::vector<Device> out;
  for (const auto& name : wanted) {
    try {
      out.push_back(device(name));
    } catch (const Error&) {
      // not built in, or not usable on this machine: skipped
    }
  }
  return out;
}

inline Device interpreter() {
  return device("interpreter");
}

} // namespace tritium::testing
