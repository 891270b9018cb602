// Layout conversions and shape ops on GPUs: reshape, trans, join and split rename registers
// (no shared memory); conversions that must move data go through shared memory with 16-byte
// vectors on one side and no bank conflicts on either (the plans are checked here bank by
// bank, the kernels' PTX for the instructions that result).
#include "../../codegen/gpu/compile.hpp"
#include "../../codegen/gpu_ir/conversion_plan.hpp"
#include "../../codegen/gpu_ir/layout.hpp"
#include "compile_util.hpp"
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <set>
#include <tuple>

namespace {

using namespace tritium;
namespace tl = tritium::tl;
using samples::const_arg;
using samples::int_arg;
using samples::ptr_arg;

using gpu_test::compile;
using gpu_test::count;

// Llama's RoPE on adjacent pairs: (x0, x1) -> (x0 c - x1 s, x0 s + x1 c).
void rope_pairs(tl::ptr<tl::f16> x, tl::ptr<float> cos, tl::ptr<float> sin, tl::ptr<tl::f16> y,
                tl::constexpr_<int> ROWS, tl::constexpr_<int> D) {
  auto row = tl::program_id(0) * ROWS + tl::arange(0, ROWS);
  auto r = tl::expand_dims(row, 1);
  auto offs = r * D + tl::expand_dims(tl::arange(0, D), 0);
  auto half = r * (D / 2) + tl::expand_dims(tl::arange(0, D / 2), 0);
  auto v = tl::cast<float>(tl::load(x + offs));
  auto [x0, x1] = tl::split(tl::reshape(v, {ROWS, D / 2, 2}));
  auto c = tl::load(cos + half), s = tl::load(sin + half);
  auto out = tl::reshape(tl::join(x0 * c - x1 * s, x0 * s + x1 * c), {ROWS, D});
  tl::store(y + offs, tl::cast<tl::f16>(out));
}

void sort_row(tl::ptr<float> x, tl::ptr<float> y, tl::constexpr_<int> N) {
  auto i = tl::arange(0, N);
  tl::store(y + i, tl::sort(tl::load(x + i)));
}

gpu::LinearLayout blocked(std::vector<int64_t> shape, std::vector<int> order, int vec, int warps,
                          int warp_size = 32) {
  return gpu::resolve(gpu::blocked_layout(shape, order, vec, warps, warp_size), shape);
}

} // namespace

TEST_CASE("shape ops: the layouts they make keep every element in its thread and register") {
  auto src = blocked({16, 64}, {1, 0}, 8, 4);
  // trans: register r of the result holds what register r of the operand held.
  auto t = gpu::trans_layout(src, {1, 0});
  for (int r = 0; r < src.num_regs(); ++r) {
    auto a = src.reg_offset(r), b = t.reg_offset(r);
    CHECK(a[0] == b[1]);
    CHECK(a[1] == b[0]);
  }
  // reshape: the same row-major index.
  auto s = gpu::reshape_layout(src, {16, 32, 2});
  for (int r = 0; r < src.num_regs(); ++r) {
    auto a = src.reg_offset(r), b = s.reg_offset(r);
    CHECK(a[0] * 64 + a[1] == (b[0] * 32 + b[1]) * 2 + b[2]);
  }
  // split after that reshape needs no data movement: the pair is in registers.
  REQUIRE(gpu::split_reg_bit(s) == 0);
  auto half = gpu::split_layout(s);
  CHECK(half.shape == std::vector<int64_t>{16, 32});
  // join undoes split.
  CHECK(gpu::join_layout(half) == s);
  // A layout whose last dimension is spread over lanes is made ready for a split.
  auto lanes = blocked({32, 2}, {1, 0}, 1, 1);
  CHECK(gpu::split_reg_bit(lanes) < 0);
  CHECK(gpu::split_reg_bit(gpu::split_ready(lanes)) >= 0);
  // #linear prints and parses back.
  auto l = gpu::linear_layout(t);
  CHECK(gpu::parse_layout(l->str())->equals(*l));
}

