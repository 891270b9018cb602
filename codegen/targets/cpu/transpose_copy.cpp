// Transposed tiles copied through registers.
//
// A group that reads a transposed tile along its innermost loop loads one element from each
// row of the buffer, and LLVM's vectorizer builds every vector from scalar loads and inserts: an
// fp16 64x64 tile transpose on the 2-core EPYC spent about half its time so (56 ms for 8192^2,
// against 28 ms for the same loads and stores without the transposition). Copying the tile
// first, in blocks transposed in registers, reads and writes whole vectors; on that machine a
// C++ loop doing so took 35 ms.
#include "transpose_copy.hpp"

#include <bit>

namespace tritium::cpu {

namespace {

// The dimension of `v`, other than the innermost, along which it is contiguous; -1 if none.
int contiguous_dim(const View& v) {
  for (size_t d = 0; d + 1 < v.shape.size(); ++d)
    if (v.strides[d] == 1 && v.shape[d] > 1)
      return static_cast<int>(d);
  return -1;
}

// Rows r[0..n) of n lanes each become the columns: after log2(n) rounds in which rows i and
// i + n/2 interleave into rows 2i (their first halves) and 2i + 1 (their second halves), row c
// holds lane c of every input row, in order.
//
// Eight rows take three rounds whose every shuffle is one instruction on AVX: interleaves
// within 128-bit halves, pairs of lanes within them, then halves (LLVM turned each interleave
// of the general rounds into two: an unpack and a vperm2i128).
std::vector<llvm::Value*> transpose_8(llvm::IRBuilder<>& b, std::vector<llvm::Value*> r) {
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> rounds = {
      {{0, 8, 1, 9, 4, 12, 5, 13}, {2, 10, 3, 11, 6, 14, 7, 15}},
      {{0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15}},
      {{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}}};
  std::vector<llvm::Value*> t(8);
  for (int i = 0; i < 8; i += 2) { // rows i and i + 1
    t[i] = b.CreateShuffleVector(r[i], r[i + 1], rounds[0].first);
    t[i + 1] = b.CreateShuffleVector(r[i], r[i + 1], rounds[0].second);
  }
  for (int i : {0, 4}) // rows i, i + 2 and i + 1, i + 3
    for (int j : {0, 1}) {
      r[i + 2 * j] = b.CreateShuffleVector(t[i + j], t[i + j + 2], rounds[1].first);
      r[i + 2 * j + 1] = b.CreateShuffleVector(t[i + j], t[i + j + 2], rounds[1].second);
    }
  for (int i = 0; i < 4; ++i) { // rows i and i + 4
    t[i] = b.CreateShuffleVector(r[i], r[i + 4], rounds[2].first);
    t[i + 4] = b.CreateShuffleVector(r[i], r[i + 4], rounds[2].second);
  }
  return t;
}

std::vector<llvm::Value*> transpose_in_registers(llvm::IRBuilder<>& b,
                                                 std::vector<llvm::Value*> rows) {
  const int n = static_cast<int>(rows.size());
  if (n == 8)
    return transpose_8(b, std::move(rows));
  std::vector<int> lo, hi;
  for (int k = 0; k < n / 2; ++k) {
    lo.insert(lo.end(), {k, n + k});
    hi.insert(hi.end(), {n / 2 + k, n + n / 2 + k});
  }
  for (int round = 1; round < n; round *= 2) {
    std::vector<llvm::Value*> next(n);
    for (int i = 0; i < n / 2; ++i) {
      next[2 * i] = b.CreateShuffleVector(rows[i], rows[i + n / 2], lo);
      next[2 * i + 1] = b.CreateShuffleVector(rows[i], rows[i + n / 2], hi);
    }
    rows = std::move(next);
  }
  return rows;
}

} // namespace

bool transposed_view(const View& v, int64_t lanes) {
  const size_t rank = v.shape.size();
  if (rank < 2 || v.strides.back() == 1 || v.strides.back() == 0 || lanes < 2 ||
      !std::has_single_bit(static_cast<uint64_t>(lanes)) ||
      !(v.ty->isFloatTy() || v.ty->isIntegerTy(32)))
    return false;
  const int c = contiguous_dim(v);
  return c >= 0 && v.shape[c] % lanes == 0 && v.shape.back() % lanes == 0;
}

void transposed_copy(KernelLowering& k, const View& src, const View& dst, int64_t lanes) {
  auto& b = k.b();
  const size_t rank = src.shape.size();
  const size_t c = static_cast<size_t>(contiguous_dim(src)), last = rank - 1;
  auto* vec = llvm::FixedVectorType::get(src.ty, static_cast<unsigned>(lanes));
  // One loop index per dimension, in blocks along c and the innermost one.
  std::vector<int64_t> blocks = src.shape;
  blocks[c] /= lanes;
  blocks[last] /= lanes;
  k.loop_nest(blocks, [&](const std::vector<llvm::Value*>& block) {
    std::vector<llvm::Value*> at = block;
    at[c] = b.CreateMul(block[c], k.i64(lanes));
    at[last] = b.CreateMul(block[last], k.i64(lanes));
    // Row r: lanes elements along c (contiguous) at innermost index at[last] + r.
    std::vector<llvm::Value*> rows(lanes);
    for (int64_t r = 0; r < lanes; ++r) {
      std::vector<llvm::Value*> idx = at;
      idx[last] = b.CreateAdd(at[last], k.i64(r));
      rows[r] = b.CreateAlignedLoad(vec, k.element_ptr(src, idx), llvm::Align(4));
    }
    // Column r of the block: lanes elements along the innermost dimension at c index at[c] + r.
    std::vector<llvm::Value*> cols = transpose_in_registers(b, std::move(rows));
    for (int64_t r = 0; r < lanes; ++r) {
      std::vector<llvm::Value*> idx = at;
      idx[c] = b.CreateAdd(at[c], k.i64(r));
      b.CreateAlignedStore(cols[r], k.element_ptr(dst, idx), llvm::Align(4));
    }
  });
}

} // namespace tritium::cpu
