// TRITIUM_INTERPRETER_TIMEOUT=seconds: how long one interpreted launch may run. A loop checks it
// each iteration (a 10^9-trip loop otherwise ran for half an hour, stopped only by a signal).
#pragma once

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace tritium::interp {

class TimeLimit {
public:
  // The limit the environment sets, from now; none when unset. A value that is not a positive
  // number of seconds is an error naming the variable.
  static std::optional<TimeLimit> from_env() {
    const char* text = std::getenv("TRITIUM_INTERPRETER_TIMEOUT");
    if (!text || !*text)
      return std::nullopt;
    char* end = nullptr;
    const double s = std::strtod(text, &end);
    if (*end != '\0' || !(s > 0) || !std::isfinite(s))
      throw Error(fmt::format(
          "TRITIUM_INTERPRETER_TIMEOUT={}: it must be a positive number of seconds", text));
    return TimeLimit(s);
  }
  bool passed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >
           seconds_;
  }
  double seconds() const { return seconds_; }

private:
  explicit TimeLimit(double s) : seconds_(s), start_(std::chrono::steady_clock::now()) {}
  double seconds_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace tritium::interp
