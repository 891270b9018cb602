// Layout conversions and shape ops on GPUs: reshape, trans, join and split rename registers
// (no shared memory); conversions that must move data go through shared memory with 16-byte
// vectors on one side and no bank conflicts on either (the plans are checked here bank by
// bank, the kernels' PTX for the instructions that result).
#include "../../codegen/gpu/compile.hpp"
#include "../../codegen/gpu/conversion_plan.hpp"
#include "../../codegen/gpu/layout.hpp"
#include "compile_util.hpp"
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <regex>

namespace {

using namespace tritium;
namespace tl = tritium::tl;
using samples::const_arg;
using samples::int_arg;
using samples::ptr_arg;

using gpu_test::compile;
using gpu_test::count;

// A tile transpose written the ordinary way: a 2-D block loaded, transposed, stored.
void transpose(tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::i32 m, tl::i32 n,
               tl::constexpr_<int> BLOCK) {
  auto rows = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  auto r = tl::expand_dims(rows, 1), c = tl::expand_dims(cols, 0);
  auto mask = (r < m) & (c < n);
  auto tile = tl::load(x + r * n + c, mask);
  auto rt = tl::expand_dims(cols, 1), ct = tl::expand_dims(rows, 0);
  // The mask transposed too (as the zoo's twin of Triton's kernel writes it): recomputed in the
  // store's layout, constant along 16-element runs, so the stores stay 16 bytes wide.
  tl::store(y + rt * m + ct, tl::trans(tile), tl::trans(mask));
}

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
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CAPTURE(c.warp_size);
    auto plan = gpu::plan_conversion(c.from, c.to, c.elem_bytes);
    CHECK(plan.read.vec == c.read_vec);
    CHECK(plan.write.vec == c.write_vec);
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
  auto f = lang::trace(transpose, "transpose", s);
  auto nv = compile(*f, "sm_90", 4);
  const std::string& ptx = nv.assembly;
  // 16-byte global loads and stores, 16-byte shared reads; 2-byte shared writes (the
  // transposition happens there), two barriers.
  CHECK(count(ptx, "ld.global.v4") + count(ptx, "ld.global.nc.v4") == 4);
  CHECK(count(ptx, "st.global.v4") == 4);
  CHECK(count(ptx, "ld.shared.v4") == 4);
  CHECK(count(ptx, "st.shared.b16") + count(ptx, "st.shared.u16") == 32);
  CHECK(count(ptx, "bar.sync") == 2);
  CHECK(nv.shared_bytes == 64 * 64 * 2);
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
