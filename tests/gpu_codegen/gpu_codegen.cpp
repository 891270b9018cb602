// Golden tests of the GPU compiler (codegen/gpu, codegen/targets/{nvptx,amdgpu}): they compile
// here, without a GPU, and check the code: vectorized global accesses, HSACO metadata, warp
// shuffles in reductions, shared memory for layout conversions; and that every op of the IR
// compiles for gfx90a, gfx942, gfx1100 and sm_90.
#include "../../codegen/gpu/compile.hpp"
#include "../../codegen/gpu_ir/conversion_plan.hpp"
#include "../../codegen/gpu_ir/layout.hpp"
#include "../../codegen/passes/passes.hpp"
#include "compile_util.hpp"
#include "kernels.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace {

using namespace tritium;
namespace tl = tritium::tl;
using samples::const_arg;
using samples::int_arg;
using samples::ptr_arg;

using gpu_test::compile;
using gpu_test::count;

std::unique_ptr<ir::Function> sample(const std::string& name) {
  return samples::sample_kernels().at(name)();
}

// Instructions of the kernel body in AMDGCN assembly (lines starting with an opcode).
int amdgcn_instructions(const std::string& assembly, const std::string& kernel) {
  std::istringstream in(assembly);
  std::string line;
  bool body = false;
  int n = 0;
  std::regex insn(R"(^\s+[sv]_|^\s+(global|buffer|flat|ds|scratch)_)");
  while (std::getline(in, line)) {
    if (line == kernel + ":")
      body = true;
    else if (body && line.rfind(".Lfunc_end", 0) == 0)
      break;
    else if (body && std::regex_search(line, insn))
      ++n;
  }
  return n;
}

int64_t meta_int(const std::string& meta, const std::string& key) {
  std::smatch m;
  std::regex re("\\." + key + ":\\s+(\\d+)");
  REQUIRE_MESSAGE(std::regex_search(meta, m, re), key << " not in metadata:\n" << meta);
  return std::stoll(m[1]);
}

// ptxas accepts the PTX (when the CUDA toolkit is installed; CI machines may not have it).
void check_ptxas(const std::string& ptx, const std::string& arch) {
  const char* env = std::getenv("PTXAS");
  std::string ptxas = env ? env : "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(ptxas))
    return;
  auto dir = std::filesystem::temp_directory_path();
  auto in = dir / fmt::format("tritium-test-{}.ptx", ::getpid());
  std::ofstream(in) << ptx;
  std::string cmd = fmt::format("{} -arch={} {} -o /dev/null 2>&1", ptxas, arch, in.string());
  int rc = std::system(cmd.c_str());
  std::filesystem::remove(in);
  CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << arch);
}

std::vector<std::pair<std::string, std::unique_ptr<ir::Function>>> op_kernels() {
  using lang::trace;
  std::vector<std::pair<std::string, std::unique_ptr<ir::Function>>> k;
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(256)};
    k.emplace_back("float_math", trace(gpu_test::float_math, "float_math", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(1), const_arg(128)};
    k.emplace_back("int_math", trace(gpu_test::int_math, "int_math", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(16), const_arg(32)};
    k.emplace_back("shapes", trace(gpu_test::shapes, "shapes", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), const_arg(32), const_arg(64)};
    k.emplace_back("reductions", trace(gpu_test::reductions, "reductions", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), const_arg(16)};
    k.emplace_back("dots", trace(gpu_test::dots, "dots", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), int_arg(), const_arg(128)};
    k.emplace_back("atomics", trace(gpu_test::atomics, "atomics", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(),     ptr_arg(),     int_arg(),
                         int_arg(), int_arg(), const_arg(64), const_arg(64), const_arg(32)};
    k.emplace_back("gemm_bias_relu", trace(gpu_test::gemm_bias_relu, "gemm_bias_relu", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(128)};
    k.emplace_back("control", trace(gpu_test::control, "control", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),      ptr_arg(),     int_arg(),
                         int_arg(),     int_arg(),      const_arg(64), const_arg(128),
                         const_arg(64), const_arg(132), const_arg(1),  const_arg(1)};
    k.emplace_back("descriptor_gemm", trace(gpu_test::descriptor_gemm, "descriptor_gemm", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), const_arg(16)};
    k.emplace_back("tiny", trace(gpu_test::tiny, "tiny", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), const_arg(16)};
    k.emplace_back("more_dots", trace(gpu_test::more_dots, "more_dots", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(),     ptr_arg(),
                         ptr_arg(), int_arg(), const_arg(256)};
    k.emplace_back("narrow", trace(gpu_test::narrow, "narrow", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(16), const_arg(256)};
    k.emplace_back("scans", trace(gpu_test::scans, "scans", s));
  }
  {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(128)};
    k.emplace_back("externs", trace(gpu_test::externs, "externs", s));
  }
  for (const char* name : {"vector_add", "matmul", "softmax"})
    k.emplace_back(name, sample(name));
  return k;
}

} // namespace

// The coordinate a (register, lane, warp) of a resolved layout holds.
std::vector<int64_t> holds(const gpu::LinearLayout& l, int reg, int lane, int warp) {
  auto c = l.reg_offset(reg);
  for (size_t j = 0; j < l.lane.size(); ++j)
    if (lane >> j & 1)
      for (size_t d = 0; d < c.size(); ++d)
        c[d] |= l.lane[j][d];
  for (size_t j = 0; j < l.warp.size(); ++j)
    if (warp >> j & 1)
      for (size_t d = 0; d < c.size(); ++d)
        c[d] |= l.warp[j][d];
  return c;
}

TEST_CASE("layouts: blocked and slice resolve to registers, lanes and warps") {
  auto l = gpu::blocked_layout({1024}, {0}, 4, 4, 32);
  gpu::LinearLayout d = gpu::resolve(l, {1024});
  CHECK(d.num_regs() == 8); // 1024 / (4 x 32 x 4) = 2 runs of 4
  CHECK(d.lane.size() == 5);
  CHECK(d.warp.size() == 2);
  CHECK(d.reg_offset(3) == std::vector<int64_t>{3});
  CHECK(d.reg_offset(4) == std::vector<int64_t>{512});
  CHECK(holds(d, 1, 1, 1) == std::vector<int64_t>{1 + 4 + 128});
  CHECK(d.contiguous_regs(0) == 4);
  // A tensor smaller than the tile wraps: 64 elements over 128 threads, one each.
  auto w = gpu::resolve(gpu::default_layout({64}, 4, 32), {64});
  CHECK(w.num_regs() == 1);
  CHECK(w.replica_warp_mask() == 2); // warps 0 and 1 hold 64 elements; 2 and 3 repeat them
  auto p = gpu::default_layout({32, 64}, 4, 32);
  auto s = gpu::slice_layout(1, p);
  gpu::LinearLayout ds = gpu::resolve(s, {32});
  gpu::LinearLayout dp = gpu::resolve(p, {32, 1});
  CHECK(ds.num_regs() == dp.num_regs());
  CHECK(ds.replica_lane_mask() == 31); // all 32 lanes ran along the removed dimension
  CHECK_THROWS_AS(gpu::resolve(p, {24, 64}), Error);
}

// The fragment layouts of mma.sync, from the PTX ISA's formulas (groupID = lane / 4,
// threadID_in_group = lane % 4), against what the Mma and DotOperand layouts resolve to.
TEST_CASE("layouts: mma.sync accumulator and operands follow the PTX fragment layouts") {
  auto mma = gpu::mma_layout(gpu::MatrixUnit::MmaSync, {2, 2}, {16, 8});
  auto c = gpu::resolve(mma, {64, 32});
  CHECK(c.num_regs() == 4 * 2 * 2); // 64x32 over 2x2 warps of 16x8: 2x2 tiles of 4 each
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      int64_t row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
      CHECK(holds(c, i, lane, 0) == std::vector<int64_t>{row, col});
      CHECK(holds(c, i, lane, 3) == std::vector<int64_t>{row + 16, col + 8});
    }
  // a, f16 (m16n8k16): a0..a7 = (g, 2t..2t+1), (g+8, ..), (g, 2t+8..), (g+8, 2t+8..).
  auto a = gpu::resolve(gpu::dot_operand_layout(0, mma, 2), {64, 32});
  auto b = gpu::resolve(gpu::dot_operand_layout(1, mma, 2), {32, 32});
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i) {
      int64_t g = lane / 4, t = lane % 4;
      CHECK(holds(a, i, lane, 0) ==
            std::vector<int64_t>{g + 8 * (i / 2 % 2), 2 * t + i % 2 + 8 * (i / 4)});
      // warp 2 is the second along N: the same a, one tile of 16 rows down for warp 1.
      CHECK(holds(a, i, lane, 2) == holds(a, i, lane, 0));
      CHECK(holds(a, i, lane, 1)[0] == holds(a, i, lane, 0)[0] + 16);
      if (i < 4) // b0..b3 = (k = 2t..2t+1, n = g), (2t+8.., g)
        CHECK(holds(b, i, lane, 0) == std::vector<int64_t>{2 * t + i % 2 + 8 * (i / 2), g});
    }
  // tf32 (m16n8k8): a0..a3 = (g, t), (g+8, t), (g, t+4), (g+8, t+4); b0, b1 = (t, g), (t+4, g).
  auto a32 = gpu::resolve(gpu::dot_operand_layout(0, mma, 1), {16, 8});
  auto b32 = gpu::resolve(gpu::dot_operand_layout(1, mma, 1), {8, 8});
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      int64_t g = lane / 4, t = lane % 4;
      CHECK(holds(a32, i, lane, 0) == std::vector<int64_t>{g + 8 * (i % 2), t + 4 * (i / 2)});
      if (i < 2)
        CHECK(holds(b32, i, lane, 0) == std::vector<int64_t>{t + 4 * i, g});
    }
}

