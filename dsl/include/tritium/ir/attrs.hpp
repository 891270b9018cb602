// The closed attribute sets of tritium's IR as enums, each with its attribute key and the names
// the text form uses (the printer writes them bare, the parser reads them back by key).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tritium::ir {

enum class CmpPred : uint8_t { Eq, Ne, Lt, Le, Gt, Ge }; // floats: ordered, but `ne` unordered
enum class AtomicOp : uint8_t { Add, Max, Min, And, Or, Xor, Xchg };
enum class MemSem : uint8_t { Relaxed, Acquire, Release, AcqRel };
enum class MemScope : uint8_t { Gpu, Cta, Sys };
enum class CacheModifier : uint8_t { Ca, Cg, Cv, Cs, Wb, Wt }; // Triton's ".ca" … without the dot
enum class EvictionPolicy : uint8_t { First, Last, Normal };
enum class InputPrecision : uint8_t { Ieee, Tf32, Tf32x3 };

// The attribute keys (attrs.def), as constants: attr::axis is "axis". Keys are read and
// written through these, never by a string of their own (tools/check_structure.py counts).
namespace attr {
#define TRITIUM_ATTR(id, key, kind, ops) inline constexpr const char* id = key;
#include <tritium/ir/attrs.def>
#undef TRITIUM_ATTR
} // namespace attr

// EnumAttr<E>: the attribute key that holds an E, and the text name of each value.
template <class E>
struct EnumAttr;

#define TRITIUM_ENUM_ATTR_(E, Last, Key, ...)                                                      \
  template <>                                                                                      \
  struct EnumAttr<E> {                                                                             \
    static constexpr std::string_view key = Key;                                                   \
    static constexpr std::array<std::string_view, static_cast<size_t>(E::Last) + 1> names{         \
        __VA_ARGS__};                                                                              \
  };
TRITIUM_ENUM_ATTR_(CmpPred, Ge, attr::pred, "eq", "ne", "lt", "le", "gt", "ge")
TRITIUM_ENUM_ATTR_(AtomicOp, Xchg, attr::op, "add", "max", "min", "and", "or", "xor", "xchg")
TRITIUM_ENUM_ATTR_(MemSem, AcqRel, attr::sem, "relaxed", "acquire", "release", "acq_rel")
TRITIUM_ENUM_ATTR_(MemScope, Sys, attr::scope, "gpu", "cta", "sys")
TRITIUM_ENUM_ATTR_(CacheModifier, Wt, attr::cache, "ca", "cg", "cv", "cs", "wb", "wt")
TRITIUM_ENUM_ATTR_(EvictionPolicy, Normal, attr::evict, "evict_first", "evict_last", "evict_normal")
TRITIUM_ENUM_ATTR_(InputPrecision, Tf32x3, attr::input_precision, "ieee", "tf32", "tf32x3")
#undef TRITIUM_ENUM_ATTR_

template <class E>
constexpr std::string_view enum_name(E e) {
  return EnumAttr<E>::names[static_cast<size_t>(e)];
}

// Reads a value's name; false when `name` names none.
template <class E>
constexpr bool parse_enum(std::string_view name, E& out) {
  const auto& names = EnumAttr<E>::names;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

// "eq, ne, lt, …": the names, for error messages.
template <class E>
std::string enum_names() {
  std::string s;
  for (auto n : EnumAttr<E>::names)
    s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

// The kind of value an attribute holds (attrs.def).
enum class AttrKind : uint8_t { Int, Float, Number, Str, Ints, IntOrInts, Enum };

// The kind `key` holds, or nullptr for a key attrs.def does not list.
inline const AttrKind* attr_kind(std::string_view key) {
  struct Entry {
    std::string_view key;
    AttrKind kind;
  };
  static constexpr Entry table[] = {
#define TRITIUM_ATTR(id, key, kind, ops) {key, AttrKind::kind},
#include <tritium/ir/attrs.def>
#undef TRITIUM_ATTR
  };
  for (const Entry& e : table)
    if (e.key == key)
      return &e.kind;
  return nullptr;
}

} // namespace tritium::ir

namespace tritium {
// The attribute keys, as every namespace of tritium reads them: attr::axis.
namespace attr = ir::attr;
} // namespace tritium
