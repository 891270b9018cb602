// Rows reloaded from memory instead of buffered, and loop-carried tensors updated in place
// (codegen/targets/cpu/lower_reload.cpp, lower_kernel.cpp): each kernel compared with the
// interpreter bit for bit, including stores that overwrite a row before it is read again.
#include "compare.hpp"
#include "row_kernels.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::testing::same_bits;
using tritium::testing::softmax_kernel;

namespace {

// RMSNorm with the output at y + shift: with y == x and shift != 0 the store overwrites
// elements of the row that later lanes reload.
void rms_shift_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, tl::i32 shift,
                      tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 0.f);
  auto r = tl::sum(v * v, 0);
  tl::store(y + shift + offs, v * r, mask);
}

// A scalar store into the row between the load and the reload.
void scalar_store_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::i32 at,
                         tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 1.f);
  auto s = tl::max(v, 0);
  tl::store(x + at, s + 100.f);
  tl::store(out + offs, v * 2.f + s, mask);
}

// Reductions after a scalar store that may land in the row: they read the row copied aside
// where it does (the second version of their loops), and hand their partials to the tree from
// either version.
void store_then_reduce_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::i32 at,
                              tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 0.f);
  tl::store(x + at, 1e6f);
  tl::store(out, tl::sum(v, 0));
  tl::store(out + 1, tl::max(v * 3.f, 0));
  tl::store(out + 2 + offs, v, mask);
}

// RMSNorm over f16 rows (the roofline kernel).
void rmsnorm_kernel(tl::ptr<tl::f16> x, tl::ptr<tl::f16> w, tl::ptr<tl::f16> y, tl::i32 n,
                    tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n;
  auto v = tl::load(x + row * n + cols, mask, 0.0).to<float>();
  auto rstd = tl::rsqrt(tl::sum(v * v, 0) / n + 1e-5f);
  auto g = tl::load(w + cols, mask).to<float>();
  tl::store(y + row * n + cols, (v * rstd * g).to<tritium::half>(), mask);
}

// Loop-carried tensors: `acc` is read only by the group that computes its next value (updated
// in place); `old` is read again after a reduction of its next value (it must not be).
void carry_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto acc = tl::zeros<float>({BLOCK});
  auto old = tl::full<float>({BLOCK}, 1.f);
  auto mix = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto v = tl::load(x + cols, cols < n, 0.f);
    acc = acc * 0.5f + v;
    auto next = old + v;
    auto t = tl::sum(next, 0);
    mix = mix + old * t;
    old = next;
  }
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, acc + mix + old);
}

// Carried tensors that start as constants are not written before the loop (lower_kernel.cpp,
// LazyInit): `acc` is read in place by its group, `seen` by a reduction and a dot (readers that
// fill the buffer in the first iteration), `keep` is yielded unchanged, `h` is f16 and `guarded`
// is read inside an `if` (filled before the loop as before). n <= 0 runs no iteration.
void lazy_carry_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto acc = tl::zeros<float>({BLOCK});
  auto seen = tl::full<float>({BLOCK}, 2.f);
  auto keep = tl::full<float>({BLOCK}, -3.f);
  auto h = tl::full<tritium::half>({BLOCK}, 0.5f);
  auto guarded = tl::full<float>({BLOCK}, 4.f);
  auto sq = tl::zeros<float>({16, 16});
  for (auto off : tl::range(0, n, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto v = tl::load(x + cols, cols < n, 0.f);
    acc += v;
    auto t = tl::sum(seen, 0);
    seen = seen * 0.5f + v + t;
    auto m = tl::reshape(keep, {16, 16});
    sq = tl::dot(m, m, sq);
    h = (h.to<float>() + v).to<tritium::half>();
    tl::if_(off > 0, [&] { guarded = guarded + v; });
    keep = keep;
  }
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, acc + seen + keep + h.to<float>() + guarded + tl::reshape(sq, {BLOCK}));
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v)
    x = std::normal_distribution<float>(0.f, 1.f)(rng);
  return v;
}

// The byte offsets of the scratch buffers in a kernel's unoptimized LLVM IR (the scratch
// arena is the kernel's third argument, %2).
int64_t last_scratch_offset(const std::string& ll) {
  std::regex gep("getelementptr inbounds i8, ptr %2, i64 ([0-9]+)");
  int64_t last = 0;
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), gep); it != std::sregex_iterator();
       ++it)
    last = std::max<int64_t>(last, std::stoll((*it)[1]));
  return last;
}

