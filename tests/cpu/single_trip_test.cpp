// Single-trip loops (codegen/targets/cpu/single_trip_loops.cpp): a kernel whose loops have
// bounds known at entry also compiles with those loops inlined, and runs that version where
// every such loop runs exactly once. Both versions must compute what the interpreter computes:
// one trip, several, none, counting down, nested, with carried tensors and scalars.
#include "compare.hpp"
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::testing::DumpStages;
using tritium::testing::same_bits;

namespace {

// Triton's looped layer norm statistics (tutorial 05): carried tensors summed after the loop.
void row_stats_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<float> stats, tl::i32 n,
                      tl::i32 lo, tl::i32 step, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto acc = tl::zeros<float>({BLOCK});
  auto count = tl::scalar<int32_t>(0);
  for (auto off : tl::range(lo, n, step)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto a = tl::load(x + row * n + cols, (cols < n) & (cols >= 0), 0.f);
    acc += a * a;
    count = count + 1;
  }
  auto total = tl::sum(acc, 0);
  tl::store(stats + row * 2, total);
  tl::store(stats + row * 2 + 1, count.to<float>());
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < n;
    auto a = tl::load(x + row * n + cols, mask, 0.f);
    // div_rn: compared bit for bit (the CPU's `/` by an invariant is a reciprocal's product)
    auto scaled = tl::div_rn(a, total + 1.f);
    for (auto k : tl::range(0, 2, 2)) // nested, one trip: inlined after its parent
      scaled = scaled + k.to<float>();
    tl::store(out + row * n + cols, scaled, mask);
  }
}

} // namespace

TEST_CASE("cpu: a kernel whose loops may run once also compiles them inlined") {
  std::string ll;
  {
    DumpStages dump("tritium-single-trip-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4 * 1024), out = dev.alloc<float>(4 * 1024);
    auto stats = dev.alloc<float>(8);
    ll = tritium::jit(row_stats_kernel, "row_stats_single_trip")
             .compiled(x, out, stats, 1000, 0, 1024, 1024)
             .artifact("ll");
  }
  REQUIRE(!ll.empty());
  CHECK(ll.find(".loops(") != std::string::npos); // the version with loops
  CHECK(ll.find("single_trip") != std::string::npos);
}

TEST_CASE("cpu: single-trip and looped versions compute what the interpreter computes") {
  const int rows = 6, block = 256;
  struct Case {
    int n, lo, step; // the first loop: range(lo, n, step)
  };
  // One trip (n <= block), several, none (lo >= n), counting down (step < 0: none here, as
  // lo < n), one trip starting mid-row, one trip with step == n - lo exactly.
  for (Case c :
       {Case{200, 0, block}, Case{256, 0, block}, Case{1000, 0, block}, Case{200, 300, block},
        Case{200, 0, -block}, Case{200, 100, block}, Case{300, 44, 256}}) {
    CAPTURE(c.n);
    CAPTURE(c.lo);
    CAPTURE(c.step);
    std::mt19937 gen(c.n + c.lo);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    std::vector<float> hx(static_cast<size_t>(rows) * c.n);
    for (float& v : hx)
      v = dist(gen);
    std::vector<std::vector<float>> outs, stats;
    for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
      auto x = d.from_host(hx);
      auto out = d.from_host(std::vector<float>(hx.size(), 0.f));
      auto st = d.from_host(std::vector<float>(2 * rows, -1.f));
      auto k = tritium::jit(row_stats_kernel, "row_stats");
      k.options({.enable_fp_fusion = false}); // compared bitwise
      k[{rows}](x, out, st, c.n, c.lo, c.step, block);
      outs.push_back(out.to_host());
      stats.push_back(st.to_host());
    }
    CHECK(same_bits(outs[0], outs[1]));
    CHECK(same_bits(stats[0], stats[1]));
  }
}
