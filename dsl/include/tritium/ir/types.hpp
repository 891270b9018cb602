// Element types and tensor types of tritium's block-level IR.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::ir {

// Scalar kinds, one per row of dtypes.def. Unsigned kinds exist because Triton has uint8…uint64;
// they share the storage of their signed twins and differ in division, shifts, comparisons and
// casts.
enum class ScalarKind : uint8_t {
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code) Kind,
#include <tritium/ir/dtypes.def>
};
inline constexpr int kNumScalarKinds = 0
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code) +1
#include <tritium/ir/dtypes.def>
    ;

// What a kind is (dtypes.def's family column).
enum class DTypeFamily : uint8_t { Bool, Signed, Unsigned, Float, Storage, Pointer };
constexpr DTypeFamily family(ScalarKind k) {
  switch (k) {
#define TRITIUM_DTYPE(Kind, ir_name, bits, fam, cpp_type, dlpack_code)                             \
  case ScalarKind::Kind:                                                                           \
    return DTypeFamily::fam;
#include <tritium/ir/dtypes.def>
  }
  return DTypeFamily::Pointer;
}

// An element type: a scalar kind, or a pointer to one (global address space).
struct DType {
  ScalarKind kind = ScalarKind::I32;
  ScalarKind pointee = ScalarKind::I32; // meaningful only when kind == Ptr

  constexpr DType() = default;
  constexpr DType(ScalarKind k) : kind(k) {}
  static constexpr DType pointer_to(ScalarKind p) {
    DType d(ScalarKind::Ptr);
    d.pointee = p;
    return d;
  }

  constexpr bool is_ptr() const { return kind == ScalarKind::Ptr; }
  // Floats, storage floats (fp8) included: what Triton's is_floating() answers.
  constexpr bool is_float() const {
    return family(kind) == DTypeFamily::Float || family(kind) == DTypeFamily::Storage;
  }
  // A float with no register type of its own (fp8): registers and memory hold its bits, and
  // every op decodes to f32, computes there and encodes (dtypes.def).
  constexpr bool is_storage_float() const { return family(kind) == DTypeFamily::Storage; }
  constexpr bool is_int() const { return !is_ptr() && !is_float(); } // includes i1
  constexpr bool is_bool() const { return kind == ScalarKind::I1; }
  constexpr bool is_unsigned() const {
    return family(kind) == DTypeFamily::Unsigned || family(kind) == DTypeFamily::Bool;
  }
  constexpr bool is_signed_int() const { return is_int() && !is_unsigned(); }
  int bits() const;                 // storage width; pointers are 64
  DType element_of_pointer() const; // the pointee as a DType
  friend constexpr bool operator==(DType a, DType b) {
    return a.kind == b.kind && (a.kind != ScalarKind::Ptr || a.pointee == b.pointee);
  }
};

std::string to_string(DType t);
// Parses "f32", "ptr<f16>", …; returns false on an unknown name.
bool parse_dtype(std::string_view s, DType& out);

// A layout attached to a tensor type by the GPU pipeline. The IR only prints and compares it
// (and parses it through a hook, see ir::parse); what it means belongs to codegen.
struct Layout {
  virtual ~Layout() = default;
  virtual std::string str() const = 0;
  // Structural equality: the same kind with the same parameters.
  virtual bool equals(const Layout& other) const = 0;
};
using LayoutPtr = std::shared_ptr<const Layout>;
// Both null, or structurally equal.
bool same_layout(const LayoutPtr& a, const LayoutPtr& b);

// The type of an SSA value: element type and shape. Rank 0 is a scalar.
struct Type {
  DType elem;
  std::vector<int64_t> shape;
  LayoutPtr layout; // null until codegen assigns one

  Type() = default;
  Type(DType e, std::vector<int64_t> s = {}) : elem(e), shape(std::move(s)) {}

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_scalar() const { return shape.empty(); }
  int64_t numel() const;
  Type with_elem(DType e) const { return Type(e, shape); }
  Type with_shape(std::vector<int64_t> s) const { return Type(elem, std::move(s)); }
  Type scalar() const { return Type(elem); }
  friend bool operator==(const Type& a, const Type& b);
};

std::string to_string(const Type& t);
std::string shape_string(const std::vector<int64_t>& shape);

} // namespace tritium::ir
