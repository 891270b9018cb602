// TRITIUM_CHECK: a kernel whose every load, store and atomic is checked against the extent of
// the buffer argument its pointer was derived from. An IR-to-IR rewrite, so that the CPU, the
// interpreter, the gpu-emulator, CUDA and HIP run the same checks with no lowering of their own:
//
//   * each pointer argument gets a hidden i64 argument after the kernel's own: its extent in
//     bytes; one more hidden argument points to a record of kCheckRecordWords i64 words;
//   * an access whose pointer derives from argument k (through addptr, splats, shape ops,
//     selects, loop-carried values) computes each element's byte offset from the argument,
//     masks off the elements outside [0, extent) or misaligned for the element type, so that
//     nothing outside the buffer is read or written, and the first failing element of the
//     launch (a compare-and-swap on the record's first word) writes where it is into the record;
//   * an i32 element offset on the way (addptr's) is recomputed in i64 from the additions,
//     subtractions and multiplications that made it: an element whose offset wrapped past 2^31
//     is skipped and reported as such, even where the wrapped address falls inside the buffer.
//
// The launcher zeroes the record, launches, reads it back, and raises bounds_failure_message.
#pragma once

#include <tritium/ir/ir.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::ir {

// The record: [0] 1 once an access failed, [1] its site, [2..4] the program id, [5] the flat
// index of the element in the access's tile, [6] and [7] what the site's kind says.
inline constexpr size_t kCheckRecordWords = 8;
using CheckRecord = std::array<int64_t, kCheckRecordWords>;

// One checked access.
struct CheckSite {
  // Bounds: an offset outside the buffer or misaligned ([6] the byte offset, [7] the extent).
  // Overflow: an i32 element offset that wrapped ([6] its exact value, [7] the wrapped one).
  enum class Kind : uint8_t { Bounds, Overflow };
  std::string where;          // the access's source location
  std::string op;             // "load", "store", "atomic_rmw", "atomic_cas"
  int arg = 0;                // the argument its pointer derives from
  std::string arg_name;       // "" when unknown
  std::vector<int64_t> shape; // the access's tile ({} for a scalar)
  int elem_bytes = 1;
  Kind kind = Kind::Bounds;
};

struct BoundsChecked {
  std::unique_ptr<Function> fn;
  std::vector<CheckSite> sites;
  int pointer_args = 0; // how many extents follow the kernel's own arguments
  // Accesses through a pointer no argument accounts for (loaded from memory, made from an
  // integer, or selected between two arguments): left unchecked.
  int unchecked = 0;
};

BoundsChecked insert_bounds_checks(const Function& f);

// The error for a record whose first word is set: the kernel, the source line, the program,
// the element and the offending offset.
std::string bounds_failure_message(std::string_view kernel, std::span<const CheckSite> sites,
                                   const CheckRecord& record);

} // namespace tritium::ir
