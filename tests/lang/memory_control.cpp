// Loads and stores (masks, other, cache and eviction options carried in the IR), atomics
// (masks, sem/scope, cas, xchg), control flow (tl::range carrying values, tl::while_, tl::if_
// yielding values, early exits), hints and debugging ops.
#include "common.hpp"

using namespace lang_test;

TEST_CASE("masked loads read `other` (or zero) and masked stores write nothing") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> x, tl::ptr<float> y, tl::i32 n) {
          auto offs = tl::arange(0, 8);
          auto mask = offs < n;
          tl::store(y + offs, tl::load(x + offs, mask, -1.f), mask || offs >= 6);
          tl::store(y + 8 + offs, tl::load(x + offs, mask)); // masked lanes read 0
          // A mask of lower rank broadcasts against the pointers.
          auto rows = tl::arange(0, 2)[{tl::_, tl::None}];
          auto cols = tl::arange(0, 4)[{tl::None, tl::_}];
          auto p2 = x + rows * 4 + cols;
          tl::store(y + 16 + rows * 4 + cols, tl::load(p2, cols < 1, 9.f));
        },
        "masked");
    auto x = dev.from_host(std::vector<float>{1, 2, 3, 4, 5});
    auto y = dev.from_host(std::vector<float>(24, 42.f));
    launch(k, {1}, x, y, 5);
    auto got = y.to_host();
    std::vector<float> expect{1, 2, 3, 4, 5, 42, -1, -1, 1, 2, 3, 4,
                              5, 0, 0, 0, 1, 9,  9,  9,  5, 9, 9, 9};
    CHECK(got == expect);
  }
}

TEST_CASE("load and store options are carried in the IR") {
  auto k = tritium::jit(
      +[](tl::ptr<float> x, tl::ptr<float> y) {
        auto offs = tl::arange(0, 4);
        auto v = tl::load(x + offs, {.cache_modifier = ".cg", .eviction_policy = "evict_last"});
        auto w = tl::load(x + offs, offs < 2, 0.f,
                          {.eviction_policy = "evict_first", .is_volatile = true});
        tl::store(y + offs, v + w, {.cache_modifier = ".wt"});
      },
      "options");
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto x = dev.from_host(std::vector<float>{1, 2, 3, 4});
    auto y = dev.alloc<float>(4);
    std::string ir = launch(k, {1}, x, y);
    CHECK(ir.find("cache = cg") != std::string::npos);
    CHECK(ir.find("evict = evict_last") != std::string::npos);
    CHECK(ir.find("evict = evict_first") != std::string::npos);
    CHECK(ir.find("volatile = 1") != std::string::npos);
    CHECK(ir.find("cache = wt") != std::string::npos);
    CHECK(y.to_host() == std::vector<float>{2, 4, 3, 4});
  }
}

TEST_CASE("atomics with masks, sem and scope") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int32_t> c, tl::ptr<float> f, tl::ptr<int32_t> old) {
          auto offs = tl::arange(0, 8);
          // Eight lanes add to one counter; odd lanes are masked off.
          tl::atomic_add(c + tl::zeros_like(offs), 1, offs % 2 == 0);
          // Per-lane max/min, relaxed and CTA-scoped.
          auto o1 = tl::atomic_max(c + 1 + offs % 4, offs, "relaxed", "cta");
          (void)o1;
          tl::atomic_min(c + 5 + offs % 2, offs - 4, offs < 6, "acquire", "gpu");
          tl::atomic_add(f + offs % 2, 0.5f, offs < 8, "release", "sys");
          // Returned old values.
          auto o = tl::atomic_xchg(c + 7 + offs % 1 * 0 + tl::arange(0, 8) % 1, offs, offs == 3);
          tl::store(old + offs, o, offs == 3);
          tl::store(old + 8, tl::atomic_cas(c + 8, 0, 5)); // 0 == 0: swapped
          tl::store(old + 9, tl::atomic_cas(c + 9, 1, 6)); // 3 != 1: kept
          tl::store(old + 10, tl::atomic_or(c + 10, 6));
          tl::store(old + 11, tl::atomic_and(c + 11, 6));
          tl::store(old + 12, tl::atomic_xor(c + 12, 6));
        },
        "atomics");
    auto c = dev.from_host(std::vector<int32_t>{10, -1, -1, -1, -1, 0, 0, 100, 0, 3, 1, 3, 5});
    auto f = dev.from_host(std::vector<float>{0.f, 1.f});
    auto old = dev.from_host(std::vector<int32_t>(13, -7));
    std::string ir = launch(k, {1}, c, f, old);
    CHECK(ir.find("sem = relaxed") != std::string::npos);
    CHECK(ir.find("scope = cta") != std::string::npos);
    CHECK(ir.find("sem = acq_rel") != std::string::npos); // the default, as Triton
    CHECK(ir.find("scope = sys") != std::string::npos);
    auto got = c.to_host();
    CHECK(got == std::vector<int32_t>{14, 4, 5, 6, 7, -4, -3, 3, 5, 3, 7, 2, 3});
    CHECK(f.to_host() == std::vector<float>{2.f, 3.f});
    auto o = old.to_host();
    CHECK(o[3] == 100);
    CHECK(o[0] == -7); // masked lanes stored nothing
    CHECK(o[8] == 0);
    CHECK(o[9] == 3);
    CHECK(o[10] == 1);
    CHECK(o[11] == 3);
    CHECK(o[12] == 5);
  }
}