TEST_CASE("AxisInfo: the vector add's pointers are contiguous and aligned, its mask constant "
          "over 16") {
  auto f = sample("vector_add");
  auto info = gpu::analyze_axis_info(*f);
  const ir::Op* load = nullptr;
  ir::walk(f->entry(), [&](ir::Op& op) {
    if (op.kind == ir::OpKind::Load && !load)
      load = &op;
  });
  REQUIRE(load);
  const auto& p = info.at(load->operand(0));
  CHECK(p.contiguity[0] == 1024);
  CHECK(p.divisibility[0] == 16);
  CHECK(info.at(load->operand(1)).constancy[0] == 16);
  // Without the % 16 specialization of n, the mask changes every element.
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), int_arg(1), const_arg(1024)};
  auto g = lang::trace(samples::vector_add, "vector_add", s);
  auto gi = gpu::analyze_axis_info(*g);
  ir::walk(g->entry(), [&](ir::Op& op) {
    if (op.kind == ir::OpKind::Load)
      CHECK(gi.at(op.operand(1)).constancy[0] == 1);
  });
}

TEST_CASE("sm_90 and sm_80: the vector add uses 128-bit global loads and stores") {
  auto f = sample("vector_add");
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto bin = compile(*f, arch);
    CHECK(bin.binary.empty());
    CHECK(bin.num_threads == 128);
    CHECK(bin.shared_bytes == 0);
    CHECK(bin.params.size() == 4);
    // x and y: 8 floats per thread each, as predicated 128-bit accesses (the mask is a
    // predicate, not a branch around each access).
    CHECK(count(bin.assembly, "ld.global.v4.b32") == 4);
    CHECK(count(bin.assembly, "st.global.v4.b32") == 2);
    CHECK(count(bin.assembly, "@%p") == 6);
    CHECK(count(bin.assembly, "bra") == 0);
    CHECK(count(bin.assembly, "ld.global.b32") == 0);
    CHECK(bin.assembly.find(fmt::format(".target {}", arch)) != std::string::npos);
    check_ptxas(bin.assembly, arch);
    // Every stage is kept, in pipeline order.
    std::vector<std::string> names;
    for (const auto& [k, v] : bin.stages)
      names.push_back(k);
    CHECK(names == std::vector<std::string>{
                       "ir", "ir.combine", "ir.canonicalize_pointers", "ir.assign_layouts",
                       "ir.coalesce", "ir.widen_dot_operands", "ir.accelerate_matmul",
                       "ir.propagate_mma_layout", "ir.remove_layout_conversions", "ir.hoist_loads",
                       "ir.expand_loads", "ir.pipeline", "ir.carry_ahead",
                       "ir.optimize_dot_operands", "ir.opt", "ll", "ll.opt", "ptx"});
    CHECK(bin.stage("ir.opt")->find("convert_layout") == std::string::npos);
  }
  // Without the alignment specialization the accesses stay scalar.
  lang::ArgSpec s[] = {samples::int_arg(1), ptr_arg(), ptr_arg(), int_arg(), const_arg(1024)};
  s[0].info.divisibility = 4;
  auto g = lang::trace(samples::vector_add, "vector_add", s);
  auto bin = compile(*g, "sm_90");
  CHECK(count(bin.assembly, "ld.global.v4.b32") == 2); // y is still aligned
  CHECK(count(bin.assembly, "ld.global.b32") == 8);    // x: 8 scalar loads per thread
}

TEST_CASE("sm_90: f32 sqrt and / are Triton's fast instructions, sqrt_rn and div_rn IEEE") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(128)};
  auto f = lang::trace(gpu_test::fast_and_rn, "fast_and_rn", s);
  auto bin = compile(*f, "sm_90");
  // One value per thread: one of each.
  CHECK(count(bin.assembly, "sqrt.approx.ftz.f32") == 1);
  CHECK(count(bin.assembly, "sqrt.rn.f32") == 1);
  CHECK(count(bin.assembly, "div.full.f32") == 1);
  CHECK(count(bin.assembly, "div.rn.f32") == 1);
  check_ptxas(bin.assembly, "sm_90");
}