// Reductions over a row shorter than its block: past the row every lane reads `other`, and
// the CPU backend stops combining that tail once a chunk of it leaves the partials unchanged
// (lower_collective.cpp). Sums of 0 settle after one chunk (but turn -0 partials into +0);
// sums of `one` never do; a max of -inf leaves the partials as they are; a tail that reads its
// lane index is not invariant and is combined lane by lane.
void masked_tail_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::f32 one,
                        tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + tl::program_id(0) * n + offs, mask, 0.f);
  auto w = tl::load(x + tl::program_id(0) * n + offs, mask, -INFINITY);
  auto u = tl::load(x + tl::program_id(0) * n + offs, mask, one);
  auto row = out + tl::program_id(0) * 6;
  tl::store(row, tl::sum(v, 0));
  tl::store(row + 1, tl::sum(v * v, 0));
  tl::store(row + 2, tl::max(w, 0));
  tl::store(row + 3, tl::sum(tl::exp(w - tl::max(w, 0)), 0));
  tl::store(row + 4, tl::sum(u, 0));
  tl::store(row + 5, tl::sum(tl::where(mask, v, offs.to<float>()), 0));
}

} // namespace

TEST_CASE("cpu: a store that overwrites a reloaded row still gives the interpreter's result") {
  constexpr int kBlock = 256;
  for (int n : {256, 200, 20, 0})
    for (int mode = 0; mode < 4; ++mode) { // distinct y; y == x shifted by 0, 1, 3 elements
      int shift = mode == 0 ? 0 : mode == 1 ? 0 : mode == 2 ? 1 : 3;
      auto hx = random_floats(kBlock + 8, 10 + n);
      std::vector<std::vector<float>> got;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto y = d.from_host(std::vector<float>(kBlock + 8, 0.f));
        auto k = tritium::jit(rms_shift_kernel, "rms_shift_kernel");
        if (mode == 0)
          k[{1}](x, y, n, shift, kBlock);
        else
          k[{1}](x, x, n, shift, kBlock);
        got.push_back(x.to_host());
        if (mode == 0)
          got.back() = y.to_host();
      }
      CHECK_MESSAGE(same_bits(got[0], got[1]), "n=" << n << " mode=" << mode);
    }
}

TEST_CASE("cpu: a scalar store into a reloaded row") {
  constexpr int kBlock = 128;
  for (int at : {0, 5, 127, 200}) {
    auto hx = random_floats(256, 3);
    std::vector<std::vector<float>> got;
    for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
      auto x = d.from_host(hx);
      auto out = d.from_host(std::vector<float>(kBlock, 0.f));
      auto k = tritium::jit(scalar_store_kernel, "scalar_store_kernel");
      k[{1}](x, out, 120, at, kBlock);
      got.push_back(out.to_host());
      auto hx2 = x.to_host();
      got.back().insert(got.back().end(), hx2.begin(), hx2.end());
    }
    CHECK_MESSAGE(same_bits(got[0], got[1]), "at=" << at);
  }
}

TEST_CASE("cpu: a row's masked-off tail is combined until it settles, bit for bit") {
  constexpr int kBlock = 4096, kRows = 3;
  for (int n : {4096, 3072, 3000, 4095, 4064, 33, 1})
    for (float fill : {0.f, -0.f, 1.f}) { // 0: random values; -0 and 1: every element that
      auto hx = random_floats(static_cast<size_t>(kRows) * n, 5 + n);
      if (fill != 0.f || std::signbit(fill))
        std::fill(hx.begin(), hx.end(), fill);
      std::vector<std::vector<float>> got;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto out = d.from_host(std::vector<float>(6 * kRows, 7.f));
        auto k = tritium::jit(masked_tail_kernel, "masked_tail");
        k.options({.enable_fp_fusion = false}); // compared bitwise
        k[{kRows}](x, out, n, 1.f, kBlock);
        got.push_back(out.to_host());
      }
      CAPTURE(n);
      CAPTURE(fill);
      // The exp sums (element 3 of each row) within the exp's few ulp; the rest bit for bit.
      for (int r = 0; r < kRows; ++r) {
        float& a = got[0][6 * r + 3];
        float& b = got[1][6 * r + 3];
        CHECK(std::fabs(a - b) <= 1e-5f * std::fabs(a));
        a = b;
      }
      CHECK(same_bits(got[0], got[1]));
    }
}

TEST_CASE("cpu: reductions after a store into their row read the row as it was loaded") {
  constexpr int kBlock = 256;
  for (int n : {256, 200, 20})
    for (int at : {0, 7, 150, 255, 300}) {
      auto hx = random_floats(320, 11 + n);
      std::vector<std::vector<float>> got;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto out = d.from_host(std::vector<float>(kBlock + 2, 0.f));
        tritium::jit(store_then_reduce_kernel, "store_then_reduce")[{1}](x, out, n, at, kBlock);
        got.push_back(out.to_host());
      }
      CHECK_MESSAGE(same_bits(got[0], got[1]), "n=" << n << " at=" << at);
    }
}

