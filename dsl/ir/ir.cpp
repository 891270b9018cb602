#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/ir.hpp>

#include <fmt/format.h>

#include <array>

namespace tritium::ir {
namespace {

struct OpInfo {
  std::string_view name;
  OpCategory category;
};

constexpr OpInfo op_infos[] = {
#define TRITIUM_OP(Kind, name, Category) {name, OpCategory::Category},
#include <tritium/ir/ops.def>
};

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

std::string_view op_name(OpKind k) {
  return op_infos[static_cast<size_t>(k)].name;
}
OpCategory op_category(OpKind k) {
  return op_infos[static_cast<size_t>(k)].category;
}

bool op_kind_from_name(std::string_view name, OpKind& out) {
  for (size_t i = 0; i < std::size(op_infos); ++i)
    if (op_infos[i].name == name) {
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

Function::Function() {
  body.block->parent = &body;
}

Value* Function::new_value(Type t) {
  values_.push_back(std::make_unique<Value>());
  values_.back()->type = std::move(t);
  return values_.back().get();
}

void Function::replace_all_uses(Value* from, Value* to) {
  walk(entry(), [&](Op& op) {
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
  block_->ops.push_back(std::move(op));
  return *block_->ops.back();
}

Value* Builder::add_block_arg(Block& b, Type t) {
  Value* v = func_->new_value(std::move(t));
  v->block = &b;
  v->index = static_cast<unsigned>(b.args.size());
  b.args.push_back(v);
  return v;
}

} // namespace tritium::ir
