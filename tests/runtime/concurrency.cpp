// Many host threads using tritium at once, on every device (the interpreter, the CPU, the GPU
// emulator, and a GPU where present): first launches racing on one specialization (traced
// and compiled once), different kernels and specializations compiled side by side, buffers
// made and freed while others launch, devices looked up concurrently. The sanitizer build
// runs this program under ThreadSanitizer (tools/sanitize.sh).
#include <doctest/doctest.h>

#include <support/devices.hpp>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;

namespace {

constexpr int kThreads = 8;

// Counts how often each kernel is traced: the body runs once per trace.
std::atomic<int> scale_traces{0};

void scale(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::f32 factor,
           tl::constexpr_<int> BLOCK) {
  ++scale_traces;
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) * factor, mask);
}

void shift(tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + 7, mask);
}

void row_sum(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> N) {
  auto row = tl::program_id(0);
  auto v = tl::load(x + row * N + tl::arange(0, N));
  tl::store(out + row, tl::sum(v, 0));
}

// Every device: the test devices and the GPU emulator.
std::vector<Device> devices() {
  auto out = tritium::testing::test_devices();
  try {
    Device e = tritium::device("gpu-emulator");
    bool listed = false;
    for (const Device& d : out)
      listed = listed || d == e;
    if (!listed)
      out.push_back(e);
  } catch (const tritium::Error&) {
  }
  return out;
}

// Runs body(t) on kThreads threads released together; returns the errors they threw.
template <class F>
std::vector<std::string> together(F body) {
  std::latch start(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool)
    th.join();
  std::vector<std::string> out;
  for (auto& e : errors)
    if (!e.empty())
      out.push_back(e);
  return out;
}

std::vector<float> iota_floats(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = static_cast<float>(i % 97) - 40.0f;
  return v;
}

} // namespace

TEST_CASE("concurrency: first launches racing on one specialization compile it once") {
  for (Device d : devices()) {
    CAPTURE(std::string(d.name()));
    const int n = 1000;
    auto hx = iota_floats(n);
    auto x = d.from_host(hx);
    std::vector<Buffer<float>> outs;
    for (int t = 0; t < kThreads; ++t)
      outs.push_back(d.alloc<float>(n));
    auto k = tritium::jit(scale, "scale");
    scale_traces = 0;
    auto errors = together([&](int t) {
      for (int i = 0; i < 5; ++i)
        k[{tritium::cdiv(n, 256)}](x, outs[t], n, 2.0f + t, 256);
    });
    CHECK_MESSAGE(errors.empty(), (errors.empty() ? "" : errors.front()));
    CHECK(scale_traces == 1);
    CHECK(k.num_compiled() == 1);
    d.synchronize();
    for (int t = 0; t < kThreads; ++t) {
      auto got = outs[t].to_host();
      int bad = 0;
      for (int i = 0; i < n; ++i)
        bad += got[i] != hx[i] * (2.0f + t);
      CHECK_MESSAGE(bad == 0, "thread " << t << ": " << bad << " wrong elements");
    }
  }
}

TEST_CASE("concurrency: threads compile and launch different kernels and specializations") {
  for (Device d : devices()) {
    CAPTURE(std::string(d.name()));
    const int n = 512;
    auto hx = iota_floats(n);
    std::vector<int32_t> hi(n);
    for (int i = 0; i < n; ++i)
      hi[i] = i * 3 - 100;
    auto x = d.from_host(hx);
    auto xi = d.from_host(hi);
    auto ks = tritium::jit(scale, "scale");
    auto ki = tritium::jit(shift, "shift");
    auto kr = tritium::jit(row_sum, "row_sum");
    std::vector<Buffer<float>> outs;
    std::vector<Buffer<int32_t>> outs_i;
    for (int t = 0; t < kThreads; ++t) {
      outs.push_back(d.alloc<float>(n));
      outs_i.push_back(d.alloc<int32_t>(n));
    }
    // Thread t uses kernel t % 3 with a block size of its own: 8 specializations in all.
    const int blocks[] = {32, 64, 128, 256};
    auto errors = together([&](int t) {
      int block = blocks[t % 4];
      switch (t % 3) {
      case 0:
        ks[{tritium::cdiv(n, block)}](x, outs[t], n, 0.5f, block);
        break;
      case 1:
        ki[{tritium::cdiv(n, block)}](xi, outs_i[t], n, block);
        break;
      default:
        kr[{n / block}](x, outs[t], block);
        break;
      }
    });
    CHECK_MESSAGE(errors.empty(), (errors.empty() ? "" : errors.front()));
    d.synchronize();
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      int block = blocks[t % 4];
      int bad = 0;
      if (t % 3 == 0) {
        auto got = outs[t].to_host();
        for (int i = 0; i < n; ++i)
          bad += got[i] != hx[i] * 0.5f;
      } else if (t % 3 == 1) {
        auto got = outs_i[t].to_host();
        for (int i = 0; i < n; ++i)
          bad += got[i] != hi[i] + 7;
      } else {
        auto got = outs[t].to_host();
        for (int r = 0; r < n / block; ++r) {
          float want = 0; // small integers: exact in any order
          for (int c = 0; c < block; ++c)
            want += hx[r * block + c];
          bad += got[r] != want;
        }
      }
      CHECK(bad == 0);
    }
    CHECK(ks.num_compiled() + ki.num_compiled() + kr.num_compiled() == 8);
  }
}

TEST_CASE("concurrency: buffers are made, copied and freed while other threads launch") {
  for (Device d : devices()) {
    CAPTURE(std::string(d.name()));
    auto k = tritium::jit(shift, "shift");
    auto errors = together([&](int t) {
      for (int i = 0; i < 20; ++i) {
        int n = 64 + 32 * ((t + i) % 5);
        std::vector<int32_t> h(n, t * 1000 + i);
        auto x = d.from_host(h);
        auto out = d.alloc<int32_t>(n);
        k[{tritium::cdiv(n, 64)}](x, out, n, 64);
        auto got = out.to_host();
        for (int j = 0; j < n; ++j)
          if (got[j] != t * 1000 + i + 7)
            throw tritium::Error("thread " + std::to_string(t) + ": wrong result");
      }
    });
    CHECK_MESSAGE(errors.empty(), (errors.empty() ? "" : errors.front()));
  }
}

TEST_CASE("concurrency: devices are looked up and listed from many threads") {
  std::vector<const tritium::Backend*> seen(kThreads);
  auto errors = together([&](int t) {
    seen[t] = &tritium::device(t % 2 ? "cpu" : "interpreter").backend();
    (void)tritium::list_devices();
    (void)tritium::default_device();
  });
  CHECK(errors.empty());
  for (int t = 0; t < kThreads; ++t)
    CHECK(seen[t] == &tritium::device(t % 2 ? "cpu" : "interpreter").backend());
}
