// Integer division has one meaning on every device (docs/language.md): x / 0 == 0 and
// x % 0 == x, so that x == (x / y) * y + x % y for every y; the most negative value divided by
// -1 wraps to itself, with remainder 0. Checked on every test device and on the gpu-emulator
// (the GPU lowering run on the CPU), for tensors, scalars and a constant zero divisor.
#include "common.hpp"

#include <cstdint>
#include <limits>

using namespace lang_test;

namespace {

template <class T>
T expect_div(T x, T y) {
  if (y == 0)
    return 0;
  if constexpr (std::is_signed_v<T>)
    if (x == std::numeric_limits<T>::min() && y == T(-1))
      return x;
  return static_cast<T>(x / y);
}

template <class T>
T expect_rem(T x, T y) {
  if (y == 0)
    return x;
  if constexpr (std::is_signed_v<T>)
    if (x == std::numeric_limits<T>::min() && y == T(-1))
      return 0;
  return static_cast<T>(x % y);
}

// q = x / y, r = x % y lane by lane; z = x / 0 and w = x % 0 with a constant divisor; s holds
// lane 0's quotient and remainder computed on scalars.
template <class T>
void div_kernel(tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> q, tl::ptr<T> r, tl::ptr<T> z, tl::ptr<T> w,
                tl::ptr<T> s, tl::constexpr_<int> B) {
  auto offs = tl::arange(0, B);
  auto a = tl::load(x + offs);
  auto b = tl::load(y + offs);
  tl::store(q + offs, a / b);
  tl::store(r + offs, a % b);
  tl::store(z + offs, a / 0);
  tl::store(w + offs, a % 0);
  auto a0 = tl::load(x);
  auto b0 = tl::load(y);
  tl::store(s, a0 / b0);
  tl::store(s + 1, a0 % b0);
}

template <class T>
void check_division() {
  using L = std::numeric_limits<T>;
  constexpr int n = 16;
  std::vector<T> x, y;
  const T lo = L::min(), hi = L::max();
  const T minus1 = static_cast<T>(-1); // all ones for unsigned types
  std::vector<std::pair<T, T>> cases = {{7, 2},       {T(-7), 2},   {7, minus1}, {T(-7), T(-2)},
                                        {lo, minus1}, {lo, 0},      {0, 0},      {hi, 0},
                                        {5, 0},       {lo, 1},      {minus1, 0}, {hi, minus1},
                                        {100, 7},     {T(-100), 7}, {3, T(-1)},  {0, 5}};
  for (auto [a, b] : cases) {
    x.push_back(a);
    y.push_back(b);
  }
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&div_kernel<T>, "div_kernel");
    auto bx = dev.from_host(x), by = dev.from_host(y);
    auto q = dev.alloc<T>(n), r = dev.alloc<T>(n), z = dev.alloc<T>(n), w = dev.alloc<T>(n);
    auto s = dev.alloc<T>(2);
    launch(k, {1}, bx, by, q, r, z, w, s, n);
    auto hq = q.to_host(), hr = r.to_host(), hz = z.to_host(), hw = w.to_host();
    auto hs = s.to_host();
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      CAPTURE(+x[i]);
      CAPTURE(+y[i]);
      CHECK(+hq[i] == +expect_div(x[i], y[i]));
      CHECK(+hr[i] == +expect_rem(x[i], y[i]));
      CHECK(+hz[i] == 0);
      CHECK(+hw[i] == +x[i]);
      // The identity the definition keeps, in the type's wrap-around arithmetic (computed in
      // uint64_t: INT_MIN * -1 in int, or a promoted short product, is undefined behaviour,
      // which UBSan reports).
      const auto wrap = [](T v) { return static_cast<uint64_t>(v); };
      CHECK(static_cast<T>(wrap(hq[i]) * wrap(y[i]) + wrap(hr[i])) == x[i]);
    }
    CHECK(+hs[0] == +expect_div(x[0], y[0]));
    CHECK(+hs[1] == +expect_rem(x[0], y[0]));
  }
}

} // namespace

TEST_CASE("integer division by zero and of the most negative value by -1, on every device") {
  check_division<int8_t>();
  check_division<int16_t>();
  check_division<int32_t>();
  check_division<int64_t>();
  check_division<uint8_t>();
  check_division<uint16_t>();
  check_division<uint32_t>();
  check_division<uint64_t>();
}

TEST_CASE("the scalar quotient of a zero divisor, on every device") {
  // Lane 0 alone through the scalar path: 5 / 0 and 5 % 0.
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&div_kernel<int32_t>, "div_kernel");
    std::vector<int32_t> x(16, 5), y(16, 0);
    auto bx = dev.from_host(x), by = dev.from_host(y);
    auto q = dev.alloc<int32_t>(16), r = dev.alloc<int32_t>(16), z = dev.alloc<int32_t>(16),
         w = dev.alloc<int32_t>(16), s = dev.alloc<int32_t>(2);
    launch(k, {1}, bx, by, q, r, z, w, s, 16);
    auto hs = s.to_host();
    CHECK(hs[0] == 0);
    CHECK(hs[1] == 5);
  }
}