TEST_CASE("sm_90a: atomic adds nobody reads are red instructions, four f32 or eight f16 at once; "
          "float-to-int casts and round are one cvt each") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), ptr_arg(), int_arg()};
  auto f = lang::trace(gpu_test::unread_atomics, "unread_atomics", s);
  auto bin = compile(*f, "sm_90a", 4);
  // 16 x 64 elements over 128 threads: 8 a thread, in runs of 4 f32 (the mask is constant over
  // 16 columns) and of 8 f16.
  CHECK(count(bin.assembly, "red.relaxed.gpu.global.add.v4.f32") == 2);
  CHECK(count(bin.assembly, "red.relaxed.gpu.global.add.noftz.v8.f16") == 1);
  CHECK(count(bin.assembly, "red.relaxed.gpu.global.add.u32") >= 1);
  // The read one keeps atom and its old values.
  CHECK(count(bin.assembly, "atom.global") == 8);
  check_ptxas(bin.assembly, "sm_90a");
  // Before sm_90 (PTX 7.8) red takes one element.
  auto old = compile(*f, "sm_80", 4);
  CHECK(count(old.assembly, "red.relaxed.gpu.global.add.f32") == 8);
  CHECK(count(old.assembly, "red.relaxed.gpu.global.add.v") == 0);
  check_ptxas(old.assembly, "sm_80");

  lang::ArgSpec q[] = {ptr_arg(), ptr_arg(), const_arg(128)};
  auto g = lang::trace(gpu_test::quantize, "quantize", q);
  auto nv = compile(*g, "sm_90a", 4);
  CHECK(count(nv.assembly, "cvt.rzi.s8.f32") == 1);
  CHECK(count(nv.assembly, "add.rz.f32") == 1);
  CHECK(count(nv.assembly, "max.f32") == 0); // no clamping around the cvt
  CHECK(count(nv.assembly, "setp.nan") == 0);
  check_ptxas(nv.assembly, "sm_90a");
}

TEST_CASE("gfx942: vector add with dwordx4 accesses, metadata read back from the HSACO") {
  auto f = sample("vector_add");
  auto bin = compile(*f, "gfx942");
  CHECK(bin.num_threads == 256);
  CHECK(bin.warp_size == 64);
  REQUIRE(bin.binary.size() > 4);
  CHECK(bin.binary[0] == 0x7f);
  CHECK(bin.binary[1] == 'E');
  // Masked accesses become buffer instructions (out-of-range offsets for masked-off lanes):
  // no branches.
  CHECK(count(bin.assembly, "buffer_load_dwordx4") == 2);
  CHECK(count(bin.assembly, "buffer_store_dwordx4") == 1);
  CHECK(count(bin.assembly, "global_load_dword") == 0);
  CHECK(count(bin.assembly, "s_cbranch") == 0);
  const std::string& meta = *bin.stage("hsaco.meta");
  CHECK(meta_int(meta, "wavefront_size") == 64);
  CHECK(meta_int(meta, "kernarg_segment_size") == 28); // 3 pointers + i32, no hidden args used
  CHECK(meta_int(meta, "group_segment_fixed_size") == 0);
  CHECK(meta_int(meta, "private_segment_fixed_size") == 0);
  CHECK(meta_int(meta, "max_flat_workgroup_size") == 256);
  const int vgprs = static_cast<int>(meta_int(meta, "vgpr_count"));
  const int insns = amdgcn_instructions(bin.assembly, "vector_add");
  MESSAGE("gfx942 vector add: " << insns << " instructions, " << vgprs
                                << " VGPRs (Triton 3.6: 22 instructions, 10 VGPRs)");
  // Fewer VGPRs than Triton; more instructions (29: the three buffer descriptors cost SGPR
  // moves). Golden upper bounds, so that a regression shows.
  CHECK(vgprs <= 10);
  CHECK(insns <= 29);
}

TEST_CASE("gfx942: buffers that may exceed 2 GiB get global accesses, not buffer ones") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(), int_arg(), const_arg(1024)};
  s[0].info.range32 = false;
  auto f = lang::trace(samples::vector_add, "vector_add", s);
  auto bin = compile(*f, "gfx942");
  CHECK(count(bin.assembly, "global_load_dwordx4") == 1);
  CHECK(count(bin.assembly, "buffer_load_dwordx4") == 1);
  CHECK(ir::print(*f).find("range32") != std::string::npos);
}

TEST_CASE("gfx1100 (wave32) and gfx90a; code object v4 on request") {
  auto f = sample("vector_add");
  auto b1100 = compile(*f, "gfx1100");
  CHECK(b1100.num_threads == 128);
  CHECK(meta_int(*b1100.stage("hsaco.meta"), "wavefront_size") == 32);
  CHECK(count(b1100.assembly, "buffer_load_b128") == 4);
  MESSAGE("gfx1100 vector add: " << amdgcn_instructions(b1100.assembly, "vector_add")
                                 << " instructions, "
                                 << meta_int(*b1100.stage("hsaco.meta"), "vgpr_count")
                                 << " VGPRs (Triton 3.6: 68 instructions, 20 VGPRs)");
  auto b90a = compile(*f, "gfx90a");
  CHECK(meta_int(*b90a.stage("hsaco.meta"), "wavefront_size") == 64);
  CHECK(count(b90a.assembly, "buffer_load_dwordx4") == 2);
  auto v5 = compile(*f, "gfx942", 4, 5);
  auto v4 = compile(*f, "gfx942", 4, 4);
  CHECK(v5.stage("hsaco.meta")->find("- 1\n  - 2") != std::string::npos); // amdhsa.version 1.2
  CHECK(v4.stage("hsaco.meta")->find("- 1\n  - 1") != std::string::npos); // amdhsa.version 1.1
}

TEST_CASE("sm_90: dot-free kernels ask for 16 warps and two blocks per SM, loops that stream "
          "loads for as many blocks as one trip's registers allow, dots for two blocks") {
  using lang::trace;
  auto min_blocks = [](const std::string& ptx) {
    std::smatch m;
    return std::regex_search(ptx, m, std::regex("\\.minnctapersm (\\d+)")) ? std::stoi(m[1]) : 1;
  };
  auto passes = [&](int block) {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(block)};
    return trace(gpu_test::row_passes, "row_passes", s);
  };
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(1024)};
  auto in_registers = trace(gpu_test::row_in_registers, "row_in_registers", s);
  // No loop: 16 warps' worth, 4 blocks of 4 warps.
  CHECK(min_blocks(compile(*in_registers, "sm_90", 4).assembly) == 4);
  // In 16 warps: two blocks, so that one block's loads overlap the other's math and stores.
  CHECK(min_blocks(compile(*in_registers, "sm_90", 16).assembly) == 2);
  // 1024 halves in 4 warps: a trip keeps 8 f32 accumulators and 4 words loaded a thread, 28
  // registers with the 16 for addresses: 16 blocks of 128 threads (2048 threads, the SM's
  // limit), 12 on sm_89 (1536).
  auto small = passes(1024);
  CHECK(min_blocks(compile(*small, "sm_90", 4).assembly) == 16);
  CHECK(min_blocks(compile(*small, "sm_89", 4).assembly) == 12);
  // 8192 halves in 8 warps: 32 accumulators and 16 words loaded, 64 registers: 4 blocks of 256.
  CHECK(min_blocks(compile(*passes(8192), "sm_90", 8).assembly) == 4);
  // 16384 in 8 warps: 112 registers, 2 blocks, what the 16-warp request asks anyway.
  CHECK(min_blocks(compile(*passes(16384), "sm_90", 8).assembly) == 2);
  // Dots: two blocks (the runtime clamps the request by their shared memory).
  CHECK(min_blocks(compile(*sample("matmul"), "sm_90", 4).assembly) == 2);
  check_ptxas(compile(*small, "sm_90", 4).assembly, "sm_90");
}

