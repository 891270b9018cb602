// One element of a tile, computed as scalars from the ops that made the tile.
#pragma once

#include <tritium/ir/builder.hpp>

#include <map>
#include <utility>
#include <vector>

namespace tritium::ir {

// The multi-index (i32 scalars) of the row-major flat index `flat` in a tile of `shape`.
std::vector<Value*> multi_index(Builder& b, Value* flat, const std::vector<int64_t>& shape);

// The element of a tile at a multi-index, built as scalar ops where the builder is: where the
// tile is made from scalars, aranges and constants by pure elementwise ops and shape-only ops
// (splat, broadcast, expand_dims), one element costs a few scalar ops instead of the tile.
// TRITIUM_CHECK's report uses it to write the failing element's words without holding a tile.
class TileElement {
public:
  explicit TileElement(Builder& b) : b_(b) {}
  // Null where the tile reads memory, comes from a loop or a region, or changes its elements'
  // order (reshape, trans, join, split).
  Value* at(Value* tile, const std::vector<Value*>& index);

private:
  Builder& b_;
  std::map<std::pair<const Value*, std::vector<Value*>>, Value*> memo_;
};

} // namespace tritium::ir