TEST_CASE("layout conversions through shared memory: 16-byte vectors, no bank conflicts") {
  struct Case {
    std::string what;
    gpu::LinearLayout from, to;
    int elem_bytes, warp_size, read_vec, write_vec;
    gpu::MatrixAccess matrix = {};
    bool read_matrix = false, write_matrix = false;
  };
  std::vector<Case> cases;
  for (int warps : {4, 8})
    for (int ws : {32, 64}) {
      // A transposed fp16 tile to the store's row-major vectors, as in a transpose kernel.
      auto src = blocked({64, 64}, {1, 0}, 8, warps, ws);
      cases.push_back({"transpose f16", gpu::trans_layout(src, {1, 0}),
                       blocked({64, 64}, {1, 0}, 8, warps, ws), 2, ws, 8, 1});
      auto src32 = blocked({32, 128}, {1, 0}, 4, warps, ws);
      // 4-byte elements: 16-byte reads would leave the writes 3 bank bits for 5 lanes (4-way
      // conflicts); scalar on both sides takes fewer wavefronts.
      cases.push_back({"transpose f32", gpu::trans_layout(src32, {1, 0}),
                       blocked({128, 32}, {1, 0}, 4, warps, ws), 4, ws, 1, 1});
      auto src8 = blocked({64, 64}, {1, 0}, 16, warps, ws);
      cases.push_back({"transpose i8", gpu::trans_layout(src8, {1, 0}),
                       blocked({64, 64}, {1, 0}, 16, warps, ws), 1, ws, 16, 1});
    }
  // An mma.sync accumulator (column pairs) to 16-byte row vectors: GEMM's epilogue.
  auto acc = gpu::resolve(gpu::mma_layout(gpu::MatrixUnit::MmaSync, {2, 2}, {16, 8}), {128, 128});
  cases.push_back({"mma accumulator", acc, blocked({128, 128}, {1, 0}, 8, 4), 2, 32, 8, 2});
  auto wg = gpu::resolve(gpu::mma_layout(gpu::MatrixUnit::Wgmma, {4, 1}, {16, 128}), {64, 128});
  cases.push_back({"wgmma accumulator", wg, blocked({64, 128}, {1, 0}, 8, 4), 2, 32, 8, 2});
  // With stmatrix (sm_90): four 8x8 matrices an instruction, whose 16-byte rows are the reads'
  // vectors; with ldmatrix, the way back.
  const gpu::MatrixAccess both{.write = true, .read = true};
  cases.push_back({"wgmma accumulator, stmatrix", wg, blocked({64, 128}, {1, 0}, 8, 4), 2, 32, 8, 8,
                   both, false, true});
  cases.push_back({"mma accumulator, stmatrix", acc, blocked({128, 128}, {1, 0}, 8, 4), 2, 32, 8, 8,
                   both, false, true});
  cases.push_back({"to an mma accumulator, ldmatrix", blocked({128, 128}, {1, 0}, 8, 4), acc, 2, 32,
                   8, 8, both, true, false});
  // fp32 elements are no matrix instruction's.
  cases.push_back({"fp32 accumulator", wg, blocked({64, 128}, {1, 0}, 4, 4), 4, 32, 4, 2, both});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CAPTURE(c.warp_size);
    auto plan = gpu::plan_conversion(c.from, c.to, c.elem_bytes, c.matrix);
    CHECK(plan.read.vec == c.read_vec);
    CHECK(plan.write.vec == c.write_vec);
    CHECK(plan.read.matrix == c.read_matrix);
    CHECK(plan.write.matrix == c.write_matrix);
    CHECK(gpu::bank_conflicts(plan.write, c.elem_bytes, c.warp_size) == 1);
    CHECK(gpu::bank_conflicts(plan.read, c.elem_bytes, c.warp_size) == 1);
    // Every element has its own place: the offsets of one side are a bijection.
    std::vector<int> hits(static_cast<size_t>(plan.elements), 0);
    const int regs = 1 << plan.write.reg.size(), lanes = 1 << plan.write.lane.size(),
              warps = 1 << plan.write.warp.size();
    auto xor_of = [](const std::vector<int64_t>& b, int bits) {
      int64_t v = 0;
      for (size_t i = 0; i < b.size(); ++i)
        if (bits >> i & 1)
          v ^= b[i];
      return v;
    };
    for (int w = 0; w < warps; ++w)
      for (int l = 0; l < lanes; ++l)
        for (int r = 0; r < regs; ++r) {
          int64_t off =
              xor_of(plan.write.reg, r) ^ xor_of(plan.write.lane, l) ^ xor_of(plan.write.warp, w);
          REQUIRE(off < plan.elements);
          ++hits[static_cast<size_t>(off)];
        }
    int distinct = 0;
    for (int h : hits)
      distinct += h > 0;
    CHECK(distinct == plan.elements);
  }
}

