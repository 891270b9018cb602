// Algebraic combines (Triton's make_ttir "combine" patterns), so that the natural spelling of a
// kernel costs nothing:
//   x + dot(a, b)  (dot accumulating into zeros, used once)  ->  dot(a, b, x)
// `acc += tl::dot(a, b)` is how vLLM's MoE kernel and Inductor's templates write a K loop;
// without this the matrix unit accumulates into fresh zeros and every K step adds the
// accumulator again, element by element (32 extra add.f32 a thread per step on sm_90a).
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <unordered_map>

namespace tritium::gpu {
namespace {

using ir::OpKind;

bool is_zero_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d || d->kind != OpKind::Constant || !d->has_attr(attr::value))
    return false;
  return d->float_attr(attr::value) == 0.0;
}

// How many operands in the function read each value.
void count_uses(const ir::Block& b, std::unordered_map<const ir::Value*, int>& uses) {
  for (const auto& op : b.ops) {
    for (const ir::Value* v : op->operands)
      ++uses[v];
    for (const auto& r : op->regions)
      count_uses(*r->block, uses);
  }
}

void combine_block(ir::Function& f, ir::Block& b,
                   const std::unordered_map<const ir::Value*, int>& uses) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      combine_block(f, *r->block, uses);
    if (op.kind != OpKind::Add || op.results.size() != 1)
      continue;
    for (size_t k = 0; k < 2; ++k) {
      ir::Value* d = op.operands[k];
      ir::Value* x = op.operands[1 - k];
      ir::Op* dot = d->def;
      auto n = uses.find(d);
      if (!dot || dot->kind != OpKind::Dot || dot->parent != &b || n == uses.end() ||
          n->second != 1 || !is_zero_constant(dot->operands[2]) || !(x->type == d->type) ||
          !(op.result()->type == d->type))
        continue;
      // The dot moves down to the add (x may be computed between them) and accumulates into x.
      const size_t at = index_in_block(*dot);
      std::unique_ptr<ir::Op> moved = std::move(b.ops[at]);
      b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(at));
      --i; // the add moved up by one
      moved->operands[2] = x;
      b.ops.insert(b.ops.begin() + static_cast<std::ptrdiff_t>(i), std::move(moved));
      ++i;
      f.replace_all_uses(op.result(), d);
      break;
    }
  }
}

} // namespace

void combine(ir::Function& f) {
  std::unordered_map<const ir::Value*, int> uses;
  count_uses(f.entry(), uses);
  combine_block(f, f.entry(), uses);
  erase_dead_ops(f);
}

} // namespace tritium::gpu