TEST_CASE("cpu: softmax and RMSNorm with reloaded rows, in place and not") {
  constexpr int kRows = 5;
  for (int n : {1024, 1000, 33}) {
    const int block = n > 512 ? 1024 : 64;
    for (bool in_place : {false, true}) {
      auto hx = random_floats(kRows * n, 7);
      std::vector<std::vector<float>> got;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto y = d.from_host(std::vector<float>(kRows * n, 0.f));
        auto k = tritium::jit(softmax_kernel, "softmax_kernel");
        if (in_place)
          k[{kRows}](x, x, n, block);
        else
          k[{kRows}](y, x, n, block);
        got.push_back(in_place ? x.to_host() : y.to_host());
      }
      // exp is within a few ulp of the interpreter's (docs/cpu-backend.md): a row read from
      // the wrong memory would be off by far more.
      bool close = got[0].size() == got[1].size();
      for (size_t i = 0; close && i < got[0].size(); ++i)
        close = std::fabs(got[0][i] - got[1][i]) <= 1e-6f * std::fabs(got[0][i]) + 1e-12f;
      CHECK_MESSAGE(close, "softmax n=" << n << " in place=" << in_place);
    }
    auto hx = random_floats(kRows * n, 8), hw = random_floats(n, 9);
    std::vector<tritium::half> x16(hx.begin(), hx.end()), w16(hw.begin(), hw.end());
    std::vector<std::vector<tritium::half>> got;
    for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
      auto x = d.from_host(x16), w = d.from_host(w16);
      auto y = d.from_host(std::vector<tritium::half>(kRows * n));
      auto k = tritium::jit(rmsnorm_kernel, "rmsnorm_kernel");
      k[{kRows}](x, w, y, n, block);
      got.push_back(y.to_host());
    }
    CHECK_MESSAGE(same_bits(got[0], got[1]), "rmsnorm n=" << n);
  }
}

// One program of `kernel(x, out, n, block)` on the interpreter and on the cpu: each one's `out`,
// compiled without fused multiply-adds, for a bitwise comparison.
template <class Kernel>
std::vector<std::vector<float>> one_program_outputs(Kernel kernel, const char* name,
                                                    const std::vector<float>& hx, int n,
                                                    int block) {
  std::vector<std::vector<float>> got;
  for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
    auto x = d.from_host(hx);
    auto out = d.from_host(std::vector<float>(block, 0.f));
    auto k = tritium::jit(kernel, name);
    k.options({.enable_fp_fusion = false});
    k[{1}](x, out, n, block);
    got.push_back(out.to_host());
  }
  return got;
}

TEST_CASE("cpu: loop-carried tensors updated in place where nothing reads the old value") {
  constexpr int kBlock = 64;
  for (int n : {64, 256, 200, 7}) {
    auto hx = random_floats(n, 11);
    auto got = one_program_outputs(carry_kernel, "carry_kernel", hx, n, kBlock);
    CHECK_MESSAGE(same_bits(got[0], got[1]), "n=" << n);
  }
}

TEST_CASE("cpu: carried tensors that start as constants, read by every kind of reader") {
  constexpr int kBlock = 256;
  for (int n : {0, -5, 256, 1000, 7}) {
    auto hx = random_floats(std::max(n, 1), 12);
    auto got = one_program_outputs(lazy_carry_kernel, "lazy_carry_kernel", hx, n, kBlock);
    CHECK_MESSAGE(same_bits(got[0], got[1]), "n=" << n);
  }
}

TEST_CASE("cpu: softmax and RMSNorm keep no copy of the loaded row") {
  auto dir =
      std::filesystem::temp_directory_path() / ("tritium-reload-" + std::to_string(getpid()));
  ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  auto dev = tritium::device("cpu");
  auto x = dev.alloc<float>(4096), y = dev.alloc<float>(4096);
  auto x16 = dev.alloc<tritium::half>(4096), w16 = dev.alloc<tritium::half>(4096);
  auto y16 = dev.alloc<tritium::half>(4096);
  auto softmax = tritium::jit(softmax_kernel, "softmax_no_row_copy");
  auto rms = tritium::jit(rmsnorm_kernel, "rmsnorm_no_row_copy");
  std::string s = softmax.compiled(y, x, 4096, 4096).artifact("ll");
  std::string r = rms.compiled(x16, w16, y16, 4096, 4096).artifact("ll");
  ::unsetenv("TRITIUM_DUMP");
  std::filesystem::remove_all(dir);
  // Softmax buffers exp(x - max) (one row of f32, 16 KiB) and small partial results; the loaded
  // row itself (another 16 KiB) is read again from memory. RMSNorm buffers no row at all.
  CHECK(last_scratch_offset(s) < 2 * 4096 * 4 - 1024);
  CHECK(last_scratch_offset(r) < 4096 * 4);
}
