#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/ir.hpp>

#include "clone_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <unordered_map>

namespace tritium::ir {
namespace {

// Names ops.def's columns use.
constexpr auto Any = OperandClass::Any;
constexpr auto Int = OperandClass::Int;
constexpr auto Float = OperandClass::Float;
constexpr auto Numeric = OperandClass::Numeric;
constexpr auto Pointer = OperandClass::Pointer;
constexpr auto Bool = OperandClass::Bool;
constexpr uint8_t Many = kManyOperands;
constexpr auto Pure = OpTrait::Pure;
constexpr auto Lanewise = OpTrait::Lanewise;
constexpr auto SameType = OpTrait::SameType;
constexpr auto ReadsMemory = OpTrait::ReadsMemory;
constexpr auto WritesMemory = OpTrait::WritesMemory;
constexpr auto Effects = OpTrait::Effects;
constexpr auto Regions = OpTrait::Regions;
constexpr auto Terminator = OpTrait::Terminator;
constexpr auto GpuOnly = OpTrait::GpuOnly;

constexpr OpSpec spec(std::string_view name, OpCategory cat,
                      std::initializer_list<OperandClass> classes, uint8_t min, uint8_t max,
                      uint8_t results, OpTrait traits) {
  OpSpec s{name, cat,     static_cast<uint8_t>(classes.size()), {}, min,
           max,  results, static_cast<uint16_t>(traits)};
  size_t i = 0;
  for (OperandClass c : classes)
    s.classes[i++] = c;
  return s;
}
#define TRITIUM_UNPAREN_(...) __VA_ARGS__

constexpr OpSpec specs[] = {
#define TRITIUM_OP(Kind, name, Category, operands, min, max, results, traits)                      \
  spec(name, OpCategory::Category, {TRITIUM_UNPAREN_ operands}, min, max, results, traits),
#include <tritium/ir/ops.def>
};
static_assert(std::size(specs) == kNumOpKinds);

template <class T>
const T& get_attr(const Op& op, std::string_view name) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end())
    throw Error(
        fmt::format("{}: op '{}' has no attribute '{}'", op.loc.str(), op_name(op.kind), name));
  if (auto* v = std::get_if<T>(&it->second))
    return *v;
  throw Error(fmt::format("{}: attribute '{}' of op '{}' has the wrong kind", op.loc.str(), name,
                          op_name(op.kind)));
}

} // namespace

const OpSpec& op_spec(OpKind k) {
  return specs[static_cast<size_t>(k)];
}
std::string_view op_name(OpKind k) {
  return specs[static_cast<size_t>(k)].name;
}
OpCategory op_category(OpKind k) {
  return specs[static_cast<size_t>(k)].category;
}

std::string_view category_name(OpCategory c) {
  switch (c) {
  case OpCategory::Source:
    return "source";
  case OpCategory::Binary:
    return "binary";
  case OpCategory::Compare:
    return "compare";
  case OpCategory::Unary:
    return "unary";
  case OpCategory::Math:
    return "math";
  case OpCategory::Extern:
    return "extern";
  case OpCategory::Ternary:
    return "ternary";
  case OpCategory::Select:
    return "select";
  case OpCategory::Convert:
    return "convert";
  case OpCategory::Shape:
    return "shape";
  case OpCategory::Memory:
    return "memory";
  case OpCategory::Shared:
    return "shared";
  case OpCategory::Collective:
    return "collective";
  case OpCategory::Control:
    return "control";
  case OpCategory::Terminator:
    return "terminator";
  case OpCategory::Hint:
    return "hint";
  case OpCategory::Debug:
    return "debug";
  }
  return "?";
}

OperandClass operand_class(OpKind k, size_t i) {
  const OpSpec& s = op_spec(k);
  if (s.num_classes == 0)
    return OperandClass::Any;
  return s.classes[std::min<size_t>(i, s.num_classes - 1)];
}

std::string_view operand_class_name(OperandClass c) {
  switch (c) {
  case OperandClass::Any:
    return "any";
  case OperandClass::Int:
    return "integer";
  case OperandClass::Float:
    return "floating-point";
  case OperandClass::Numeric:
    return "numeric (integer or floating-point)";
  case OperandClass::Pointer:
    return "pointer";
  case OperandClass::Bool:
    return "i1";
  }
  return "?";
}

bool admits(OperandClass c, DType t) {
  switch (c) {
  case OperandClass::Any:
    return true;
  case OperandClass::Int:
    return t.is_int();
  case OperandClass::Float:
    return t.is_float();
  case OperandClass::Numeric:
    return !t.is_ptr();
  case OperandClass::Pointer:
    return t.is_ptr();
  case OperandClass::Bool:
    return t.is_bool();
  }
  return false;
}

void wrong_category(OpKind k, OpCategory wanted) {
  throw Error(fmt::format("internal error: op '{}' is a {} op, not a {} op", op_name(k),
                          category_name(op_category(k)), category_name(wanted)));
}

