// Elementwise semantics: arithmetic with wrap-around, Triton's type promotion, math functions
// with NaN and infinities, conversions with f16/bf16 rounding, bitcast, where, min/max.
#include "common.hpp"

#include <bit>
#include <cstdint>
#include <limits>

using namespace lang_test;

namespace {

constexpr int next_pow2(size_t n) {
  int b = 1;
  while (static_cast<size_t>(b) < n)
    b *= 2;
  return b;
}

// y[i] = Op(x[i]) over one masked block.
template <class In, class Out, auto Op>
void map_kernel(tl::ptr<In> x, tl::ptr<Out> y, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 1); // masked lanes read 1: no division by zero
  tl::store(y + offs, Op(v), mask);
}

// z[i] = Op(x[i], y[i]).
template <class A, class B, class Out, auto Op>
void map2_kernel(tl::ptr<A> x, tl::ptr<B> y, tl::ptr<Out> z, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(z + offs, Op(tl::load(x + offs, mask, 1), tl::load(y + offs, mask, 1)), mask);
}

// Runs Op on every test device and compares with `expect` (exactly when rel == 0).
template <class In, class Out, auto Op>
void check_map(const std::vector<In>& in, const std::vector<Out>& expect, double rel = 0) {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&map_kernel<In, Out, Op>, "map_kernel");
    auto x = dev.from_host(in);
    auto y = dev.alloc<Out>(in.size());
    launch(k, {1}, x, y, static_cast<int>(in.size()), next_pow2(in.size()));
    auto got = y.to_host();
    for (size_t i = 0; i < in.size(); ++i) {
      CAPTURE(i);
      if (rel == 0)
        CHECK_MESSAGE(same_float(as_double(got[i]), as_double(expect[i])),
                      "got " << as_double(got[i]) << ", expected " << as_double(expect[i]));
      else
        CHECK_MESSAGE(near(as_double(got[i]), as_double(expect[i]), rel, rel),
                      "got " << as_double(got[i]) << ", expected " << as_double(expect[i]));
    }
  }
}

template <class A, class B, class Out, auto Op>
void check_map2(const std::vector<A>& a, const std::vector<B>& b, const std::vector<Out>& expect,
                double rel = 0) {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&map2_kernel<A, B, Out, Op>, "map2_kernel");
    auto x = dev.from_host(a);
    auto y = dev.from_host(b);
    auto z = dev.alloc<Out>(a.size());
    launch(k, {1}, x, y, z, static_cast<int>(a.size()), next_pow2(a.size()));
    auto got = z.to_host();
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      if (rel == 0)
        CHECK_MESSAGE(same_float(as_double(got[i]), as_double(expect[i])),
                      "got " << as_double(got[i]) << ", expected " << as_double(expect[i]));
      else
        CHECK_MESSAGE(near(as_double(got[i]), as_double(expect[i]), rel, rel),
                      "got " << as_double(got[i]) << ", expected " << as_double(expect[i]));
    }
  }
}

const double nan = std::numeric_limits<double>::quiet_NaN();
const double inf = std::numeric_limits<double>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

constexpr auto op_add = [](auto a, auto b) { return a + b; };
constexpr auto op_sub = [](auto a, auto b) { return a - b; };
constexpr auto op_mul = [](auto a, auto b) { return a * b; };
constexpr auto op_div = [](auto a, auto b) { return a / b; };
constexpr auto op_rem = [](auto a, auto b) { return a % b; };
constexpr auto op_shl = [](auto a, auto b) { return a << b; };
constexpr auto op_shr = [](auto a, auto b) { return a >> b; };
constexpr auto op_band = [](auto a, auto b) { return a & b; };
constexpr auto op_bxor = [](auto a, auto b) { return a ^ b; };
constexpr auto op_neg = [](auto a) { return -a; };
constexpr auto op_bnot = [](auto a) { return ~a; };

} // namespace