TEST_CASE("sm_90: a tile transpose goes through shared memory once, vectorized and swizzled") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), int_arg(), const_arg(64)};
  auto f = lang::trace(gpu_test::tile_transpose<tl::f16>, "transpose", s);
  auto nv = compile(*f, "sm_90", 4);
  const std::string& ptx = nv.assembly;
  // 16-byte global loads and stores, 16-byte shared reads; 2-byte shared writes (the
  // transposition happens there), one barrier between them (none before the writes: nothing
  // touched shared memory earlier).
  CHECK(count(ptx, "ld.global.v4") + count(ptx, "ld.global.nc.v4") == 4);
  CHECK(count(ptx, "st.global.v4") == 4);
  CHECK(count(ptx, "ld.shared.v4") == 4);
  CHECK(count(ptx, "st.shared.b16") + count(ptx, "st.shared.u16") == 32);
  CHECK(count(ptx, "bar.sync") == 1);
  CHECK(nv.shared_bytes == 64 * 64 * 2);
}

TEST_CASE("gfx942: a tile's rows times a scalar stride are one product and constants, not a "
          "multiply a row") {
  // 64 x 64 halves in 4 warps: a thread's 16 rows of `r * n` are (its row + 4i) * n. Each was
  // a v_mul_lo_u32 (quarter rate), 32 for the load's and the store's addresses; now the rows
  // share one product and add 4i * n, which the scalar unit multiplies.
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(1), int_arg(1), const_arg(64)};
  auto f = lang::trace(gpu_test::tile_transpose<tl::f16>, "transpose", s);
  const std::string amd = compile(*f, "gfx942", 4).assembly;
  CHECK(count(amd, "v_mul_lo_u32") <= 2);
  CHECK(count(amd, "s_mul_i32") >= 16);
}

