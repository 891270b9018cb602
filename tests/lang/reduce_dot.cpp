// Reductions (sum, max, min, argmax, argmin, xor_sum, generic reduce, keep_dims), scans
// (cumsum, cumprod, associative_scan, reverse), softmax, and dot with Triton's rules.
#include "common.hpp"

#include <bit>

using namespace lang_test;

namespace {
template <class T>
tl::tensor<T> load_n(const tl::basic_tensor<tritium::pointer<T>>& p, int n) {
  return tl::load(p + tl::arange(0, n));
}
} // namespace

TEST_CASE("sum, max, min along an axis, over everything, and with keep_dims") {
  // x = [[0, 1, 2, 3], [4, 5, 6, 7]] - 3
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto m = tl::reshape(load_n(x, 8), {2, 4}) - 3;
        tl::store(y + tl::arange(0, 4), tl::sum(m, 0));
        tl::store(y + 4 + tl::arange(0, 2), tl::sum(m, 1));
        tl::store(y + 6, tl::sum(m));
        tl::store(y + 7 + tl::arange(0, 2), tl::max(m, 1));
        tl::store(y + 9 + tl::arange(0, 4), tl::min(m, 0));
        tl::store(y + 13, tl::max(m));
        tl::store(y + 14, tl::min(m));
        auto k = tl::sum(m, 1, /*keep_dims=*/true);
        CHECK(k.shape() == std::vector<int64_t>{2, 1});
        // keep_dims lets the result broadcast back against m.
        tl::store(y + 15 + tl::arange(0, 8), tl::ravel(m * 10 - k));
        auto k0 = tl::max(m, 0, true);
        CHECK(k0.shape() == std::vector<int64_t>{1, 4});
        tl::store(y + 23 + tl::arange(0, 4), tl::ravel(k0));
        // Negative axes count from the end.
        tl::store(y + 27 + tl::arange(0, 2), tl::sum(m, -1));
      },
      iota<int32_t>(8),
      {-2,      0,       2,       4, -6, 10,      4,       0,       4,     -3,
       -2,      -1,      0,       4, -3, -30 + 6, -20 + 6, -10 + 6, 0 + 6, 10 - 10,
       20 - 10, 30 - 10, 40 - 10, 1, 2,  3,       4,       -6,      10});
}

TEST_CASE("sums of small integers accumulate in i32; float sums and NaN") {
  expect_io<int8_t, int32_t>(
      +[](tl::ptr<int8_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 64);
        auto s = tl::sum(v);
        static_assert(std::is_same_v<decltype(s), tl::i32>);
        tl::store(y, s);
        tl::store(y + 1, tl::xor_sum(v).to<int32_t>());
      },
      std::vector<int8_t>(64, 100), {6400, 0});
  expect_io<uint8_t, int32_t>(
      +[](tl::ptr<uint8_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 4);
        tl::store(y, tl::xor_sum(v).to<int32_t>());
        tl::store(y + 1, tl::max(v).to<int32_t>()); // unsigned order: 200 > 7
      },
      {1, 2, 7, 200}, {1 ^ 2 ^ 7 ^ 200, 200});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto v = load_n(x, 4);
        tl::store(y, tl::sum(v));
        tl::store(y + 1, tl::max(v));
      },
      {1.5f, nan, 2.f, 0.f}, {nan, 2.f});
}

TEST_CASE("argmax and argmin take the first index on ties") {
  expect_io<float, int32_t>(
      +[](tl::ptr<float> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 8);
        tl::store(y, tl::argmax(v, 0));
        tl::store(y + 1, tl::argmin(v, 0));
        auto m = tl::reshape(v, {2, 4});
        tl::store(y + 2 + tl::arange(0, 2), tl::argmax(m, 1));
        tl::store(y + 4 + tl::arange(0, 4), tl::argmin(m, 0));
        auto k = tl::argmax(m, 1, true);
        CHECK(k.shape() == std::vector<int64_t>{2, 1});
        tl::store(y + 8 + tl::arange(0, 2), tl::ravel(k));
      },
      {1, 5, 5, -2, 3, -2, 9, 9}, {6, 3, 1, 2, 0, 1, 0, 0, 1, 2});
}

TEST_CASE("reduce and associative_scan with a C++ lambda") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 8);
        // Largest absolute value, keeping the sign: not one of the builtins.
        auto abs_max = [](tl::i32 a, tl::i32 b) {
          return tl::where(tl::abs(a) >= tl::abs(b), a, b);
        };
        tl::store(y, tl::reduce(v, 0, abs_max));
        auto m = tl::reshape(v, {2, 4});
        auto r = tl::reduce(
            m, 1, [](tl::i32 a, tl::i32 b) { return a * b; }, true);
        CHECK(r.shape() == std::vector<int64_t>{2, 1});
        tl::store(y + 1 + tl::arange(0, 2), tl::ravel(r));
        // Running maximum.
        tl::store(y + 3 + tl::arange(0, 8), tl::associative_scan(v, 0, [](tl::i32 a, tl::i32 b) {
                    return tl::maximum(a, b);
                  }));
      },
      {3, -1, 4, -1, 5, -9, 2, 6}, {-9, 12, -540, 3, 3, 4, 4, 5, 5, 5, 6});
}

