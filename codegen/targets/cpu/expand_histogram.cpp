#include "expand_histogram.hpp"

#include <tritium/ir/builder.hpp>

#include <vector>

namespace tritium::cpu {
namespace {

using ir::OpKind;
using ir::ScalarKind;
using ir::Type;
using ir::Value;

bool has_histogram(const ir::Block& b) {
  for (const auto& op : b.ops) {
    if (op->kind == OpKind::Histogram)
      return true;
    for (const auto& r : op->regions)
      if (has_histogram(*r->block))
        return true;
  }
  return false;
}

// The ops that replace histogram `h` (at position `at` of its block); returns the counts.
Value* expand(ir::Function& f, ir::Op& h, size_t at) {
  ir::Builder b(f, *h.parent);
  b.set_insert_point(*h.parent, at);
  b.set_loc(h.loc);
  Value* x = h.operands[0];
  const int64_t n = x->type.shape[0], bins = h.int_attr(attr::num_bins);
  const std::vector<int64_t> grid{n, bins};
  auto column = [&](Value* v) { // v[n] -> [n, bins]
    Value* e =
        b.create1(OpKind::ExpandDims, {v}, v->type.with_shape({n, 1}), {{attr::axis, int64_t{1}}});
    return b.create1(OpKind::Broadcast, {e}, v->type.with_shape(grid));
  };
  Value* ids = b.create1(OpKind::Arange, {}, Type(ScalarKind::I32, {bins}),
                         {{attr::start, int64_t{0}}, {attr::end, bins}});
  if (!(ids->type.elem == x->type.elem))
    ids = b.create1(OpKind::Cast, {ids}, ids->type.with_elem(x->type.elem));
  Value* row = b.create1(OpKind::ExpandDims, {ids}, ids->type.with_shape({1, bins}),
                         {{attr::axis, int64_t{0}}});
  row = b.create1(OpKind::Broadcast, {row}, row->type.with_shape(grid));
  Value* hit = b.create1(OpKind::Cmp, {column(x), row}, Type(ScalarKind::I1, grid),
                         {{attr::pred, ir::CmpPred::Eq}});
  if (h.operands.size() > 1)
    hit = b.create1(OpKind::And, {hit, column(h.operands[1])}, hit->type);
  Value* ones = b.create1(OpKind::Cast, {hit}, hit->type.with_elem(ir::DType(ScalarKind::I32)));
  ir::Op& sum = b.create(OpKind::Reduce, {ones}, {Type(ScalarKind::I32, {bins})},
                         {{attr::axis, int64_t{0}}}, 1);
  ir::Block& body = *sum.regions[0]->block;
  Value* l = b.add_block_arg(body, Type(ScalarKind::I32));
  Value* r = b.add_block_arg(body, Type(ScalarKind::I32));
  ir::Builder in(f, body);
  in.set_loc(h.loc);
  Value* s = in.create1(OpKind::Add, {l, r}, Type(ScalarKind::I32));
  in.create(OpKind::Yield, {s}, {});
  return sum.result();
}

void expand_block(ir::Function& f, ir::Block& b) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      expand_block(f, *r->block);
    if (op.kind != OpKind::Histogram)
      continue;
    const size_t before = b.ops.size();
    Value* counts = expand(f, op, i);
    i += b.ops.size() - before; // op moved down past what was inserted
    f.replace_all_uses(op.result(), counts);
    b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

} // namespace

std::unique_ptr<ir::Function> expand_histograms(const ir::Function& f) {
  if (!has_histogram(f.entry()))
    return nullptr;
  std::unique_ptr<ir::Function> g = ir::clone(f);
  expand_block(*g, g->entry());
  return g;
}

} // namespace tritium::cpu
