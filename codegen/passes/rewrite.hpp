// Small IR-editing helpers shared by the layout passes: inserting ops at a position, converting
// a value to a layout, dead-op elimination.
#pragma once

#include <tritium/ir/ir.hpp>

namespace tritium::gpu {

// Index of `op` in its parent block.
size_t index_in_block(const ir::Op& op);
// Creates an op in `block` before position `at`; returns it.
ir::Op& insert_op(ir::Function& f, ir::Block& block, size_t at, ir::OpKind kind,
                  std::vector<ir::Value*> operands, std::vector<ir::Type> result_types,
                  const ir::SourceLoc& loc);
// A convert_layout of `v` to `layout`, inserted before position `at` of `block` (or `v` itself
// when it already has that layout or is a scalar).
ir::Value* convert_to(ir::Function& f, ir::Block& block, size_t& at, ir::Value* v,
                      const ir::LayoutPtr& layout, const ir::SourceLoc& loc);
// Carries loop argument `k` of `loop` (a For) in `layout`: the initial value, the block
// argument, the yielded value and the result change layout; conversions keep every user's view.
void carry_in_layout(ir::Function& f, ir::Op& loop, size_t k, const ir::LayoutPtr& layout);
// A new value carried by `loop` (a For), `init` on entry: its operand, block argument and
// result; returns the block argument (the caller adds what the body yields for it).
ir::Value* carry(ir::Function& f, ir::Op& loop, ir::Value* init);
// if (cond) {} else {}, inserted before position `at` of `b`; both regions end with a yield.
ir::Op& insert_if(ir::Function& f, ir::Block& b, size_t at, ir::Value* cond,
                  const ir::SourceLoc& loc);
// Removes ops without side effects whose results are unused, everywhere in `f`.
void erase_dead_ops(ir::Function& f);
// Whether an op's only effect is its results.
bool is_pure(const ir::Op& op);

} // namespace tritium::gpu
