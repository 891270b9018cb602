// The CPU backend's departures from "one step after another, in double": reductions keep
// partial results in the documented order (ir/reduce_order.hpp), which the interpreter follows
// too, so results stay bit-identical; exp and log of f32 are fast approximations, and an f32
// quotient by a loop-invariant divisor a product with its reciprocal, both compared with the
// interpreter within the tolerance the docs state.
#include "compare.hpp"
#include "dump_stages.hpp"

#include <support/devices.hpp>
#include <tritium/ir/reduce_order.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;

namespace {

// a * 3 + b (wrapping): neither associative nor commutative, so the result spells out the
// order of every combine step.
tl::i32 spell(tl::i32 a, tl::i32 b) {
  return a * 3 + b;
}

void order_kernel(tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::constexpr_<int> M,
                  tl::constexpr_<int> N, tl::constexpr_<int> AXIS) {
  auto offs = tl::expand_dims(tl::arange(0, M), 1) * N + tl::expand_dims(tl::arange(0, N), 0);
  auto r = tl::reduce(tl::load(x + offs), AXIS, spell);
  tl::store(y + tl::arange(0, AXIS == 0 ? N : M), r);
}

void order_1d_kernel(tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::constexpr_<int> N) {
  tl::store(y, tl::reduce(tl::load(x + tl::arange(0, N)), 0, spell));
}

int32_t spell(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * 3u + static_cast<uint32_t>(b));
}

// The order as docs/ir.md states it, written out again.
int32_t documented(const std::vector<int32_t>& xs, int64_t lanes) {
  const int64_t len = static_cast<int64_t>(xs.size());
  const int64_t p = tritium::ir::reduce_partials(len, lanes);
  std::vector<int32_t> part(xs.begin(), xs.begin() + p);
  for (int64_t j = p; j < len; ++j)
    part[j % p] = spell(part[j % p], xs[j]);
  for (int64_t h = p / 2; h >= 1; h /= 2)
    for (int64_t k = 0; k < h; ++k)
      part[k] = spell(part[k], part[k + h]);
  return part[0];
}

std::vector<Device> interpreter_and_cpu() {
  return {tritium::device("interpreter"), tritium::device("cpu")};
}

int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  auto key = [](float f) { // monotonic integer order of the floats
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(key(a) - key(b));
}

template <class T>
void map_kernel(tl::ptr<T> x, tl::ptr<T> e, tl::ptr<T> l, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 1);
  tl::store(e + offs, tl::exp(v), mask);
  tl::store(l + offs, tl::log(v), mask);
}

// Each element divided by a scalar (invariant in the element loop) with `/` and with div_rn.
void quotient_kernel(tl::ptr<float> x, tl::ptr<float> q, tl::ptr<float> q_rn, tl::f32 d, tl::i32 n,
                     tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 1.f);
  tl::store(q + offs, v / d, mask);
  tl::store(q_rn + offs, tl::div_rn(v, d), mask);
}

// Triton's looped layer norm's first statistic: rows summed into a zero tile, then reduced.
template <class T>
void zero_tile_sum_kernel(tl::ptr<T> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto acc = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    acc += tl::load(x + row * n + cols, cols < n, 0.f).template to<float>();
  }
  tl::store(out + row, tl::sum(acc, 0));
}

// Each program reduces one masked row to a scalar with one combine op: the CPU backend's
// partials then halve on whole vectors (lower_collective.cpp, vector_combine).
enum class Combine { Sum, Max, Min, Prod, Xor };

// The value masked lanes load: the combine's identity.
template <class T, Combine C>
constexpr T identity() {
  return C == Combine::Max    ? std::numeric_limits<T>::lowest()
         : C == Combine::Min  ? std::numeric_limits<T>::max()
         : C == Combine::Prod ? T{1}
                              : T{0};
}

