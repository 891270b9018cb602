// Bad buffers: too large for memory, sizes that overflow, empty (moved-from or default)
// buffers passed to kernels, buffers of two devices in one launch, mismatched copies.
#include "common.hpp"

#include <cstdint>
#include <utility>

namespace bad_inputs {
namespace {

TEST_CASE("bad input: allocating more memory than a device has") {
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    // 2^50 bytes: beyond any machine's memory and the address space malloc can map.
    CHECK_ERROR(d.alloc<float>(size_t{1} << 48), std::string(d.name()).c_str(), "cannot allocate",
                "1125899906842624 bytes");
    // The process is intact: the next allocation works.
    auto b = d.from_host(std::vector<float>{1, 2, 3});
    CHECK(b.to_host()[2] == 3);
  }
}

TEST_CASE("bad input: a buffer size whose byte count overflows") {
  Device d = tritium::device("interpreter");
  CHECK_ERROR(d.alloc<double>(size_t{1} << 62), "4611686018427387904 elements of 8 bytes",
              "do not fit in memory");
  CHECK_ERROR(d.alloc<float>(SIZE_MAX), "elements of 4 bytes", "do not fit in memory");
}

TEST_CASE("bad input: copying a host array of another size into a buffer") {
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto b = d.alloc<int32_t>(3);
    CHECK_ERROR(b.copy_from_host(std::vector<int32_t>(5)),
                "Buffer::copy_from_host: 5 elements into a buffer of 3");
  }
}

TEST_CASE("bad input: a moved-from buffer as a kernel argument") {
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.from_host(std::vector<float>(16, 1.0f));
    auto out = d.alloc<float>(16);
    Buffer<float> taken = std::move(x);
    CHECK(x.size() == 0);
    CHECK_ERROR((k[{1}](x, out, 16, 16)), "kernel 'add_one'", "argument 0",
                "empty tritium::Buffer");
    k[{1}](taken, out, 16, 16); // the buffer that took the memory works
    CHECK(out.to_host()[15] == 2.0f);
  }
}

TEST_CASE("bad input: a default-constructed buffer (a null pointer) as a kernel argument") {
  auto k = tritium::jit(add_one, "add_one");
  Buffer<float> none;
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(16);
    CHECK_ERROR((k[{1}](x, none, 16, 16)), "kernel 'add_one'", "argument 1",
                "empty tritium::Buffer");
  }
}

TEST_CASE("bad input: buffers of two devices in one launch") {
  auto devs = all_devices();
  REQUIRE(devs.size() >= 2);
  auto k = tritium::jit(add_one, "add_one");
  auto x = devs[0].alloc<float>(16);
  auto out = devs[1].alloc<float>(16);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "kernel 'add_one': argument 1 is a buffer on device '",
              (std::string(devs[1].name()) + "' but an earlier buffer argument is on '" +
               std::string(devs[0].name()) + "'"));
}

TEST_CASE("bad input: an empty buffer is fine where nothing is accessed") {
  // Not an error: a zero-length buffer of a device, with every lane masked off (n = 0).
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(0), out = d.alloc<float>(0);
    k[{1}](x, out, 0, 16);
    d.synchronize();
    CHECK(out.to_host().empty());
  }
}

} // namespace
} // namespace bad_inputs
