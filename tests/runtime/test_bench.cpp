// tritium::bench: run counts, cache flushing between timed runs, statistics, errors, and real
// timing on every device.
#include <doctest/doctest.h>

#include <support/devices.hpp>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tl = tritium::tl;
using tritium::BenchOptions;
using tritium::Error;

namespace {

// A device whose clock advances only when the benchmarked function says so, and which counts
// the bytes bench writes to flush its "cache".
struct FakeBackend final : tritium::Backend {
  double clock_ms = 0;
  size_t flush_bytes = 1 << 20;
  size_t bytes_written = 0;
  int fills = 0;
  bool own_fill = true;

  struct Event final : tritium::DeviceEvent {
    FakeBackend* b;
    double at = -1;
    explicit Event(FakeBackend* b) : b(b) {}
    void record(void*) override { at = b->clock_ms; }
    void synchronize() override {}
    bool done() override { return true; }
    double ms_since(const DeviceEvent& s) override { return at - dynamic_cast<const Event&>(s).at; }
  };

  std::string_view name() const override { return "fake"; }
  std::string target() const override { return "fake"; }
  void* alloc(size_t n) override { return ::operator new(n); }
  void free(void* p) override { ::operator delete(p); }
  void copy_to_device(void* d, const void* s, size_t n) override {
    std::memcpy(d, s, n);
    bytes_written += n;
  }
  void copy_to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_device_to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void fill(void* dst, unsigned char byte, size_t n) override {
    ++fills;
    if (own_fill)
      std::memset(dst, byte, n), bytes_written += n;
    else
      Backend::fill(dst, byte, n); // the default: through copy_to_device
  }
  std::unique_ptr<tritium::DeviceEvent> new_event() override {
    return std::make_unique<Event>(this);
  }
  size_t cache_flush_bytes() const override { return flush_bytes; }
  std::unique_ptr<tritium::CompiledKernel> compile(std::shared_ptr<const tritium::ir::Function>,
                                                   const tritium::CompileOptions&) override {
    throw Error("fake: no compiler");
  }
};

void scale_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) * 2.f, mask);
}

} // namespace

TEST_CASE("bench runs the function once, then warmup and reps runs, each timed on its own") {
  FakeBackend fake;
  tritium::Device dev(&fake);
  std::vector<int> runs;
  // Run i takes i ms of device time: timed runs are 4, 5, …, 13 ms.
  auto r =
      tritium::bench(dev,
                     [&](int run) {
                       runs.push_back(run);
                       fake.clock_ms += run;
                     },
                     {.warmup = 3, .reps = 10, .flush_l2 = true, .quantiles = {0.5, 0.25, 1.0}});
  REQUIRE(runs.size() == 14);
  for (int i = 0; i < 14; ++i)
    CHECK(runs[i] == i);
  REQUIRE(r.times_ms.size() == 10);
  CHECK(r.times_ms.front() == 4);
  CHECK(r.times_ms.back() == 13);
  CHECK(r.warmup == 3);
  CHECK(r.min_ms == 4);
  CHECK(r.max_ms == 13);
  CHECK(r.median_ms == doctest::Approx(8.5));
  CHECK(r.mean_ms == doctest::Approx(8.5));
  // torch.quantile's linear interpolation: position 0.25 * 9 = 2.25 between 6 and 7.
  REQUIRE(r.quantiles_ms.size() == 3);
  CHECK(r.quantiles_ms[0] == doctest::Approx(8.5));
  CHECK(r.quantiles_ms[1] == doctest::Approx(6.25));
  CHECK(r.quantiles_ms[2] == doctest::Approx(13));
  CHECK(r.gbps(8.5e6) == doctest::Approx(1.0)); // 8.5 MB in 8.5 ms
  // One flush of the whole buffer before every timed run, none before the others.
  CHECK(fake.fills == 10);
  CHECK(fake.bytes_written == 10 * fake.flush_bytes);
}

TEST_CASE("bench picks warm-up and timed runs from its time budgets, as do_bench") {
  FakeBackend fake;
  tritium::Device dev(&fake);
  int calls = 0;
  auto r = tritium::bench(dev,
                          [&] {
                            ++calls;
                            fake.clock_ms += 2;
                          },
                          {.flush_l2 = false, .warmup_ms = 10, .rep_ms = 40});
  // 1 first call, 5 for the estimate (2 ms each), 10 / 2 warm-up, 40 / 2 timed.
  CHECK(r.warmup == 5);
  CHECK(r.times_ms.size() == 20);
  CHECK(calls == 1 + 5 + 5 + 20);
  // A budget too small for 10 runs still gets 10.
  auto few = tritium::bench(dev, [&] { fake.clock_ms += 2; }, {.flush_l2 = false, .rep_ms = 4});
  CHECK(few.times_ms.size() == 10);
  CHECK(r.median_ms == 2);
  CHECK(fake.fills == 0); // flush_l2 off
}

TEST_CASE("bench's flush goes through copy_to_device where a backend has no fill of its own") {
  FakeBackend fake;
  fake.own_fill = false;
  fake.flush_bytes = (40 << 20) + 3; // more than one chunk of the default fill, and a remainder
  tritium::Device dev(&fake);
  tritium::bench(dev, [] {}, {.warmup = 0, .reps = 2});
  CHECK(fake.fills == 2);
  CHECK(fake.bytes_written == 2 * fake.flush_bytes);
}