TEST_CASE("reductions use warp shuffles, then shared memory across warps") {
  auto f = sample("softmax");
  auto nv = compile(*f, "sm_90");
  CHECK(count(nv.assembly, "shfl.sync.bfly") >= 10); // 5 steps for each of max and sum
  CHECK(nv.assembly.find("bar.sync") != std::string::npos);
  CHECK(nv.shared_bytes > 0);
  CHECK(nv.stage("ir.opt")->find("convert_layout") == std::string::npos);
  check_ptxas(nv.assembly, "sm_90");
  // A wave64 row: DPP within rows of 16 lanes (quad permutations, two shifts by 4 into
  // alternate quads, a rotation by 8; nothing through the LDS unit), then its four rows read by
  // v_readlane (no ds_bpermute across the wave's halves), for each of max and sum.
  auto amd = compile(*f, "gfx942");
  CHECK(amd.assembly.find("ds_bpermute") == std::string::npos);
  CHECK(amd.assembly.find("ds_swizzle") == std::string::npos);
  CHECK(count(amd.assembly, "row_ror:8") == 2);
  CHECK(count(amd.assembly, "row_shl:4") == 2);
  CHECK(count(amd.assembly, "v_readlane_b32") == 8);
  CHECK(amd.assembly.find("s_barrier") != std::string::npos);
  // In 16 warps the partials of the warps are read one a lane and combined by the same
  // exchanges (four more steps a reduction), not all 16 read into every thread.
  auto amd16 = compile(*f, "gfx942", 16);
  CHECK(count(amd16.assembly, "row_ror:8") == 4);
  CHECK(amd16.assembly.find("ds_read_b128") == std::string::npos);
  CHECK(count(amd16.assembly, "ds_read_b32") == 2);
  auto nv16 = compile(*f, "sm_90", 16);
  CHECK(count(nv16.assembly, "shfl.sync.bfly") == 18); // 5 + 4 steps, for each of max and sum
  CHECK(nv16.assembly.find("ld.shared.v4") == std::string::npos);
}

TEST_CASE("an accumulated product is one multiply-add, packed with its like on CDNA") {
  // Each thread's four sums and four sums of squares: the vectorizer packs sums with sums and
  // multiply-adds with multiply-adds (two v_pk_add_f32, two v_pk_fma_f32 a trip), not each sum
  // with its sum of squares (four v_mul_f32 and four v_pk_add_f32).
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(2048)};
  auto f = trace(gpu_test::sum_and_squares, "sum_and_squares", s);
  const std::string amd = compile(*f, "gfx942", 8).assembly;
  // The loop: from the label that a later branch jumps back to, up to that branch.
  std::string loop;
  for (size_t at = amd.find("s_cbranch_scc1 "); at != std::string::npos && loop.empty();
       at = amd.find("s_cbranch_scc1 ", at + 1)) {
    const size_t label = at + 15;
    const std::string name = amd.substr(label, amd.find('\n', label) - label);
    const size_t head = amd.find(name + ":");
    if (head < at)
      loop = amd.substr(head, at - head);
  }
  REQUIRE(!loop.empty());
  CHECK(count(loop, "v_pk_fma_f32") == 2);
  CHECK(count(loop, "v_pk_add_f32") == 2);
  CHECK(count(loop, "v_mul_f32") == 0);
  // Without fusion, no multiply-add.
  tritium::gpu::GpuTarget t;
  t.arch = "gfx942";
  tritium::CompileOptions o;
  o.num_warps = 8;
  o.enable_fp_fusion = false;
  const std::string exact = tritium::gpu::compile_for_gpu(*f, t, o).assembly;
  CHECK(exact.find("fma") == std::string::npos);
}

TEST_CASE("gfx942: a K loop's result is converted after its zero-trip join, next to its stores") {
  // InstCombine folds the epilogue's f32 -> f16 conversion into the join of the loop's result
  // with the accumulator's zero (phi(0, fptrunc acc)): every element converted in the loop's
  // exit block at once, each f16 then holding a VGPR of its own across the join. The
  // conversions move back after the join, where the stores use them.
  auto f = sample("matmul");
  const auto amd = compile(*f, "gfx942", 4);
  const std::string& ll = *amd.stage("ll.opt");
  CHECK(ll.find("fptrunc") != std::string::npos);
  CHECK(ll.find("phi half") == std::string::npos);
  CHECK(ll.find("phi float") != std::string::npos);
}

TEST_CASE("barriers: the first write of shared memory waits for nothing; later ones and the "
          "user's stay") {
  // The user's barrier; the sum's partials stored and read (its barrier before the store orders
  // no earlier shared access: removed); the max's barrier before its store (the sum's partials
  // are read before it: kept) and between its store and read: 4 of 5.
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(1024)};
  auto f = lang::trace(gpu_test::barriers, "barriers", s);
  auto nv = compile(*f, "sm_90", 4);
  CHECK(count(nv.assembly, "bar.sync") == 4);
  check_ptxas(nv.assembly, "sm_90");
  CHECK(count(compile(*f, "gfx942", 4).assembly, "s_barrier") == 4);
  // Without the user's barrier the first one goes too.
  auto softmax = compile(*sample("softmax"), "sm_90");
  CHECK(count(softmax.assembly, "bar.sync") == 3);
  // The barrier before a scalar atomic orders global memory (every thread has read the value
  // before one updates it): it stays with no shared memory in sight.
  lang::ArgSpec c[] = {ptr_arg(), ptr_arg()};
  auto counted = lang::trace(gpu_test::read_then_count, "read_then_count", c);
  const std::string nv_count = compile(*counted, "sm_90").assembly;
  CHECK(nv_count.find("bar.sync") < nv_count.find("atom.global"));
  const std::string amd_count = compile(*counted, "gfx942").assembly;
  CHECK(amd_count.find("s_barrier") < amd_count.find("global_atomic"));
}

TEST_CASE("scans use index shuffles across lanes and shared memory across warps") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(16), const_arg(256)};
  auto f = lang::trace(gpu_test::scans, "scans", s);
  auto nv = compile(*f, "sm_90");
  CHECK(nv.assembly.find("shfl.sync.idx") != std::string::npos);
  CHECK(nv.assembly.find("st.shared") != std::string::npos);
  check_ptxas(nv.assembly, "sm_90");
  auto amd = compile(*f, "gfx942");
  CHECK(amd.assembly.find("ds_bpermute") != std::string::npos);
}

