// The autotuner: every configuration timed on first use of a key, the fastest kept (in memory
// and on disk), configurations that cannot run pruned with their reason, and a clear error when
// none can.
#include <doctest/doctest.h>

#include <support/devices.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace tl = tritium::tl;
using tritium::Config;
using tritium::Error;

namespace {

// out[i] = x[i] * 2, BLOCK elements per program; REPEAT makes a configuration slower on
// purpose (it recomputes the product REPEAT times in a loop). The slow configuration must lose
// under sanitizers too, where the JIT-compiled kernel runs at full speed but a launch's host
// side does not (50 ms a launch under ThreadSanitizer). Once the CPU backend updated
// loop-carried tensors in place, 2048 passes took 3.8 ms (0.05 ms for one), and under
// ThreadSanitizer the slow configuration won; 131072 passes take about 0.3 s.
void scaled(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK,
            tl::constexpr_<int> REPEAT) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask);
  auto acc = tl::zeros<float>({BLOCK});
  for (auto r : tl::range(0, REPEAT)) {
    (void)r;
    acc = acc * 0.0f + v * 2.0f;
  }
  tl::store(out + offs, acc, mask);
}

struct TempCache {
  std::filesystem::path dir;
  TempCache() {
    dir = std::filesystem::temp_directory_path() /
          ("tritium-autotune-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    unsetenv("TRITIUM_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
};

} // namespace

TEST_CASE("autotune picks the fastest configuration, prunes the ones that cannot run, and "
          "remembers the choice on disk") {
  TempCache cache;
  auto dev = tritium::device("cpu");
  const int n = 1 << 16;
  auto x = dev.from_host(std::vector<float>(n, 1.5f));
  auto out = dev.alloc<float>(n);
  std::vector<Config> configs{
      {{{"BLOCK", 1024}, {"REPEAT", 131072}}, 4, 1}, // slow: 131072 passes
      {{{"BLOCK", 1024}, {"REPEAT", 1}}, 4, 1},      // fast
      {{{"BLOCK", 1000}, {"REPEAT", 1}}, 4, 1},      // not a power of two: cannot be traced
  };
  int launches = 0;
  auto launch = [&](auto& k, const Config& c) {
    ++launches;
    k[{tritium::cdiv(n, static_cast<int>(c["BLOCK"]))}](x, out, n, c["BLOCK"], c["REPEAT"]);
  };
  auto tuned = tritium::autotune(scaled, "scaled", configs);
  tuned("n=65536", launch, dev);
  CHECK(tuned.best("n=65536", launch, dev).str() == configs[1].str());
  CHECK(out.to_host()[n - 1] == 3.0f);
  const int after_tuning = launches;
  CHECK(after_tuning > 3);
  tuned("n=65536", launch, dev); // tuned: one launch
  CHECK(launches == after_tuning + 1);

  // A second autotuner (another process, as far as the disk knows) finds the choice stored.
  auto again = tritium::autotune(scaled, "scaled", configs);
  launches = 0;
  again("n=65536", launch, dev);
  CHECK(launches == 1);
  CHECK(again.best("n=65536", launch, dev).str() == configs[1].str());

  // One configuration: nothing to time, the first call launches once.
  auto single = tritium::autotune(scaled, "scaled", {configs[0]});
  launches = 0;
  single("n=65536", launch, dev);
  CHECK(launches == 1);
}

namespace {
// `scaled` after an edit: the same name and parameters, another computation (x * 3), and a
// static assertion that the stored choice of `scaled` (REPEAT 1) now fails.
void scaled_edited(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK,
                   tl::constexpr_<int> REPEAT) {
  tl::static_assert_(REPEAT != 1, "REPEAT 1 is no longer allowed");
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) * 3.0f, mask);
}
void scaled_other(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK,
                  tl::constexpr_<int> REPEAT) {
  (void)REPEAT;
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) * 4.0f, mask);
}
} // namespace

// The disk store was keyed by the kernel's name only: after an edit, the stale choice failed
// every launch ("static assertion failed") and was never tuned again.
TEST_CASE("autotune: a stored choice the kernel no longer traces, or traces to other IR, is "
          "dropped and the key tuned again") {
  TempCache cache;
  auto dev = tritium::device("cpu");
  const int n = 4096;
  auto x = dev.from_host(std::vector<float>(n, 1.5f));
  auto out = dev.alloc<float>(n);
  std::vector<Config> configs{
      {{{"BLOCK", 1024}, {"REPEAT", 131072}}, 4, 1},
      {{{"BLOCK", 1024}, {"REPEAT", 1}}, 4, 1},
  };
  int launches = 0;
  auto launch = [&](auto& k, const Config& c) {
    ++launches;
    k[{tritium::cdiv(n, static_cast<int>(c["BLOCK"]))}](x, out, n, c["BLOCK"], c["REPEAT"]);
  };
  auto first = tritium::autotune(scaled, "scaled", configs);
  first("n", launch, dev);
  REQUIRE(first.best("n", launch, dev).str() == configs[1].str());

  // The edited kernel cannot trace the stored choice: dropped, tuned again, the other wins.
  auto edited = tritium::autotune(scaled_edited, "scaled", configs);
  edited("n", launch, dev);
  CHECK(edited.best("n", launch, dev).str() == configs[0].str());
  CHECK(out.to_host()[0] == 4.5f);

  // A kernel that traces the stored choice (now REPEAT 131072) to other IR: tuned again too.
  auto other = tritium::autotune(scaled_other, "scaled", configs);
  launches = 0;
  other("n", launch, dev);
  CHECK(launches > 2); // the stale launch, then every configuration timed
  CHECK(out.to_host()[0] == 6.0f);

  // The same kernel again: its own stored choice is kept, one launch.
  auto same = tritium::autotune(scaled_other, "scaled", configs);
  launches = 0;
  same("n", launch, dev);
  CHECK(launches == 1);
}

TEST_CASE("autotune: a missing value, no configuration at all, and no configuration that runs "
          "are errors that name the kernel and say why") {
  TempCache cache;
  auto dev = tritium::device("cpu");
  auto x = dev.from_host(std::vector<float>(64, 1.0f));
  auto out = dev.alloc<float>(64);
  CHECK_THROWS_WITH_AS(tritium::autotune(scaled, "scaled", {}),
                       doctest::Contains("kernel 'scaled' has no configurations"), Error);
  Config c{{{"BLOCK", 64}}, 4, 1};
  CHECK_THROWS_WITH_AS(c["REPEAT"], doctest::Contains("has no value named 'REPEAT'"), Error);
  auto bad = tritium::autotune(
      scaled, "scaled",
      {{{{"BLOCK", 48}, {"REPEAT", 1}}, 4, 1}, {{{"BLOCK", 100}, {"REPEAT", 1}}, 4, 1}});
  auto launch = [&](auto& k, const Config& cfg) {
    k[{1}](x, out, 64, cfg["BLOCK"], cfg["REPEAT"]);
  };
  try {
    bad("k", launch, dev);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string what = e.what();
    CHECK(what.find("kernel 'scaled', key 'k': no configuration could run") != std::string::npos);
    CHECK(what.find("BLOCK=48") != std::string::npos);
    CHECK(what.find("BLOCK=100") != std::string::npos);
    CHECK(what.find("power of two") != std::string::npos);
  }
}
