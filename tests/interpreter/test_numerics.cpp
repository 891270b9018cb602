// Number formats as hardware rounds them: f16/bf16 conversions, integer wrap-around, and the
// interpreter's arithmetic in each element type.
#include <doctest/doctest.h>

#include <support/devices.hpp>
#include <tritium/float16.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tl = tritium::tl;
using tritium::bfloat16;
using tritium::half;

TEST_CASE("every f16 value converts to float and back unchanged") {
  for (uint32_t b = 0; b < 65536; ++b) {
    half h = half::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f))
      continue;
    REQUIRE(half(f).bits == b);
  }
}

TEST_CASE("f16 rounds to nearest, ties to even, overflows to infinity, keeps subnormals") {
  CHECK(half(1.0f).bits == 0x3c00);
  CHECK(half(65504.0f).bits == 0x7bff); // largest finite
  CHECK(half(65520.0f).bits == 0x7c00); // halfway to the next binade: rounds up to inf
  CHECK(half(65519.0f).bits == 0x7bff);
  CHECK(half(5.960464477539063e-08f).bits == 0x0001);   // smallest subnormal
  CHECK(half(2.98023223876953125e-08f).bits == 0x0000); // half of it: tie to even (0)
  CHECK(half(8.940696716308594e-08f).bits == 0x0002);   // 1.5 ulp: tie to even (2)
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even keeps 1.
  CHECK(half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);
  CHECK(half(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02);
  CHECK(half(-0.0f).bits == 0x8000);
  CHECK(std::isnan(static_cast<float>(half(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("bf16 rounds to nearest even from float") {
  CHECK(bfloat16(1.0f).bits == 0x3f80);
  float just_above_half_ulp = std::bit_cast<float>(0x3f808001u);
  CHECK(bfloat16(just_above_half_ulp).bits == 0x3f81);
  float tie_even = std::bit_cast<float>(0x3f808000u); // tie: stays at even 0x3f80
  CHECK(bfloat16(tie_even).bits == 0x3f80);
  float tie_odd = std::bit_cast<float>(0x3f818000u); // tie: rounds up to even 0x3f82
  CHECK(bfloat16(tie_odd).bits == 0x3f82);
  CHECK(static_cast<float>(bfloat16::from_bits(0x4049)) == 3.140625f);
}

namespace {

void wrap_kernel(tl::ptr<int8_t> a, tl::ptr<int8_t> out8, tl::ptr<uint32_t> b,
                 tl::ptr<uint32_t> out32) {
  auto i = tl::arange(0, 4);
  tl::store(out8 + i, tl::load(a + i) * 3 + 100);
  auto x = tl::load(b + i);
  tl::store(out32 + i, x - 5u);
}

void half_kernel(tl::ptr<tritium::half> a, tl::ptr<tritium::half> out) {
  auto i = tl::arange(0, 4);
  auto x = tl::load(a + i);
  tl::store(out + i, x + x * x); // every op rounds to f16
}

} // namespace

TEST_CASE("integer arithmetic wraps at the element type's width") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    auto a = dev.from_host(std::vector<int8_t>{50, -50, 127, 0});
    auto b = dev.from_host(std::vector<uint32_t>{0, 4, 5, 0xffffffffu});
    auto out8 = dev.alloc<int8_t>(4);
    auto out32 = dev.alloc<uint32_t>(4);
    auto k = tritium::jit(wrap_kernel, "wrap_kernel");
    k[{1}](a, out8, b, out32);
    auto r8 = out8.to_host();
    for (int j = 0; j < 4; ++j) {
      int8_t x = std::vector<int8_t>{50, -50, 127, 0}[j];
      CHECK(r8[j] == static_cast<int8_t>(static_cast<int8_t>(x * 3) + 100));
    }
    auto r32 = out32.to_host();
    CHECK(r32[0] == 0xfffffffbu);
    CHECK(r32[1] == 0xffffffffu);
    CHECK(r32[2] == 0u);
    CHECK(r32[3] == 0xfffffffau);
  }
}

TEST_CASE("f16 arithmetic rounds after every op") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    std::vector<half> h{half(1.0f), half(2049.0f), half(0.1f), half(-3.5f)};
    auto a = dev.from_host(h);
    auto out = dev.alloc<half>(4);
    auto k = tritium::jit(half_kernel, "half_kernel");
    k[{1}](a, out);
    auto r = out.to_host();
    for (int j = 0; j < 4; ++j) {
      float x = h[j];
      half sq = half(x * x);
      half expect = half(x + static_cast<float>(sq));
      CHECK(r[j].bits == expect.bits);
    }
  }
}
