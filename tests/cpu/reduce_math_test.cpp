// The CPU backend's two departures from "one step after another, in double": reductions keep
// partial results in the documented order (ir/reduce_order.hpp), which the interpreter follows
// too, so results stay bit-identical; exp and log of f32 come from the vector math library and
// are compared with the interpreter within the tolerance the docs state.
#include "compare.hpp"

#include <support/devices.hpp>
#include <tritium/ir/reduce_order.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
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

} // namespace

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