TEST_CASE("matmul on NVIDIA: mma.sync fed by ldmatrix from a cp.async pipeline") {
  auto f = sample("matmul");
  auto nv = compile(*f, "sm_90");
  const std::string& ir = *nv.stage("ir.opt");
  // The operands reach their fragments through shared memory (three stages by default): no
  // conversion is left, the loop carries the accumulator in the mma layout and the epilogue
  // stores from it.
  CHECK(count(ir, "convert_layout") == 0);
  CHECK(count(ir, "local_alloc(") == 2);
  CHECK(ir.find("tensor<3x64x32xf16, #shared") != std::string::npos);
  CHECK(ir.find("#dot_op<0") != std::string::npos);
  CHECK(ir.find("#dot_op<1") != std::string::npos);
  CHECK(nv.shared_bytes == 3 * (64 * 32 + 32 * 64) * 2);
  // 64x32 and 32x64 f16 tiles over 128 threads: two 16-byte copies each per stage.
  CHECK(count(nv.assembly, "cp.async.cg.shared.global") == 2 * 2 * 3);
  CHECK(count(nv.assembly, "cp.async.wait_group") == 2);
  // Per warp (32x32 of the 64x64 tile): a, 2 tiles x 2 k-steps; b, 4 tiles x 2 k-steps in pairs.
  CHECK(count(nv.assembly, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4);
  CHECK(count(nv.assembly, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4);
  // 2 x 4 tiles of m16n8, two k16 steps.
  CHECK(count(nv.assembly, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 16);
  CHECK(nv.assembly.find("fma.rn.f32") == std::string::npos);
  check_ptxas(nv.assembly, "sm_90");
  auto amd = compile(*f, "gfx942", 8);
  CHECK(meta_int(*amd.stage("hsaco.meta"), "private_segment_fixed_size") == 0); // no spills
}

// Triton 3.6 compiled the same kernel and blocks for these targets (DESIGN.md): 128x128x64 with
// 8 warps: gfx942 892 instructions, 151 VGPRs, 48 MFMA, no scratch; gfx1100 3826 instructions,
// 256 VGPRs, 836 bytes of scratch, 96 WMMA. docs/gpu-codegen.md has the table.
TEST_CASE("fp16 GEMM blocks on AMD matrix units: v_mfma on gfx942, v_wmma on gfx1100, no scratch") {
  struct Block {
    int m, n, k, warps;
  };
  for (Block blk : {Block{128, 128, 64, 8}, Block{64, 64, 32, 4}}) {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(),        ptr_arg(),        int_arg(),
                         int_arg(), int_arg(),        int_arg(),        int_arg(),
                         int_arg(), const_arg(blk.m), const_arg(blk.n), const_arg(blk.k)};
    auto f = lang::trace(samples::matmul, "matmul", s);
    for (const char* arch : {"gfx942", "gfx1100"}) {
      CAPTURE(arch);
      CAPTURE(blk.m);
      auto bin = compile(*f, arch, blk.warps);
      const std::string& meta = *bin.stage("hsaco.meta");
      const bool cdna = std::string(arch) == "gfx942";
      // Per k-loop iteration: one instruction per 32x32x8 (16x16x16) tile and K step.
      const int per_instr = cdna ? 32 * 32 * 8 : 16 * 16 * 16;
      const int expected = blk.m * blk.n * blk.k / per_instr / (blk.warps);
      const int found = count(bin.assembly, cdna ? "v_mfma_f32_32x32x8" : "v_wmma_f32_16x16x16");
      CHECK(found == expected);
      CHECK(meta_int(meta, "private_segment_fixed_size") == 0);
      CHECK(meta_int(meta, "vgpr_spill_count") == 0);
      // b's tile, loaded along N, is written with K fastest as pairs of K (each thread loads
      // neighbouring rows), not 16 bits at a time, where a thread's share of it has room
      // (16 of b's elements a thread at 128 x 128 x 64 on 8 warps; 8 at 64 x 64 x 32 on 4).
      if (blk.m == 128) {
        CHECK(count(bin.assembly, cdna ? "ds_write_b16" : "ds_store_b16") == 0);
        CHECK(count(bin.assembly, cdna ? "ds_write_b32" : "ds_store_b32") >= 8);
      }
      // The loop carries 32-bit offsets into a and b (buffers under 2 GiB), not pointers: every
      // access is a buffer instruction (c's masked stores too), masked by an out-of-range
      // offset instead of a branch around it.
      CHECK(count(bin.assembly, "global_load") == 0);
      CHECK(count(bin.assembly, "s_and_saveexec") == 0);
      // A warp's two 32-column halves of b sit 8 KiB apart in the swizzled tile, the swizzle
      // being the same for both: one address, two offsets, read by one instruction a K step.
      if (cdna && blk.m == 128)
        CHECK(count(bin.assembly, "ds_read2st64_b64") >= 8);
      size_t lines = 0;
      for (size_t p = 0; (p = bin.assembly.find("\n\t", p)) != std::string::npos; ++p)
        ++lines;
      MESSAGE(std::string(arch) << " GEMM " << blk.m << "x" << blk.n << "x" << blk.k << ", "
                                << blk.warps << " warps: " << meta_int(meta, "vgpr_count")
                                << " VGPRs, " << found << (cdna ? " MFMA, " : " WMMA, ") << lines
                                << " instructions, " << bin.shared_bytes << " bytes of LDS");
    }
  }
}

TEST_CASE("matmul on sm_90a: wgmma from shared-memory descriptors; blocks wgmma cannot take "
          "(16 rows) run on mma.sync, not on FMA units") {
  struct Block {
    int m, n, k, warps;
    bool wgmma;
  };
  // 128 x 32: 32-column tiles are wgmma's too (m64n32k16), not mma.sync.
  for (Block blk :
       {Block{128, 128, 64, 8, true}, Block{64, 64, 32, 4, true}, Block{128, 32, 64, 4, true},
        Block{16, 32, 256, 4, false}, Block{16, 64, 64, 4, false}}) {
    CAPTURE(blk.m);
    CAPTURE(blk.n);
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(),        ptr_arg(),        int_arg(),
                         int_arg(), int_arg(),        int_arg(),        int_arg(),
                         int_arg(), const_arg(blk.m), const_arg(blk.n), const_arg(blk.k)};
    auto f = lang::trace(samples::matmul, "matmul", s);
    auto nv = compile(*f, "sm_90a", blk.warps);
    CHECK((nv.assembly.find("wgmma.mma_async") != std::string::npos) == blk.wgmma);
    CHECK((nv.assembly.find("mma.sync.aligned.m16n8k16") != std::string::npos) == !blk.wgmma);
    // The final tile goes through shared memory to 16-byte stores (8 halves per thread and
    // row), not 4-byte stores of the accumulator's column pairs.
    CHECK((nv.assembly.find("st.global.v4.b32") != std::string::npos) == blk.wgmma);
    CHECK(nv.assembly.find("cp.async") != std::string::npos);
    CHECK(nv.assembly.find("fma.rn.f32") == std::string::npos);
    check_ptxas(nv.assembly, "sm_90a");
  }
}

TEST_CASE("fp8 dots on mma.sync: sm_89 and sm_90 (PTX 8.4), and sm_90a where wgmma cannot take "
          "the block; sm_80 reads the operands as f16") {
  struct Case {
    const char* arch;
    int bm;
    const char* instr; // the matrix instruction expected
  };
  for (Case c : {Case{"sm_89", 64, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"},
                 Case{"sm_90", 64, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"},
                 Case{"sm_90a", 16, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"},
                 Case{"sm_90a", 64, "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2"},
                 Case{"sm_80", 64, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}}) {
    CAPTURE(c.arch);
    CAPTURE(c.bm);
    lang::ArgSpec s[] = {ptr_arg(),   ptr_arg(),       ptr_arg(),     int_arg(1),    int_arg(1),
                         int_arg(16), const_arg(c.bm), const_arg(64), const_arg(64), const_arg(0)};
    auto f = lang::trace(gpu_test::fp8_gemm<float8e4nv, float8e5>, "fp8_gemm", s);
    auto nv = compile(*f, c.arch, 4);
    INFO(nv.assembly.substr(0, 4000));
    CHECK(nv.assembly.find(c.instr) != std::string::npos);
    // Native fp8 keeps the bytes: no conversion of the operands to f16 on the way (sm_80 has no
    // fp8 conversion instruction; it decodes them in integer arithmetic).
    const bool sm80 = std::string_view(c.arch) == "sm_80";
    if (!sm80)
      CHECK(nv.assembly.find("cvt.rn.f16x2.e4m3x2") == std::string::npos);
    CHECK(nv.assembly.find(sm80 ? ".version 7.0" : ".version 8.4") != std::string::npos);
    check_ptxas(nv.assembly, c.arch);
  }
}

TEST_CASE("sm_90a: a persistent GEMM stores each tile through shared memory, its scratch "
          "counted in the K loop's pipeline budget") {
  lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),      ptr_arg(),       int_arg(),
                       int_arg(),     int_arg(),      const_arg(128),  const_arg(256),
                       const_arg(64), const_arg(132), const_arg(false)};
  auto f = lang::trace(gpu_test::persistent_gemm, "persistent_gemm", s);
  for (int stages : {3, 4}) {
    CAPTURE(stages);
    gpu::GpuTarget t;
    t.arch = "sm_90a";
    CompileOptions o;
    o.num_warps = 8;
    o.num_stages = stages;
    auto nv = gpu::compile_for_gpu(*f, t, o);
    // The tile store inside the tile loop: 16-byte vectors, not the accumulator's pairs.
    CHECK(nv.assembly.find("st.global.v4.b32") != std::string::npos);
    // The pipeline budgets three rings of (128 + 256) x 64 halves and the 128 x 256 tile
    // (swizzled, not padded, in one round: conversion_plan.hpp) in the 227 KiB of an H100 or
    // H200; four rings and the tile would not fit, so four stages become three. The lowering
    // then places the tile in the rings' memory: they are drained after the K loop, before the
    // tile is written (plan_buffers).
    CHECK(nv.shared_bytes == 3 * (128 + 256) * 64 * 2);
    check_ptxas(nv.assembly, "sm_90a");
  }
}

TEST_CASE("pipeline: with flatten, a persistent GEMM's ring is filled once, before the tile "
          "loop, and drained after it") {
  for (bool flatten : {false, true}) {
    CAPTURE(flatten);
    lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),    ptr_arg(),         int_arg(),
                         int_arg(),     int_arg(),    const_arg(64),     const_arg(64),
                         const_arg(32), const_arg(4), const_arg(flatten)};
    auto f = lang::trace(gpu_test::persistent_gemm, "persistent_gemm", s);
    auto g = gpu::prepare_gpu_ir(*f, {4, 32, gpu::MatrixUnit::Wgmma, 3, 227 * 1024}, nullptr);
    // Where the rings and the final drain are: the top level (across tiles) or the tile
    // loop's body (a fresh ring per tile).
    int top_allocs = 0, top_drains = 0, ifs_in_k_loop = 0;
    for (const auto& op : g->entry().ops) {
      top_allocs += op->kind == ir::OpKind::LocalAlloc;
      top_drains += op->kind == ir::OpKind::AsyncWait && op->int_attr("pending") == 0;
    }
    ir::walk(g->entry(), [&](ir::Op& op) {
      const ir::Op* owner = op.parent->parent ? op.parent->parent->parent : nullptr;
      if (op.kind == ir::OpKind::If && owner && owner->kind == ir::OpKind::For)
        ++ifs_in_k_loop; // copies for this tile's next K step, or for the next tile's
    });
    CHECK(top_allocs == (flatten ? 2 : 0));
    CHECK(top_drains == (flatten ? 1 : 0));
    CHECK(ifs_in_k_loop == (flatten ? 1 : 0));
  }
}