TEST_CASE("integer arithmetic wraps around and divides toward zero") {
  const int32_t imax = std::numeric_limits<int32_t>::max();
  const int32_t imin = std::numeric_limits<int32_t>::min();
  check_map2<int32_t, int32_t, int32_t, op_add>({imax, -1, 5}, {1, imin, -7}, {imin, imax, -2});
  check_map2<int32_t, int32_t, int32_t, op_sub>({imin, 0}, {1, imin}, {imax, imin});
  check_map2<int32_t, int32_t, int32_t, op_mul>({65536, -3}, {65536, 5}, {0, -15});
  check_map2<int32_t, int32_t, int32_t, op_div>({-7, 7, -7}, {2, -2, -2}, {-3, -3, 3});
  check_map2<int32_t, int32_t, int32_t, op_rem>({-7, 7, -7}, {2, -2, -2}, {-1, 1, -1});
  check_map2<int8_t, int8_t, int8_t, op_add>({127, -128}, {1, -1}, {-128, 127});
  check_map2<uint8_t, uint8_t, uint8_t, op_add>({255, 0}, {1, 0}, {0, 0});
  check_map2<uint32_t, uint32_t, uint32_t, op_sub>({0}, {1}, {0xffffffffu});
  check_map2<uint32_t, uint32_t, uint32_t, op_div>({0xfffffffeu}, {2}, {0x7fffffffu});
  check_map2<int64_t, int64_t, int64_t, op_mul>(
      {int64_t{1} << 40, 3}, {int64_t{1} << 30, int64_t{1} << 62}, {0, -(int64_t{1} << 62)});
  check_map<int32_t, int32_t, op_neg>({imin, 5}, {imin, -5});
  check_map<int32_t, int32_t, op_bnot>({0, -1}, {-1, 0});
}

TEST_CASE("shifts are arithmetic for signed and logical for unsigned integers") {
  check_map2<int32_t, int32_t, int32_t, op_shr>({-8, 8}, {1, 2}, {-4, 2});
  check_map2<uint32_t, uint32_t, uint32_t, op_shr>({0x80000000u}, {1}, {0x40000000u});
  check_map2<int32_t, int32_t, int32_t, op_shl>({1, -1}, {31, 4},
                                                {std::numeric_limits<int32_t>::min(), -16});
  check_map2<int32_t, int32_t, int32_t, op_band>({0x0ff0}, {0x00ff}, {0x00f0});
  check_map2<int32_t, int32_t, int32_t, op_bxor>({0x0ff0}, {0x00ff}, {0x0f0f});
}

TEST_CASE("type promotion follows Triton") {
  // Element types are decided at compile time.
  static_assert(
      std::is_same_v<decltype(std::declval<tl::i32>() + std::declval<tl::f32>()), tl::f32>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::i32>() + std::declval<tl::i64>()), tl::i64>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::u32>() + std::declval<tl::i32>()), tl::u32>);
  static_assert(std::is_same_v<decltype(std::declval<tl::i8>() + std::declval<tl::u8>()), tl::u8>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::i8>() + std::declval<tl::i16>()), tl::i16>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f16>() + std::declval<tl::bf16>()), tl::f32>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f16>() + std::declval<tl::f32>()), tl::f32>);
  static_assert(std::is_same_v<decltype(std::declval<tl::f16>() * 0.5), tl::f16>);
  static_assert(std::is_same_v<decltype(std::declval<tl::i8>() + 1), tl::i8>);
  static_assert(std::is_same_v<decltype(std::declval<tl::i32>() * 1.5), tl::f32>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::i1>() + std::declval<tl::i32>()), tl::i32>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f64>() + std::declval<tl::f32>()), tl::f64>);
  // And the values follow the promoted type.
  check_map2<uint32_t, int32_t, uint32_t, op_add>({1}, {-2}, {0xffffffffu});
  check_map2<int32_t, float, float, op_add>({16777217}, {0.f}, {16777216.f}); // i32 -> f32 rounds
  check_map2<int8_t, int16_t, int16_t, op_add>({127}, {1}, {128});            // no i8 wrap
  check_map2<tritium::half, tritium::bfloat16, float, op_add>({tritium::half(1.f)},
                                                              {tritium::bfloat16(0.5f)}, {1.5f});
  check_map2<int32_t, int32_t, int32_t,
             [](auto a, auto b) { return (a + b * 1.5f).template to<int32_t>(); }>({1}, {3}, {5});
  // `/` on integers truncates (Triton's //); tl::fdiv is true division.
  check_map2<int32_t, int32_t, float, [](auto a, auto b) { return tl::fdiv(a, b); }>(
      {7, -7}, {2, 2}, {3.5f, -3.5f});
  check_map2<float, float, float, [](auto a, auto b) { return tl::div_rn(a, b); }>({1.f}, {3.f},
                                                                                   {1.f / 3.f});
}