template <class T, Combine C>
void row_reduce_kernel(tl::ptr<T> x, tl::ptr<T> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto v = tl::load(x + row * n + cols, cols < n, identity<T, C>());
  if constexpr (C == Combine::Sum)
    tl::store(out + row, tl::sum(v, 0));
  else if constexpr (C == Combine::Max)
    tl::store(out + row, tl::max(v, 0));
  else if constexpr (C == Combine::Min)
    tl::store(out + row, tl::min(v, 0));
  else if constexpr (C == Combine::Prod)
    tl::store(out + row, tl::reduce(v, 0, [](auto a, auto b) { return a * b; }));
  else
    tl::store(out + row, tl::xor_sum(v, 0));
}

template <class T, Combine C>
T combine(T a, T b) {
  if constexpr (C == Combine::Sum)
    return std::is_integral_v<T>
               ? static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b))
               : a + b;
  else if constexpr (C == Combine::Max)
    return std::max(a, b);
  else if constexpr (C == Combine::Min)
    return std::min(a, b);
  else if constexpr (C == Combine::Prod)
    return std::is_integral_v<T>
               ? static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b))
               : a * b;
  else
    return a ^ b;
}

// The documented order (ir/reduce_order.hpp) of one row, and the row combined front to back.
template <class T, Combine C>
std::pair<T, T> row_results(const std::vector<T>& xs) {
  const int64_t len = static_cast<int64_t>(xs.size());
  const int64_t p = tritium::ir::reduce_partials(len, 1);
  std::vector<T> part(xs.begin(), xs.begin() + p);
  for (int64_t j = p; j < len; ++j)
    part[j % p] = combine<T, C>(part[j % p], xs[j]);
  for (int64_t h = p / 2; h >= 1; h /= 2)
    for (int64_t k = 0; k < h; ++k)
      part[k] = combine<T, C>(part[k], part[k + h]);
  T seq = xs[0];
  for (int64_t j = 1; j < len; ++j)
    seq = combine<T, C>(seq, xs[j]);
  return {part[0], seq};
}

// Rows whose result depends on the order: for floats, large and small magnitudes mixed.
template <class T, Combine C>
T row_value(int row, int c) {
  const int64_t h = (static_cast<int64_t>(row) * 7919 + c * 104729) % 2003 - 1001;
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(h * 2654435761LL);
  else if constexpr (C == Combine::Prod)
    return static_cast<T>(1 + static_cast<double>(h) * 1e-4);
  else
    return static_cast<T>(c % 7 == 0 ? h * 1e6 : h * 1.37e-3);
}

template <class T, Combine C>
void check_row_reduce(const char* name) {
  // Full rows (partials in registers throughout), a row ending inside a chunk, rows shorter
  // than one chunk, an empty row; blocks of 32, 16 and 2 partials.
  struct Case {
    int block, n;
  };
  int order_matters = 0;
  const std::string label = name;
  for (Case c : {Case{1024, 1024}, Case{1024, 1000}, Case{1024, 40}, Case{1024, 1}, Case{1024, 0},
                 Case{16, 16}, Case{16, 9}, Case{2, 2}}) {
    CAPTURE(label);
    CAPTURE(c.block);
    CAPTURE(c.n);
    const int rows = 3;
    std::vector<T> hx(std::max(rows * c.n, 1));
    std::vector<T> want(rows);
    for (int r = 0; r < rows; ++r) {
      std::vector<T> row(c.block);
      for (int j = 0; j < c.block; ++j) {
        row[j] = j < c.n ? row_value<T, C>(r, j) : identity<T, C>();
        if (j < c.n)
          hx[r * c.n + j] = row[j];
      }
      auto [documented, sequential] = row_results<T, C>(row);
      want[r] = documented;
      order_matters += std::memcmp(&documented, &sequential, sizeof(T)) != 0;
    }
    for (Device d : interpreter_and_cpu()) {
      CAPTURE(d.name());
      auto x = d.from_host(hx);
      auto out = d.alloc<T>(rows);
      tritium::jit(row_reduce_kernel<T, C>, "row_reduce")[{rows}](x, out, c.n, c.block);
      std::vector<T> got = out.to_host();
      CHECK(std::memcmp(got.data(), want.data(), rows * sizeof(T)) == 0);
    }
  }
  if constexpr (C == Combine::Sum || C == Combine::Prod)
    if constexpr (std::is_floating_point_v<T>)
      CHECK(order_matters > 0); // a backend that combined front to back would fail
}

} // namespace

