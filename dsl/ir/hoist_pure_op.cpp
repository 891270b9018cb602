#include "hoist_pure_op.hpp"

#include "offset_bounds.hpp"

#include <unordered_set>
#include <vector>

namespace tritium::ir {
namespace {

// A pure op without regions: computing it earlier changes no result.
bool movable(const Op& op) {
  return has_trait(op.kind, OpTrait::Pure) && op.regions.empty();
}

void collect_reads(const Op& op, std::unordered_set<const Value*>& reads) {
  for (const Value* v : op.operands)
    reads.insert(v);
  for (const auto& r : op.regions)
    for (const auto& inner : r->block->ops)
      collect_reads(*inner, reads);
}

// A scalar op that may run where the loop around it would run no trip: any pure one, as
// integer division by zero is defined too.
bool speculatable(const Op& op) {
  return movable(op) && op.results.size() == 1 && op.result()->type.is_scalar();
}

} // namespace

void hoist_loop_invariants(Block& block) {
  std::vector<std::unique_ptr<Op>> old = std::move(block.ops);
  block.ops.clear();
  for (auto& op : old) {
    for (auto& r : op->regions)
      hoist_loop_invariants(*r->block);
    if (op->kind == OpKind::For) {
      auto& body = op->body().ops;
      std::vector<std::unique_ptr<Op>> stay;
      for (auto& inner : body) {
        bool invariant = speculatable(*inner);
        for (const Value* v : inner->operands)
          invariant = invariant && !made_in(v, *op);
        if (!invariant) {
          stay.push_back(std::move(inner));
          continue;
        }
        inner->parent = &block;
        block.ops.push_back(std::move(inner));
      }
      body = std::move(stay);
    }
    block.ops.push_back(std::move(op));
  }
}

void hoist_pure_op(Block& block, const Op& op) {
  auto& ops = block.ops;
  size_t i = 0;
  while (i < ops.size() && ops[i].get() != &op)
    ++i;
  if (i == ops.size())
    return;
  std::unordered_set<const Value*> reads;
  collect_reads(op, reads);
  std::vector<bool> dep(i, false);
  size_t at = 0;
  for (size_t j = i; j-- > 0;) {
    for (const Value* r : ops[j]->results)
      dep[j] = dep[j] || reads.count(r);
    if (!dep[j])
      continue;
    if (!movable(*ops[j])) {
      at = j + 1; // what lies before stays where it is
      break;
    }
    collect_reads(*ops[j], reads);
  }
  std::vector<std::unique_ptr<Op>> moved, stay;
  for (size_t j = at; j < i; ++j)
    (dep[j] ? moved : stay).push_back(std::move(ops[j]));
  moved.push_back(std::move(ops[i]));
  size_t k = at;
  for (auto* part : {&moved, &stay})
    for (auto& o : *part)
      ops[k++] = std::move(o);
}

} // namespace tritium::ir
