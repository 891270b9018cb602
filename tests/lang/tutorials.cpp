// What the tutorials 06-11 (Triton's 04-09) needed from the language: C math functions by name
// (tl::extern_elementwise, tl::libdevice), integers turned back into pointers
// (x.to<tl::ptr<T>>()), tl::where of two literals, and the device's compute units.
#include "common.hpp"

#include <cstdint>

using namespace lang_test;

namespace {

void extern_kernel(tl::ptr<float> x, tl::ptr<float> y) {
  auto offs = tl::arange(0, 16);
  auto v = tl::load(x + offs);
  tl::store(y + offs, tl::libdevice::asin(v));
  tl::store(y + 16 + offs, tl::extern_elementwise("atan2", v, 0.5f));
  tl::store(y + 32 + offs, tl::extern_elementwise("cbrt", v.to<tl::f16>()).to<float>());
  tl::store(y + 48 + offs, tl::extern_elementwise("log1p", v.to<double>()).to<float>());
}

// Reads the address stored at table[i] and copies 8 floats from there to out.
void pointer_table_kernel(tl::ptr<int64_t> table, tl::ptr<float> out) {
  auto offs = tl::arange(0, 8);
  for (int i = 0; i < 2; ++i) {
    auto p = tl::load(table + i).to<tl::ptr<float>>();
    tl::store(out + i * 8 + offs, tl::load(p + offs));
  }
}

void where_literals_kernel(tl::ptr<float> x, tl::ptr<float> y) {
  auto offs = tl::arange(0, 8);
  auto v = tl::load(x + offs);
  tl::store(y + offs, v + tl::where(offs < 3, 0, -1.0e6));
}

} // namespace

TEST_CASE("extern_elementwise calls the C math library on every device") {
  std::vector<float> in;
  for (int i = 0; i < 16; ++i)
    in.push_back(-0.95f + 0.12f * i);
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(extern_kernel, "extern_kernel");
    auto x = dev.from_host(in);
    auto y = dev.alloc<float>(64);
    std::string ir = launch(k, {1}, x, y);
    CHECK(ir.find("extern_unary") != std::string::npos);
    CHECK(ir.find("extern_binary") != std::string::npos);
    auto r = y.to_host();
    for (int i = 0; i < 16; ++i) {
      CAPTURE(i);
      double v = in[i];
      CHECK(near(r[i], std::asin(v), 1e-6, 1e-7));
      CHECK(near(r[16 + i], std::atan2(v, 0.5), 1e-6, 1e-7));
      // cbrt of an f16 value is computed in f32 and rounded to f16.
      CHECK(near(r[32 + i], std::cbrt(double(float(tritium::half(in[i])))), 1e-3, 1e-3));
      CHECK(near(r[48 + i], std::log1p(v), 1e-6, 1e-7));
    }
  }
}

TEST_CASE("extern_elementwise names a function it knows, with its number of arguments") {
  Device dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(4);
  auto unknown = tritium::jit(
      +[](tl::ptr<float> p) { tl::store(p, tl::extern_elementwise("system", tl::load(p))); },
      "unknown_fn");
  std::string m = trace_error(unknown, x);
  CHECK_MESSAGE(m.find("'system' is none of the C math functions") != std::string::npos, m);
  CHECK_MESSAGE(m.find("tutorials.cpp") != std::string::npos, m);
  auto arity = tritium::jit(
      +[](tl::ptr<float> p) {
        tl::store(p, tl::extern_elementwise("asin", tl::load(p), tl::load(p)));
      },
      "arity_fn");
  m = trace_error(arity, x);
  CHECK_MESSAGE(m.find("'asin' takes 1 argument, got 2") != std::string::npos, m);
}

TEST_CASE("an int64 loaded from memory becomes a pointer with .to<tl::ptr<T>>()") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto a = dev.from_host(iota<float>(8, 100));
    auto b = dev.from_host(iota<float>(8, 200));
    std::vector<int64_t> addrs{int64_t(reinterpret_cast<uintptr_t>(a.data())),
                               int64_t(reinterpret_cast<uintptr_t>(b.data()))};
    auto table = dev.from_host(addrs);
    auto out = dev.alloc<float>(16);
    auto k = tritium::jit(pointer_table_kernel, "pointer_table_kernel");
    launch(k, {1}, table, out);
    auto r = out.to_host();
    for (int i = 0; i < 8; ++i) {
      CHECK(r[i] == 100 + i);
      CHECK(r[8 + i] == 200 + i);
    }
  }
}

TEST_CASE("tl::where of two literals is f32 when one is floating-point") {
  static_assert(std::is_same_v<decltype(tl::where(std::declval<tl::i1>(), 0, -1.0e6)), tl::f32>);
  static_assert(std::is_same_v<decltype(tl::where(std::declval<tl::i1>(), 1, 2)), tl::i32>);
  expect_io(where_literals_kernel, iota<float>(8),
            std::vector<float>{0, 1, 2, 3 - 1e6f, 4 - 1e6f, 5 - 1e6f, 6 - 1e6f, 7 - 1e6f});
}

TEST_CASE("num_compute_units: at least one program runs at a time") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    CHECK(dev.num_compute_units() >= 1);
  }
  CHECK(tritium::testing::interpreter().num_compute_units() == 1);
}