TEST_CASE("log1p is accurate near 0, on every device and the gpu-emulator") {
  // Triton's libdevice.log1p; the GPU without a device library expands it (math_expansions.cpp).
  const std::vector<float> x = {0.f,   1e-10f, -1e-7f, 3e-5f, 0.5f, 1.f,
                                100.f, -1.f,   -2.f,   kInf,  kNaN};
  const std::vector<double> xd = {0.0, 1e-300, -1e-17, 0.25, 1e6, -1.0};
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&map_kernel<float, float, [](auto v) { return tl::log1p(v); }>, "log1p");
    auto bx = dev.from_host(x);
    auto y = dev.alloc<float>(x.size());
    launch(k, {1}, bx, y, static_cast<int>(x.size()), next_pow2(x.size()));
    auto got = y.to_host();
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(x[i]);
      double want = std::log1p(static_cast<double>(x[i]));
      CHECK_MESSAGE(near(got[i], want, 1e-6, 0), "got " << got[i] << ", expected " << want);
    }
    auto kd =
        tritium::jit(&map_kernel<double, double, [](auto v) { return tl::log1p(v); }>, "log1p");
    auto bxd = dev.from_host(xd);
    auto yd = dev.alloc<double>(xd.size());
    launch(kd, {1}, bxd, yd, static_cast<int>(xd.size()), next_pow2(xd.size()));
    auto gotd = yd.to_host();
    for (size_t i = 0; i < xd.size(); ++i) {
      CAPTURE(xd[i]);
      CHECK(near(gotd[i], std::log1p(xd[i]), 1e-14, 0));
    }
  }
  // f16 rounds the result once.
  check_map<tritium::half, tritium::half, [](auto v) { return tl::log1p(v); }>(
      {tritium::half(0.5f)}, {tritium::half(0.4055f)});
}

TEST_CASE("math functions, with NaN and infinities") {
  const double rel = 2e-6;
  check_map<float, float, [](auto x) { return tl::exp(x); }>(
      {0.f, 1.f, -kInf, kInf, kNaN}, {1.f, 2.7182817f, 0.f, kInf, kNaN}, rel);
  check_map<float, float, [](auto x) { return tl::exp2(x); }>({3.f, -1.f, 0.5f},
                                                              {8.f, 0.5f, 1.4142135f}, rel);
  check_map<float, float, [](auto x) { return tl::log(x); }>({1.f, 0.f, -1.f, 2.7182817f},
                                                             {0.f, -kInf, kNaN, 1.f}, rel);
  check_map<float, float, [](auto x) { return tl::log2(x); }>({8.f, 0.25f}, {3.f, -2.f}, rel);
  check_map<float, float, [](auto x) { return tl::sqrt(x); }>({4.f, 2.f, -1.f},
                                                              {2.f, 1.4142135f, kNaN}, rel);
  check_map<float, float, [](auto x) { return tl::sqrt_rn(x); }>({9.f}, {3.f});
  check_map<float, float, [](auto x) { return tl::rsqrt(x); }>({4.f, 0.25f, 0.f}, {0.5f, 2.f, kInf},
                                                               rel);
  check_map<float, float, [](auto x) { return tl::sin(x); }>({0.f, 1.5707964f, 3.f},
                                                             {0.f, 1.f, 0.14112f}, 1e-5);
  check_map<float, float, [](auto x) { return tl::cos(x); }>({0.f, 3.1415927f}, {1.f, -1.f}, 1e-5);
  check_map<float, float, [](auto x) { return tl::floor(x); }>({-1.5f, 1.5f, 2.f, -0.f},
                                                               {-2.f, 1.f, 2.f, -0.f});
  check_map<float, float, [](auto x) { return tl::ceil(x); }>({-1.5f, 1.5f, 2.f}, {-1.f, 2.f, 2.f});
  check_map<float, float, [](auto x) { return tl::erf(x); }>(
      {0.f, 1.f, -1.f, 10.f}, {0.f, 0.8427008f, -0.8427008f, 1.f}, 1e-5);
  check_map<float, float, [](auto x) { return tl::sigmoid(x); }>({0.f, 2.f, -100.f},
                                                                 {0.5f, 0.880797f, 0.f}, 1e-5);
  check_map<float, float, [](auto x) { return tl::abs(x); }>({-2.f, 3.f, -kInf}, {2.f, 3.f, kInf});
  check_map<int32_t, int32_t, [](auto x) { return tl::abs(x); }>({-2, 3}, {2, 3});
  check_map<double, double, [](auto x) { return tl::exp(x); }>({1.0}, {2.718281828459045}, 1e-12);
  check_map<float, float, [](auto x) { return tl::tanh(x); }>({0.f, 1.f, -20.f},
                                                              {0.f, 0.7615942f, -1.f}, 1e-5);
  check_map2<float, float, float, [](auto a, auto b) { return tl::pow(a, b); }>(
      {2.f, 9.f, -8.f}, {10.f, 0.5f, 1.f / 3.f}, {1024.f, 3.f, kNaN}, 1e-5);
  // f16 math rounds its result to f16.
  check_map<tritium::half, tritium::half, [](auto x) { return tl::sqrt(x); }>(
      {tritium::half(2.f)}, {tritium::half(1.4142135f)});
}

