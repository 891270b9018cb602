// tritium's block-level SSA IR: functions of blocks of ops, ops with nested regions
// for structured control flow, values typed by element type and shape.
#pragma once

#include <tritium/ir/attrs.hpp>
#include <tritium/ir/ops.hpp>
#include <tritium/ir/types.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tritium::ir {

// Whether an operand of element type `t` belongs to class `c`.
bool admits(OperandClass c, DType t);

// A source position in the user's kernel, carried by ops for error messages.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  std::string str() const;
};

// Attribute values: numbers, strings, integer lists, and the closed sets of attrs.hpp.
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, CmpPred, AtomicOp, MemSem,
                 MemScope, CacheModifier, EvictionPolicy, InputPrecision>;
using Attrs = std::map<std::string, AttrValue, std::less<>>;

struct Op;
struct Block;
struct Region;

struct Value {
  Type type;
  Op* def = nullptr;      // defining op, or null for a block argument
  Block* block = nullptr; // owning block, for block arguments
  unsigned index = 0;     // result number or argument number
};

struct Block {
  std::vector<Value*> args;
  std::vector<std::unique_ptr<Op>> ops;
  Region* parent = nullptr;

  Op* terminator() const { return ops.empty() ? nullptr : ops.back().get(); }
};

struct Region {
  std::unique_ptr<Block> block = std::make_unique<Block>();
  Op* parent = nullptr;
};

struct Op {
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<Value*> results;
  Attrs attrs;
  std::vector<std::unique_ptr<Region>> regions;
  Block* parent = nullptr;
  SourceLoc loc;

  Value* result(unsigned i = 0) const { return results.at(i); }
  Value* operand(unsigned i) const { return operands.at(i); }
  bool has_attr(std::string_view name) const { return attrs.find(name) != attrs.end(); }
  int64_t int_attr(std::string_view name) const;
  int64_t int_attr(std::string_view name, int64_t fallback) const;
  double float_attr(std::string_view name) const;
  const std::string& str_attr(std::string_view name) const;
  const std::vector<int64_t>& ints_attr(std::string_view name) const;
  // An attribute of one of attrs.hpp's enums, under its key (e.g. enum_attr<CmpPred>()).
  template <class E>
  E enum_attr() const {
    auto it = attrs.find(EnumAttr<E>::key);
    const E* v = it == attrs.end() ? nullptr : std::get_if<E>(&it->second);
    if (!v)
      bad_attr(EnumAttr<E>::key, it == attrs.end());
    return *v;
  }
  template <class E>
  E enum_attr(E fallback) const {
    return has_attr(EnumAttr<E>::key) ? enum_attr<E>() : fallback;
  }
  [[noreturn]] void bad_attr(std::string_view name, bool missing) const;
  Block& body(unsigned region = 0) const { return *regions.at(region)->block; }
};

// What launch-time specialization tells about a kernel argument.
struct ArgInfo {
  std::string name;         // "" when unknown
  int64_t divisibility = 1; // value (or address) is a multiple of this
  bool is_constant = false; // specialized to the value below
  int64_t constant = 0;
  // Pointers: the buffer is smaller than 2^31 bytes, so in-bounds offsets from it fit 32 bits
  // (what AMD's buffer instructions need; Triton's tt.pointer_range = 32).
  bool range32 = false;
};

// What a function is compiled for, once chosen: the GPU compiler and `tritium opt` record it
// so that a dumped or hand-written `.tir` file runs through the passes without flags. Its text
// form is a line before `func`: `module {target = "gfx942", num_warps = 4}`. Traced IR has
// none; 0 and "" are unset (then the target's own warp size and matrix unit).
struct ModuleAttrs {
  std::string target; // an architecture (sm_90a, gfx942, ...) or "host"
  int64_t num_warps = 0;
  int64_t num_stages = 0;
  int64_t warp_size = 0;   // set only where no target decides it
  std::string matrix_unit; // set only where it differs from the target's
  bool empty() const { return *this == ModuleAttrs{}; }
  bool operator==(const ModuleAttrs&) const = default;
};

struct Function {
  std::string name;
  Region body;
  std::vector<ArgInfo> arg_info; // one per body argument
  ModuleAttrs module;

  Function();
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  Block& entry() const { return *body.block; }
  const std::vector<Value*>& args() const { return body.block->args; }

  Value* new_value(Type t);
  // Every use of `from` becomes a use of `to` (in all nested regions).
  void replace_all_uses(Value* from, Value* to);

private:
  std::vector<std::unique_ptr<Value>> values_;
};

// A deep copy: ops, regions, attributes, source locations, argument infos and layouts.
std::unique_ptr<Function> clone(const Function& f);

// Walks every op in `block` and its nested regions, parents before children.
template <class F>
void walk(Block& block, F&& f) {
  for (auto& op : block.ops) {
    f(*op);
    for (auto& r : op->regions)
      walk(*r->block, f);
  }
}

} // namespace tritium::ir
