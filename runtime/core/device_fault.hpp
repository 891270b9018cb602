// The message of a device fault, shared by the GPU backends so that CUDA and HIP users read
// the same words: what was being done, the last kernel launched, and how to pin it down.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace tritium::detail {

inline std::string device_fault_message(std::string_view backend, std::string_view while_doing,
                                        const std::string* last_kernel,
                                        std::string_view description, bool launch_blocking) {
  return fmt::format("{}: device error while {}{}: {}{}", backend, while_doing,
                     last_kernel ? fmt::format(" (the last kernel launched was '{}')", *last_kernel)
                                 : std::string(),
                     description,
                     launch_blocking
                         ? ""
                         : "; set TRITIUM_LAUNCH_BLOCKING=1 to wait after each launch and name the "
                           "failing kernel exactly");
}

} // namespace tritium::detail