TEST_CASE("cumsum and cumprod, forward, reverse and along axis 1") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 4) + 1; // 1 2 3 4
        tl::store(y + tl::arange(0, 4), tl::cumsum(v));
        tl::store(y + 4 + tl::arange(0, 4), tl::cumsum(v, 0, /*reverse=*/true));
        tl::store(y + 8 + tl::arange(0, 4), tl::cumprod(v));
        tl::store(y + 12 + tl::arange(0, 4), tl::cumprod(v, 0, true));
        auto m = tl::reshape(v, {2, 2});
        tl::store(y + 16 + tl::arange(0, 4), tl::ravel(tl::cumsum(m, 1)));
        tl::store(y + 20 + tl::arange(0, 4), tl::ravel(tl::cumsum(m, 0)));
      },
      iota<int32_t>(4),
      {1, 3, 6, 10, 10, 9, 7, 4, 1, 2, 6, 24, 24, 24, 12, 4, 1, 3, 3, 7, 1, 2, 4, 6});
  // Integer scans wrap like the element type.
  expect_io<int8_t, int8_t>(
      +[](tl::ptr<int8_t> x, tl::ptr<int8_t> y) {
        tl::store(y + tl::arange(0, 2), tl::cumsum(load_n(x, 2)));
      },
      {100, 100}, {100, -56});
}

namespace {
// Reductions over 8 and 16 warps: a whole row (every lane of a warp holds the one result), and
// rows of a 2-D tile whose warps split the reduced axis and the other (results differ by lane).
void wide_reduce_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<int32_t> idx) {
  auto v = tl::load(x + tl::arange(0, 4096));
  tl::store(y, tl::sum(v));
  tl::store(y + 1, tl::max(v));
  tl::store(idx, tl::argmax(v, 0));
  auto rows = tl::arange(0, 4)[{tl::_, tl::None}], cols = tl::arange(0, 1024)[{tl::None, tl::_}];
  auto m = tl::load(x + rows * 1024 + cols);
  tl::store(y + 2 + tl::arange(0, 4), tl::sum(m, 1));
  tl::store(y + 6 + tl::arange(0, 4), tl::min(m, 1));
  tl::store(idx + 1 + tl::arange(0, 4), tl::argmin(m, 1));
}
} // namespace

TEST_CASE("reductions across 8 and 16 warps") {
  std::vector<float> h(4096);
  for (int i = 0; i < 4096; ++i) // small integers: every order of the sums is exact
    h[i] = static_cast<float>((i * 37) % 101 - 50);
  h[2999] = 77;      // one maximum
  h[1024 + 5] = -90; // row 1's minimum
  for (Device dev : devices())
    for (int warps : {8, 16}) {
      std::string name(dev.name());
      CAPTURE(name);
      CAPTURE(warps);
      auto k = tritium::jit(wide_reduce_kernel, "wide_reduce_kernel");
      k.options({.num_warps = warps});
      auto x = dev.from_host(h);
      auto y = dev.alloc<float>(10);
      auto idx = dev.alloc<int32_t>(5);
      launch(k, {1}, x, y, idx);
      auto got = y.to_host();
      auto gi = idx.to_host();
      double total = 0;
      for (float v : h)
        total += v;
      CHECK(got[0] == total);
      CHECK(got[1] == 77);
      CHECK(gi[0] == 2999);
      for (int r = 0; r < 4; ++r) {
        double s = 0, lo = 1e9;
        int at = 0;
        for (int c = 0; c < 1024; ++c) {
          s += h[r * 1024 + c];
          if (h[r * 1024 + c] < lo)
            lo = h[r * 1024 + c], at = c;
        }
        CAPTURE(r);
        CHECK(got[2 + r] == s);
        CHECK(got[6 + r] == lo);
        CHECK(gi[1 + r] == at);
      }
    }
}

TEST_CASE("softmax") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto m = tl::reshape(load_n(x, 4), {2, 2});
        tl::store(y + tl::arange(0, 4), tl::ravel(tl::softmax(m, 1)));
        tl::store(y + 4 + tl::arange(0, 4), tl::ravel(tl::softmax(m))); // axis 0, as Triton
      },
      {0.f, 1.f, 1000.f, 1000.f}, {0.26894142f, 0.73105858f, 0.5f, 0.5f, 0.f, 0.f, 1.f, 1.f}, 1e-6);
}

namespace {
// C = A (M x K) @ B (K x N) + acc, row-major, one program.
template <class In, class Acc, int M, int N, int K>
void dot_kernel(tl::ptr<In> a, tl::ptr<In> b, tl::ptr<Acc> c) {
  auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
  auto av = tl::load(a + rm[{tl::_, tl::None}] * K + rk[{tl::None, tl::_}]);
  auto bv = tl::load(b + rk[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}]);
  auto cp = c + rm[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}];
  auto r = tl::dot(av, bv, tl::load(cp));
  tl::store(cp, r);
}

