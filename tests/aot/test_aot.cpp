// Ahead-of-time kernels (tritium_add_kernels): the generated launchers pick the specialization
// whose assumptions the arguments meet, run it on the CPU (and on a GPU where there is one),
// pass every parameter kind intact, and hand what was not built to the JIT.
#include "test_aot_kernels.hpp"

#include <support/devices.hpp>
#include <tritium/tritium.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace aot = tritium::aot;
using tritium::Error;

namespace {

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = 0.5f * static_cast<float>(i % 97) - 3.f;
  return v;
}

// The devices the AOT runtime runs itself: the CPU, and each GPU present.
std::vector<std::string> aot_devices() {
  std::vector<std::string> out{"cpu"};
  for (const char* gpu : {"cuda", "hip"})
    try {
      tritium::device(gpu);
      out.push_back(std::string(gpu) + ":0");
    } catch (const Error&) {
    }
  return out;
}

} // namespace

TEST_CASE("aot: the first specialization whose assumptions hold runs, on every device") {
  for (const std::string& dev : aot_devices()) {
    CAPTURE(dev);
    auto d = tritium::device(dev);
    for (int n : {4096, 1000, 1}) {
      CAPTURE(n);
      auto hx = iota(n);
      auto x = d.from_host(hx);
      auto out = d.alloc<float>(n);
      std::string_view ran = test_aot_kernels::scale_kernel(
          {.grid = {(n + 255) / 256}, .device = dev}, x.data(), out.data(), 1.5f, n, 256);
      d.synchronize();
      // 4096 meets %16 (buffers are 16-byte aligned); 1000 meets nothing; 1 meets ==1.
      const char* expect = n == 4096 ? "scale_kernel(%16, %16, _, %16, 256)"
                           : n == 1  ? "scale_kernel(_, _, _, ==1, 256)"
                                     : "scale_kernel(_, _, _, _, 256)";
      CHECK(std::string(ran).rfind(expect, 0) == 0);
      auto got = out.to_host();
      int bad = 0;
      for (int i = 0; i < n; ++i)
        bad += got[i] != 1.5f * hx[i];
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("aot: i64, f64, bool and f16 parameters arrive intact over a 2-D grid") {
  for (const std::string& dev : aot_devices()) {
    CAPTURE(dev);
    auto d = tritium::device(dev);
    const int64_t n = 1000;
    auto out = d.alloc<tritium::half>(n);
    for (bool negate : {false, true}) {
      test_aot_kernels::fill_kernel({.grid = {4, 2}, .device = dev}, out.data(), 2.25, n, negate,
                                    128);
      d.synchronize();
      auto got = out.to_host();
      int bad = 0;
      for (int64_t i = 0; i < n; ++i)
        bad += static_cast<float>(got[i]) != (negate ? -2.25f : 2.25f);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("aot: fp8 pointers and an fp8 scalar parameter arrive as the JIT passes them") {
  for (const std::string& dev : aot_devices()) {
    CAPTURE(dev);
    auto d = tritium::device(dev);
    const int n = 700;
    std::vector<float> hx(n);
    for (int i = 0; i < n; ++i)
      hx[i] = 0.37f * static_cast<float>(i - 350);
    auto x = d.from_host(hx);
    auto q = d.alloc<tritium::float8e4nv>(n);
    // 1.3 arrives rounded to e4m3 (1.25), as the JIT packs an fp8 argument.
    std::string_view ran = test_aot_kernels::fp8_scale_kernel(
        {.grid = {(n + 255) / 256}, .device = dev}, x.data(), q.data(), 1.3f, n, 256);
    CHECK(ran.starts_with("fp8_scale_kernel(_, _, _, _, 256)")); // built, not the JIT
    d.synchronize();
    auto got = q.to_host();
    int bad = 0;
    for (int i = 0; i < n; ++i)
      bad += got[i].bits != tritium::float8e4nv(hx[i] * 1.25f).bits;
    CHECK(bad == 0);
  }
}

TEST_CASE("aot: a specialization not built goes to the JIT, on any device") {
  auto devices = tritium::testing::test_devices();
  try {
    devices.push_back(tritium::device("gpu-emulator"));
  } catch (const Error&) {
  }
  for (const tritium::Device& d : devices) {
    CAPTURE(d.str());
    const int n = 300;
    auto hx = iota(n);
    auto x = d.from_host(hx);
    auto out = d.alloc<float>(n);
    // BLOCK = 64 was not built anywhere; interpreter and gpu-emulator have no built binaries.
    for (int block : {64, 256}) {
      std::string_view ran =
          test_aot_kernels::scale_kernel({.grid = {(n + block - 1) / block}, .device = d.str()},
                                         x.data(), out.data(), -2.f, n, block);
      d.synchronize();
      bool built_here =
          block == 256 && (d.name() == "cpu" || d.name() == "cuda" || d.name() == "hip");
      CHECK((ran == "jit") == !built_here);
      auto got = out.to_host();
      int bad = 0;
      for (int i = 0; i < n; ++i)
        bad += got[i] != -2.f * hx[i];
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("aot: a stream of the device orders the launch; bad launches are errors") {
  auto d = tritium::device("cpu");
  auto x = d.from_host(iota(64));
  auto out = d.alloc<float>(64);
  // The cpu device has no streams.
  int dummy = 0;
  CHECK_THROWS_WITH_AS(
      test_aot_kernels::scale_kernel({.grid = {1}, .stream = &dummy, .device = "cpu"}, x.data(),
                                     out.data(), 1.f, 64, 256),
      doctest::Contains("the cpu device has no streams"), Error);
  CHECK_THROWS_WITH_AS(test_aot_kernels::scale_kernel({.grid = {-1}, .device = "cpu"}, x.data(),
                                                      out.data(), 1.f, 64, 256),
                       doctest::Contains("kernel 'scale_kernel': launch grid (-1, 1, 1)"), Error);
  CHECK_THROWS_WITH_AS(test_aot_kernels::scale_kernel({.grid = {1}, .device = "cpu:2"}, x.data(),
                                                      out.data(), 1.f, 64, 256),
                       doctest::Contains("there is one cpu device"), Error);
  CHECK_THROWS_WITH_AS(test_aot_kernels::scale_kernel({.grid = {1}, .device = "cuda:x"}, x.data(),
                                                      out.data(), 1.f, 64, 256),
                       doctest::Contains("'x' is not a device index"), Error);
  // An empty grid launches nothing.
  CHECK_NOTHROW(test_aot_kernels::scale_kernel({.grid = {0}, .device = "cpu"}, x.data(), out.data(),
                                               1.f, 64, 256));
}
