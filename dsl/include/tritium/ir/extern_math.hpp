// The functions of the C math library that kernels may call by name (Triton's libdevice /
// extern_elementwise): extern_unary and extern_binary ops carry the C name ("asin", "atan2").
// Each device maps it to its own library: the interpreter and the CPU call the host's libm (in
// double, rounded to the operands' type), NVIDIA GPUs libdevice's __nv_<name>[f], AMD GPUs
// ROCm's ocml (__ocml_<name>_f32/_f64). Only names all of these have are listed.
#pragma once

#include <string>
#include <string_view>

namespace tritium::ir {

struct ExternMath {
  std::string_view name;
  int arity;                        // 1 or 2
  double (*host1)(double);          // arity 1: the host's libm function
  double (*host2)(double, double);  // arity 2
};

// The function called `name`, or null when the list has none.
const ExternMath* find_extern_math(std::string_view name);
// Every name, comma-separated, for error messages and documentation.
std::string extern_math_names();

} // namespace tritium::ir