template <class In, class Acc, int M, int N, int K, class F>
void check_dot(F value_of, double rel = 0) {
  std::vector<In> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i)
    a[i] = static_cast<In>(value_of(i, 0));
  for (int i = 0; i < K * N; ++i)
    b[i] = static_cast<In>(value_of(i, 1));
  std::vector<Acc> c0(M * N);
  for (int i = 0; i < M * N; ++i)
    c0[i] = static_cast<Acc>(i % 3);
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&dot_kernel<In, Acc, M, N, K>, "dot_kernel");
    auto da = dev.from_host(a), db = dev.from_host(b);
    auto dc = dev.from_host(c0);
    launch(k, {1}, da, db, dc);
    auto got = dc.to_host();
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = as_double(c0[i * N + j]);
        for (int kk = 0; kk < K; ++kk)
          s += as_double(a[i * K + kk]) * as_double(b[kk * N + j]);
        CAPTURE(i);
        CAPTURE(j);
        if (rel == 0)
          CHECK(as_double(got[i * N + j]) == s);
        else
          CHECK(near(as_double(got[i * N + j]), s, rel, rel));
      }
  }
}
} // namespace

TEST_CASE("dot: f16 and bf16 accumulate in f32") {
  // Small integers are exact in f16/bf16 and their products and sums exact in f32.
  auto small = [](int i, int which) { return static_cast<float>((i * (which ? 7 : 3)) % 11 - 5); };
  check_dot<tritium::half, float, 16, 32, 64>(small);
  check_dot<tritium::bfloat16, float, 32, 16, 16>(small);
  // Products of f16 values that need more than f16's precision: accumulation is in f32.
  check_dot<tritium::half, float, 16, 16, 16>(
      [](int i, int) { return 1.f + static_cast<float>(i % 5) / 1024.f; }, 1e-6);
}

TEST_CASE("dot: int8 accumulates in int32") {
  // 127 * 127 * 32 = 516128: far outside int8 and int16.
  check_dot<int8_t, int32_t, 16, 16, 32>(
      [](int i, int which) { return which ? 127 : (i % 2 ? 127 : -128); });
  check_dot<int8_t, int32_t, 16, 16, 32>([](int i, int) { return (i * 37) % 255 - 127; });
}

TEST_CASE("dot: f32 with ieee and tf32 input precision") {
  // 1 + 2^-12 is exact in f32 but rounds to 1 in tf32 (10 bits of mantissa).
  const float a = 1.f + std::ldexp(1.f, -12);
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> x, tl::ptr<float> y) {
          auto r = tl::arange(0, 16);
          auto offs = r[{tl::_, tl::None}] * 16 + r[{tl::None, tl::_}];
          auto v = tl::load(x + offs);
          auto ones = tl::full<float>({16, 16}, 1.0);
          tl::store(y + offs, tl::dot(v, ones, tl::zeros<float>({16, 16}), "ieee"));
          tl::store(y + 256 + offs, tl::dot(v, ones, tl::zeros<float>({16, 16}), "tf32"));
          tl::store(y + 512 + offs, tl::dot(v, ones)); // default: ieee
        },
        "dot_f32");
    auto x = dev.from_host(std::vector<float>(256, a));
    auto y = dev.alloc<float>(768);
    std::string ir = launch(k, {1}, x, y);
    CHECK(ir.find("input_precision = tf32") != std::string::npos);
    auto got = y.to_host();
    CHECK(got[0] == 16 * a);
    CHECK(got[255] == 16 * a);
    CHECK(got[256] == 16.f);
    CHECK(got[512] == 16 * a);
  }
}

TEST_CASE("dot: batched 3-D operands, and results of dot without an accumulator") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        // Two batches of 16 x 16: batch 0 is the identity times 2, batch 1 all ones.
        auto r = tl::arange(0, 16);
        auto eye = (r[{tl::_, tl::None}] == r[{tl::None, tl::_}]).to<float>();
        auto a = tl::cat(tl::reshape(eye * 2.f, {1, 16, 16}),
                         tl::reshape(tl::full<float>({16, 16}, 1.0), {1, 16, 16}));
        auto offs = r[{tl::_, tl::None}] * 16 + r[{tl::None, tl::_}];
        auto bm = tl::load(x + offs); // b[k][n] = k * 16 + n
        auto b = tl::cat(tl::reshape(bm, {1, 16, 16}), tl::reshape(bm, {1, 16, 16}));
        auto c = tl::dot(a, b);
        CHECK(c.shape() == std::vector<int64_t>{2, 16, 16});
        tl::store(y + tl::arange(0, 512), tl::ravel(c));
      },
      iota<float>(256),
      [] {
        std::vector<float> e(512);
        for (int i = 0; i < 16; ++i)
          for (int j = 0; j < 16; ++j) {
            e[i * 16 + j] = 2.f * (i * 16 + j);
            float col = 0;
            for (int k = 0; k < 16; ++k)
              col += k * 16 + j;
            e[256 + i * 16 + j] = col;
          }
        return e;
      }());
}
