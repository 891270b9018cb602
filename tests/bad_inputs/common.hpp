// Shared by the bad-input tests: a small kernel, the devices, and a check that an expression
// throws tritium::Error whose message holds every expected part.
#pragma once

#include <support/devices.hpp>
#include <tritium/tritium.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace bad_inputs {

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;
using tritium::Error;

inline void add_one(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + 1.0f, mask);
}

// The devices whose memory is host memory and whose kernels are compiled in process.
inline std::vector<Device> host_devices() {
  std::vector<Device> out;
  for (const char* name : {"interpreter", "cpu", "gpu-emulator"})
    try {
      out.push_back(tritium::device(name));
    } catch (const Error&) {
    }
  return out;
}

// Every device usable here: the test devices and the GPU emulator.
inline std::vector<Device> all_devices() {
  std::vector<Device> out = tritium::testing::test_devices();
  try {
    Device e = tritium::device("gpu-emulator");
    bool listed = false;
    for (const Device& d : out)
      listed = listed || d == e;
    if (!listed)
      out.push_back(e);
  } catch (const Error&) {
  }
  return out;
}

// A buffer of n elements in the middle of a larger allocation, between two guards of `guard`
// elements holding `guard_fill` (the buffer holds `fill`), so that an access outside it would
// land in memory the test can read back.
template <class T>
struct Guarded {
  Buffer<T> whole, middle;
  size_t n, guard;
  T guard_fill;
  Guarded(Device d, size_t n_, size_t guard_, T guard_fill_, T fill)
      : n(n_), guard(guard_), guard_fill(guard_fill_) {
    whole = d.alloc<T>(n + 2 * guard);
    std::vector<T> h(n + 2 * guard, fill);
    for (size_t i = 0; i < guard; ++i)
      h[i] = h[guard + n + i] = guard_fill;
    whole.copy_from_host(h);
    middle = Buffer<T>::adopt(d, whole.data() + guard, n);
  }
  Guarded(Device d, size_t n_, size_t guard_, T fill) : Guarded(d, n_, guard_, fill, fill) {}
  // Whether every guard element still holds its value.
  bool guards_hold() const {
    std::vector<T> h = whole.to_host();
    for (size_t i = 0; i < guard; ++i)
      if (!(h[i] == guard_fill) || !(h[guard + n + i] == guard_fill))
        return false;
    return true;
  }
};

// The message of the tritium::Error `f` throws ("" and a failed check when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    // TRITIUM_SHOW_ERRORS=1 prints every message, e.g. to check docs/errors.md against them.
    if (const char* show = std::getenv("TRITIUM_SHOW_ERRORS"); show && *show)
      std::printf("ERROR-MESSAGE %s\n", e.what());
    return e.what();
  }
  FAIL_CHECK("no tritium::Error was thrown");
  return "";
}

// Checks that `f` throws a tritium::Error whose message contains every one of `parts`.
#define CHECK_ERROR(expr, ...)                                                                     \
  do {                                                                                             \
    std::string message_ = ::bad_inputs::error_of([&] { (void)(expr); });                          \
    INFO("message: " << message_);                                                                 \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__})               \
      CHECK_MESSAGE(message_.find(part_) != std::string::npos, "missing: " << part_);              \
  } while (0)

} // namespace bad_inputs
