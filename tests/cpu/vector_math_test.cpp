// tanh, erf, log2, log1p, sin and cos of f32, f16 and bf16 on the CPU: where the host's vector
// math library has them (glibc's libmvec), the C library's f32 functions, called in vector form
// by vectorized loops, within 4 ulp of the interpreter's correctly rounded double result; where
// it has not, that double result itself. Either way the special values are exact.
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;

namespace {

constexpr int kFunctions = 6;
const std::array<const char*, kFunctions> kNames = {"tanhf",  "erff", "log2f",
                                                    "log1pf", "sinf", "cosf"};

// out[f * n + i] = function f of x[i].
template <class T>
void unary_math_kernel(tl::ptr<T> x, tl::ptr<T> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 1);
  auto o = out + offs;
  tl::store(o, tl::tanh(v), mask);
  tl::store(o + n, tl::erf(v), mask);
  tl::store(o + 2 * n, tl::log2(v), mask);
  tl::store(o + 3 * n, tl::log1p(v), mask);
  tl::store(o + 4 * n, tl::sin(v), mask);
  tl::store(o + 5 * n, tl::cos(v), mask);
}

template <class T>
std::vector<std::vector<T>> run(Device d, const std::vector<T>& xs, const char* name) {
  const int n = static_cast<int>(xs.size()), block = 1024;
  auto x = d.from_host(xs);
  auto out = d.alloc<T>(static_cast<int64_t>(n) * kFunctions);
  tritium::jit(unary_math_kernel<T>, name)[{tritium::cdiv(n, block)}](x, out, n, block);
  std::vector<T> all = out.to_host();
  std::vector<std::vector<T>> r;
  for (int f = 0; f < kFunctions; ++f)
    r.emplace_back(all.begin() + static_cast<int64_t>(f) * n,
                   all.begin() + static_cast<int64_t>(f + 1) * n);
  return r;
}

// Distance in representable values of a float type whose bits are `Bits` (NaNs equal to each
// other only; +0 and -0 one apart, so that a wrong zero sign counts).
template <class Bits>
int64_t ulps(Bits a, Bits b, bool a_nan, bool b_nan) {
  if (a_nan || b_nan)
    return a_nan && b_nan ? 0 : std::numeric_limits<int64_t>::max();
  constexpr Bits sign = Bits{1} << (sizeof(Bits) * 8 - 1);
  auto key = [](Bits v) { // monotonic, -0 just below +0
    return (v & sign) ? -static_cast<int64_t>(v & ~sign) - 1 : static_cast<int64_t>(v);
  };
  return std::llabs(key(a) - key(b));
}
int64_t ulps(float a, float b) {
  return ulps(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b), std::isnan(a), std::isnan(b));
}
int64_t ulps(tritium::half a, tritium::half b) {
  return ulps(a.bits, b.bits, std::isnan(float(a)), std::isnan(float(b)));
}
int64_t ulps(tritium::bfloat16 a, tritium::bfloat16 b) {
  return ulps(a.bits, b.bits, std::isnan(float(a)), std::isnan(float(b)));
}

// Whether the host's vector math library, which the CPU backend loaded to compile, has fn.
bool vector_library_has(const char* fn) {
  return dlsym(RTLD_DEFAULT, (std::string("_ZGVbN4v_") + fn).c_str()) != nullptr;
}

} // namespace

TEST_CASE("cpu: f32 tanh, erf, log2, log1p, sin and cos are within 4 ulp of the interpreter's") {
  const float inf = std::numeric_limits<float>::infinity();
  // The special values first, whose results must be the interpreter's bits: signed zeros,
  // infinities, NaN, the smallest subnormal. Then the powers of two, whose log2 is exact.
  std::vector<float> xs = {0.f,      -0.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                           0x1p-149f};
  const int specials = static_cast<int>(xs.size());
  for (int k = -149; k <= 127; ++k)
    xs.push_back(std::ldexp(1.f, k));
  const int powers_end = static_cast<int>(xs.size());
  // Then every 4099th f32 of either sign, subnormals to the largest.
  for (uint32_t b = 0; b < 0x7f800000u; b += 4099) {
    xs.push_back(std::bit_cast<float>(b));
    xs.push_back(-std::bit_cast<float>(b));
  }
  auto want = run(tritium::device("interpreter"), xs, "unary_math_f32");
  auto got = run(tritium::device("cpu"), xs, "unary_math_f32");
  std::string opt;
  {
    tritium::testing::DumpStages dump("tritium-vector-math-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4096), out = dev.alloc<float>(4096 * kFunctions);
    opt = tritium::jit(unary_math_kernel<float>, "unary_math_f32_stages")
              .compiled(x, out, 4096, 1024)
              .artifact("ll.opt");
  }
  REQUIRE(!opt.empty());
  for (int f = 0; f < kFunctions; ++f) {
    const std::string fn = kNames[f];
    CAPTURE(fn);
    const bool vector = vector_library_has(kNames[f]);
    CAPTURE(vector);
    int64_t max_u = 0, differ = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(xs[i]);
      const int64_t u = ulps(want[f][i], got[f][i]);
      if (static_cast<int>(i) < specials || (fn == "log2f" && static_cast<int>(i) < powers_end))
        CHECK(u == 0);
      max_u = std::max(max_u, u);
      differ += u != 0;
    }
    MESSAGE(fn << ": max " << max_u << " ulp, " << differ << " of " << xs.size() << " differ");
    CHECK(max_u <= 4);
    // In vector form where the library has it (and the results then differ somewhere from
    // the correctly rounded ones); the exact double path everywhere else.
    CHECK((opt.find(std::string("v_") + kNames[f]) != std::string::npos) == vector);
    CHECK((differ > 0) == vector);
  }
}

TEST_CASE("cpu: f16 and bf16 tanh, erf, log2, log1p, sin and cos are within 1 ulp of the "
          "interpreter's") {
  // Every f16 and every bf16: computed in f32 (within 4 ulp), then rounded once more, so a
  // result next to a rounding boundary may land one value away.
  auto check = [](auto zero, const char* name) {
    using T = decltype(zero);
    std::vector<T> xs;
    for (uint32_t b = 0; b < 0x10000u; ++b)
      xs.push_back(T::from_bits(static_cast<uint16_t>(b)));
    auto want = run(tritium::device("interpreter"), xs, name);
    auto got = run(tritium::device("cpu"), xs, name);
    for (int f = 0; f < kFunctions; ++f) {
      const std::string fn = kNames[f];
      CAPTURE(fn);
      int64_t max_u = 0, differ = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const int64_t u = ulps(want[f][i], got[f][i]);
        if (u > 1)
          CAPTURE(float(xs[i]));
        CHECK(u <= 1);
        max_u = std::max(max_u, u);
        differ += u != 0;
      }
      MESSAGE(std::string(name) << " " << fn << ": max " << max_u << " ulp, " << differ
                                << " differ");
    }
  };
  check(tritium::half{}, "unary_math_f16");
  check(tritium::bfloat16{}, "unary_math_bf16");
}