TEST_CASE("fma rounds once") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the 2^-24 is lost when the product is rounded first.
  const float a = 1.f + std::ldexp(1.f, -12);
  const float c = -(1.f + std::ldexp(1.f, -11));
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> x, tl::ptr<float> y) {
          auto av = tl::load(x); // scalars
          auto cv = tl::load(x + 1);
          tl::store(y, tl::fma(av, av, cv));
          tl::store(y + 1, tl::fma(av, 2.f, 1.f));
        },
        "fma");
    auto x = dev.from_host(std::vector<float>{a, c});
    auto y = dev.alloc<float>(2);
    launch(k, {1}, x, y);
    auto got = y.to_host();
    CHECK(got[0] == std::ldexp(1.f, -24));
    CHECK(got[1] == 2 * a + 1);
  }
}

TEST_CASE("minimum, maximum, clamp, where and comparisons with NaN") {
  using tl::PropagateNan;
  check_map2<float, float, float, [](auto a, auto b) { return tl::minimum(a, b); }>(
      {1.f, kNaN, 3.f}, {2.f, 1.f, -kInf}, {1.f, 1.f, -kInf});
  check_map2<float, float, float, [](auto a, auto b) { return tl::maximum(a, b); }>(
      {1.f, 2.f, kNaN}, {2.f, kNaN, kNaN}, {2.f, 2.f, kNaN});
  check_map2<float, float, float, [](auto a, auto b) {
    return tl::maximum(a, b, tl::PropagateNan::ALL);
  }>({1.f, 2.f, kNaN}, {2.f, kNaN, 0.f}, {2.f, kNaN, kNaN});
  check_map2<float, float, float, [](auto a, auto b) {
    return tl::minimum(a, b, tl::PropagateNan::ALL);
  }>({1.f, kNaN}, {2.f, 0.f}, {1.f, kNaN});
  check_map2<int32_t, int32_t, int32_t, [](auto a, auto b) { return tl::minimum(a, b); }>(
      {-5, 7}, {3, 2}, {-5, 2});
  check_map2<uint32_t, uint32_t, uint32_t, [](auto a, auto b) { return tl::maximum(a, b); }>(
      {0xffffffffu, 1}, {1, 2}, {0xffffffffu, 2});
  check_map<float, float, [](auto x) { return tl::clamp(x, -1.f, 1.f); }>({-3.f, 0.5f, 7.f},
                                                                          {-1.f, 0.5f, 1.f});
  check_map<int32_t, int32_t, [](auto x) { return tl::clamp(x, 0, 10); }>({-3, 5, 70}, {0, 5, 10});
  check_map2<float, float, int8_t, [](auto a, auto b) { return (a != b).template to<int8_t>(); }>(
      {kNaN, 1.f}, {kNaN, 1.f}, {1, 0});
  check_map2<float, float, int8_t, [](auto a, auto b) { return (a == b).template to<int8_t>(); }>(
      {kNaN, 1.f}, {kNaN, 1.f}, {0, 1});
  check_map2<float, float, int8_t, [](auto a, auto b) { return (a < b).template to<int8_t>(); }>(
      {kNaN, 1.f}, {1.f, 2.f}, {0, 1});
  check_map2<int32_t, uint32_t, int8_t,
             [](auto a, auto b) { return (a < b).template to<int8_t>(); }>({-1}, {1}, {0});
  check_map2<float, float, float, [](auto a, auto b) { return tl::where(a > b, a, b * 10.f); }>(
      {1.f, 5.f}, {2.f, 3.f}, {20.f, 5.f});
  // A scalar branch broadcasts against the tensor one; mixed types promote.
  check_map<int32_t, float, [](auto x) { return tl::where(x > 0, x, 0.5f); }>({-1, 4}, {0.5f, 4.f});
}

