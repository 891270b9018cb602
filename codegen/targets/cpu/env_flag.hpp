// A switch read from the environment: on when the variable is set to anything but "" or "0".
#pragma once

#include <cstdlib>
#include <string_view>

namespace tritium::cpu {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

} // namespace tritium::cpu