TEST_CASE("sm_90a: a dot's a computed in registers (attention's P) is wgmma's a in registers, "
          "not a tile stored to shared memory") {
  lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),     ptr_arg(),    ptr_arg(),
                       const_arg(64), const_arg(64), const_arg(64)};
  auto f = lang::trace(gpu_test::chained_dots, "chained_dots", s);
  auto nv = compile(*f, "sm_90a", 4);
  // The second wgmma's a is four 32-bit registers: "{d...}, {%r.., %r.., %r.., %r..}, desc".
  CHECK(nv.assembly.find("}, {%r") != std::string::npos);
  // q and k go to shared memory (8 KiB each), P does not (it would be 8 KiB more); the
  // final tile's trip to 16-byte stores reuses that memory.
  CHECK(nv.shared_bytes < 3 * 64 * 64 * 2);
  check_ptxas(nv.assembly, "sm_90a");
}

TEST_CASE("sm_90a: attention's p @ v stays in flight into the next iteration, whose q @ k^T "
          "wait completes it; exp2 is one ex2.approx.ftz") {
  lang::ArgSpec s[] = {ptr_arg(),   ptr_arg(),     ptr_arg(),     ptr_arg(),
                       int_arg(16), const_arg(64), const_arg(32), const_arg(64)};
  auto f = lang::trace(gpu_test::attention_loop, "attention_loop", s);
  auto nv = compile(*f, "sm_90a", 4);
  // In the loop: q @ k^T waited for at once, p @ v left running (wait_group 1); after the loop
  // the drain's full wait.
  CHECK(count(nv.assembly, "wgmma.wait_group.sync.aligned 1;") == 1);
  CHECK(count(nv.assembly, "wgmma.wait_group.sync.aligned 0;") == 2);
  CHECK(nv.assembly.find("ex2.approx.ftz.f32") != std::string::npos);
  CHECK(nv.assembly.find("ex2.approx.f32") == std::string::npos);
  check_ptxas(nv.assembly, "sm_90a");
  // With two stages there is no slot to spare for it: every dot is waited for in its iteration.
  CompileOptions o;
  o.num_warps = 4;
  o.num_stages = 2;
  auto two = gpu::compile_for_gpu(*f, gpu::GpuTarget{"sm_90a"}, o);
  CHECK(count(two.assembly, "wgmma.wait_group.sync.aligned 1;") == 0);
}

TEST_CASE("hoist_loads: the epilogue's bias load is issued before the K loop; in its own "
          "layout when that is a few registers, else compact and converted after the loop") {
  auto stage = [](const gpu::GpuKernelBinary& bin, const std::string& key) {
    const std::string* text = bin.stage(key);
    REQUIRE(text != nullptr);
    return *text;
  };
  for (int bn : {64, 256}) {
    CAPTURE(bn);
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(),     ptr_arg(),     int_arg(),
                         int_arg(), int_arg(), const_arg(64), const_arg(bn), const_arg(32)};
    auto f = lang::trace(gpu_test::gemm_bias_relu, "gemm_bias_relu", s);
    auto nv = compile(*f, "sm_90a", 4);
    const std::string ir = stage(nv, "ir.opt");
    const size_t loop = ir.find("= for(");
    REQUIRE(loop != std::string::npos);
    const size_t bias = ir.find(fmt::format("tensor<{}xf32", bn));
    REQUIRE(bias != std::string::npos);
    CHECK(bias < loop); // the first value of the bias's shape: its pointers, before the loop
    const size_t convert = ir.find(fmt::format("convert_layout"), loop);
    if (bn == 64) {
      // 16 registers per thread in the accumulator's columns: moved as it is.
      CHECK(ir.find(fmt::format("tensor<{}xf32, #blocked", bn)) == std::string::npos);
    } else {
      // 64 in the accumulator's columns: read 2 per thread, converted after the loop.
      CHECK(ir.find(fmt::format("tensor<{}xf32, #blocked", bn)) < loop);
      CHECK(convert != std::string::npos);
    }
    // The PTX: the bias's global loads come before the loop's first wgmma.
    const size_t first_load = nv.assembly.find("ld.global");
    CHECK(first_load < nv.assembly.find("wgmma.mma_async"));
    check_ptxas(nv.assembly, "sm_90a");
  }
}