TEST_CASE("cpu: a row reduced to a scalar by one op keeps the documented order, bit for bit") {
  check_row_reduce<float, Combine::Sum>("f32 sum");
  check_row_reduce<double, Combine::Sum>("f64 sum");
  check_row_reduce<float, Combine::Prod>("f32 product");
  check_row_reduce<float, Combine::Max>("f32 max");
  check_row_reduce<int32_t, Combine::Min>("i32 min");
  check_row_reduce<int32_t, Combine::Prod>("i32 product");
  check_row_reduce<int64_t, Combine::Sum>("i64 sum");
  check_row_reduce<int32_t, Combine::Xor>("i32 xor");
}

TEST_CASE("cpu: f32 max and min reductions skip NaN as the interpreter does, whichever partial "
          "holds it") {
  // The chunk loop passes the element first to maxnum / minnum (lower_collective.cpp), so a NaN
  // element, or a partial that starts as NaN, must still give way to any number. Rows of 1024
  // fill the block; rows of 1000 end inside a chunk, and their masked lanes load the identity.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int block = 1024;
  for (int n : {1024, 1000}) {
    std::vector<std::vector<float>> rows;
    auto numbers = [&](int r) {
      std::vector<float> row(n);
      for (int j = 0; j < n; ++j)
        row[j] = row_value<float, Combine::Max>(r, j);
      return row;
    };
    for (int at : {0, 1, 31, 32, 500, n - 10, n - 1}) { // one NaN: first chunk, later, last
      rows.push_back(numbers(at));
      rows.back()[at] = nan;
    }
    rows.push_back(numbers(7)); // NaN starts every partial: the first chunk is all NaN
    for (int j = 0; j < 32; ++j)
      rows.back()[j] = nan;
    rows.push_back(numbers(8)); // only NaN but one number, at the end
    for (int j = 0; j < n - 1; ++j)
      rows.back()[j] = nan;
    rows.push_back(std::vector<float>(n, nan)); // only NaN
    std::vector<float> hx;
    for (const auto& r : rows)
      hx.insert(hx.end(), r.begin(), r.end());
    const int count = static_cast<int>(rows.size());
    auto run = [&](Device d, bool max) {
      auto x = d.from_host(hx);
      auto out = d.alloc<float>(count);
      if (max)
        tritium::jit(row_reduce_kernel<float, Combine::Max>, "row_max_nan")[{count}](x, out, n,
                                                                                     block);
      else
        tritium::jit(row_reduce_kernel<float, Combine::Min>, "row_min_nan")[{count}](x, out, n,
                                                                                     block);
      return out.to_host();
    };
    for (bool max : {true, false}) {
      CAPTURE(n);
      CAPTURE(max);
      std::vector<float> want = run(tritium::device("interpreter"), max);
      std::vector<float> got = run(tritium::device("cpu"), max);
      for (int r = 0; r < count; ++r) {
        CAPTURE(r);
        // The extreme of the numbers (the masked lanes' identity among them), else NaN.
        float expect =
            n < block ? (max ? identity<float, Combine::Max>() : identity<float, Combine::Min>())
                      : nan;
        for (float v : rows[r])
          if (!std::isnan(v))
            expect = std::isnan(expect) ? v : max ? std::max(expect, v) : std::min(expect, v);
        CHECK(ulps(want[r], expect) == 0);
        CHECK(ulps(got[r], expect) == 0);
      }
    }
  }
}