TEST_CASE("umulhi gives the high half of the unsigned product") {
  check_map2<uint32_t, uint32_t, uint32_t, [](auto a, auto b) { return tl::umulhi(a, b); }>(
      {0xffffffffu, 0x10000u, 3}, {2, 0x10000u, 5}, {1, 1, 0});
  check_map2<int32_t, int32_t, int32_t, [](auto a, auto b) { return tl::umulhi(a, b); }>({-1}, {2},
                                                                                         {1});
}

TEST_CASE("conversions round f16 and bf16 to nearest even") {
  using tritium::bfloat16;
  using tritium::half;
  auto f16 = [](float f) { return half(f); };
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even one (1).
  std::vector<float> in{1.f + std::ldexp(1.f, -11),
                        1.f + 3 * std::ldexp(1.f, -11),
                        65504.f,
                        65520.f,
                        -65520.f,
                        kNaN,
                        std::ldexp(1.f, -25),
                        1e-8f};
  std::vector<half> out{f16(1.f),     f16(1.f + std::ldexp(1.f, -9)),
                        f16(65504.f), f16(kInf),
                        f16(-kInf),   f16(kNaN),
                        f16(0.f),     f16(0.f)};
  check_map<float, half, [](auto x) { return x.template to<half>(); }>(in, out);
  CHECK(out[1].bits == 0x3c02);
  CHECK(float(out[3]) == kInf);
  // bf16 keeps 8 bits of mantissa: 1 + 2^-8 is halfway.
  check_map<float, bfloat16, [](auto x) { return tl::cast<bfloat16>(x); }>(
      {1.f + std::ldexp(1.f, -8), 1.f + 3 * std::ldexp(1.f, -8), 3.4e38f, kNaN},
      {bfloat16(1.f), bfloat16(1.f + std::ldexp(1.f, -6)), bfloat16(kInf), bfloat16(kNaN)});
  // Widening is exact; f16 -> bf16 rounds (via f32).
  check_map<half, float, [](auto x) { return x.template to<float>(); }>({f16(0.1f)},
                                                                        {float(f16(0.1f))});
  check_map<half, bfloat16, [](auto x) { return x.template to<bfloat16>(); }>(
      {f16(1.f + std::ldexp(1.f, -10))}, {bfloat16(1.f)});
  check_map<double, float, [](auto x) { return x.template to<float>(); }>(
      {1.0 + std::ldexp(1.0, -24)}, {1.f});
}

