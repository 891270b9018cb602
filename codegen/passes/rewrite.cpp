#include "passes/rewrite.hpp"

#include "gpu_ir/layout.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>

#include <unordered_map>

namespace tritium::gpu {

size_t index_in_block(const ir::Op& op) {
  const auto& ops = op.parent->ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].get() == &op)
      return i;
  throw Error("internal: op not in its parent block");
}

ir::Op& insert_op(ir::Function& f, ir::Block& block, size_t at, ir::OpKind kind,
                  std::vector<ir::Value*> operands, std::vector<ir::Type> result_types,
                  const ir::SourceLoc& loc) {
  ir::Builder b(f, block);
  b.set_insert_point(block, at);
  b.set_loc(loc);
  return b.create(kind, std::move(operands), std::move(result_types));
}

ir::Value* convert_to(ir::Function& f, ir::Block& block, size_t& at, ir::Value* v,
                      const ir::LayoutPtr& layout, const ir::SourceLoc& loc) {
  if (v->type.is_scalar() || same_layout(v->type.layout, layout))
    return v;
  ir::Type t = v->type;
  t.layout = layout;
  ir::Op& c = insert_op(f, block, at++, ir::OpKind::ConvertLayout, {v}, {t}, loc);
  return c.result();
}

bool is_pure(const ir::Op& op) {
  if (op.kind == ir::OpKind::Load && op.int_attr(attr::volatile_, 0))
    return false; // a volatile read is an effect
  using ir::OpTrait;
  return ir::has_trait(op.kind, OpTrait::Pure) || (ir::has_trait(op.kind, OpTrait::ReadsMemory) &&
                                                   !ir::has_trait(op.kind, OpTrait::WritesMemory));
}

namespace {
void count_uses(ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  for (auto& op : b.ops) {
    for (ir::Value* v : op->operands)
      ++uses[v];
    for (auto& r : op->regions)
      count_uses(*r->block, uses);
  }
}
bool erase_in(ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  bool changed = false;
  for (size_t i = b.ops.size(); i-- > 0;) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      changed |= erase_in(*r->block, uses);
    if (!is_pure(op) || !op.regions.empty())
      continue;
    bool used = false;
    for (ir::Value* v : op.results)
      used |= uses[v] > 0;
    if (used)
      continue;
    for (ir::Value* v : op.operands)
      --uses[v];
    b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(i));
    changed = true;
  }
  return changed;
}
} // namespace

void erase_dead_ops(ir::Function& f) {
  for (;;) {
    std::unordered_map<const ir::Value*, int> uses;
    count_uses(f.entry(), uses);
    if (!erase_in(f.entry(), uses))
      return;
  }
}

void carry_in_layout(ir::Function& f, ir::Op& loop, size_t k, const ir::LayoutPtr& layout) {
  ir::Block& body = loop.body();
  ir::Value* arg = body.args[k + 1];
  ir::Value* res = loop.results[k];
  const ir::LayoutPtr old = arg->type.layout;
  ir::Block& outer = *loop.parent;
  size_t at = index_in_block(loop);
  loop.operands[3 + k] = convert_to(f, outer, at, loop.operands[3 + k], layout, loop.loc);
  arg->type.layout = layout;
  size_t first = 0;
  ir::Type old_t = arg->type;
  old_t.layout = old;
  ir::Op& in = insert_op(f, body, first, ir::OpKind::ConvertLayout, {arg}, {old_t}, loop.loc);
  f.replace_all_uses(arg, in.result());
  in.operands[0] = arg;
  ir::Op& yield = *body.terminator();
  size_t before_yield = body.ops.size() - 1;
  yield.operands[k] = convert_to(f, body, before_yield, yield.operands[k], layout, loop.loc);
  res->type.layout = layout;
  size_t after = index_in_block(loop) + 1;
  ir::Op& out = insert_op(f, outer, after, ir::OpKind::ConvertLayout, {res}, {old_t}, loop.loc);
  f.replace_all_uses(res, out.result());
  out.operands[0] = res;
}

ir::Value* carry(ir::Function& f, ir::Op& loop, ir::Value* init) {
  loop.operands.push_back(init);
  ir::Block& b = loop.body();
  ir::Value* arg = f.new_value(init->type);
  arg->block = &b;
  arg->index = static_cast<unsigned>(b.args.size());
  b.args.push_back(arg);
  ir::Value* res = f.new_value(init->type);
  res->def = &loop;
  res->index = static_cast<unsigned>(loop.results.size());
  loop.results.push_back(res);
  return arg;
}

ir::Op& insert_if(ir::Function& f, ir::Block& b, size_t at, ir::Value* cond,
                  const ir::SourceLoc& loc) {
  ir::Op& op = insert_op(f, b, at, ir::OpKind::If, {cond}, {}, loc);
  for (int i = 0; i < 2; ++i) {
    auto r = std::make_unique<ir::Region>();
    r->parent = &op;
    r->block->parent = r.get();
    insert_op(f, *r->block, 0, ir::OpKind::Yield, {}, {}, loc);
    op.regions.push_back(std::move(r));
  }
  return op;
}

} // namespace tritium::gpu
