// Helpers shared by the language tests: run a kernel on every test device, check its IR
// round-trips through the printer and parser, and catch trace-time errors.
#pragma once

#include <support/devices.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/tritium.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;

namespace lang_test {

inline std::vector<Device> devices() {
  return tritium::testing::test_devices();
}

// devices(), and the gpu-emulator (the GPU lowering run on the CPU) unless TRITIUM_TEST_DEVICES
// names the devices: for semantics that must agree on every device family.
inline std::vector<Device> devices_and_emulator() {
  std::vector<Device> out = devices();
  bool have = false;
  for (Device& d : out)
    have |= d.name() == "gpu-emulator";
  if (!have && !std::getenv("TRITIUM_TEST_DEVICES"))
    out.push_back(tritium::device("gpu-emulator"));
  return out;
}

// print -> parse -> verify -> print must give back the same text: the IR of every kernel the
// tests trace is also a printer/parser/verifier test.
inline void check_round_trip(const tritium::ir::Function& f) {
  std::string text = tritium::ir::print(f);
  auto parsed = tritium::ir::parse(text);
  tritium::ir::verify(*parsed);
  CHECK_MESSAGE(tritium::ir::print(*parsed) == text, "IR does not round-trip:\n" << text);
}

// Traces the kernel for these arguments, checks its IR, launches it on `grid`, and returns
// the IR text (for tests that look at attributes).
template <class K, class... A>
std::string launch(K& kernel, tritium::LaunchGrid grid, A&&... args) {
  auto f = kernel.trace(args...);
  check_round_trip(*f);
  kernel[grid](args...);
  return tritium::ir::print(*f);
}

// The message of the tritium::Error that tracing the kernel throws, or "" when none.
template <class K, class... A>
std::string trace_error(K& kernel, A&&... args) {
  try {
    kernel.trace(args...);
  } catch (const tritium::Error& e) {
    return e.what();
  }
  return "";
}

inline bool same_float(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}
inline bool near(double a, double b, double rel = 1e-6, double abs_tol = 1e-6) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= abs_tol + rel * std::fabs(b);
}

// Captures what the process writes to stdout while `fn` runs (device_print, static_print).
template <class F>
std::string capture_stdout(F fn) {
  std::fflush(stdout);
  std::FILE* tmp = std::tmpfile();
  int saved = dup(fileno(stdout));
  dup2(fileno(tmp), fileno(stdout));
  try {
    fn();
  } catch (...) {
    std::fflush(stdout);
    dup2(saved, fileno(stdout));
    ::close(saved);
    std::fclose(tmp);
    throw;
  }
  std::fflush(stdout);
  dup2(saved, fileno(stdout));
  ::close(saved);
  std::rewind(tmp);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;)
    out.append(buf, n);
  std::fclose(tmp);
  return out;
}

} // namespace lang_test

namespace lang_test {

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, tritium::half> || std::is_same_v<T, tritium::bfloat16>)
    return static_cast<float>(v);
  else
    return static_cast<double>(v);
}

// Runs fn(x, y) as one program on every test device, with x holding `in`, and compares y with
// `expect` (exactly when rel == 0).
template <class In, class Out>
void expect_io(void (*fn)(tl::ptr<In>, tl::ptr<Out>), const std::vector<In>& in,
               const std::vector<Out>& expect, double rel = 0) {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(fn, "io_kernel");
    auto x = dev.from_host(in);
    auto y = dev.alloc<Out>(expect.size());
    launch(k, {1}, x, y);
    auto got = y.to_host();
    for (size_t i = 0; i < expect.size(); ++i) {
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

// 0, 1, ..., n-1 as T.
template <class T>
std::vector<T> iota(int n, int start = 0) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i)
    v.push_back(static_cast<T>(start + i));
  return v;
}

} // namespace lang_test
