// Random numbers (Philox), histogram, gather, max/min with indices, reduce_or, and tl::range
// options.
#include "common.hpp"

#include <array>

using namespace lang_test;

namespace {

template <class T>
tl::tensor<T> load_n(const tl::basic_tensor<tritium::pointer<T>>& p, int n) {
  return tl::load(p + tl::arange(0, n));
}

// Philox-4x32-10 on the host, written from the paper's description, as the oracle.
std::array<uint32_t, 4> host_philox(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    std::array<uint32_t, 4> n{uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1),
                              uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
    c = n;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

} // namespace

TEST_CASE("philox matches the published known-answer vector and a host implementation") {
  // Random123's known-answer test for philox4x32-10: counter 0, key 0.
  auto kat = host_philox({0, 0, 0, 0}, 0, 0);
  CHECK(kat == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<uint32_t> out, tl::i64 seed) {
          auto offs = tl::arange(0, 8);
          auto r = tl::philox(seed, offs, offs * 3, offs + 7, offs * offs);
          for (int i = 0; i < 4; ++i)
            tl::store(out + i * 8 + offs, r[i]);
          tl::store(out + 32 + offs, tl::randint(seed, offs));
          auto z = tl::philox(0, offs * 0, offs * 0, offs * 0, offs * 0);
          tl::store(
              out + 40 + tl::arange(0, 4) * 0 + tl::arange(0, 4),
              tl::where(tl::arange(0, 4) == 0, tl::max(z[0]),
                        tl::where(tl::arange(0, 4) == 1, tl::max(z[1]),
                                  tl::where(tl::arange(0, 4) == 2, tl::max(z[2]), tl::max(z[3])))));
        },
        "philox");
    auto out = dev.alloc<uint32_t>(44);
    const int64_t seed = 0x123456789abcdefLL;
    launch(k, {1}, out, seed);
    auto got = out.to_host();
    for (uint32_t i = 0; i < 8; ++i) {
      auto e =
          host_philox({i, i * 3, i + 7, i * i}, uint32_t(seed), uint32_t(uint64_t(seed) >> 32));
      for (int j = 0; j < 4; ++j)
        CHECK(got[j * 8 + i] == e[j]);
      CHECK(got[32 + i] ==
            host_philox({i, 0, 0, 0}, uint32_t(seed), uint32_t(uint64_t(seed) >> 32))[0]);
    }
    for (int j = 0; j < 4; ++j)
      CHECK(got[40 + j] == kat[j]);
  }
}

TEST_CASE("rand is uniform in [0, 1) and randn is standard normal") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> u, tl::ptr<float> n, tl::ptr<uint32_t> bits, tl::i32 seed) {
          auto offs = tl::program_id(0) * 1024 + tl::arange(0, 1024);
          tl::store(u + offs, tl::rand(seed, offs));
          tl::store(n + offs, tl::randn(seed, offs));
          tl::store(bits + offs, tl::randint(seed, offs));
          auto four = tl::rand4x(seed, offs);
          auto n4 = tl::randn4x(seed, offs);
          (void)n4;
          tl::device_assert(four[0] == tl::rand(seed, offs), "rand4x[0] is rand");
        },
        "rand");
    const int n = 16 * 1024;
    auto u = dev.alloc<float>(n), g = dev.alloc<float>(n);
    auto bits = dev.alloc<uint32_t>(n);
    launch(k, {16}, u, g, bits, 42);
    auto hu = u.to_host(), hg = g.to_host();
    auto hb = bits.to_host();
    double mean = 0, var = 0, nmean = 0, nvar = 0;
    for (int i = 0; i < n; ++i) {
      REQUIRE(hu[i] >= 0.f);
      REQUIRE(hu[i] < 1.f);
      // uint_to_uniform_float: the bits as i32, folded to non-negative, times 2^-31.
      int32_t v = static_cast<int32_t>(hb[i]);
      if (v < 0)
        v = -v - 1;
      CHECK(hu[i] == static_cast<float>(v) * 4.6566127342e-10f);
      mean += hu[i];
      nmean += hg[i];
    }
    mean /= n;
    nmean /= n;
    for (int i = 0; i < n; ++i) {
      var += (hu[i] - mean) * (hu[i] - mean);
      nvar += (hg[i] - nmean) * (hg[i] - nmean);
    }
    var /= n;
    nvar /= n;
    // 16384 samples: standard errors about 0.0023 (uniform mean) and 0.008 (normal mean).
    CHECK(std::fabs(mean - 0.5) < 0.012);
    CHECK(std::fabs(var - 1.0 / 12) < 0.006);
    CHECK(std::fabs(nmean) < 0.04);
    CHECK(std::fabs(nvar - 1.0) < 0.05);
    // A different seed gives different numbers.
    auto u2 = dev.alloc<float>(n), g2 = dev.alloc<float>(n);
    auto bits2 = dev.alloc<uint32_t>(n);
    k[{16}](u2, g2, bits2, 43);
    CHECK(u2.to_host() != hu);
  }
}