TEST_CASE("conversions between integers and floats") {
  // float -> int truncates toward zero; out-of-range saturates and NaN gives 0 (the
  // interpreter's rule, which is what NVIDIA's cvt.rzi does).
  check_map<float, int32_t, [](auto x) { return x.template to<int32_t>(); }>(
      {-2.7f, 2.7f, 3e9f, -3e9f, kNaN}, {-2, 2, 2147483647, -2147483647 - 1, 0});
  check_map<float, uint8_t, [](auto x) { return x.template to<uint8_t>(); }>({300.f, -5.f, 7.9f},
                                                                             {255, 0, 7});
  // Narrow and wide destinations saturate the same way (quantization relies on it).
  check_map<float, int8_t, [](auto x) { return x.template to<int8_t>(); }>(
      {300.f, -300.f, -2.7f, kNaN, 127.9f, -kInf}, {127, -128, -2, 0, 127, -128});
  check_map<float, uint16_t, [](auto x) { return x.template to<uint16_t>(); }>(
      {70000.f, -1.f, kNaN, 65535.5f}, {65535, 0, 0, 65535});
  check_map<double, int64_t, [](auto x) { return x.template to<int64_t>(); }>(
      {1e300, -1e300, -7.9},
      {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -7});
  check_map<float, uint32_t, [](auto x) { return x.template to<uint32_t>(); }>(
      {5e9f, -3.f, kInf}, {0xffffffffu, 0, 0xffffffffu});
  // int -> int wraps (truncates bits) or extends by the source's signedness.
  check_map<int32_t, int8_t, [](auto x) { return x.template to<int8_t>(); }>({300, -129},
                                                                             {44, 127});
  check_map<int8_t, int32_t, [](auto x) { return x.template to<int32_t>(); }>({-1}, {-1});
  check_map<uint8_t, int32_t, [](auto x) { return x.template to<int32_t>(); }>({255}, {255});
  check_map<int32_t, uint32_t, [](auto x) { return x.template to<uint32_t>(); }>({-1},
                                                                                 {0xffffffffu});
  check_map<int32_t, float, [](auto x) { return x.template to<float>(); }>({-7, 16777217},
                                                                           {-7.f, 16777216.f});
  check_map<uint32_t, float, [](auto x) { return x.template to<float>(); }>({0xffffffffu},
                                                                            {4294967296.f});
  // To i1: nonzero is true.
  check_map<float, int8_t, [](auto x) { return x.template to<bool>().template to<int8_t>(); }>(
      {0.f, -0.f, 0.5f, kNaN}, {0, 0, 1, 1});
  check_map<int32_t, int8_t, [](auto x) { return x.template to<bool>().template to<int8_t>(); }>(
      {0, 2, -1}, {0, 1, 1});
  check_map<int8_t, int32_t, [](auto x) { return (x != 0).template to<int32_t>(); }>({3, 0},
                                                                                     {1, 0});
}

TEST_CASE("libdevice round: half away from zero, exact at every magnitude") {
  // 0.49999997 is the largest float below 0.5 (x + 0.5 rounds up to 1 in round-to-nearest);
  // 2^23 + 1 is odd, past where floats have fractions.
  check_map<float, float, [](auto x) { return tl::libdevice::round(x); }>(
      {0.5f, -0.5f, 2.5f, -2.5f, 0.49999997f, 8388609.f, -1.5f, 1e30f, kNaN, -0.2f, kInf},
      {1.f, -1.f, 3.f, -3.f, 0.f, 8388609.f, -2.f, 1e30f, kNaN, -0.f, kInf});
}

TEST_CASE("bitcast reinterprets the bits") {
  check_map<float, int32_t, [](auto x) { return tl::bitcast<int32_t>(x); }>(
      {1.f, -0.f}, {0x3f800000, std::numeric_limits<int32_t>::min()});
  check_map<int32_t, float, [](auto x) { return tl::bitcast<float>(x); }>({0x40490fdb},
                                                                          {3.14159274f});
  check_map<tritium::half, int16_t, [](auto x) { return tl::bitcast<int16_t>(x); }>(
      {tritium::half(1.f)}, {0x3c00});
  check_map<tritium::bfloat16, uint16_t, [](auto x) { return tl::bitcast<uint16_t>(x); }>(
      {tritium::bfloat16(-2.f)}, {0xc000});
}