TEST_CASE("enable_fp_fusion: a multiply feeding an add is one fma only when it is on") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), const_arg(128)};
  auto f = lang::trace(gpu_test::mul_add, "mul_add", s);
  for (bool fusion : {true, false}) {
    CAPTURE(fusion);
    gpu::GpuTarget t;
    t.arch = "sm_90";
    CompileOptions o;
    o.enable_fp_fusion = fusion;
    const std::string ptx = gpu::compile_for_gpu(*f, t, o).assembly;
    CHECK((ptx.find("fma.rn.f32") != std::string::npos) == fusion);
    // Unfused, the multiply is mul.rn: ptxas may not fuse it with the add either.
    CHECK((ptx.find("mul.rn.f32") != std::string::npos) == !fusion);
    check_ptxas(ptx, "sm_90");
  }
}

TEST_CASE("every op compiles for gfx90a, gfx942, gfx1100 and sm_90") {
  std::set<ir::OpKind> seen;
  std::string lowered; // the IR lowered for sm_90: where the ops the passes make appear
  for (auto& [name, f] : op_kernels()) {
    ir::walk(f->entry(), [&](ir::Op& op) { seen.insert(op.kind); });
    for (const char* arch : {"gfx90a", "gfx942", "gfx1100", "sm_90"}) {
      if (name == "control" && arch[0] == 'g')
        continue; // device_print: no printf on AMD without ockl (an error, tested below)
      CAPTURE(name);
      CAPTURE(arch);
      gpu::GpuKernelBinary bin;
      if (std::getenv("GPU_TEST_TRACE"))
        fmt::print(stderr, "compiling {} for {}\n", name, arch);
      if (name == "externs" && arch[0] == 's') {
        // Extern functions come from CUDA's libdevice: without the toolkit (CI), the error.
        try {
          bin = compile(*f, arch);
        } catch (const Error& e) {
          CHECK(std::string(e.what()).find("libdevice, which was not found") != std::string::npos);
          continue;
        }
      } else {
        CHECK_NOTHROW(bin = compile(*f, arch));
      }
      CHECK(!bin.assembly.empty());
      if (std::string(arch) == "sm_90") {
        check_ptxas(bin.assembly, arch);
        if (const std::string* ir = bin.stage("ir.opt"))
          lowered += *ir;
      }
    }
    if (name == "descriptor_gemm") { // TMA: sm_90a only
      gpu::GpuKernelBinary bin = compile(*f, "sm_90a", 8);
      check_ptxas(bin.assembly, "sm_90a");
      if (const std::string* ir = bin.stage("ir.opt"))
        lowered += *ir;
    }
  }
  { // local_store: a dequantized weight's tile, written in turns for a dot left in flight
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), ptr_arg(),     ptr_arg(),     int_arg(),
                         int_arg(), int_arg(), const_arg(64), const_arg(64), const_arg(32)};
    auto f = lang::trace(gpu_test::gemm_int8_weights, "gemm_int8_weights", s);
    gpu::GpuKernelBinary bin = compile(*f, "sm_90a", 4);
    check_ptxas(bin.assembly, "sm_90a");
    if (const std::string* ir = bin.stage("ir.opt"))
      lowered += *ir;
  }
  // Ops the passes make (convert_layout, shared memory and async copies) show in the IR they
  // lower.
#define TRITIUM_OP(Kind, name, ...)                                                                \
  CHECK_MESSAGE((seen.count(ir::OpKind::Kind) ||                                                   \
                 lowered.find(std::string(" ") + name + "(") != std::string::npos),                \
                "no GPU test kernel uses op '" << name << "'");
#include <tritium/ir/ops.def>
}

// The text form is complete: every test kernel, as traced and after each GPU pass (layouts of
// every kind on its types), prints, parses back (gpu::parse_layout for the layouts), verifies
// and prints the same; ir::clone gives the same text too.
TEST_CASE("IR with layouts round-trips through the printer and parser after every GPU pass") {
  std::set<std::string> kinds; // layout kinds seen
  auto round_trip = [&](const ir::Function& h, const std::string& stage) {
    CAPTURE(stage);
    std::string text = ir::print(h);
    std::unique_ptr<ir::Function> back;
    REQUIRE_NOTHROW(back = ir::parse(text, gpu::parse_layout));
    CHECK_NOTHROW(ir::verify(*back));
    CHECK(ir::print(*back) == text);
    CHECK(ir::print(*ir::clone(h)) == text);
    for (const char* k : {"#blocked<", "#slice<", "#mma<", "#dot_op<", "#shared<"})
      if (text.find(k) != std::string::npos)
        kinds.insert(k);
  };
  const gpu::GpuFeatures targets[] = {{4, 32, gpu::MatrixUnit::MmaSync, 3},
                                      {4, 64, gpu::MatrixUnit::Mfma, 2},
                                      {8, 32, gpu::MatrixUnit::Wmma, 1},
                                      {4, 32, gpu::MatrixUnit::None, 3}};
  for (auto& [name, f] : op_kernels()) {
    CAPTURE(name);
    round_trip(*f, "traced");
    for (const gpu::GpuFeatures& t : targets)
      gpu::prepare_gpu_ir(*f, t, [&](const std::string& pass, const ir::Function& h) {
        round_trip(
            h, fmt::format("{} ({}, warp {})", pass, gpu::matrix_unit_name(t.matrix), t.warp_size));
      });
  }
  CHECK(kinds.size() == 5); // every layout kind was printed and parsed
}

TEST_CASE("layouts parse back from their text and compare structurally") {
  auto mma = gpu::mma_layout(gpu::MatrixUnit::Mfma, {2, 2}, {32, 32});
  const ir::LayoutPtr layouts[] = {
      gpu::blocked_layout({64, 64}, {1, 0}, 4, 4, 32),
      gpu::slice_layout(1, gpu::default_layout({32, 64}, 8, 64)),
      mma,
      gpu::dot_operand_layout(1, mma, 4),
      gpu::shared_layout(64, 2, {1, 0}),
      gpu::shared_layout(256, 2, {1, 0}, /*atoms=*/true),
  };
  for (const auto& l : layouts) {
    CAPTURE(l->str());
    ir::LayoutPtr back = gpu::parse_layout(l->str());
    REQUIRE(back);
    CHECK(back->str() == l->str());
    CHECK(back->equals(*l));
    CHECK(l->equals(*back));
    CHECK(back != l); // a new object, equal by structure
    for (const auto& other : layouts)
      CHECK(l->equals(*other) == (other == l));
  }
  CHECK_FALSE(gpu::parse_layout("#blocked<spt=[1], tpw=[32], wpc=[4], order=[0]>")
                  ->equals(*gpu::parse_layout("#blocked<spt=[2], tpw=[32], wpc=[4], order=[0]>")));
  CHECK_THROWS_WITH_AS(gpu::parse_layout("#blocked<spt=[1], tpw=[32], order=[0]>"),
                       doctest::Contains("no field 'wpc'"), Error);
  CHECK_THROWS_WITH_AS(gpu::parse_layout("#swirl<1>"),
                       doctest::Contains("unknown layout kind 'swirl'"), Error);
  CHECK_THROWS_WITH_AS(gpu::parse_layout("#mma<tensor_core, wpc=[2, 2], instr=[16, 8]>"),
                       doctest::Contains("unknown matrix unit 'tensor_core'"), Error);
  CHECK_THROWS_WITH_AS(gpu::parse_layout("#blocked<spt=[1, x], tpw=[32], wpc=[4], order=[0]>"),
                       doctest::Contains("'x' is not an integer"), Error);
}