TEST_CASE("layout conversions larger than a round of scratch go in rounds over the register bits "
          "both layouts share, each element read where it was written") {
  struct Case {
    std::string what;
    gpu::LinearLayout from, to;
    int elem_bytes, rounds;
  };
  std::vector<Case> cases;
  for (int ws : {32, 64}) {
    // 128 x 128 f32 (64 KiB) and f16 (32 KiB) transposes: 4 and 2 rounds of 16 KiB.
    auto src = blocked({128, 128}, {1, 0}, 4, 4, ws);
    cases.push_back({"transpose f32", gpu::trans_layout(src, {1, 0}),
                     blocked({128, 128}, {1, 0}, 4, 4, ws), 4, 4});
    // Vectors of 8 f16 on both sides of a transpose: no register bit in common (Triton's
    // repetitions would take the whole tile); a row bit the writer holds in registers and the
    // reader's warps split.
    auto src16 = blocked({128, 128}, {1, 0}, 8, 8, ws);
    cases.push_back({"transpose f16", gpu::trans_layout(src16, {1, 0}),
                     blocked({128, 128}, {1, 0}, 8, 8, ws), 2, 2});
    // Pairs to 8-vectors along the same rows (a join's result to a store's vectors), f16.
    cases.push_back({"f16 pairs to vectors", blocked({128, 128}, {1, 0}, 2, 4, ws),
                     blocked({128, 128}, {1, 0}, 8, 4, ws), 2, 2});
    // A 16 KiB tile fits one round.
    auto small = blocked({64, 64}, {1, 0}, 4, 4, ws);
    cases.push_back({"transpose f32 64x64", gpu::trans_layout(small, {1, 0}),
                     blocked({64, 64}, {1, 0}, 4, 4, ws), 4, 1});
  }
  auto xor_of = [](const std::vector<int64_t>& b, int bits) {
    int64_t v = 0;
    for (size_t i = 0; i < b.size(); ++i)
      if (bits >> i & 1)
        v ^= b[i];
    return v;
  };
  // The coordinate `l` gives register r of lane `lane`, warp `warp`.
  auto coord = [](const gpu::LinearLayout& l, int r, int lane, int warp) {
    gpu::LinearLayout::Coord c(l.shape.size(), 0);
    auto add = [&](const std::vector<gpu::LinearLayout::Coord>& bases, int bits) {
      for (size_t i = 0; i < bases.size(); ++i)
        if (bits >> i & 1)
          for (size_t d = 0; d < c.size(); ++d)
            c[d] ^= bases[i][d];
    };
    add(l.reg, r);
    add(l.lane, lane);
    add(l.warp, warp);
    return c;
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    // Rounds as on a 64 KiB AMD block (at most 21,845 bytes: 16 KiB for these tiles).
    const int64_t cap = gpu::conversion_round_bytes(65536);
    auto split = gpu::split_conversion(c.from, c.to, c.elem_bytes, cap);
    CHECK(split.rounds() == c.rounds);
    auto plan = gpu::plan_conversion(split.from, split.to, c.elem_bytes);
    if (c.rounds > 1)
      CHECK(plan.elements * c.elem_bytes <= cap);
    CHECK(gpu::conversion_round_scratch(c.from, c.to, c.elem_bytes, 65536) ==
          plan.elements * c.elem_bytes);
    const int lanes = 1 << c.from.lane.size(), warps = 1 << c.from.warp.size();
    // (warp, lane, register of the whole layout) moved, over every round: each exactly once.
    std::set<std::tuple<int, int, int>> written, read;
    for (int t = 0; t < split.rounds(); ++t) {
      // Round t: where each element of the tile lands in scratch, from the writing side.
      std::map<int64_t, gpu::LinearLayout::Coord> at;
      auto [wmask, wvalue] = split.warps_of_round(false, t);
      for (int w = 0; w < warps; ++w)
        for (int l = 0; l < lanes && (w & wmask) == static_cast<int>(wvalue); ++l)
          for (int r = 0; r < split.from.num_regs(); ++r) {
            const int full = split.full_reg(false, t, r);
            CHECK(written.insert({w, l, full}).second);
            int64_t off =
                xor_of(plan.write.reg, r) ^ xor_of(plan.write.lane, l) ^ xor_of(plan.write.warp, w);
            REQUIRE(off < plan.elements);
            auto coord_written = coord(c.from, full, l, w);
            // Replicas (equal coordinates) may share a place; distinct elements may not.
            if (at.count(off))
              CHECK(at[off] == coord_written);
            at[off] = coord_written;
          }
      auto [rmask, rvalue] = split.warps_of_round(true, t);
      for (int w = 0; w < warps; ++w)
        for (int l = 0; l < lanes && (w & rmask) == static_cast<int>(rvalue); ++l)
          for (int r = 0; r < split.to.num_regs(); ++r) {
            const int full = split.full_reg(true, t, r);
            CHECK(read.insert({w, l, full}).second);
            int64_t off =
                xor_of(plan.read.reg, r) ^ xor_of(plan.read.lane, l) ^ xor_of(plan.read.warp, w);
            REQUIRE(at.count(off));
            CHECK(at[off] == coord(c.to, full, l, w));
          }
    }
    CHECK(static_cast<int>(written.size()) == c.from.num_regs() * lanes * warps);
    CHECK(static_cast<int>(read.size()) == c.to.num_regs() * lanes * warps);
  }
}

TEST_CASE("gfx942, sm_90: a 128 x 128 f32 transpose and a 32,768-wide sort take a round of "
          "scratch, a third of the block's shared memory at most, not the tile") {
  lang::ArgSpec t[] = {ptr_arg(), ptr_arg(), int_arg(), int_arg(), const_arg(128)};
  auto transpose = lang::trace(gpu_test::tile_transpose<float>, "transpose", t);
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(32768)};
  auto sort = lang::trace(sort_row, "sort_row", s);
  // gfx942 (64 KiB of LDS): 16 KiB rounds; sm_90 (227 KiB): the 64 KiB tile in one, the
  // 128 KiB sort in two.
  CHECK(compile(*transpose, "gfx942", 4).shared_bytes == 16 * 1024);
  CHECK(compile(*sort, "gfx942", 16).shared_bytes <= 16 * 1024);
  CHECK(compile(*transpose, "sm_90", 4).shared_bytes == 64 * 1024);
  CHECK(compile(*sort, "sm_90", 16).shared_bytes <= 64 * 1024);
}

TEST_CASE("sm_90: RoPE on adjacent pairs (reshape, split, join) moves no data through shared "
          "memory") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), const_arg(16), const_arg(128)};
  auto f = lang::trace(rope_pairs, "rope_pairs", s);
  for (int warps : {4, 8}) {
    CAPTURE(warps);
    auto nv = compile(*f, "sm_90", warps);
    CHECK(count(nv.assembly, ".shared") == 0);
    CHECK(count(nv.assembly, "bar.sync") == 0);
    CHECK(count(nv.assembly, "st.global.v4") > 0);
  }
  for (const char* arch : {"gfx942", "gfx1100"}) {
    CAPTURE(arch);
    auto amd = compile(*f, arch, 4);
    CHECK(count(amd.assembly, "ds_") == 0);
  }
}

