// Appends ops to a block; the tracer and every pass that creates ops use it.
#pragma once

#include <tritium/ir/ir.hpp>

#include <initializer_list>

namespace tritium::ir {

class Builder {
public:
  Builder(Function& f, Block& at) : func_(&f), block_(&at) {}

  Function& function() const { return *func_; }
  Block& block() const { return *block_; }
  // New ops go to the end of `b`.
  void set_block(Block& b) {
    block_ = &b;
    at_ = kEnd;
  }
  // New ops go before position `index` of `b`, in the order they are created.
  void set_insert_point(Block& b, size_t index) {
    block_ = &b;
    at_ = index;
  }
  void set_loc(SourceLoc loc) { loc_ = std::move(loc); }
  const SourceLoc& loc() const { return loc_; }

  // Creates an op at the insertion point (the end of the block unless set_insert_point) with
  // results of the given types.
  Op& create(OpKind kind, std::vector<Value*> operands, std::vector<Type> result_types,
             Attrs attrs = {}, unsigned num_regions = 0);
  // The common case of one result.
  Value* create1(OpKind kind, std::vector<Value*> operands, Type result_type, Attrs attrs = {}) {
    return create(kind, std::move(operands), {std::move(result_type)}, std::move(attrs)).result();
  }

  Value* constant_int(int64_t v, Type t) {
    return create1(OpKind::Constant, {}, t, {{attr::value, v}});
  }
  Value* constant_float(double v, Type t) {
    return create1(OpKind::Constant, {}, t, {{attr::value, v}});
  }
  Value* add_block_arg(Block& b, Type t);

private:
  static constexpr size_t kEnd = static_cast<size_t>(-1);
  Function* func_;
  Block* block_;
  size_t at_ = kEnd;
  SourceLoc loc_;
};

} // namespace tritium::ir
