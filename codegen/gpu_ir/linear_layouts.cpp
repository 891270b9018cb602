// The layouts shape ops make of their operands' layouts. A reshape, transpose, join or split
// keeps every element in the thread and register it was in; only the coordinates change. Over
// GF(2) each basis is one coordinate bit, so the result's bases are the operand's with their
// bits renamed: no data moves, and a conversion is needed only where a user wants another
// layout (Triton's LinearLayout does the same).
#include "gpu_ir/layout.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <utility>

namespace tritium::gpu {
namespace {

using Coord = LinearLayout::Coord;

// Applies `f` to every basis of `l` (registers, lanes, warps) and sets the shape.
template <class F>
LinearLayout map_bases(const LinearLayout& l, std::vector<int64_t> shape, F f) {
  LinearLayout out;
  out.shape = std::move(shape);
  for (const auto& c : l.reg)
    out.reg.push_back(f(c));
  for (const auto& c : l.lane)
    out.lane.push_back(f(c));
  for (const auto& c : l.warp)
    out.warp.push_back(f(c));
  return out;
}

int64_t row_major_index(const Coord& c, const std::vector<int64_t>& shape) {
  int64_t idx = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    idx = idx * shape[d] + c[d];
  return idx;
}

Coord unflatten(int64_t idx, const std::vector<int64_t>& shape) {
  Coord c(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = idx % shape[d];
    idx /= shape[d];
  }
  return c;
}

Coord last_dim_bit(size_t rank) {
  Coord c(rank, 0);
  c.back() = 1;
  return c;
}

} // namespace

LinearLayout trans_layout(const LinearLayout& l, const std::vector<int64_t>& order) {
  std::vector<int64_t> shape;
  for (int64_t d : order)
    shape.push_back(l.shape[static_cast<size_t>(d)]);
  return map_bases(l, shape, [&](const Coord& c) {
    Coord out;
    for (int64_t d : order)
      out.push_back(c[static_cast<size_t>(d)]);
    return out;
  });
}

// Shapes are powers of two, so a basis (one bit of one coordinate) is one bit of the row-major
// index, which is one bit of one coordinate of the new shape.
LinearLayout reshape_layout(const LinearLayout& l, const std::vector<int64_t>& shape) {
  return map_bases(l, shape,
                   [&](const Coord& c) { return unflatten(row_major_index(c, l.shape), shape); });
}

LinearLayout expand_dims_layout(const LinearLayout& l, int axis) {
  std::vector<int64_t> shape = l.shape;
  shape.insert(shape.begin() + axis, 1);
  return map_bases(l, shape, [&](Coord c) {
    c.insert(c.begin() + axis, 0);
    return c;
  });
}

// The new last dimension is the lowest register bit: a thread holds a[i] and b[i] side by side
// (registers 2i and 2i + 1), as Triton's join does.
LinearLayout join_layout(const LinearLayout& l) {
  std::vector<int64_t> shape = l.shape;
  shape.push_back(2);
  LinearLayout out = map_bases(l, shape, [](Coord c) {
    c.push_back(0);
    return c;
  });
  out.reg.insert(out.reg.begin(), last_dim_bit(shape.size()));
  return out;
}

int split_reg_bit(const LinearLayout& l) {
  const Coord bit = last_dim_bit(l.shape.size());
  for (size_t i = 0; i < l.reg.size(); ++i)
    if (l.reg[i] == bit)
      return static_cast<int>(i);
  return -1;
}

LinearLayout split_layout(const LinearLayout& l) {
  const int k = split_reg_bit(l);
  if (k < 0)
    throw Error("GPU lowering: split of a layout whose last dimension is not in registers");
  std::vector<int64_t> shape(l.shape.begin(), l.shape.end() - 1);
  LinearLayout src = l;
  src.reg.erase(src.reg.begin() + k);
  return map_bases(src, shape, [](Coord c) {
    c.pop_back();
    return c;
  });
}

LinearLayout split_ready(const LinearLayout& l) {
  if (split_reg_bit(l) >= 0)
    return l;
  const Coord bit = last_dim_bit(l.shape.size());
  LinearLayout out = l;
  for (auto* bases : {&out.lane, &out.warp})
    for (Coord& c : *bases)
      if (c == bit) {
        if (!out.reg.empty()) {
          std::swap(c, out.reg.back());
        } else {
          c.assign(c.size(), 0);
          out.reg.push_back(bit);
        }
        return out;
      }
  // Not held by any thread bit (a size-2 dimension that a smaller tile replicates): the
  // thread holds both halves in registers.
  out.reg.insert(out.reg.begin(), bit);
  return out;
}

ir::LayoutPtr induced_layout(const ir::Op& op, size_t index) {
  const ir::Value* x = op.operands.empty() ? nullptr : op.operands[0];
  if (!x || x->type.is_scalar() || !x->type.layout)
    return nullptr;
  if (dynamic_cast<const SharedLayout*>(x->type.layout.get()))
    return nullptr;
  LinearLayout src = resolve(x->type.layout, x->type.shape);
  switch (op.kind) {
  case ir::OpKind::Trans:
    return linear_layout(trans_layout(src, op.ints_attr(attr::order)));
  case ir::OpKind::Reshape:
    return linear_layout(reshape_layout(src, op.results[index]->type.shape));
  case ir::OpKind::ExpandDims:
    return linear_layout(expand_dims_layout(src, static_cast<int>(op.int_attr(attr::axis))));
  case ir::OpKind::Join:
    if (!ir::same_layout(op.operands[1]->type.layout, x->type.layout))
      return nullptr;
    return linear_layout(join_layout(src));
  case ir::OpKind::Split:
    // Where the pair is not in one thread's registers the split moves it there first (a
    // shuffle when a lane holds it, shared memory for a warp): its halves keep that layout.
    return linear_layout(split_layout(split_ready(src)));
  default:
    return nullptr;
  }
}

} // namespace tritium::gpu
