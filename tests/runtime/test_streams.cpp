// Devices by index, streams (created, wrapped from a native handle) and events, on every
// device of the test list; a GPU adds what only it can show (cross-stream ordering, device time).
#include <doctest/doctest.h>

#include <support/devices.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Error;

namespace {

void add_one(tl::ptr<float> x, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(x + offs, tl::load(x + offs, offs < n) + 1.f, offs < n);
}

TEST_CASE("devices by index: name:N, the bare name is index 0, errors say what exists") {
  auto cpu = tritium::device("cpu");
  CHECK(tritium::device("cpu:0") == cpu);
  CHECK(cpu.index() == 0);
  CHECK(cpu.str() == "cpu");
  CHECK_THROWS_WITH_AS(
      tritium::device("cpu:1"),
      doctest::Contains("device 'cpu:1' is not available: there is one cpu device"), Error);
  CHECK_THROWS_WITH_AS(tritium::device("interpreter:2"),
                       doctest::Contains("there is one interpreter device"), Error);
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:1x"})
    CHECK_THROWS_WITH_AS(tritium::device(bad), doctest::Contains("is not a device index"), Error);
  CHECK_THROWS_WITH_AS(tritium::device("tpu:0"), doctest::Contains("unknown device 'tpu:0'"),
                       Error);
  // A GPU index beyond those present names how many there are (or why there are none).
  try {
    tritium::device("cuda:0");
    CHECK_THROWS_WITH_AS(tritium::device("cuda:64"), doctest::Contains("cuda:64: this machine has"),
                         Error);
  } catch (const Error& e) {
    MESSAGE("no cuda device: " << std::string(e.what()));
    CHECK_THROWS_WITH_AS(tritium::device("cuda:64"), doctest::Contains("is not available"), Error);
  }
  ::setenv("TRITIUM_CPU_DEVICE", "zero", 1);
  CHECK_THROWS_WITH_AS(tritium::device("cpu"),
                       doctest::Contains("TRITIUM_CPU_DEVICE=zero is not a device index"), Error);
  ::unsetenv("TRITIUM_CPU_DEVICE");
}

TEST_CASE("launches on a stream; events order and time them; waits see the results") {
  auto k = tritium::jit(add_one, "add_one");
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.str());
    const int n = 5000;
    auto x = dev.from_host(std::vector<float>(n, 0.f));
    tritium::Stream s = dev.create_stream();
    CHECK(s.device() == dev);
    tritium::Event start = dev.create_event(), end = dev.create_event();
    start.record(s);
    for (int i = 0; i < 3; ++i)
      k[{tritium::cdiv(n, 1024)}].on(s)(x, n, 1024);
    end.record(s);
    end.synchronize();
    CHECK(end.done());
    CHECK(end.elapsed_ms_since(start) >= 0);
    // The device's own stream waits for the other one's event, then adds once more.
    dev.stream().wait(end);
    k[{tritium::cdiv(n, 1024)}](x, n, 1024);
    auto got = x.to_host();
    CHECK(got.front() == 4.f);
    CHECK(got.back() == 4.f);
    // The default stream as a Stream, and the launch overload that takes one.
    k.launch(dev.stream(), {tritium::cdiv(n, 1024)}, x, n, 1024);
    s.synchronize();
    dev.synchronize();
    CHECK(x.to_host()[17] == 5.f);
  }
}

TEST_CASE("stream and event misuse is an error naming the devices") {
  auto cpu = tritium::device("cpu");
  auto interp = tritium::device("interpreter");
  auto k = tritium::jit(add_one, "add_one");
  auto x = cpu.from_host(std::vector<float>(8, 0.f));
  tritium::Stream other = interp.create_stream();
  CHECK_THROWS_WITH_AS(k[{1}].on(other)(x, 8, 8),
                       doctest::Contains("argument 0 is a buffer on device 'cpu' but the launch's "
                                         "stream belongs to 'interpreter'"),
                       Error);
  int native = 0;
  CHECK_THROWS_WITH_AS(cpu.wrap_stream(&native), doctest::Contains("has no native streams"), Error);
  tritium::Event e;
  CHECK_THROWS_WITH_AS(e.record(), doctest::Contains("this event handle is empty"), Error);
  tritium::Event ec = cpu.create_event(), ei = interp.create_event();
  ec.record();
  ei.record();
  CHECK_THROWS_WITH_AS(ec.elapsed_ms_since(ei),
                       doctest::Contains("event of device 'cpu' against device 'interpreter'"),
                       Error);
  CHECK_THROWS_WITH_AS(other.wait(ec), doctest::Contains("cannot wait for an event of device"),
                       Error);
}

// On a GPU: a second stream's work waits for an event of the first, and device time is real.
TEST_CASE("gpu: streams of one device overlap only where events allow") {
  bool any = false;
  for (auto dev : tritium::testing::test_devices()) {
    if (dev.backend().host_memory())
      continue;
    any = true;
    CAPTURE(dev.str());
    auto k = tritium::jit(add_one, "add_one");
    const int n = 1 << 24;
    auto x = dev.from_host(std::vector<float>(n, 0.f));
    tritium::Stream a = dev.create_stream(), b = dev.create_stream();
    CHECK(a.native_handle() != nullptr);
    CHECK(a.native_handle() != b.native_handle());
    tritium::Event t0 = dev.create_event(), t1 = dev.create_event();
    t0.record(a);
    for (int i = 0; i < 20; ++i)
      k[{tritium::cdiv(n, 1024)}].on(a)(x, n, 1024);
    t1.record(a);
    b.wait(t1);
    k[{tritium::cdiv(n, 1024)}].on(b)(x, n, 1024);
    b.synchronize();
    auto got = x.to_host();
    CHECK(got[0] == 21.f);
    CHECK(got[n - 1] == 21.f);
    double ms = t1.elapsed_ms_since(t0);
    MESSAGE(dev.str() << ": 20 launches over 2^24 floats in " << ms << " ms of device time");
    CHECK(ms > 0);
    // A stream created elsewhere (here: by tritium, handed over as a raw handle) works alike.
    tritium::Stream wrapped = dev.wrap_stream(b.native_handle());
    k[{tritium::cdiv(n, 1024)}].on(wrapped)(x, n, 1024);
    wrapped.synchronize();
    CHECK(x.to_host()[5] == 22.f);
  }
  if (!any)
    MESSAGE("skipped: no GPU in the test devices");
}

} // namespace