TEST_CASE("NVPTX without libdevice: math from PTX approximations and expansions") {
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(256)};
  auto f = lang::trace(gpu_test::float_math, "float_math", s);
  auto with = compile(*f, "sm_90");
  ::setenv("TRITIUM_NO_LIBDEVICE", "1", 1);
  gpu::GpuKernelBinary without;
  CHECK_NOTHROW(without = compile(*f, "sm_90"));
  ::unsetenv("TRITIUM_NO_LIBDEVICE");
  CHECK(without.assembly.find("ex2.approx") != std::string::npos);
  CHECK(without.assembly.find("__nv_") == std::string::npos);
  check_ptxas(without.assembly, "sm_90");
  if (std::filesystem::exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"))
    CHECK(with.stage("ll.opt")->find("@__nv_") == std::string::npos); // linked and inlined
}

TEST_CASE("TRITIUM_DUMP writes every stage as it is produced") {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("tritium-dump-{}", ::getpid());
  ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  auto f = sample("vector_add");
  compile(*f, "gfx942");
  ::unsetenv("TRITIUM_DUMP");
  for (const char* stage :
       {"ir", "ir.assign_layouts", "ir.coalesce", "ir.remove_layout_conversions", "ir.opt", "ll",
        "ll.opt", "amdgcn", "hsaco.meta", "hsaco"})
    CHECK_MESSAGE(std::filesystem::exists(dir / fmt::format("vector_add.{}", stage)), stage);
  std::filesystem::remove_all(dir);
}

TEST_CASE("gfx942: a ring is one LDS slot at any num_stages; one that does not fit 64 KiB is "
          "dropped with a remark saying why") {
  auto matmul = [](int block_k) {
    lang::ArgSpec s[] = {ptr_arg(), ptr_arg(),      ptr_arg(),      int_arg(),
                         int_arg(), int_arg(),      int_arg(),      int_arg(),
                         int_arg(), const_arg(128), const_arg(128), const_arg(block_k)};
    return lang::trace(samples::matmul, "matmul", s);
  };
  gpu::GpuTarget t;
  t.arch = "gfx942";
  CompileOptions o;
  o.num_warps = 4;
  o.num_stages = 4;
  // 128 x 64 and 64 x 128 f16 tiles: 32 KiB a slot. Without asynchronous copies a tile is
  // stored at the end of the iteration that loads it, so more slots would hide no more latency:
  // four stages take the one slot two do (before: three slots, 96 KiB, cut to three stages).
  auto four = gpu::compile_for_gpu(*matmul(64), t, o);
  CHECK(four.remarks.empty());
  CHECK(four.shared_bytes >= 32768);
  CHECK(four.shared_bytes < 2 * 32768);
  o.num_stages = 2;
  CHECK(gpu::compile_for_gpu(*matmul(64), t, o).shared_bytes == four.shared_bytes);
  // K = 512: 256 KiB a slot, no ring fits; the loop runs unpipelined and says so.
  o.num_stages = 4;
  auto none = gpu::compile_for_gpu(*matmul(512), t, o);
  REQUIRE(none.remarks.size() == 1);
  CHECK(none.remarks[0].find("not pipelined") != std::string::npos);
  CHECK(none.shared_bytes < 32768);
}

TEST_CASE("errors name the kernel") {
  auto f = sample("vector_add");
  try {
    compile(*f, "gfx942", 32); // 32 x 64 = 2048 threads
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("vector_add") != std::string::npos);
    CHECK(std::string(e.what()).find("num_warps") != std::string::npos);
  }
  CHECK_THROWS_AS(compile(*f, "gfx803"), Error);
  // A histogram's 32,768 bins (128 KiB of counters in shared memory) do not fit 64 KiB of LDS.
  lang::ArgSpec bins[] = {ptr_arg(), ptr_arg()};
  auto hist = lang::trace(gpu_test::big_histogram, "big_histogram", bins);
  try {
    compile(*hist, "gfx942");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("big_histogram") != std::string::npos);
    CHECK(std::string(e.what()).find("shared memory") != std::string::npos);
  }
  // A non-power-of-two block is named with its op and line.
  lang::ArgSpec odd[] = {ptr_arg(), ptr_arg(), ptr_arg(), int_arg(), const_arg(1000)};
  try {
    auto g = lang::trace(samples::vector_add, "vector_add", odd);
    compile(*g, "sm_90");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("power of two") != std::string::npos);
  }
  lang::ArgSpec s[] = {ptr_arg(), ptr_arg(), int_arg(), const_arg(128)};
  auto printing = lang::trace(gpu_test::control, "control", s);
  try {
    compile(*printing, "gfx942");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("kernel 'control', op 'print'") != std::string::npos);
    CHECK(std::string(e.what()).find(".hpp:") != std::string::npos); // a source line
    CHECK(std::string(e.what()).find("print") != std::string::npos);
  }
  CHECK(compile(*printing, "sm_90").assembly.find("vprintf") != std::string::npos);
  CHECK_THROWS_AS(compile(*f, "sm_70"), Error);
}

// Tensor-descriptor loads that feed wgmma become TMA copies on sm_90a: a tensor map per
// descriptor in the program's global scratch (one more kernel parameter), box copies that
// complete on one mbarrier per ring slot, no cp.async; elsewhere, and where TMA cannot copy the
// tensor (rows not 16-byte aligned), the same kernel copies through pointers.
TEST_CASE("TMA: descriptor loads feeding wgmma are TMA copies on sm_90a, cp.async elsewhere") {
  auto kernel = [](int64_t stride_div) {
    lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),           ptr_arg(),      int_arg(stride_div),
                         int_arg(16),   int_arg(stride_div), const_arg(128), const_arg(256),
                         const_arg(64), const_arg(132),      const_arg(1),   const_arg(1)};
    return lang::trace(gpu_test::descriptor_gemm, "descriptor_gemm", s);
  };
  auto f = kernel(16);
  gpu::GpuKernelBinary tma = compile(*f, "sm_90a", 8);
  const std::string& ptx = tma.assembly;
  CHECK(ptx.find("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") !=
        std::string::npos);
  CHECK(ptx.find("tensormap.replace.tile.global_address.global") != std::string::npos);
  CHECK(ptx.find("tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%rd") != std::string::npos);
  CHECK(ptx.find("mbarrier.try_wait.parity.shared::cta.b64") != std::string::npos);
  CHECK(ptx.find("mbarrier.arrive.expect_tx.shared::cta.b64") != std::string::npos);
  CHECK(ptx.find("cp.async.cg") == std::string::npos);
  CHECK(ptx.find("wgmma.mma_async") != std::string::npos);
  CHECK(tma.global_scratch_bytes == 2 * 128); // A's and B's maps
  CHECK(tma.params.size() == f->args().size());
  check_ptxas(ptx, "sm_90a");
  // K = 8 x odd: A's rows are 16-byte aligned but not known to be; pointers instead.
  gpu::GpuKernelBinary unaligned = compile(*kernel(4), "sm_90a", 8);
  CHECK(unaligned.assembly.find("cp.async.bulk.tensor") == std::string::npos);
  CHECK(unaligned.assembly.find("cp.async.c") != std::string::npos); // .ca: 8-byte copies
  CHECK(unaligned.global_scratch_bytes == 0);
  // sm_90 (mma.sync): no TMA.
  gpu::GpuKernelBinary sm90 = compile(*f, "sm_90", 8);
  CHECK(sm90.assembly.find("cp.async.bulk.tensor") == std::string::npos);
  CHECK(sm90.global_scratch_bytes == 0);
}