TEST_CASE("cpu: a sum accumulated into a zero tile keeps the interpreter's bits, zero signs "
          "included") {
  // The CPU reads `0 + a` as `a` past each partial's first element (lower_collective.cpp,
  // summand_without_zero): the same floats, and a row of -0 still sums to +0.
  const int rows = 5;
  for (int n : {1024, 1000, 2500}) {
    CAPTURE(n);
    std::vector<float> src(rows * n);
    for (int c = 0; c < n; ++c) {
      src[0 * n + c] = -0.f;                                     // every element -0
      src[1 * n + c] = c % 3 == 0 ? 0.f : -0.f;                  // zeros of both signs
      src[2 * n + c] = c < 32 ? -0.f : (c % 2 ? 1e-3f : -1e-3f); // -0 first, then values
      src[3 * n + c] = static_cast<float>((c * 7919) % 2003 - 1001) * 1.37e-3f;
      src[4 * n + c] = c % 5 == 0 ? 3e7f : -1.f; // rounding depends on the order
    }
    auto run = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> h(src.begin(), src.end());
      std::vector<std::vector<uint32_t>> bits;
      for (Device d : interpreter_and_cpu()) {
        auto x = d.from_host(h);
        auto o = d.alloc<float>(rows);
        tritium::jit(zero_tile_sum_kernel<T>, "zero_tile_sum")[{rows}](x, o, n, 1024);
        std::vector<uint32_t> b;
        for (float f : o.to_host())
          b.push_back(std::bit_cast<uint32_t>(f));
        bits.push_back(b);
      }
      CHECK(bits[0][0] == 0u); // +0, as 0 + (-0) makes it
      CHECK(bits[1] == bits[0]);
    };
    run(float{});
    run(tritium::half{});
  }
}

TEST_CASE("cpu: reductions combine in the documented order, as the interpreter does") {
  // Four elements, one output: four partials, then ((x0 . x2) . (x1 . x3)).
  for (Device d : interpreter_and_cpu()) {
    CAPTURE(d.name());
    auto x = d.from_host(std::vector<int32_t>{1, 10, 100, 1000});
    auto y = d.alloc<int32_t>(1);
    auto k = tritium::jit(order_1d_kernel, "order_1d_kernel");
    k[{1}](x, y, 4);
    CHECK(y.to_host()[0] == 3 * (3 * 1 + 100) + (3 * 10 + 1000)); // not ((1.10).100).1000
  }
  // A 1-D reduction to a scalar ends in a tree of 32 partials that the CPU backend combines in
  // registers, not through scratch: the same order.
  for (int n : {64, 1024}) {
    CAPTURE(n);
    std::vector<int32_t> hx(n);
    for (int i = 0; i < n; ++i)
      hx[i] = (i * 7919 % 1000) - 500;
    for (Device d : interpreter_and_cpu()) {
      CAPTURE(d.name());
      auto x = d.from_host(hx);
      auto y = d.alloc<int32_t>(1);
      tritium::jit(order_1d_kernel, "order_1d_kernel")[{1}](x, y, n);
      CHECK(y.to_host()[0] == documented(hx, 1));
    }
  }
  // 1-D (32 partials), rows (4 lanes: 8 partials each), columns (8 lanes: 4 partials; 64 lanes:
  // in order).
  struct Case {
    int m, n, axis;
  };
  for (Case c : {Case{1, 256, 1}, Case{4, 64, 1}, Case{64, 8, 0}, Case{8, 64, 0}, Case{2, 2, 1}}) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.axis);
    std::vector<int32_t> hx(c.m * c.n);
    for (size_t i = 0; i < hx.size(); ++i)
      hx[i] = static_cast<int32_t>(i * 7919 % 1000) - 500;
    const int outs = c.axis == 0 ? c.n : c.m, len = c.axis == 0 ? c.m : c.n;
    std::vector<int32_t> want(outs);
    for (int o = 0; o < outs; ++o) {
      std::vector<int32_t> xs;
      for (int j = 0; j < len; ++j)
        xs.push_back(c.axis == 0 ? hx[j * c.n + o] : hx[o * c.n + j]);
      want[o] = documented(xs, outs);
    }
    for (Device d : interpreter_and_cpu()) {
      CAPTURE(d.name());
      auto x = d.from_host(hx);
      auto y = d.alloc<int32_t>(outs);
      auto k = tritium::jit(order_kernel, "order_kernel");
      k[{1}](x, y, c.m, c.n, c.axis);
      CHECK(y.to_host() == want);
    }
  }
}

