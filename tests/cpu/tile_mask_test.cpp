// 2-D tiles whose innermost loop is split per row where its masks' lanes are known in closed
// form (codegen/targets/cpu/inner_lanes.cpp): every kernel compared with the interpreter bit for
// bit, at ragged shapes, with masks of each supported form and of others, offsets that wrap
// around in i32, and `other` values; and the split seen in the LLVM IR.
#include "compare.hpp"
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::half;
using tritium::testing::DumpStages;
using tritium::testing::same_bits;

namespace {

// Triton's tile transpose: the load's innermost loop runs along rn, the store's along rm.
void transpose_kernel(tl::ptr<half> x, tl::ptr<half> y, tl::i32 M, tl::i32 N,
                      tl::constexpr_<int> B) {
  auto rm = tl::program_id(0) * B + tl::arange(0, B);
  auto rn = tl::program_id(1) * B + tl::arange(0, B);
  auto mask = (rm[{tl::_, tl::None}] < M) && (rn[{tl::None, tl::_}] < N);
  auto v = tl::load(x + rm[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}], mask, 7.0);
  tl::store(y + rn[{tl::_, tl::None}] * M + rm[{tl::None, tl::_}], tl::trans(v), tl::trans(mask));
}

// Each comparison form, and a window [lo, hi) of columns: `N > rn` (>), `rn <= hi - 1` (<=),
// `rn + 1 >= lo + 1` (>= with the lane on the left: not a prefix, left masked), `lo <= rn`.
// The loaded tile is stored whole, so that every lane's `other` shows.
void window_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 M, tl::i32 N, tl::i32 lo, tl::i32 hi,
                   tl::constexpr_<int> FORM, tl::constexpr_<int> B) {
  auto rm = tl::program_id(0) * B + tl::arange(0, B);
  auto rn = tl::program_id(1) * B + tl::arange(0, B);
  auto r = rm[{tl::_, tl::None}];
  auto c = rn[{tl::None, tl::_}];
  auto rows = r < M;
  auto at = r * N + c;
  auto out = y + (tl::program_id(0) * tl::num_programs(1) + tl::program_id(1)) * (B * B) +
             tl::arange(0, B)[{tl::_, tl::None}] * B + tl::arange(0, B)[{tl::None, tl::_}];
  if (FORM == 0) {
    auto m = rows && (N > c);
    tl::store(out, tl::load(x + at, m, -1.f));
  } else if (FORM == 1) {
    auto m = rows && (c <= hi - 1);
    tl::store(out, tl::load(x + at, m && (c < N), -2.f));
  } else if (FORM == 2) {
    auto m = rows && (c + 1 >= lo + 1) && (c < N);
    tl::store(out, tl::load(x + at, m, -3.f));
  } else {
    auto m = rows && (lo <= c) && (c < hi) && (c < N);
    tl::store(out, tl::load(x + at, m, -4.f));
  }
}

// Column offsets shifted by `shift` before they are compared: near INT32_MAX some lanes wrap
// around to negative values, which `< bound` then holds for.
void wrapped_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 shift, tl::i32 bound,
                    tl::constexpr_<int> B) {
  auto r = tl::arange(0, B)[{tl::_, tl::None}];
  auto c = tl::arange(0, B)[{tl::None, tl::_}];
  auto m = (c + shift < bound) && (r < B);
  tl::store(y + r * B + c, tl::load(x + r * B + c, m, 5.f));
}

// A [4, 16, 32] block of i32 permuted to [4, 32, 16] (the CPU copies such a read through
// registers, transpose_copy.cpp) and a [16, 64] f32 tile transposed after arithmetic.
void permute_kernel(tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::ptr<float> f, tl::ptr<float> g) {
  auto b = tl::arange(0, 4)[{tl::_, tl::None, tl::None}];
  auto r = tl::arange(0, 16)[{tl::None, tl::_, tl::None}];
  auto c = tl::arange(0, 32)[{tl::None, tl::None, tl::_}];
  auto v = tl::load(x + b * 512 + r * 32 + c);
  auto t = tl::permute(v * 3, {0, 2, 1});
  auto r2 = tl::arange(0, 16)[{tl::None, tl::None, tl::_}];
  auto c2 = tl::arange(0, 32)[{tl::None, tl::_, tl::None}];
  tl::store(y + b * 512 + c2 * 16 + r2, t);
  auto i = tl::arange(0, 16)[{tl::_, tl::None}];
  auto j = tl::arange(0, 64)[{tl::None, tl::_}];
  auto w = tl::load(f + i * 64 + j);
  auto i2 = tl::arange(0, 16)[{tl::None, tl::_}];
  auto j2 = tl::arange(0, 64)[{tl::_, tl::None}];
  tl::store(g + j2 * 16 + i2, tl::trans(w * 2.f));
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  std::vector<float> v(n);
  for (auto& x : v)
    x = u(rng);
  return v;
}

} // namespace