TEST_CASE("atomics from many programs") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> x, tl::ptr<float> total, tl::ptr<int32_t> maxpid) {
          auto pid = tl::program_id(0);
          auto offs = pid * 64 + tl::arange(0, 64);
          tl::atomic_add(total, tl::sum(tl::load(x + offs)));
          tl::atomic_max(maxpid, pid);
        },
        "reduce_atomic");
    std::vector<float> hx(64 * 16);
    for (size_t i = 0; i < hx.size(); ++i)
      hx[i] = static_cast<float>(i % 7);
    auto x = dev.from_host(hx);
    auto total = dev.from_host(std::vector<float>{0.f});
    auto maxpid = dev.from_host(std::vector<int32_t>{-1});
    launch(k, {16}, x, total, maxpid);
    float expect = 0;
    for (float v : hx)
      expect += v;
    CHECK(total.to_host()[0] == expect); // small integers: every order sums exactly
    CHECK(maxpid.to_host()[0] == 15);
  }
}

TEST_CASE("atomic adds nobody reads: split-K's partial tiles, masked, f32, f16 and i32") {
  // Each program adds its 16 x 64 tile (masked to n columns) into the same output; on sm_90
  // these become red.global.add of four f32 or eight f16 at once.
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<float> acc, tl::ptr<tl::f16> h, tl::ptr<int32_t> count, tl::i32 n) {
          auto pid = tl::program_id(0);
          auto rows = tl::arange(0, 16);
          auto cols = tl::arange(0, 64);
          auto offs = rows[{tl::_, tl::None}] * 64 + cols[{tl::None, tl::_}];
          auto v = (offs % 7 + pid).to<float>();
          tl::atomic_add(acc + offs, v, cols[{tl::None, tl::_}] < n, "relaxed");
          tl::atomic_add(h + offs, v.to<tl::f16>(), "relaxed");
          tl::atomic_add(count + rows, 1, rows < 12, "relaxed", "gpu");
        },
        "unread_atomics");
    const int programs = 5, n = 61;
    auto acc = dev.from_host(std::vector<float>(16 * 64, 1.f));
    auto h = dev.from_host(std::vector<tritium::half>(16 * 64, tritium::half(0.f)));
    auto count = dev.from_host(std::vector<int32_t>(16, 0));
    launch(k, {programs}, acc, h, count, n);
    auto ga = acc.to_host();
    auto gh = h.to_host();
    auto gc = count.to_host();
    for (int i = 0; i < 16 * 64; ++i) {
      CAPTURE(i);
      // Small integers: exact in every order.
      float sum = programs * float(i % 7) + float(programs * (programs - 1) / 2);
      CHECK(ga[i] == (i % 64 < n ? 1.f + sum : 1.f));
      CHECK(float(gh[i]) == sum);
    }
    for (int r = 0; r < 16; ++r)
      CHECK(gc[r] == (r < 12 ? programs : 0));
  }
}

