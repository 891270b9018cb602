#include <tritium/error.hpp>
#include <tritium/lang/tracer.hpp>

#include <fmt/format.h>

// Sorting networks along the last dimension, from core ops (reshape, trans, split, join,
// compares and selects): tl::sort and tl::topk. Every backend runs them with no code of its own;
// on GPUs the reshapes, transposes, splits and joins only rename registers, and a pair that two
// lanes hold is exchanged by xor shuffles (gpu/lower_convert.cpp).
namespace tritium::lang::detail {
namespace {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;
using ir::Value;

// One compare-and-swap stage of a bitonic network over the last dimension (length n): element
// i meets i ^ j, and the pair is ordered ascending where (i & size) == 0, descending elsewhere
// (`descending` flips both). Viewing the index as (q, bit, r) with r < j puts each pair in a
// size-2 dimension, which split and join take apart and put back.
Value* bitonic_stage(Value* x, int64_t size, int64_t j, bool descending, const Loc& loc) {
  std::vector<int64_t> outer = x->type.shape;
  const int64_t n = outer.back();
  outer.pop_back();
  const DType t = x->type.elem;
  const int64_t q = n / (2 * j);
  std::vector<int64_t> s3 = outer;
  s3.insert(s3.end(), {q, j, 2});
  // [.., q, 2, j] -> [.., q, j, 2]
  std::vector<int64_t> s_view = outer;
  s_view.insert(s_view.end(), {q, 2, j});
  Value* y = reshape(x, s_view, loc);
  std::vector<int64_t> swap_last(s_view.size());
  for (size_t d = 0; d < swap_last.size(); ++d)
    swap_last[d] = static_cast<int64_t>(d);
  std::swap(swap_last[swap_last.size() - 1], swap_last[swap_last.size() - 2]);
  if (j > 1)
    y = trans(y, swap_last, loc);
  else
    y = reshape(y, s3, loc);
  auto [a, b] = split(y, loc); // [.., q, j]
  // Direction per q: the pair's first index is q * 2j; ascending where (q * 2j) & size == 0.
  const DType i32(ScalarKind::I32);
  Value* qi = arith(OpKind::Mul, arange(0, q, loc), constant_int(2 * j, i32, {}, loc), i32, loc);
  Value* bit = arith(OpKind::And, qi, constant_int(size, i32, {}, loc), i32, loc);
  Value* asc = compare(descending ? ir::CmpPred::Ne : ir::CmpPred::Eq, bit,
                       constant_int(0, i32, {}, loc), i32, loc);
  asc = expand_dims(asc, 1, loc); // [q, 1], broadcasts over r and the outer dimensions
  // Order each pair ascending where asc, descending elsewhere (NaN pairs stay as they are).
  Value* gt = compare(ir::CmpPred::Gt, a, b, t, loc);
  Value* lt = compare(ir::CmpPred::Lt, a, b, t, loc);
  Value* swap = select(asc, gt, lt, DType(ScalarKind::I1), loc);
  Value* first = select(swap, b, a, t, loc);
  Value* second = select(swap, a, b, t, loc);
  y = join(first, second, loc); // [.., q, j, 2]
  if (j > 1)
    y = trans(y, swap_last, loc);
  std::vector<int64_t> back = outer;
  back.push_back(n);
  return reshape(y, back, loc);
}

} // namespace

Value* sort(Value* v, bool descending, const Loc& loc) {
  int rank = v->type.rank();
  if (rank == 0)
    fail(loc, "sort needs a tensor, got a scalar");
  if (v->type.elem.is_ptr())
    fail(loc, "sort needs numbers, not pointers");
  const int64_t n = v->type.shape.back();
  if ((n & (n - 1)) != 0)
    fail(loc, fmt::format("sort needs a power-of-two last dimension, got {}", n));
  // Bitonic sort: for each merge size s and distance j, element i is compared with i ^ j and
  // the pair ordered ascending where (i & s) == 0, descending elsewhere (for s = n: all one
  // direction).
  Value* x = v;
  for (int64_t size = 2; size <= n; size *= 2)
    for (int64_t j = size / 2; j >= 1; j /= 2)
      x = bitonic_stage(x, size, j, descending, loc);
  return x;
}

// The k largest along the last dimension, largest first (k a power of two): bitonic selection.
// Blocks of k are sorted in alternating directions; then, round by round, each pair of
// neighbouring blocks is folded by an elementwise maximum (a bitonic sequence holding the pair's
// k largest) and merged into a sorted block again, halving the row, until one block is left.
// n log k compares against n log^2 n for a full sort.
Value* topk(Value* v, int64_t k, const Loc& loc) {
  const int64_t n = v->type.shape.back();
  if (k <= 0 || k > n || (k & (k - 1)) != 0 || (n & (n - 1)) != 0)
    fail(loc, fmt::format("topk needs power-of-two k <= n, got k = {} and n = {}", k, n));
  Value* x = v;
  for (int64_t size = 2; size <= k; size *= 2)
    for (int64_t j = size / 2; j >= 1; j /= 2)
      x = bitonic_stage(x, size, j, /*descending=*/true, loc);
  std::vector<int64_t> outer = v->type.shape;
  outer.pop_back();
  for (int64_t m = n; m > k; m /= 2) {
    // [.., m] -> [.., m / 2k, 2, k] -> [.., m / 2k, k, 2]: the two blocks of each pair.
    std::vector<int64_t> pairs = outer;
    pairs.insert(pairs.end(), {m / (2 * k), 2, k});
    std::vector<int64_t> order(pairs.size());
    for (size_t d = 0; d < order.size(); ++d)
      order[d] = static_cast<int64_t>(d);
    std::swap(order[order.size() - 1], order[order.size() - 2]);
    auto [a, b] = split(trans(reshape(x, pairs, loc), order, loc), loc);
    std::vector<int64_t> half = outer;
    half.push_back(m / 2);
    x = reshape(arith(OpKind::Max, a, b, v->type.elem, loc), half, loc);
    for (int64_t j = k / 2; j >= 1; j /= 2)
      x = bitonic_stage(x, k, j, /*descending=*/true, loc);
  }
  return x;
}

} // namespace tritium::lang::detail