TEST_CASE("cpu: f32 exp and log are within 3 and 4 ulp of the interpreter's") {
  // Every 4099th f32 in [-104, 89] for exp (the whole range from underflow to overflow) and every
  // positive one for log, plus the special values, which must match exactly.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.f, -0.f, inf,    -inf,  std::numeric_limits<float>::quiet_NaN(),
                           1.f, -1.f, 1e-45f, 88.7f, -103.9f};
  for (uint32_t b = 0; b < 0x7f800000u; b += 4099) {
    float f = std::bit_cast<float>(b);
    xs.push_back(f);
    if (f < 104.f)
      xs.push_back(-f);
  }
  const int n = static_cast<int>(xs.size()), block = 1024;
  std::vector<std::vector<float>> e, l;
  for (Device d : interpreter_and_cpu()) {
    auto x = d.from_host(xs);
    auto be = d.alloc<float>(n), bl = d.alloc<float>(n);
    auto k = tritium::jit(map_kernel<float>, "map_kernel_f32");
    k[{tritium::cdiv(n, block)}](x, be, bl, n, block);
    e.push_back(be.to_host());
    l.push_back(bl.to_host());
  }
  int64_t max_e = 0, max_l = 0, differ = 0;
  for (int i = 0; i < n; ++i) {
    max_e = std::max(max_e, ulps(e[0][i], e[1][i]));
    max_l = std::max(max_l, ulps(l[0][i], l[1][i]));
    differ += e[0][i] != e[1][i] && !(std::isnan(e[0][i]) && std::isnan(e[1][i]));
    if (i < 5) { // zeros, infinities and NaN: exactly the interpreter's
      CHECK(ulps(e[0][i], e[1][i]) == 0);
      CHECK(ulps(l[0][i], l[1][i]) == 0);
    }
  }
  MESSAGE("exp: max " << max_e << " ulp, " << differ << " of " << n << " differ; log: max " << max_l
                      << " ulp");
  CHECK(max_e <= 3);
  CHECK(max_l <= 4);
  CHECK(differ > 0); // the fast path is in use (a correctly rounded one would never differ)
}

template <class T>
void exp2_kernel(tl::ptr<T> x, tl::ptr<T> e, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(e + offs, tl::exp2(tl::load(x + offs, mask, 1)), mask);
}

TEST_CASE("cpu: f32 exp2 is within 3 ulp of the interpreter's") {
  // Every 4099th f32 in [-151, 129] (underflow to overflow), the special values exactly, and
  // the integers, whose powers of two are exact.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.f,    -0.f,   inf,    -inf,  std::numeric_limits<float>::quiet_NaN(),
                           -149.f, -150.f, -151.f, 128.f, 127.f};
  for (int k = -160; k <= 130; ++k)
    xs.push_back(static_cast<float>(k));
  for (uint32_t b = 0; b < 0x7f800000u; b += 4099) {
    float f = std::bit_cast<float>(b);
    if (f < 130.f)
      xs.push_back(f);
    if (f < 152.f)
      xs.push_back(-f);
  }
  const int n = static_cast<int>(xs.size()), block = 1024;
  std::vector<std::vector<float>> e;
  for (Device d : interpreter_and_cpu()) {
    auto x = d.from_host(xs);
    auto be = d.alloc<float>(n);
    tritium::jit(exp2_kernel<float>, "exp2_kernel_f32")[{tritium::cdiv(n, block)}](x, be, n, block);
    e.push_back(be.to_host());
  }
  int64_t max_u = 0, differ = 0;
  for (int i = 0; i < n; ++i) {
    CAPTURE(xs[i]);
    const int64_t u = ulps(e[0][i], e[1][i]);
    max_u = std::max(max_u, u);
    differ += u != 0;
    if (i < 10 + 291) // the special values and the integers: exact
      CHECK(u == 0);
  }
  MESSAGE("exp2: max " << max_u << " ulp, " << differ << " of " << n << " differ");
  CHECK(max_u <= 3);
  CHECK(differ > 0); // the fast path is in use
}

