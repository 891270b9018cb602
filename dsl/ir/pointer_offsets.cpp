#include "pointer_offsets.hpp"

#include "offset_bounds.hpp"

namespace tritium::ir {

namespace {

// Ops that leave each element's offset as it is.
bool shape_only(OpKind k) {
  return k == OpKind::Splat || k == OpKind::Broadcast || k == OpKind::ExpandDims ||
         k == OpKind::Hint;
}

} // namespace

std::optional<Induction> induction(const Value* v) {
  if (v->def || !v->block || !v->block->parent || v->index == 0)
    return std::nullopt;
  const Op* loop = v->block->parent->parent;
  if (!loop || loop->kind != OpKind::For || v->block != &loop->body())
    return std::nullopt;
  const size_t k = v->index - 1;
  const Value* next = loop->body().terminator()->operand(k);
  const Op* add = next->def;
  if (!add || add->kind != OpKind::AddPtr || add->operand(0) != v)
    return std::nullopt;
  Value* d = add->operand(1);
  while (d->def && shape_only(d->def->kind))
    d = d->def->operand(0);
  if (!d->type.is_scalar())
    return std::nullopt;
  if (d->def && d->def->kind == OpKind::Constant && d->def->has_attr(attr::value))
    return Induction{loop, loop->operand(3 + k), d, d->def->int_attr(attr::value)};
  if (made_in(d, *loop))
    return std::nullopt;
  return Induction{loop, loop->operand(3 + k), d, std::nullopt};
}

void find_inductions(const Block& b, Inductions& out) {
  for (const auto& op : b.ops) {
    if (op->kind == OpKind::For)
      for (const Value* v : op->body().args)
        if (auto step = induction(v))
          out.emplace(v, *step);
    for (const auto& r : op->regions)
      find_inductions(*r->block, out);
  }
}

std::optional<PointerOffsets> pointer_offsets(Value* p, const Value* arg,
                                              const Inductions& inductions) {
  PointerOffsets out;
  for (Value* q = p; q != arg;) {
    if (auto step = inductions.find(q); step != inductions.end()) {
      out.steps.push_back(step->second);
      q = step->second.init;
      continue;
    }
    const Op* d = q->def;
    if (!d)
      return std::nullopt;
    if (d->kind == OpKind::AddPtr) {
      Value* offset = d->operand(1);
      if (offset->type.is_scalar())
        out.scalars.push_back(offset);
      else if (offset->type.elem.kind == ScalarKind::I32)
        out.tiles.push_back(offset);
      else
        return std::nullopt;
    } else if (!shape_only(d->kind)) {
      return std::nullopt;
    }
    q = d->operand(0);
  }
  return out;
}

} // namespace tritium::ir
