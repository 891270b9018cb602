// Number formats as hardware rounds them: f16/bf16 conversions, integer wrap-around, and the
// interpreter's arithmetic in each element type.
#include <doctest/doctest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// The hardware's f32 -> f16 rounding (F16C, round to nearest even), where there is one.
__attribute__((target("f16c"))) uint16_t f16c_round(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, 0));
}
#endif

} // namespace

TEST_CASE("f16 and bf16 from f32 round as the hardware does, on a sweep of all f32") {
  // Every 251st f32 bit pattern, both signs, NaNs included. bf16 against the round-to-nearest-
  // even of the top half of the bits (a NaN: the quiet NaN of its sign); f16 against F16C's
  // vcvtps2ph.
  bool f16c = false;
#if defined(__x86_64__)
  f16c = __builtin_cpu_supports("f16c");
#endif
  int64_t checked = 0;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 251) {
    const uint32_t u = static_cast<uint32_t>(b);
    const float f = std::bit_cast<float>(u);
    const uint16_t bf = std::isnan(f)
                            ? static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u)
                            : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    REQUIRE(bfloat16(f).bits == bf);
#if defined(__x86_64__)
    if (f16c) {
      const uint16_t want = f16c_round(f);
      if (std::isnan(f))
        REQUIRE((half(f).bits & 0x7e00u) == 0x7e00u);
      else
        REQUIRE(half(f).bits == want);
    }
#endif
    ++checked;
  }
  MESSAGE(checked << " f32 values; f16 checked against F16C: " << f16c);
}

TEST_CASE("f16 and bf16 from double round once") {
  // 1 + 2^-11 + 2^-40 is just above the tie between two f16 (and 1 + 2^-8 + 2^-40 between two
  // bf16): rounding to f32 first would land on the tie and then round to even, down.
  CHECK(tritium::double_to_f16_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 0x3c01);
  CHECK(tritium::float_to_f16_bits(
            static_cast<float>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))) == 0x3c00);
  CHECK(tritium::double_to_bf16_bits(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)) == 0x3f81);
  // The same just above half the smallest f16 subnormal, and far below it.
  CHECK(tritium::double_to_f16_bits(std::ldexp(1.0, -25) + std::ldexp(1.0, -60)) == 0x0001);
  CHECK(tritium::double_to_f16_bits(-std::ldexp(1.0, -25)) == 0x8000);
  CHECK(tritium::double_to_f16_bits(1e-300) == 0x0000);
  // Past the largest finite value, and doubles beyond any f32.
  CHECK(tritium::double_to_f16_bits(65519.99) == 0x7bff);
  CHECK(tritium::double_to_f16_bits(-1e300) == 0xfc00);
  CHECK(tritium::double_to_bf16_bits(1e300) == 0x7f80);
  CHECK(tritium::double_to_bf16_bits(std::ldexp(1.0, -133)) == 0x0001); // bf16's smallest
  // NaN keeps its sign and becomes the format's quiet NaN.
  CHECK(tritium::double_to_f16_bits(-std::numeric_limits<double>::quiet_NaN()) == 0xfe00);
  CHECK(std::bit_cast<uint32_t>(tritium::f16_bits_to_float(0xfc01)) == 0xffc00000u);
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
