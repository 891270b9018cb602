// What ops.def says about each op kind, as C++: the OpKind enum, categories, operand classes,
// traits, and one enum per category (BinaryOp, MathOp, …) whose values are the OpKind values.
//
// Backends dispatch over a category's enum with a `switch` that has no `default`, compiled
// with -Werror=switch: an op added to ops.def that a backend does not handle fails to compile.
#pragma once

#include <cstdint>
#include <string_view>

namespace tritium::ir {

enum class OpKind : uint8_t {
#define TRITIUM_OP(Kind, ...) Kind,
#include <tritium/ir/ops.def>
};

enum class OpCategory : uint8_t {
  Source,
  Binary,
  Compare,
  Unary,
  Math,
  Extern,
  Ternary,
  Select,
  Convert,
  Shape,
  Memory,
  Shared,
  Collective,
  Control,
  Terminator,
  Hint,
  Debug,
};

// The element types an operand admits.
enum class OperandClass : uint8_t {
  Any,
  Int, // integers and i1
  Float,
  Numeric, // integers, i1 and floats: not pointers
  Pointer,
  Bool, // i1
};

enum class OpTrait : uint16_t {
  Pure = 1 << 0,         // no side effect: erased when its results are unused
  Lanewise = 1 << 1,     // operands and results of one shape; lane i from lane i of each operand
  SameType = 1 << 2,     // every operand and result has one type
  ReadsMemory = 1 << 3,  //
  WritesMemory = 1 << 4, //
  Effects = 1 << 5,      // prints, traps, synchronizes or constrains: never erased or moved
  Regions = 1 << 6,      // owns regions
  Terminator = 1 << 7,   // ends a block
  GpuOnly = 1 << 8,      // made by the GPU passes; never traced
};
constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint16_t>(a) | static_cast<uint16_t>(b));
}

inline constexpr uint8_t kManyOperands = 255; // ops.def's `Many`

// One line of ops.def.
struct OpSpec {
  std::string_view name;
  OpCategory category;
  uint8_t num_classes;                         // entries of `classes` in use
  OperandClass classes[6];                     // the last one repeats for further operands
  uint8_t min_operands, max_operands, results; // kManyOperands: variadic / op-specific
  uint16_t traits;
};

const OpSpec& op_spec(OpKind k);
std::string_view op_name(OpKind k);
OpCategory op_category(OpKind k);
std::string_view category_name(OpCategory c);
inline bool has_trait(OpKind k, OpTrait t) {
  return (op_spec(k).traits & static_cast<uint16_t>(t)) != 0;
}
// The class operand `i` of `k` must have.
OperandClass operand_class(OpKind k, size_t i);
std::string_view operand_class_name(OperandClass c); // "integer", "floating-point", …
// Computed lane by lane from the operands alone (Lanewise and Pure): arithmetic, compares,
// math, select, conversions, hints and pointer arithmetic. One scalar instruction sequence per
// lane implements it (codegen/llvm/scalar.hpp on the CPU and the GPU).
inline bool is_elementwise(OpKind k) {
  return has_trait(k, OpTrait::Lanewise) && has_trait(k, OpTrait::Pure);
}
// Returns false when `name` is no op.
bool op_kind_from_name(std::string_view name, OpKind& out);
// The number of op kinds.
inline constexpr size_t kNumOpKinds = 0
#define TRITIUM_OP(...) +1
#include <tritium/ir/ops.def>
    ;

// --- one enum per category ----------------------------------------------------------------
#define TRITIUM_SUB_OP_(Kind, ...) Kind = static_cast<uint8_t>(OpKind::Kind),
enum class SourceOp : uint8_t {
#define TRITIUM_SOURCE TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class BinaryOp : uint8_t {
#define TRITIUM_BINARY TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class CompareOp : uint8_t {
#define TRITIUM_COMPARE TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class UnaryOp : uint8_t {
#define TRITIUM_UNARY TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class MathOp : uint8_t {
#define TRITIUM_MATH TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class ExternOp : uint8_t {
#define TRITIUM_EXTERN TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class TernaryOp : uint8_t {
#define TRITIUM_TERNARY TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class SelectOp : uint8_t {
#define TRITIUM_SELECT TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class ConvertOp : uint8_t {
#define TRITIUM_CONVERT TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class ShapeOp : uint8_t {
#define TRITIUM_SHAPE TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class MemoryOp : uint8_t {
#define TRITIUM_MEMORY TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class SharedOp : uint8_t {
#define TRITIUM_SHARED TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class CollectiveOp : uint8_t {
#define TRITIUM_COLLECTIVE TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class ControlOp : uint8_t {
#define TRITIUM_CONTROL TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class TerminatorOp : uint8_t {
#define TRITIUM_TERMINATOR TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class HintOp : uint8_t {
#define TRITIUM_HINT TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
enum class DebugOp : uint8_t {
#define TRITIUM_DEBUG TRITIUM_SUB_OP_
#include <tritium/ir/ops.def>
};
#undef TRITIUM_SUB_OP_

template <class E>
struct CategoryOf;
#define TRITIUM_CATEGORY_OF_(E, C)                                                                 \
  template <>                                                                                      \
  struct CategoryOf<E> {                                                                           \
    static constexpr OpCategory value = OpCategory::C;                                             \
  };
TRITIUM_CATEGORY_OF_(SourceOp, Source)
TRITIUM_CATEGORY_OF_(BinaryOp, Binary)
TRITIUM_CATEGORY_OF_(CompareOp, Compare)
TRITIUM_CATEGORY_OF_(UnaryOp, Unary)
TRITIUM_CATEGORY_OF_(MathOp, Math)
TRITIUM_CATEGORY_OF_(ExternOp, Extern)
TRITIUM_CATEGORY_OF_(TernaryOp, Ternary)
TRITIUM_CATEGORY_OF_(SelectOp, Select)
TRITIUM_CATEGORY_OF_(ConvertOp, Convert)
TRITIUM_CATEGORY_OF_(ShapeOp, Shape)
TRITIUM_CATEGORY_OF_(MemoryOp, Memory)
TRITIUM_CATEGORY_OF_(SharedOp, Shared)
TRITIUM_CATEGORY_OF_(CollectiveOp, Collective)
TRITIUM_CATEGORY_OF_(ControlOp, Control)
TRITIUM_CATEGORY_OF_(TerminatorOp, Terminator)
TRITIUM_CATEGORY_OF_(HintOp, Hint)
TRITIUM_CATEGORY_OF_(DebugOp, Debug)
#undef TRITIUM_CATEGORY_OF_

[[noreturn]] void wrong_category(OpKind k, OpCategory wanted);

// `k` as its category's enum (e.g. as<MathOp>(OpKind::Exp) == MathOp::Exp); throws
// tritium::Error when `k` is of another category.
template <class E>
E as(OpKind k) {
  if (op_category(k) != CategoryOf<E>::value)
    wrong_category(k, CategoryOf<E>::value);
  return static_cast<E>(k);
}
template <class E>
constexpr OpKind kind_of(E e) {
  return static_cast<OpKind>(e);
}

} // namespace tritium::ir
