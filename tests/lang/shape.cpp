// Shape manipulation: reshape, trans/permute, broadcast_to, expand_dims (any axis and the
// x[{_, None}] spelling), join/split, cat, interleave, flip, ravel; creation helpers and
// swizzle2d.
#include "common.hpp"

using namespace lang_test;

namespace {
// A block of N consecutive inputs.
template <class T>
tl::tensor<T> load_n(const tl::basic_tensor<tritium::pointer<T>>& p, int n) {
  return tl::load(p + tl::arange(0, n));
}
} // namespace

TEST_CASE("reshape and ravel keep row-major order") {
  // [2, 3]-like data in a [2, 4] block: reshape to [4, 2] and read back flat.
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = tl::reshape(load_n(x, 8), {2, 4});
        auto r = tl::reshape(v, {4, 2});
        CHECK(r.shape() == std::vector<int64_t>{4, 2});
        tl::store(y + tl::arange(0, 8), tl::ravel(r));
        // view is reshape
        tl::store(y + 8 + tl::arange(0, 8), tl::ravel(tl::view(v, {8, 1})));
      },
      iota<int32_t>(8), {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("trans and permute") {
  // [2, 4] -> [4, 2]: y[j][i] = x[i][j].
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = tl::reshape(load_n(x, 8), {2, 4});
        tl::store(y + tl::arange(0, 8), tl::ravel(tl::trans(v)));
      },
      iota<int32_t>(8), {0, 4, 1, 5, 2, 6, 3, 7});
  // [2, 2, 4] permuted (2, 0, 1) -> [4, 2, 2]: y[c][a][b] = x[a][b][c].
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = tl::reshape(load_n(x, 16), {2, 2, 4});
        auto p = tl::permute(v, {2, 0, 1});
        CHECK(p.shape() == std::vector<int64_t>{4, 2, 2});
        tl::store(y + tl::arange(0, 16), tl::ravel(p));
        // trans with an order is permute
        tl::store(y + 16 + tl::arange(0, 16), tl::ravel(tl::trans(v, {2, 0, 1})));
      },
      iota<int32_t>(16),
      [] {
        std::vector<int32_t> e;
        for (int rep = 0; rep < 2; ++rep)
          for (int c = 0; c < 4; ++c)
            for (int a = 0; a < 2; ++a)
              for (int b = 0; b < 2; ++b)
                e.push_back(a * 8 + b * 4 + c);
        return e;
      }());
}

TEST_CASE("expand_dims on any axis, x[{_, None}], and broadcasting") {
  // Outer sum through broadcasting: r[i][j] = a[i] * 10 + b[j].
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto a = load_n(x, 2);
        auto b = load_n(x, 4);
        auto r = a[{tl::_, tl::None}] * 10 + b[{tl::None, tl::_}];
        CHECK(r.shape() == std::vector<int64_t>{2, 4});
        tl::store(y + tl::arange(0, 8), tl::ravel(r));
        // expand_dims(x, -1) is expand_dims(x, 1) for a vector; axis 0 puts it in front.
        auto r2 = tl::expand_dims(a, -1) * 10 + tl::expand_dims(b, 0);
        tl::store(y + 8 + tl::arange(0, 8), tl::ravel(r2));
        // broadcast_to repeats along size-1 dimensions.
        auto c = tl::broadcast_to(tl::expand_dims(a, 0), {4, 2});
        CHECK(c.shape() == std::vector<int64_t>{4, 2});
        auto d = tl::broadcast_to(tl::sum(tl::expand_dims(c, 2), 0), {2, 4});
        tl::store(y + 16 + tl::arange(0, 8), tl::ravel(d));
        // A scalar broadcasts to any shape.
        tl::store(y + 24 + tl::arange(0, 2), tl::broadcast_to(tl::load(x + 1), {2}));
      },
      iota<int32_t>(4),
      {0, 1, 2, 3, 10, 11, 12, 13, 0, 1, 2, 3, 10, 11, 12, 13, 0, 0, 0, 0, 4, 4, 4, 4, 1, 1});
}