TEST_CASE("tl::range carries values; static_range unrolls") {
  // The emulator too: the GPU lowering emits loops rotated (a guard, then a body that tests at
  // its end), so empty ranges and negative steps take paths of their own there.
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int32_t> y, tl::i32 n) {
          auto acc = tl::zeros<int32_t>({4});
          auto count = tl::scalar<int32_t>(0);
          for (auto i : tl::range(0, n)) {
            acc += i * tl::arange(0, 4);
            count = count + 1;
          }
          tl::store(y + tl::arange(0, 4), acc);
          tl::store(y + 4, count);
          // step, nested loops, a value not changed by the body stays as it was
          auto s = tl::scalar<int32_t>(0);
          auto unchanged = tl::scalar<int32_t>(77);
          for (auto i : tl::range(1, 10, 3)) // 1 4 7
            for (auto j : tl::range(0, i)) { // i iterations
              s = s + j + unchanged * 0;
            }
          tl::store(y + 5, s);
          tl::store(y + 6, unchanged);
          // an empty range runs no iteration
          auto e = tl::scalar<int32_t>(5);
          for (auto i : tl::range(n, 0)) {
            e = e + i;
          }
          tl::store(y + 7, e);
          // static_range is a C++ loop: unrolled at trace time.
          auto u = tl::scalar<int32_t>(0);
          for (int64_t i : tl::static_range(0, 4)) {
            u = u * 10 + static_cast<int>(i);
          }
          tl::store(y + 8, u);
          // a negative step counts down (5 3 1); a tensor carried through it
          auto down = tl::zeros<int32_t>({2});
          for (auto i : tl::range(n, 0, -2))
            down = down + i + tl::arange(0, 2);
          tl::store(y + 9 + tl::arange(0, 2), down);
        },
        "loops");
    auto y = dev.alloc<int32_t>(11);
    std::string ir = launch(k, {1}, y, 5);
    // 0+1+2+3+4 = 10 times arange
    CHECK(y.to_host() ==
          std::vector<int32_t>{0, 10, 20, 30, 5, 0 + 6 + 21, 77, 5, 123, 5 + 3 + 1, 9 + 3});
    CHECK(ir.find("for(") != std::string::npos);
  }
}

// Triton keeps an int64 bound's type for the induction variable: past 2^31 an i32 would wrap.
TEST_CASE("tl::range over int64 bounds yields an int64 induction variable") {
  static_assert(std::is_same_v<decltype(*tl::range(int64_t{0}, 4).begin()), tl::i64>);
  static_assert(std::is_same_v<decltype(*tl::range(0, 4).begin()), tl::i32>);
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int64_t> y, tl::i64 lo, tl::i32 n) {
          // one iteration: i = lo (an i64 bound and an i32 one)
          for (auto i : tl::range(lo, lo + 1)) {
            tl::store(y + tl::arange(0, 4), i + tl::arange(0, 4));
          }
          // an i64 step alone widens the loop too; bounds stay i32 values
          auto last = tl::scalar<int64_t>(0);
          for (auto j : tl::range(0, n, int64_t{2}))
            last = j * int64_t{1'000'000'000'000};
          tl::store(y + 4, last);
        },
        "range_i64");
    auto y = dev.alloc<int64_t>(5);
    const int64_t lo = (int64_t{1} << 32) + 1;
    launch(k, {1}, y, lo, 7);
    CHECK(y.to_host() ==
          std::vector<int64_t>{lo, lo + 1, lo + 2, lo + 3, int64_t{6} * 1'000'000'000'000});
  }
}

// An integer constant keeps every bit: through a double, 2^53 + 1 became 2^53.
TEST_CASE("integer constants keep every bit of their dtype") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int64_t> y) {
          tl::store(y + tl::arange(0, 4), tl::full<int64_t>({4}, (int64_t{1} << 53) + 1));
          tl::store(y + 4, tl::full<int64_t>({}, std::numeric_limits<int64_t>::max()));
        },
        "full_i64");
    auto y = dev.alloc<int64_t>(5);
    launch(k, {1}, y);
    const int64_t big = (int64_t{1} << 53) + 1;
    CHECK(y.to_host() ==
          std::vector<int64_t>{big, big, big, big, std::numeric_limits<int64_t>::max()});
  }
}

TEST_CASE("tl::while_ loops on traced values") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int32_t> y, tl::i32 start) {
          // Collatz: steps until 1.
          auto n = start + 0;
          auto steps = tl::scalar<int32_t>(0);
          tl::while_([&] { return n != 1; },
                     [&] {
                       n = tl::where(n % 2 == 0, n / 2, 3 * n + 1);
                       steps = steps + 1;
                     });
          tl::store(y, steps);
          tl::store(y + 1, n);
          // A loop whose condition is false at once.
          auto z = tl::scalar<int32_t>(3);
          tl::while_([&] { return z < 0; }, [&] { z = z - 1; });
          tl::store(y + 2, z);
        },
        "collatz");
    auto y = dev.alloc<int32_t>(3);
    launch(k, {1}, y, 27);
    CHECK(y.to_host() == std::vector<int32_t>{111, 1, 3});
  }
}