TEST_CASE("cpu: a 2-D tile transpose at ragged shapes is the interpreter's, lane for lane") {
  for (Device dev : tritium::testing::test_devices()) {
    if (dev.name() == "interpreter")
      continue;
    for (auto [M, N] : {std::pair{64, 64}, {130, 70}, {1, 97}, {97, 1}, {33, 200}}) {
      CAPTURE(M);
      CAPTURE(N);
      auto hx = random_floats(size_t(M) * N, 3);
      std::vector<half> h(hx.begin(), hx.end());
      std::vector<half> want, got;
      for (Device d : {tritium::testing::interpreter(), dev}) {
        auto x = d.from_host(h);
        auto y = d.alloc<half>(h.size());
        auto k = tritium::jit(transpose_kernel, "tile_mask_transpose");
        k[{tritium::cdiv(M, 32), tritium::cdiv(N, 32)}](x, y, M, N, 32);
        (want.empty() ? want : got) = y.to_host();
      }
      CHECK(same_bits(want, got));
    }
  }
}

TEST_CASE("cpu: 2-D masks of every comparison form, and `other`, are the interpreter's") {
  const int M = 45, N = 77, B = 16;
  const int gm = tritium::cdiv(M, B), gn = tritium::cdiv(N, B);
  auto hx = random_floats(size_t(M) * N, 5);
  for (Device dev : tritium::testing::test_devices()) {
    if (dev.name() == "interpreter")
      continue;
    for (int form = 0; form < 4; ++form)
      for (auto [lo, hi] : {std::pair{0, 77}, {5, 40}, {17, 18}, {-3, 100}, {50, 20}}) {
        CAPTURE(form);
        CAPTURE(lo);
        CAPTURE(hi);
        std::vector<float> want, got;
        for (Device d : {tritium::testing::interpreter(), dev}) {
          auto x = d.from_host(hx);
          auto y = d.alloc<float>(size_t(gm) * gn * B * B);
          auto k = tritium::jit(window_kernel, "tile_mask_window");
          k[{gm, gn}](x, y, M, N, lo, hi, form, B);
          (want.empty() ? want : got) = y.to_host();
        }
        CHECK(same_bits(want, got));
      }
  }
}

TEST_CASE("cpu: a 2-D mask whose offsets wrap around in i32 is the interpreter's") {
  const int B = 32;
  auto hx = random_floats(size_t(B) * B, 9);
  for (Device dev : tritium::testing::test_devices()) {
    if (dev.name() == "interpreter")
      continue;
    for (auto [shift, bound] : {std::pair{INT_MAX - 10, INT_MAX},
                                {INT_MAX - 40, 0},
                                {INT_MIN, INT_MIN + 7},
                                {-20, 0},
                                {3, 20}}) {
      CAPTURE(shift);
      CAPTURE(bound);
      std::vector<float> want, got;
      for (Device d : {tritium::testing::interpreter(), dev}) {
        auto x = d.from_host(hx);
        auto y = d.alloc<float>(hx.size());
        auto k = tritium::jit(wrapped_kernel, "tile_mask_wrapped");
        k[{1}](x, y, shift, bound, B);
        (want.empty() ? want : got) = y.to_host();
      }
      CHECK(same_bits(want, got));
    }
  }
}

TEST_CASE("cpu: tiles permuted in registers (i32 3-D, f32 2-D) are the interpreter's") {
  std::vector<int32_t> hx(4 * 16 * 32);
  for (size_t i = 0; i < hx.size(); ++i)
    hx[i] = static_cast<int32_t>(i * 2654435761u);
  auto hf = random_floats(16 * 64, 11);
  for (Device dev : tritium::testing::test_devices()) {
    if (dev.name() == "interpreter")
      continue;
    std::vector<int32_t> want_i, got_i;
    std::vector<float> want_f, got_f;
    for (Device d : {tritium::testing::interpreter(), dev}) {
      auto x = d.from_host(hx);
      auto y = d.alloc<int32_t>(hx.size());
      auto f = d.from_host(hf);
      auto g = d.alloc<float>(hf.size());
      tritium::jit(permute_kernel, "tile_mask_permute")[{1}](x, y, f, g);
      (want_i.empty() ? want_i : got_i) = y.to_host();
      (want_f.empty() ? want_f : got_f) = g.to_host();
    }
    CHECK(same_bits(want_i, got_i));
    CHECK(same_bits(want_f, got_f));
  }
}

TEST_CASE("cpu: a transposed tile's rows load and store without per-lane branches") {
  std::string ir;
  {
    DumpStages dump("tritium-tile-mask-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<half>(256 * 256), y = dev.alloc<half>(256 * 256);
    ir = tritium::jit(transpose_kernel, "tile_mask_transpose_ir")
             .compiled(x, y, 256, 256, 64)
             .artifact("ll.opt");
  }
  REQUIRE(!ir.empty());
  // The rows' leading lanes: whole vectors of f16 loaded and stored without masks.
  CHECK(std::regex_search(ir, std::regex(R"(load <\d+ x half>)")));
  CHECK(std::regex_search(ir, std::regex(R"(store <\d+ x half>)")));
  // No buffer holds the 2-D mask (it is recomputed where read): no i8 vector stores.
  CHECK(!std::regex_search(ir, std::regex(R"(store <\d+ x i8>)")));
  // The tile is transposed in registers, and the load's rows ahead are prefetched.
  CHECK(std::regex_search(ir, std::regex(R"(shufflevector <\d+ x (float|i32)>)")));
  CHECK(std::regex_search(ir, std::regex(R"(call void @llvm.prefetch)")));
}