TEST_CASE("cpu: exp scales by 2^k in one instruction where the host has one") {
  // AVX-512's vscalefps (codegen/targets/cpu/ldexp.hpp); the test above checks its results.
  std::string opt;
  {
    tritium::testing::DumpStages dump("tritium-ldexp-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4096), e = dev.alloc<float>(4096), l = dev.alloc<float>(4096);
    opt = tritium::jit(map_kernel<float>, "map_kernel_ldexp")
              .compiled(x, e, l, 4096, 1024)
              .artifact("ll.opt");
  }
  REQUIRE(!opt.empty());
  bool scalef = false;
#if defined(__x86_64__)
  scalef = __builtin_cpu_supports("avx512f");
#endif
  CAPTURE(scalef);
  CHECK(opt.find("tritium.ldexp") == std::string::npos); // every call lowered, nothing declared
  CHECK((opt.find("@llvm.x86.avx512.mask.scalef.ps.") != std::string::npos) == scalef);
}

TEST_CASE("cpu: an f32 quotient by an invariant divisor is within 2 ulp; div_rn is exact") {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  // Every 4099th f32 of either sign, the special values, and the largest finite one.
  std::vector<float> xs = {0.f, -0.f, inf, -inf, nan, 1.f, std::numeric_limits<float>::max()};
  for (uint32_t b = 0; b < 0x7f800000u; b += 4099) {
    xs.push_back(std::bit_cast<float>(b));
    xs.push_back(-std::bit_cast<float>(b));
  }
  const int n = static_cast<int>(xs.size()), block = 1024;
  // Divisors with a normal reciprocal (|d| in [2^-126, 2^126]), at both ends of that range, and
  // the special ones, whose quotients must be the interpreter's exactly.
  const float normal[] = {3.f, -0.1f, 1.f, 1e30f, -7e-30f, 1.9f * 0x1p125f, 1.1f * 0x1p-126f};
  const float special[] = {0.f, -0.f, inf, -inf, nan};
  auto quotients = [&](Device d, float divisor) {
    auto x = d.from_host(xs);
    auto q = d.alloc<float>(n), q_rn = d.alloc<float>(n);
    auto k = tritium::jit(quotient_kernel, "quotient_kernel");
    k[{tritium::cdiv(n, block)}](x, q, q_rn, divisor, n, block);
    return std::pair{q.to_host(), q_rn.to_host()};
  };
  int64_t max_ulps = 0, differ = 0;
  auto interp = tritium::device("interpreter"), cpu = tritium::device("cpu");
  for (bool is_special : {false, true})
    for (float divisor :
         is_special ? std::span<const float>(special) : std::span<const float>(normal)) {
      CAPTURE(divisor);
      auto [want, want_rn] = quotients(interp, divisor);
      auto [got, got_rn] = quotients(cpu, divisor);
      for (int i = 0; i < n; ++i) {
        CAPTURE(xs[i]);
        int64_t u = ulps(want[i], got[i]);
        if (is_special || i < 5)
          CHECK(u == 0);
        max_ulps = std::max(max_ulps, u);
        differ += u != 0;
        CHECK(ulps(want[i], want_rn[i]) == 0);
        CHECK(ulps(want_rn[i], got_rn[i]) == 0);
      }
    }
  MESSAGE("x / d: max " << max_ulps << " ulp, " << differ << " quotients differ");
  CHECK(max_ulps <= 2);
  CHECK(differ > 0); // the reciprocal is in use (a correctly rounded quotient never differs)
}