TEST_CASE("histogram counts values, ignoring masked lanes and values out of range") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 8);
        tl::store(y + tl::arange(0, 4), tl::histogram(v, 4));
        tl::store(y + 4 + tl::arange(0, 4), tl::histogram(v, 4, tl::arange(0, 8) < 4));
      },
      {0, 1, 1, 3, 3, 3, 9, -1}, {1, 2, 0, 3, 1, 2, 0, 1});
}

TEST_CASE("gather along an axis") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto src = load_n(x, 8) * 10.f;          // 0 10 20 ... 70
        auto idx = tl::arange(0, 4) * 2 % 8 + 1; // 1 3 5 7
        tl::store(y + tl::arange(0, 4), tl::gather(src, idx, 0));
        // 2-D, axis 1: out[i][j] = m[i][ix[i][j]]
        auto m = tl::reshape(src, {2, 4});
        auto ix = tl::reshape(tl::flip(tl::arange(0, 4)), {1, 4}) + tl::zeros<int32_t>({2, 1});
        tl::store(y + 4 + tl::arange(0, 8), tl::ravel(tl::gather(m, ix, 1)));
        // 2-D, axis 0, index with fewer rows than src: out[i][j] = m[ix0[i][j]][j]
        auto ix0 = tl::reshape(tl::arange(0, 4) % 2, {1, 4});
        tl::store(y + 12 + tl::arange(0, 4), tl::ravel(tl::gather(m, ix0, 0)));
      },
      iota<float>(8), {10, 30, 50, 70, 30, 20, 10, 0, 70, 60, 50, 40, 0, 50, 20, 70});
}

TEST_CASE("max and min with return_indices, reduce_or") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto m = tl::reshape(load_n(x, 8), {2, 4});
        auto [mx, imx] = tl::max(m, 1, tl::return_indices);
        auto [mn, imn] = tl::min(m, 0, tl::return_indices);
        tl::store(y + tl::arange(0, 2), mx);
        tl::store(y + 2 + tl::arange(0, 2), imx);
        tl::store(y + 4 + tl::arange(0, 4), mn);
        tl::store(y + 8 + tl::arange(0, 4), imn);
        tl::store(y + 12 + tl::arange(0, 2), tl::reduce_or(m, 1));
        tl::store(y + 14, tl::reduce_or(m));
      },
      {4, 9, 9, 1, 8, 2, 16, 4}, {9, 16, 1, 2, 4, 2, 9, 1, 0, 1, 0, 0, 13, 30, 31});
}

TEST_CASE("tl::range options are recorded on the loop") {
  auto k = tritium::jit(
      +[](tl::ptr<int32_t> y, tl::i32 n) {
        auto acc = tl::scalar<int32_t>(0);
        for (auto i :
             tl::range(0, n, 1, {.num_stages = 4, .loop_unroll_factor = 2, .flatten = true}))
          acc = acc + i;
        tl::store(y, acc);
      },
      "range_options");
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto y = dev.alloc<int32_t>(1);
    std::string ir = launch(k, {1}, y, 10);
    CHECK(ir.find("num_stages = 4") != std::string::npos);
    CHECK(ir.find("loop_unroll_factor = 2") != std::string::npos);
    CHECK(ir.find("flatten = 1") != std::string::npos);
    CHECK(y.to_host()[0] == 45);
  }
}

namespace {
// C = A @ B with block pointers, as Triton's block-pointer matmul: M, N, K need not be
// multiples of the block; boundary_check masks the edges.
void block_ptr_matmul(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::i32 M, tl::i32 N,
                      tl::i32 K) {
  constexpr int BM = 16, BN = 16, BK = 16;
  auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
  auto a_bp = tl::make_block_ptr(a, {M, K}, {K, 1}, {pid_m * BM, 0}, {BM, BK}, {1, 0});
  auto b_bp = tl::make_block_ptr(b, {K, N}, {N, 1}, {0, pid_n * BN}, {BK, BN}, {1, 0});
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    (void)k;
    auto x = tl::load(a_bp, {.boundary_check = {0, 1}});
    auto y = tl::load(b_bp, {.boundary_check = {0, 1}, .padding_option = "zero"});
    acc = tl::dot(x, y, acc);
    a_bp = tl::advance(a_bp, {0, BK});
    b_bp = tl::advance(b_bp, {BK, 0});
  }
  auto c_bp = tl::make_block_ptr(c, {M, N}, {N, 1}, {pid_m * BM, pid_n * BN}, {BM, BN});
  tl::store(c_bp, acc, {.boundary_check = {0, 1}});
}
} // namespace

TEST_CASE("block pointers: make_block_ptr, advance, boundary_check") {
  const int M = 20, N = 24, K = 40;
  std::vector<float> ha(M * K), hb(K * N);
  for (int i = 0; i < M * K; ++i)
    ha[i] = static_cast<float>(i % 7 - 3);
  for (int i = 0; i < K * N; ++i)
    hb[i] = static_cast<float>(i % 5 - 2);
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(block_ptr_matmul, "block_ptr_matmul");
    auto a = dev.from_host(ha), b = dev.from_host(hb);
    auto c = dev.from_host(std::vector<float>(M * N, -1.f));
    launch(k, {2, 2}, a, b, c, M, N, K);
    auto got = c.to_host();
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float s = 0;
        for (int kk = 0; kk < K; ++kk)
          s += ha[i * K + kk] * hb[kk * N + j];
        CAPTURE(i);
        CAPTURE(j);
        CHECK(got[i * N + j] == s);
      }
  }
}

