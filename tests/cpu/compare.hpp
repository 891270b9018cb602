// Comparing a device's output bytes with the interpreter's, element by element in a dtype:
// integers bitwise; floats bitwise except that any NaN equals any NaN and -0 equals +0
// (the CPU backend's min/max may pick either zero; NaN payloads are not specified).
#pragma once

#include <tritium/float16.hpp>
#include <tritium/float_format.hpp>
#include <tritium/ir/types.hpp>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::testing {

inline size_t storage_bytes(ir::DType t) {
  return t.is_bool() ? 1 : t.bits() / 8;
}

inline double as_double(const uint8_t* p, ir::DType t) {
  if (t.is_storage_float()) // an fp8 code
    return decode_float(*p, *float_format(t.kind));
  switch (t.kind) {
  case ir::ScalarKind::F16: {
    uint16_t u;
    std::memcpy(&u, p, 2);
    return f16_bits_to_float(u);
  }
  case ir::ScalarKind::BF16: {
    uint16_t u;
    std::memcpy(&u, p, 2);
    return bf16_bits_to_float(u);
  }
  case ir::ScalarKind::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  default: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  }
}

// The first differing element, described; nothing when equal.
inline std::optional<std::string> first_mismatch(const std::vector<uint8_t>& want,
                                                 const std::vector<uint8_t>& got, ir::DType t,
                                                 std::string_view device = "cpu") {
  size_t w = storage_bytes(t);
  for (size_t i = 0; i + w <= want.size(); i += w) {
    if (std::memcmp(&want[i], &got[i], w) == 0)
      continue;
    if (t.is_float()) {
      double a = as_double(&want[i], t), b = as_double(&got[i], t);
      if ((std::isnan(a) && std::isnan(b)) || (a == 0 && b == 0))
        continue;
      return fmt::format("element {} ({}): interpreter {}, {} {}", i / w, ir::to_string(t), a,
                         device, b);
    }
    uint64_t a = 0, b = 0;
    std::memcpy(&a, &want[i], w);
    std::memcpy(&b, &got[i], w);
    return fmt::format("element {} ({}): interpreter {:#x}, {} {:#x}", i / w, ir::to_string(t), a,
                       device, b);
  }
  return std::nullopt;
}

// Bit for bit, so that a lane stored twice, skipped or written past a mask shows.
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

} // namespace tritium::testing
