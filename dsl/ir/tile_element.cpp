#include "tile_element.hpp"

namespace tritium::ir {

std::vector<Value*> multi_index(Builder& b, Value* flat, const std::vector<int64_t>& shape) {
  std::vector<Value*> index(shape.size());
  const Type i32(ScalarKind::I32);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    Value* i = stride > 1 ? b.create1(OpKind::Div, {flat, b.constant_int(stride, i32)}, i32) : flat;
    index[d] = d > 0 ? b.create1(OpKind::Rem, {i, b.constant_int(shape[d], i32)}, i32) : i;
    stride *= shape[d];
  }
  return index;
}

Value* TileElement::at(Value* v, const std::vector<Value*>& index) {
  if (v->type.is_scalar())
    return v;
  auto key = std::make_pair(static_cast<const Value*>(v), index);
  if (auto it = memo_.find(key); it != memo_.end())
    return it->second;
  Value* out = nullptr;
  const Op* d = v->def;
  const Type scalar = v->type.scalar();
  if (!d || index.size() != v->type.shape.size()) {
    // a block argument: a loop's tile
  } else if (d->kind == OpKind::Arange) {
    if (scalar.elem.kind == ScalarKind::I32)
      out = b_.create1(OpKind::Add, {index[0], b_.constant_int(d->int_attr(attr::start), scalar)},
                       scalar);
  } else if (d->kind == OpKind::Constant) {
    out = b_.create1(OpKind::Constant, {}, scalar, d->attrs);
  } else if (d->kind == OpKind::Splat) {
    out = d->operand(0);
  } else if (d->kind == OpKind::Hint) {
    out = at(d->operand(0), index);
  } else if (d->kind == OpKind::ExpandDims) {
    std::vector<Value*> inner = index;
    inner.erase(inner.begin() + d->int_attr(attr::axis));
    out = at(d->operand(0), inner);
  } else if (d->kind == OpKind::Broadcast) {
    const auto& from = d->operand(0)->type.shape;
    if (from.size() == index.size()) {
      std::vector<Value*> inner = index;
      for (size_t k = 0; k < from.size(); ++k)
        if (from[k] == 1)
          inner[k] = b_.constant_int(0, Type(ScalarKind::I32));
      out = at(d->operand(0), inner);
    }
  } else if (is_elementwise(d->kind) && d->regions.empty()) {
    std::vector<Value*> operands;
    for (Value* o : d->operands) {
      Value* e = at(o, index);
      if (!e)
        break;
      operands.push_back(e);
    }
    if (operands.size() == d->operands.size())
      out = b_.create1(d->kind, std::move(operands), scalar, d->attrs);
  }
  memo_[key] = out;
  return out;
}

} // namespace tritium::ir