TEST_CASE("tensor descriptors load zeros and store nothing out of bounds; nan padding") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> z) {
          // x is 3 x 5; copy the 4 x 4 block at (2, 3) to y's block at (0, 0) of a 3 x 5 y.
          auto desc = tl::make_tensor_descriptor(x, {3, 5}, {5, 1}, {4, 4});
          auto v = desc.load({2, 3});
          auto out = tl::make_tensor_descriptor(y, {3, 5}, {5, 1}, {4, 4});
          tl::store_tensor_descriptor(out, {0, 0}, v + 100.f);
          // NaN padding through a block pointer, 1-D.
          auto bp = tl::make_block_ptr(x, {15}, {1}, {12}, {4});
          tl::store(z + tl::arange(0, 4),
                    tl::load(bp, {.boundary_check = {0}, .padding_option = "nan"}));
        },
        "descriptors");
    auto x = dev.from_host(iota<float>(15));
    auto y = dev.from_host(std::vector<float>(15, -1.f));
    auto z = dev.alloc<float>(4);
    launch(k, {1}, x, y, z);
    // Row 2, columns 3 and 4 of x are 13 and 14; the rest of the block is out of bounds.
    std::vector<float> expect(15, -1.f);
    expect[0] = 113.f;
    expect[1] = 114.f;
    for (int i = 2; i < 4; ++i)
      expect[i] = 100.f; // padding zeros + 100, in bounds of y (row 0)
    for (int r = 1; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        expect[r * 5 + c] = 100.f;
    CHECK(y.to_host() == expect);
    auto hz = z.to_host();
    CHECK(hz[0] == 12.f);
    CHECK(hz[2] == 14.f);
    CHECK(std::isnan(hz[3]));
  }
}

TEST_CASE("sort and topk") {
  expect_io<int32_t, int32_t>(
      +[](tl::ptr<int32_t> x, tl::ptr<int32_t> y) {
        auto v = load_n(x, 8);
        tl::store(y + tl::arange(0, 8), tl::sort(v));
        tl::store(y + 8 + tl::arange(0, 8), tl::sort(v, 0, /*descending=*/true));
        auto m = tl::reshape(v, {2, 4});
        tl::store(y + 16 + tl::arange(0, 8), tl::ravel(tl::sort(m, 1)));
        tl::store(y + 24 + tl::arange(0, 4), tl::topk(v, 4));
        tl::store(y + 28 + tl::arange(0, 4), tl::ravel(tl::topk(m, 2)));
      },
      {5, -3, 9, 0, 9, 2, -7, 4}, {-7, -3, 0, 2, 4,  5, 9, 9, 9, 9, 5, 4, 2, 0, -3, -7,
                                   -3, 0,  5, 9, -7, 2, 4, 9, 9, 9, 5, 4, 9, 5, 9,  4});
  // A longer float sort against std::sort.
  std::vector<float> in(256);
  uint32_t state = 12345;
  for (auto& v : in) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(state >> 8) % 1000) / 8.f;
  }
  std::vector<float> expect = in;
  std::sort(expect.begin(), expect.end());
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        tl::store(y + tl::arange(0, 256), tl::sort(load_n(x, 256)));
      },
      in, expect);
}

TEST_CASE("reduce and associative_scan over tuples of tensors") {
  expect_io<float, float>(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto v = load_n(x, 8);
        auto idx = tl::arange(0, 8);
        // Argmin by hand: the smaller value, the smaller index on ties.
        auto [mv, mi] =
            tl::reduce(std::tuple{v, idx}, 0, [](tl::f32 a, tl::i32 ia, tl::f32 b, tl::i32 ib) {
              auto take_a = (a < b) || ((a == b) && (ia < ib));
              return std::tuple{tl::where(take_a, a, b), tl::where(take_a, ia, ib)};
            });
        tl::store(y, mv);
        tl::store(y + 1, mi.to<float>());
        // The linear recurrence h[t] = a[t] * h[t-1] + b[t] as a scan over (a, b) pairs:
        // (a1, b1) then (a2, b2) composes to (a1 * a2, b1 * a2 + b2).
        auto a = tl::full<float>({8}, 0.5);
        auto [pa, h] = tl::associative_scan(std::tuple{a, v}, 0,
                                            [](tl::f32 a1, tl::f32 b1, tl::f32 a2, tl::f32 b2) {
                                              return std::tuple{a1 * a2, b1 * a2 + b2};
                                            });
        (void)pa;
        tl::store(y + 2 + tl::arange(0, 8), h);
      },
      {4, 2, 6, 2, 8, 0, 2, 4},
      [] {
        std::vector<float> e{0, 5};
        float h = 0;
        for (float b : {4, 2, 6, 2, 8, 0, 2, 4}) {
          h = 0.5f * h + b;
          e.push_back(h);
        }
        return e;
      }());
}