namespace {

template <class T>
std::string ir_name() {
  return tritium::ir::to_string(tl::dtype_of<T>());
}

template <class From, class To>
void convert_kernel(tl::ptr<From> x, tl::ptr<To> y) {
  auto offs = tl::arange(0, 8);
  tl::store(y + offs, tl::load(x + offs).template to<To>());
}

// Small integers are exact in every numeric type, so every conversion between two such types
// must give the same number back; to and from bool, nonzero is 1.
template <class From, class To>
void check_pair(Device dev) {
  constexpr bool from_bool = std::is_same_v<From, bool>, to_bool = std::is_same_v<To, bool>;
  constexpr bool both_signed = !std::is_unsigned_v<From> && !std::is_unsigned_v<To>;
  std::vector<int> vals{0, 1, 2, 7, 100, 3, 64, 1};
  if (both_signed && !from_bool && !to_bool)
    vals[5] = -3;
  // bool has no host vector with data(): pass bools as uint8_t bit patterns.
  using HostFrom = std::conditional_t<from_bool, uint8_t, From>;
  using HostTo = std::conditional_t<to_bool, uint8_t, To>;
  std::vector<HostFrom> in;
  for (int v : vals)
    in.push_back(from_bool ? HostFrom(v != 0) : HostFrom(v));
  auto k = tritium::jit(&convert_kernel<std::conditional_t<from_bool, bool, From>,
                                        std::conditional_t<to_bool, bool, To>>,
                        "convert_kernel");
  auto x = dev.alloc<std::conditional_t<from_bool, bool, From>>(8);
  auto y = dev.alloc<std::conditional_t<to_bool, bool, To>>(8);
  dev.backend().copy_to_device(x.data(), in.data(), 8 * sizeof(HostFrom));
  k[{1}](x, y);
  std::vector<HostTo> out(8);
  dev.backend().copy_to_host(out.data(), y.data(), 8 * sizeof(HostTo));
  for (int i = 0; i < 8; ++i) {
    double src = from_bool ? double(vals[i] != 0) : double(vals[i]);
    double expect = to_bool ? double(src != 0) : src;
    double got = lang_test::as_double(out[i]);
    CHECK_MESSAGE(got == expect,
                  ir_name<From>() << " -> " << ir_name<To>() << " of " << src << ": got " << got);
  }
}

template <class From, class... To>
void check_from(Device dev) {
  (check_pair<From, To>(dev), ...);
}

} // namespace

TEST_CASE("conversions between every pair of element types keep small integers exact") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto all = [&]<class... T>() { (check_from<T, T...>(dev), ...); };
    all.template operator()<bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                            uint64_t, tritium::half, tritium::bfloat16, float, double>();
  }
}

namespace {

// eq[i] = (cols[i] == t), ne[i] = (cols[i] != t) for a narrow index tile cols = arange - 8 and a
// 64-bit scalar t, one program per t. The tile is widened for the comparison (Triton's
// promotion): a t past the tile's range whose low bits equal a column matches none (as a
// compiler that narrowed the comparison without a range check would get wrong).
template <class Narrow>
void narrow_eq_kernel(tl::ptr<int64_t> ts, tl::ptr<int8_t> eq, tl::ptr<int8_t> ne) {
  auto p = tl::program_id(0);
  auto t = tl::load(ts + p);
  auto cols = (tl::arange(0, 16) - 8).template to<Narrow>();
  tl::store(eq + p * 16 + tl::arange(0, 16), (cols == t).template to<int8_t>());
  tl::store(ne + p * 16 + tl::arange(0, 16), (cols != t).template to<int8_t>());
}

template <class Narrow>
void check_narrow_eq() {
  const int64_t big = int64_t(1) << 32;
  const std::vector<int64_t> ts = {
      3, -5, big + 3, -big - 5, big - 3, int64_t(1) << 31, INT64_MIN, INT64_MAX};
  const int n = int(ts.size());
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(&narrow_eq_kernel<Narrow>, "narrow_eq_kernel");
    auto bt = dev.from_host(ts);
    auto eq = dev.alloc<int8_t>(size_t(n) * 16), ne = dev.alloc<int8_t>(size_t(n) * 16);
    launch(k, {n}, bt, eq, ne);
    auto he = eq.to_host(), hn = ne.to_host();
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 16; ++i) {
        CAPTURE(ts[size_t(p)]);
        CAPTURE(i);
        // The column as the kernel holds it (-8 wraps in an unsigned tile), widened as Triton
        // promotes it for the comparison.
        const int64_t col = int64_t(static_cast<Narrow>(i - 8));
        CHECK(he[size_t(p) * 16 + size_t(i)] == (col == ts[size_t(p)]));
        CHECK(hn[size_t(p) * 16 + size_t(i)] == (col != ts[size_t(p)]));
      }
  }
}

} // namespace

TEST_CASE("a narrow index tile compared with a 64-bit scalar, on every device") {
  check_narrow_eq<int32_t>();
  check_narrow_eq<uint32_t>();
  check_narrow_eq<int16_t>();
}