TEST_CASE("bench rejects options that make no sense, naming them") {
  FakeBackend fake;
  tritium::Device dev(&fake);
  auto fn = [] {};
  CHECK_THROWS_WITH_AS(tritium::bench(dev, fn, {.reps = 0}), doctest::Contains("reps = 0 >= 1"),
                       Error);
  CHECK_THROWS_WITH_AS(tritium::bench(dev, fn, {.warmup = -2}),
                       doctest::Contains("warmup = -2 must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(tritium::bench(dev, fn, {.quantiles = {0.5, 1.5}}),
                       doctest::Contains("quantile 1.5 is not in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(tritium::bench(dev, fn, {.rep_ms = 0}), doctest::Contains("rep_ms = 0"),
                       Error);
  // An error inside the benchmarked function reaches the caller as it is.
  CHECK_THROWS_WITH_AS(tritium::bench(dev, [] { throw Error("inner"); }), "inner", Error);
}

TEST_CASE("bench_interleaved times several functions round by round, each on its own") {
  FakeBackend fake;
  tritium::Device dev(&fake);
  std::vector<char> log; // which function ran, in order
  // a takes 1 ms a run, b 3 ms; during the timed rounds the machine slows down by 1 ms a round,
  // for both alike.
  int round_cost = 0;
  auto a = [&] {
    log.push_back('a');
    fake.clock_ms += 1 + round_cost;
  };
  auto b = [&] {
    log.push_back('b');
    fake.clock_ms += 3 + round_cost;
  };
  std::vector<std::function<void()>> fns = {a, b};
  // Wrapped so that the slowdown starts with the timed rounds: after 1 + 2 calls of each.
  int calls = 0;
  std::vector<std::function<void()>> slowing;
  for (auto& f : fns)
    slowing.push_back([&, f] {
      if (++calls > 6 && (calls - 7) % 2 == 0)
        ++round_cost;
      f();
    });
  auto r = tritium::bench_interleaved(dev, slowing, {.warmup = 2, .reps = 6});
  REQUIRE(r.size() == 2);
  // First calls and warm-ups of each, then six rounds, the order alternating.
  CHECK(std::string(log.begin(), log.end()) == "abaabbabbaabbaabba");
  REQUIRE(r[0].times_ms.size() == 6);
  REQUIRE(r[1].times_ms.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    // Round i's slowdown is the same for both: the pair's difference stays 2 ms.
    CHECK(r[1].times_ms[i] - r[0].times_ms[i] == doctest::Approx(2));
  }
  CHECK(r[0].warmup == 2);
  CHECK(fake.fills == 12); // before every timed run of each
}

TEST_CASE("bench_interleaved shares bench's budgets and rejects what makes no sense") {
  FakeBackend fake;
  tritium::Device dev(&fake);
  int ca = 0, cb = 0;
  auto r = tritium::bench_interleaved(dev,
                                      {[&] {
                                         ++ca;
                                         fake.clock_ms += 1;
                                       },
                                       [&] {
                                         ++cb;
                                         fake.clock_ms += 3;
                                       }},
                                      {.flush_l2 = false, .warmup_ms = 12, .rep_ms = 40});
  // Estimates 1 and 3 ms: warm-ups 12 and 4; two budgets of 40 ms over rounds of 4 ms: 20.
  CHECK(r[0].warmup == 12);
  CHECK(r[1].warmup == 4);
  CHECK(r[0].times_ms.size() == 20);
  CHECK(ca == 1 + 5 + 12 + 20);
  CHECK(cb == 1 + 5 + 4 + 20);
  // One function: bench's own protocol.
  CHECK(tritium::bench_interleaved(dev, {[&] { fake.clock_ms += 2; }}, {.rep_ms = 40})
            .front()
            .times_ms.size() == 20);
  CHECK_THROWS_WITH_AS(tritium::bench_interleaved(dev, {}), doctest::Contains("no function"),
                       Error);
  CHECK_THROWS_WITH_AS(tritium::bench_interleaved(dev, {[] {}, nullptr}),
                       doctest::Contains("function 1 is empty"), Error);
  CHECK_THROWS_WITH_AS(tritium::bench_interleaved(dev, {[] {}}, {.reps = 0}),
                       doctest::Contains("reps = 0 >= 1"), Error);
}

TEST_CASE("bench times real kernels on every device, and host work where launches wait") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    const int n = 1 << 12;
    auto x = dev.from_host(std::vector<float>(n, 1.5f));
    auto out = dev.alloc<float>(n);
    auto k = tritium::jit(scale_kernel, "bench_scale_kernel");
    auto r = tritium::bench(dev, [&] { k[{n / 256}](x, out, n, 256); }, {.warmup = 1, .reps = 5});
    CHECK(r.times_ms.size() == 5);
    CHECK(r.min_ms > 0);
    CHECK(r.min_ms <= r.median_ms);
    CHECK(r.median_ms <= r.max_ms);
    CHECK(out.to_host()[n - 1] == 3.0f);
  }
  // On the CPU the host clock times the call: a 3 ms sleep is at least 3 ms.
  auto r = tritium::bench(tritium::device("cpu"),
                          [] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); },
                          {.warmup = 1, .reps = 3, .flush_l2 = false});
  CHECK(r.min_ms >= 3.0);
}
