// Memory streams prefetched across programs (codegen/targets/cpu/lower_prefetch.cpp): where the
// prefetches go, read from the LLVM IR TRITIUM_DUMP keeps, and that kernels which prefetch
// compute what the interpreter computes, whatever the predictions (stale slots from another
// kernel, persistent loops, one program per thread chunk).
#include "dump_stages.hpp"
#include "row_kernels.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::testing::rms_kernel;
using tritium::testing::softmax_close;
using tritium::testing::softmax_kernel;

namespace {

// softmax_kernel over rows pid, pid + programs, ...: the prediction is the next iteration's row.
void softmax_persistent_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 rows, tl::i32 n,
                               tl::constexpr_<int> BLOCK) {
  for (auto row : tl::range(tl::program_id(0), rows, tl::num_programs(0))) {
    auto cols = tl::arange(0, BLOCK);
    auto mask = cols < n;
    auto x = tl::load(in + row * n + cols, mask, -std::numeric_limits<float>::infinity());
    auto num = tl::exp(x - tl::max(x, 0));
    tl::store(out + row * n + cols, num / tl::sum(num, 0), mask);
  }
}

// Every program reads the same row: nothing moves, nothing to predict.
void broadcast_row_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n,
                          tl::constexpr_<int> BLOCK) {
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto x = tl::load(in + cols, mask, 0.f);
  tl::store(out + tl::program_id(0) * n + cols, x / tl::sum(x * x, 0), mask);
}

// Two reductions over one row: the second prefetches the next program's row.
void variance_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto x = tl::load(in + tl::program_id(0) * n + cols, mask, 0.f);
  auto xc = tl::where(mask, x - tl::sum(x, 0) / n, 0.f);
  tl::store(out + tl::program_id(0), tl::sum(xc * xc, 0) / n);
}

// One pass: nothing runs after the loop that reads the row.
void scale_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(out + offs, tl::load(in + offs, offs < n) * 2.f, offs < n);
}

// The prefetches in a kernel's LLVM IR, by kind: [0] for reading, [1] for writing.
std::array<int, 2> prefetches(const std::string& ll) {
  std::array<int, 2> count{0, 0};
  std::regex call(R"(@llvm\.prefetch\.p0\(ptr [^,]+, i32 ([01]), i32 [23], i32 1\))");
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), call); it != std::sregex_iterator();
       ++it)
    ++count[std::stoi((*it)[1])];
  return count;
}

// The prefetches in a kernel's LLVM IR, by locality (3: into L1, 2: into L2).
std::array<int, 4> locality_counts(const std::string& ll) {
  std::array<int, 4> count{0, 0, 0, 0};
  std::regex call(R"(@llvm\.prefetch\.p0\(ptr [^,]+, i32 [01], i32 ([0-3]), i32 1\))");
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), call); it != std::sregex_iterator();
       ++it)
    ++count[std::stoi((*it)[1])];
  return count;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(gen);
  return v;
}

} // namespace

TEST_CASE("cpu: a row kernel prefetches the next row, and its own output for writing, in its "
          "second pass") {
  std::optional<tritium::testing::DumpStages> dump(std::in_place, "tritium-prefetch-");
  auto dev = tritium::device("cpu");
  auto x = dev.alloc<float>(8 * 4096), y = dev.alloc<float>(8 * 4096);
  std::string softmax =
      tritium::jit(softmax_kernel, "softmax_prefetch").compiled(y, x, 4096, 4096).artifact("ll");
  std::string persistent = tritium::jit(softmax_persistent_kernel, "softmax_persistent_prefetch")
                               .compiled(y, x, 8, 4096, 4096)
                               .artifact("ll");
  std::string broadcast = tritium::jit(broadcast_row_kernel, "broadcast_no_prefetch")
                              .compiled(y, x, 4096, 4096)
                              .artifact("ll");
  std::string rms =
      tritium::jit(rms_kernel, "rms_prefetch").compiled(y, x, 4096, 4096).artifact("ll");
  // 32 floats: too few to stream (lower_streaming_store.cpp).
  std::string rms_small =
      tritium::jit(rms_kernel, "rms_small_no_prefetch").compiled(y, x, 32, 32).artifact("ll");
  std::string scale =
      tritium::jit(scale_kernel, "scale_no_prefetch").compiled(y, x, 4096, 1024).artifact("ll");
  std::string variance =
      tritium::jit(variance_kernel, "variance_prefetch").compiled(y, x, 4096, 4096).artifact("ll");
  dump.reset();
  REQUIRE(!softmax.empty());
  // In the exp pass: the next row for reading, this program's output for writing.
  auto s = prefetches(softmax);
  CHECK(s[0] > 0);
  CHECK(s[1] > 0);
  auto p = prefetches(persistent);
  CHECK(p[0] > 0);
  CHECK(p[1] > 0);
  CHECK(prefetches(broadcast) == std::array<int, 2>{0, 0});
  // RMSNorm's reduction is its first pass over the row (nothing to predict from yet); its last
  // pass prefetches the next row where its store streams (decided at run time), into L1.
  CHECK(prefetches(rms)[1] == 0);
  CHECK(prefetches(rms)[0] > 0);
  CHECK(prefetches(rms_small) == std::array<int, 2>{0, 0});
  // An earlier pass prefetches into L2, where it does not evict what later passes read.
  CHECK(locality_counts(softmax)[3] == 0);
  CHECK(locality_counts(softmax)[2] > 0);
  CHECK(locality_counts(rms)[3] > 0);
  CHECK(prefetches(scale) == std::array<int, 2>{0, 0});
  // A reduction over a row that an earlier pass read prefetches the next row, into L2.
  CHECK(prefetches(variance)[0] > 0);
  CHECK(locality_counts(variance)[2] > 0);
  CHECK(locality_counts(variance)[3] == 0);
}

TEST_CASE("cpu: kernels that prefetch compute what the interpreter computes") {
  const int rows = 37;
  for (int n : {4096, 3000, 100}) {
    CAPTURE(n);
    const int block = n <= 128 ? 128 : 4096;
    auto hx = random_floats(static_cast<size_t>(rows) * n, 11 + n);
    for (int grid : {rows, 5, 1}) {
      CAPTURE(grid);
      std::vector<std::vector<float>> plain, persistent, variance;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto y = d.from_host(std::vector<float>(hx.size(), 0.f));
        auto z = d.from_host(std::vector<float>(hx.size(), 0.f));
        auto v = d.from_host(std::vector<float>(rows, 0.f));
        // Twice: the second launch starts from the first one's predictions.
        for (int rep = 0; rep < 2; ++rep) {
          tritium::jit(softmax_kernel, "softmax_kernel")[{rows}](y, x, n, block);
          tritium::jit(softmax_persistent_kernel, "softmax_persistent")[{grid}](z, x, rows, n,
                                                                                block);
          tritium::jit(variance_kernel, "variance_kernel")[{rows}](v, x, n, block);
        }
        plain.push_back(y.to_host());
        persistent.push_back(z.to_host());
        variance.push_back(v.to_host());
      }
      for (int r = 0; r < rows; ++r)
        CHECK(variance[1][r] == doctest::Approx(variance[0][r]).epsilon(1e-5));
      CHECK(softmax_close(plain[0], plain[1]));
      CHECK(softmax_close(persistent[0], persistent[1]));
      CHECK(softmax_close(plain[1], persistent[1]));
    }
  }
}
