// The list of C math functions kernels may call, with the host's implementation of each.
#include <tritium/ir/extern_math.hpp>

#include <math.h>

#include <array>

namespace tritium::ir {
namespace {

using F1 = double (*)(double);
using F2 = double (*)(double, double);

#define TRITIUM_UNARY(name) ExternMath{#name, 1, static_cast<F1>(::name), nullptr}
#define TRITIUM_BINARY(name) ExternMath{#name, 2, nullptr, static_cast<F2>(::name)}
// Every entry is in glibc's libm, in CUDA's libdevice and in ROCm's ocml.
const std::array table{
    TRITIUM_UNARY(acos),      TRITIUM_UNARY(acosh),     TRITIUM_UNARY(asin),
    TRITIUM_UNARY(asinh),     TRITIUM_UNARY(atan),      TRITIUM_UNARY(atanh),
    TRITIUM_UNARY(cbrt),      TRITIUM_UNARY(cosh),      TRITIUM_UNARY(erfc),
    TRITIUM_UNARY(exp10),     TRITIUM_UNARY(expm1),     TRITIUM_UNARY(j0),
    TRITIUM_UNARY(j1),        TRITIUM_UNARY(lgamma),    TRITIUM_UNARY(log10),
    TRITIUM_UNARY(log1p),     TRITIUM_UNARY(logb),      TRITIUM_UNARY(nearbyint),
    TRITIUM_UNARY(rint),      TRITIUM_UNARY(round),     TRITIUM_UNARY(sinh),
    TRITIUM_UNARY(tan),       TRITIUM_UNARY(tgamma),    TRITIUM_UNARY(trunc),
    TRITIUM_UNARY(y0),        TRITIUM_UNARY(y1),        TRITIUM_BINARY(atan2),
    TRITIUM_BINARY(copysign), TRITIUM_BINARY(fdim),     TRITIUM_BINARY(fmod),
    TRITIUM_BINARY(hypot),    TRITIUM_BINARY(nextafter), TRITIUM_BINARY(remainder),
};
#undef TRITIUM_UNARY
#undef TRITIUM_BINARY

} // namespace

const ExternMath* find_extern_math(std::string_view name) {
  for (const auto& e : table)
    if (e.name == name)
      return &e;
  return nullptr;
}

std::string extern_math_names() {
  std::string s;
  for (const auto& e : table) {
    if (!s.empty())
      s += ", ";
    s += e.name;
  }
  return s;
}

} // namespace tritium::ir