TEST_CASE("sm_90a: int8 weights dequantized on their way into wgmma are copied ahead into a "
          "ring of int8 tiles, like the f16 operand") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(),      ptr_arg(),      int_arg(),
                       int_arg(), int_arg(), const_arg(128), const_arg(128), const_arg(64)};
  auto f = lang::trace(gpu_test::gemm_int8_weights, "gemm_int8_weights", s);
  auto nv = compile(*f, "sm_90a", 8);
  const std::string* ir = nv.stage("ir.pipeline");
  REQUIRE(ir);
  // Two rings (a: f16, b: i8), both filled by cp.async; the add folded into the dot.
  CHECK(std::regex_search(*ir, std::regex(R"(local_alloc\(\) : tensor<\d+x64x128xi8)")));
  CHECK(std::regex_search(*ir, std::regex(R"(local_alloc\(\) : tensor<\d+x128x64xf16)")));
  CHECK(count(nv.assembly, "cp.async") >= 2);
  CHECK(count(*nv.stage("ir.combine"), " add(") == count(*nv.stage("ir"), " add(") - 1);
}

TEST_CASE("sm_90: a bitonic sort's pairs move between lanes by xor shuffles, not through shared "
          "memory; only the pairs a warp boundary splits cross it") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(1024)};
  auto f = lang::trace(sort_row, "sort_row", s);
  auto nv = compile(*f, "sm_90", 4);
  // 1024 elements on 4 warps: 3 register bits, 5 lane bits, 2 warp bits. 55 compare-and-swap
  // stages; those at a lane distance shuffle; the 2 warp bits take shared memory.
  CHECK(count(nv.assembly, "shfl.sync.bfly") > 100);
  CHECK(count(nv.assembly, "bar.sync") <= 20);
}

TEST_CASE("gfx1100: a chained dot's transposed WMMA accumulator becomes the next dot's a by one "
          "exchange between the wave's halves, not through LDS") {
  // The layouts: each lane of the accumulator holds every other column of a row; the a
  // operand wants the whole row in each lane (and both halves of the wave alike).
  auto acc = gpu::mma_layout(gpu::MatrixUnit::Wmma, {4, 1}, {16, 16}, 1, true);
  auto a = gpu::dot_operand_layout(0, acc, 16);
  const std::vector<int64_t> shape{64, 64};
  const auto from = gpu::resolve(acc, shape), to = gpu::resolve(a, shape);
  auto steps = gpu::lane_swaps(from, to);
  REQUIRE(steps.has_value());
  REQUIRE(steps->size() == 1);
  CHECK((*steps)[0].first == 4); // lane bit 4: the halves of the wave
  CHECK((*steps)[0].second == gpu::kGatherLane);
  CHECK(gpu::converts_in_registers(from, to));
  // Not transposed (a GEMM's), the row is spread over 16 lanes: that takes shared memory.
  auto plain = gpu::mma_layout(gpu::MatrixUnit::Wmma, {4, 1}, {16, 16}, 1, false);
  CHECK_FALSE(gpu::converts_in_registers(
      gpu::resolve(plain, shape), gpu::resolve(gpu::dot_operand_layout(0, plain, 16), shape)));

  // 64 rows on 4 warps: each warp 16 rows, a lane 16 of P's 32 columns of one row. An
  // iteration's v_permlanex16 (a VALU op): P's 16 halves in 8 pairs, and the last step of each
  // of the 2 row reductions. No ds_swizzle, no LDS round trip for P.
  lang::ArgSpec s[] = {ptr_arg(),   ptr_arg(),     ptr_arg(),     ptr_arg(),
                       int_arg(64), const_arg(64), const_arg(32), const_arg(64)};
  auto f = lang::trace(gpu_test::attention_loop, "attention_loop", s);
  auto amd = compile(*f, "gfx1100", 4);
  CHECK(amd.stage("ir.opt")->find("transposed=1") != std::string::npos);
  CHECK(count(amd.assembly, "v_permlanex16_b32") == 10);
  CHECK(count(amd.assembly, "ds_swizzle") == 0);
  // LDS holds the k and v tiles (32 x 64 f16, 4 KiB each, a ring of two slots), not P.
  CHECK(amd.shared_bytes <= 2 * 2 * 32 * 64 * 2);
}