TEST_CASE("join, split and interleave") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto a = load_n(x, 4);
        auto b = a * 100;
        auto j = tl::join(a, b); // [4, 2]
        CHECK(j.shape() == std::vector<int64_t>{4, 2});
        tl::store(y + tl::arange(0, 8), tl::ravel(j));
        auto [lo, hi] = tl::split(j);
        tl::store(y + 8 + tl::arange(0, 4), hi - lo);
        tl::store(y + 12 + tl::arange(0, 8), tl::interleave(b, a));
        // 2-D interleave works on the last dimension.
        auto m = tl::reshape(a, {2, 2});
        tl::store(y + 20 + tl::arange(0, 8), tl::ravel(tl::interleave(m, m + 5)));
      },
      iota<int32_t>(4), {0,   0, 1,   100, 2,   200, 3, 300, 0, 99, 198, 297, 0, 0,
                         100, 1, 200, 2,   300, 3,   0, 5,   1, 6,  2,   7,   3, 8});
}

TEST_CASE("cat concatenates along dimension 0") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto a = tl::reshape(load_n(x, 4), {2, 2});
        auto c = tl::cat(a, a * 2.f);
        CHECK(c.shape() == std::vector<int64_t>{4, 2});
        tl::store(y + tl::arange(0, 8), tl::ravel(c));
      },
      iota<float>(4), {0, 1, 2, 3, 0, 2, 4, 6});
}

TEST_CASE("flip reverses along an axis") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 8);
        tl::store(y + tl::arange(0, 8), tl::flip(v));
        auto m = tl::reshape(v, {2, 4});
        tl::store(y + 8 + tl::arange(0, 8), tl::ravel(tl::flip(m, 1)));
        tl::store(y + 16 + tl::arange(0, 8), tl::ravel(tl::flip(m, 0)));
        tl::store(y + 24 + tl::arange(0, 2), tl::flip(tl::arange(0, 2)));
      },
      iota<int32_t>(8),
      {7, 6, 5, 4, 3, 2, 1, 0, 3, 2, 1, 0, 7, 6, 5, 4, 4, 5, 6, 7, 0, 1, 2, 3, 1, 0});
}

TEST_CASE("full, zeros, zeros_like, full_like") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto v = load_n(x, 4);
        tl::store(y + tl::arange(0, 4), tl::zeros_like(v) + tl::full<float>({4}, 2.5));
        tl::store(y + 4 + tl::arange(0, 4), tl::full_like(v, -1.0) + v);
        auto z = tl::zeros_like<int32_t>(v); // x's shape, another element type
        static_assert(std::is_same_v<decltype(z), tl::i32>);
        tl::store(y + 8 + tl::arange(0, 4), z + tl::full_like<int32_t>(v, 7));
        tl::store(y + 12 + tl::arange(0, 4), tl::zeros<float>({4}) + tl::scalar<float>(0.25));
      },
      iota<float>(4), {2.5, 2.5, 2.5, 2.5, -1, 0, 1, 2, 7, 7, 7, 7, 0.25, 0.25, 0.25, 0.25});
}

TEST_CASE("swizzle2d groups rows as Triton's matmul tutorial does") {
  // Triton's docstring example: a 4 x 4 grid with groups of 2 rows.
  //  0  1  2  3        0  2  4  6
  //  4  5  6  7   ->   1  3  5  7
  //  8  9 10 11        8 10 12 14
  // 12 13 14 15        9 11 13 15
  // Our kernel maps each linear id ij to (i, j), swizzles, and stores new_i * 4 + new_j at ij;
  // the expected table is the inverse view: out[ij] = position that ij moves to.
  std::vector<int32_t> expect(16);
  const int table[4][4] = {{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      expect[table[r][c]] = r * 4 + c;
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto ij = load_n(x, 16);
        auto [i, j] = tl::swizzle2d(ij / 4, ij % 4, 4, 4, 2);
        tl::store(y + ij, i * 4 + j);
      },
      iota<int32_t>(16), expect);
  // A last group with fewer rows (size_i = 3): rows 2 is alone in its group.
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto ij = load_n(x, 8);
        auto mask = ij < 6;
        auto [i, j] = tl::swizzle2d(ij / 2, ij % 2, 3, 2, 2);
        tl::store(y + ij, i * 2 + j, mask);
      },
      iota<int32_t>(8), {0, 2, 1, 3, 4, 5});
}