bool op_kind_from_name(std::string_view name, OpKind& out) {
  for (size_t i = 0; i < std::size(specs); ++i)
    if (specs[i].name == name) {
      out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

std::string SourceLoc::str() const {
  if (file.empty())
    return "<unknown>";
  return fmt::format("{}:{}", file, line);
}

int64_t Op::int_attr(std::string_view name) const {
  return get_attr<int64_t>(*this, name);
}
int64_t Op::int_attr(std::string_view name, int64_t fallback) const {
  return has_attr(name) ? int_attr(name) : fallback;
}
double Op::float_attr(std::string_view name) const {
  auto it = attrs.find(name);
  if (it != attrs.end())
    if (auto* i = std::get_if<int64_t>(&it->second))
      return static_cast<double>(*i);
  return get_attr<double>(*this, name);
}
const std::string& Op::str_attr(std::string_view name) const {
  return get_attr<std::string>(*this, name);
}
const std::vector<int64_t>& Op::ints_attr(std::string_view name) const {
  return get_attr<std::vector<int64_t>>(*this, name);
}
void Op::bad_attr(std::string_view name, bool missing) const {
  if (missing)
    throw Error(fmt::format("{}: op '{}' has no attribute '{}'", loc.str(), op_name(kind), name));
  throw Error(fmt::format("{}: attribute '{}' of op '{}' has the wrong kind", loc.str(), name,
                          op_name(kind)));
}

Function::Function() {
  body.block->parent = &body;
}

Value* Function::new_value(Type t) {
  values_.push_back(std::make_unique<Value>());
  values_.back()->type = std::move(t);
  return values_.back().get();
}

void Function::replace_all_uses(Value* from, Value* to) {
  // A value is visible only in the block that defines it and the regions nested there, so only
  // that block is walked: replacing every loop's carried values while tracing, or many values in
  // a pass, stays linear in the kernel's size instead of walking the whole function each time.
  Block* scope = from->def ? from->def->parent : from->block;
  walk(scope ? *scope : entry(), [&](Op& op) {
    for (auto& v : op.operands)
      if (v == from)
        v = to;
  });
}

Op& Builder::create(OpKind kind, std::vector<Value*> operands, std::vector<Type> result_types,
                    Attrs attrs, unsigned num_regions) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->parent = block_;
  op->loc = loc_;
  for (unsigned i = 0; i < result_types.size(); ++i) {
    Value* v = func_->new_value(std::move(result_types[i]));
    v->def = op.get();
    v->index = i;
    op->results.push_back(v);
  }
  for (unsigned i = 0; i < num_regions; ++i) {
    op->regions.push_back(std::make_unique<Region>());
    op->regions.back()->parent = op.get();
    op->regions.back()->block->parent = op->regions.back().get();
  }
  Op& ref = *op;
  if (at_ == kEnd)
    block_->ops.push_back(std::move(op));
  else
    block_->ops.insert(block_->ops.begin() + static_cast<std::ptrdiff_t>(at_++), std::move(op));
  return ref;
}

Value* Builder::add_block_arg(Block& b, Type t) {
  Value* v = func_->new_value(std::move(t));
  v->block = &b;
  v->index = static_cast<unsigned>(b.args.size());
  b.args.push_back(v);
  return v;
}

namespace {

class Cloner {
public:
  explicit Cloner(Function& to) : to_(to), b_(to, to.entry()) {}
  Cloner(Builder& at, std::unordered_map<const Value*, Value*>& map)
      : to_(at.function()), b_(at), map_(map) {}

  // One op and its regions where the builder is; operands it does not map are its own.
  Op& op(const Op& from) {
    Block& into = b_.block();
    Op& c = copy(from);
    b_.set_block(into);
    return c;
  }

  void block(const Block& from, Block& into) {
    for (Value* a : from.args)
      map_[a] = b_.add_block_arg(into, a->type);
    b_.set_block(into);
    for (const auto& op : from.ops) {
      copy(*op);
      b_.set_block(into);
    }
  }

private:
  Op& copy(const Op& op) {
    std::vector<Value*> operands;
    for (Value* v : op.operands) {
      auto it = map_.find(v);
      operands.push_back(it == map_.end() ? v : it->second);
    }
    std::vector<Type> types;
    for (Value* r : op.results)
      types.push_back(r->type);
    b_.set_loc(op.loc);
    Op& c = b_.create(op.kind, std::move(operands), std::move(types), op.attrs,
                      static_cast<unsigned>(op.regions.size()));
    for (size_t i = 0; i < op.results.size(); ++i)
      map_[op.results[i]] = c.results[i];
    for (size_t r = 0; r < op.regions.size(); ++r)
      block(*op.regions[r]->block, *c.regions[r]->block);
    return c;
  }

  Function& to_;
  Builder b_;
  std::unordered_map<const Value*, Value*> own_;
  std::unordered_map<const Value*, Value*>& map_ = own_;
};

} // namespace

std::unique_ptr<Function> clone(const Function& f) {
  auto g = std::make_unique<Function>();
  g->name = f.name;
  g->arg_info = f.arg_info;
  g->module = f.module;
  Cloner(*g).block(f.entry(), g->entry());
  return g;
}

Op& clone_op(Builder& b, const Op& op, std::unordered_map<const Value*, Value*>& map) {
  Builder at = b;
  return Cloner(at, map).op(op);
}

} // namespace tritium::ir