TEST_CASE("tl::if_ yields values and guards early exits") {
  // With the gpu-emulator: the GPU lowering once joined two scalars as the first twice.
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int32_t> y, tl::i32 n) {
          auto pid = tl::program_id(0);
          tl::i32 v; // assigned in both branches: defined after the if
          auto w = pid * 0 + 5;
          tl::if_(
              pid % 2 == 0, [&] { v = pid * 10; },
              [&] {
                v = pid * 100;
                w = w + 1; // assigned in one branch: the other keeps its value
              });
          // Triton's `if pid >= n: return`: the rest of the kernel goes in the branch.
          tl::if_(pid < n, [&] { tl::store(y + pid * 2 + tl::arange(0, 2), tl::join(v, w)); });
        },
        "branches");
    auto y = dev.from_host(std::vector<int32_t>(10, -1));
    launch(k, {5}, y, 4);
    CHECK(y.to_host() == std::vector<int32_t>{0, 5, 100, 6, 20, 5, 300, 6, -1, -1});
  }
}

TEST_CASE("hints and assume leave values unchanged and appear in the IR") {
  for (Device dev : devices()) {
    std::string name(dev.name());
    CAPTURE(name);
    auto k = tritium::jit(
        +[](tl::ptr<int32_t> y, tl::i32 n) {
          auto offs = tl::max_contiguous(tl::multiple_of(tl::arange(0, 16), 16), 16);
          auto c = tl::max_constancy(n + tl::zeros<int32_t>({16}), 16);
          tl::assume(n > 0);
          tl::static_assert_(true, "never fails");
          tl::debug_barrier();
          tl::store(y + offs, offs + c);
        },
        "hints");
    auto y = dev.alloc<int32_t>(16);
    std::string ir = launch(k, {1}, y, 3);
    CHECK(ir.find("multiple_of = 16") != std::string::npos);
    CHECK(ir.find("max_contiguous = 16") != std::string::npos);
    CHECK(ir.find("max_constancy = 16") != std::string::npos);
    CHECK(ir.find("assume(") != std::string::npos);
    CHECK(ir.find("barrier(") != std::string::npos);
    CHECK(y.to_host() == iota<int32_t>(16, 3));
  }
}

TEST_CASE("device_print prints at run time; static_print while tracing") {
  auto k = tritium::jit(
      +[](tl::ptr<int32_t> y) {
        auto v = tl::arange(0, 4) * 2;
        tl::static_print("static:", v, tl::scalar<float>(1.0));
        tl::device_print("v =", v);
        tl::store(y + tl::arange(0, 4), v);
      },
      "prints");
  Device dev = tritium::testing::interpreter();
  auto y = dev.alloc<int32_t>(4);
  std::string traced = capture_stdout([&] { k.trace(y); });
  CHECK(traced.find("memory_control.cpp") != std::string::npos);
  CHECK(traced.find("static: tensor<4xi32> f32") != std::string::npos);
  std::string ran = capture_stdout([&] { k[{2}](y); });
  CHECK(ran.find("pid (1, 0, 0) v = [0, 2, 4, 6]") != std::string::npos);
  CHECK(ran.find("pid (0, 0, 0) v = [0, 2, 4, 6]") != std::string::npos);
}

TEST_CASE("device_assert passes when true and fails naming the line when false") {
  auto k = tritium::jit(
      +[](tl::ptr<int32_t> y, tl::i32 n) {
        auto offs = tl::arange(0, 4);
        tl::device_assert(offs < n, "offs must stay below n");
        tl::store(y + offs, offs);
      },
      "asserts");
  Device dev = tritium::testing::interpreter();
  auto y = dev.alloc<int32_t>(4);
  CHECK_NOTHROW(k[{1}](y, 4));
  try {
    k[{1}](y, 2);
    FAIL("device_assert did not fire");
  } catch (const tritium::Error& e) {
    std::string m = e.what();
    CHECK(m.find("offs must stay below n") != std::string::npos);
    CHECK(m.find("memory_control.cpp") != std::string::npos);
  }
}

TEST_CASE("the tests run on at least one device") {
  // TRITIUM_TEST_DEVICES naming no usable device would make every device loop empty.
  CHECK_MESSAGE(!devices().empty(), "no test device is available (TRITIUM_TEST_DEVICES?)");
}
