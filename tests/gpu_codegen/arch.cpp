// The architecture model (codegen/gpu_ir/arch.hpp): parsing target strings, what each target is,
// and that every known target compiles, with the matrix unit its generation has.
#include "../../codegen/gpu_ir/arch.hpp"
#include "../../codegen/gpu/compile.hpp"
#include "../../codegen/targets/emulator/emulate.hpp"
#include "../../tools/sample_kernels.hpp"
#include "compile_util.hpp"
#include "kernels.hpp"

#include <tritium/error.hpp>

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace tritium;
using gpu::MatrixUnit;
using gpu_test::count;
using samples::const_arg;
using samples::ptr_arg;

TEST_CASE("arch: a target string names its table entry, AMD feature suffixes ignored") {
  const gpu::Arch& a = gpu::arch_of("gfx942:sramecc+:xnack-");
  CHECK(a.name == "gfx942");
  CHECK(&a == &gpu::arch_of("gfx942"));
  CHECK(a.family == gpu::Family::Cdna3);
  CHECK(a.isa.major == 9);
  CHECK(a.isa.minor == 4);
  CHECK(a.isa.stepping == 2);
  CHECK(gpu::arch_of("gfx90a:xnack+").isa.stepping == 10); // the hex digit 'a'
  CHECK(gpu::strip_target_features("gfx1100:xnack-") == "gfx1100");
  CHECK(gpu::strip_target_features("sm_90a") == "sm_90a");
  CHECK(gpu::find_arch("gfx1300") == nullptr);

  const gpu::Arch& h = gpu::arch_of("sm_90a");
  CHECK(h.is_nvidia());
  CHECK(h.sm() == 90);
  CHECK(h.arch_specific());
  CHECK(h.has(gpu::Feature::Tma));
  CHECK(h.matrix.unit == MatrixUnit::Wgmma);
  CHECK(h.ptx_version == 84);
  // sm_90a's mma.sync (for what wgmma cannot take) is sm_89's second generation, with fp8.
  CHECK(h.mma_sync_version == 2);
  CHECK(gpu::arch_of("sm_89").matrix.version == 2);
  CHECK(gpu::arch_of("sm_89").matrix.operands.contains(ir::ScalarKind::F8E4NV));
  CHECK_FALSE(gpu::arch_of("sm_80").matrix.operands.contains(ir::ScalarKind::F8E5));
  CHECK(gpu::arch_of("sm_80").mma_sync_version == 1);
  CHECK_FALSE(gpu::arch_of("sm_90").arch_specific());
  CHECK_FALSE(gpu::arch_of("sm_90").has(gpu::Feature::Tma));
  CHECK_FALSE(gpu::arch_of("gfx90a").arch_specific()); // ends in 'a', but AMD
  CHECK(gpu::arch_of("sm_86").max_threads_per_cu == 1536);
  CHECK(gpu::arch_of("sm_86").shared_bytes == 99 * 1024);

  gpu::GpuTarget t;
  t.arch = "gfx1200";
  CHECK(t.is_amdgpu());
  CHECK_FALSE(t.is_nvptx());
  t.arch = "sm_80";
  CHECK(t.is_nvptx());
  t.arch = "gfx";
  CHECK_FALSE(t.is_amdgpu());
}

TEST_CASE("arch: an unknown target's error names it and lists every known target") {
  try {
    gpu::arch_of("gfx1300:xnack-");
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("'gfx1300:xnack-'") != std::string::npos);
    for (const gpu::Arch& a : gpu::known_archs())
      CHECK_MESSAGE(what.find(std::string(a.name)) != std::string::npos, a.name);
  }
  CHECK_THROWS_AS(gpu_test::compile(*samples::sample_kernels().at("vector_add")(), "sm_75"), Error);
}

TEST_CASE("arch: the compiler's target list is the table") {
  auto names = gpu::supported_gpu_archs();
  REQUIRE(names.size() == gpu::known_archs().size());
  for (size_t i = 0; i < names.size(); ++i)
    CHECK(names[i] == gpu::known_archs()[i].name);
}

TEST_CASE("arch: each AMD target's wave size, LDS, matrix unit and its operand types") {
  struct Expect {
    const char* name;
    gpu::Family family;
    int wave;
    MatrixUnit unit;
    int version;
    bool bf16;
    int isa;
  };
  const Expect expect[] = {
      {"gfx908", gpu::Family::Cdna1, 64, MatrixUnit::Mfma, 1, false, 9008},
      {"gfx90a", gpu::Family::Cdna2, 64, MatrixUnit::Mfma, 2, true, 9010},
      {"gfx940", gpu::Family::Cdna3, 64, MatrixUnit::Mfma, 3, true, 9400},
      {"gfx941", gpu::Family::Cdna3, 64, MatrixUnit::Mfma, 3, true, 9401},
      {"gfx942", gpu::Family::Cdna3, 64, MatrixUnit::Mfma, 3, true, 9402},
      {"gfx1100", gpu::Family::Rdna3, 32, MatrixUnit::Wmma, 1, true, 11000},
      {"gfx1101", gpu::Family::Rdna3, 32, MatrixUnit::Wmma, 1, true, 11001},
      {"gfx1102", gpu::Family::Rdna3, 32, MatrixUnit::Wmma, 1, true, 11002},
      {"gfx1103", gpu::Family::Rdna3, 32, MatrixUnit::Wmma, 1, true, 11003},
      {"gfx1150", gpu::Family::Rdna35, 32, MatrixUnit::Wmma, 1, true, 11500},
      {"gfx1151", gpu::Family::Rdna35, 32, MatrixUnit::Wmma, 1, true, 11501},
      {"gfx1200", gpu::Family::Rdna4, 32, MatrixUnit::Wmma, 2, true, 12000},
      {"gfx1201", gpu::Family::Rdna4, 32, MatrixUnit::Wmma, 2, true, 12001},
  };
  int amd = 0;
  for (const gpu::Arch& a : gpu::known_archs())
    amd += a.is_amd();
  CHECK(amd == static_cast<int>(std::size(expect))); // a new AMD entry gets a line here
  for (const Expect& e : expect) {
    CAPTURE(e.name);
    const gpu::Arch& a = gpu::arch_of(e.name);
    CHECK(a.is_amd());
    CHECK(a.family == e.family);
    CHECK(a.warp_size == e.wave);
    CHECK(a.shared_bytes == 64 * 1024);
    CHECK(a.matrix.unit == e.unit);
    CHECK(a.matrix.version == e.version);
    CHECK(a.matrix.operands.contains(ir::ScalarKind::F16));
    CHECK(a.matrix.operands.contains(ir::ScalarKind::BF16) == e.bf16);
    CHECK_FALSE(a.matrix.operands.contains(ir::ScalarKind::F32));
    CHECK(a.isa.major * 1000 + a.isa.minor * 100 + a.isa.stepping == e.isa);
    CHECK(a.ptx_version == 0);
  }
}

TEST_CASE("arch: every known target compiles the samples") {
  for (const gpu::Arch& a : gpu::known_archs())
    for (const char* sample : {"vector_add", "matmul"}) {
      CAPTURE(a.name);
      CAPTURE(sample);
      auto f = samples::sample_kernels().at(sample)();
      gpu::GpuKernelBinary bin;
      REQUIRE_NOTHROW(bin = gpu_test::compile(*f, std::string(a.name)));
      CHECK(bin.warp_size == a.warp_size);
      CHECK(!bin.assembly.empty());
      CHECK(a.is_amd() == !bin.binary.empty()); // an HSACO for AMD, PTX text for NVIDIA
    }
  // The feature suffix a HIP device reports compiles as the bare target.
  auto f = samples::sample_kernels().at("vector_add")();
  CHECK(gpu_test::compile(*f, "gfx942:sramecc+:xnack-").assembly ==
        gpu_test::compile(*f, "gfx942").assembly);
}

std::unique_ptr<ir::Function> dot_kernel(bool bf16) {
  lang::ArgSpec s[] = {ptr_arg(),     ptr_arg(),     ptr_arg(),   const_arg(64),
                       const_arg(64), const_arg(32), const_arg(0)};
  return bf16 ? lang::trace(gpu_test::dot_tile<tl::bf16, float>, "dot_bf16", s)
              : lang::trace(gpu_test::dot_tile<tl::f16, float>, "dot_f16", s);
}

TEST_CASE("arch: gfx908's MFMA takes f16; its bf16 dots run on FMA units") {
  auto f16 = gpu_test::compile(*dot_kernel(false), "gfx908");
  CHECK(count(f16.assembly, "v_mfma_f32_32x32x8f16") > 0);
  auto bf16 = gpu_test::compile(*dot_kernel(true), "gfx908");
  CHECK(count(bf16.assembly, "v_mfma") == 0);
  CHECK(count(*bf16.stage("ir.opt"), "#mma<") == 0);
  // gfx90a has the _1k bf16 instructions.
  CHECK(count(gpu_test::compile(*dot_kernel(true), "gfx90a").assembly,
              "v_mfma_f32_32x32x8bf16_1k") > 0);
}

TEST_CASE("arch: RDNA4 dots use WMMA v2, 8 elements of a and b a lane") {
  for (bool bf16 : {false, true}) {
    CAPTURE(bf16);
    auto v2 = gpu_test::compile(*dot_kernel(bf16), "gfx1200");
    CHECK(count(*v2.stage("ir.opt"), "#mma<wmma_v2") > 0);
    CHECK(count(v2.assembly, "v_wmma_f32_16x16x16") > 0);
    // <8 x half> (<8 x i16> for bf16) operands, against gfx11's 16.
    CHECK(count(*v2.stage("ll"), bf16 ? "<8 x i16>" : "<8 x half>") > 0);
    auto v1 = gpu_test::compile(*dot_kernel(bf16), "gfx1100");
    CHECK(count(*v1.stage("ir.opt"), "#mma<wmma,") > 0);
    CHECK(count(*v1.stage("ll"), bf16 ? "<16 x i16>" : "<16 x half>") > 0);
  }
  CHECK(count(gpu_test::compile(*dot_kernel(false), "gfx1151").assembly, "v_wmma_f32_16x16x16") >
        0);
}

TEST_CASE("arch: a WMMA v2 layout has its own spelling, parses back and is not v1's") {
  auto v2 = gpu::mma_layout(MatrixUnit::Wmma, {2, 2}, {16, 16}, 2);
  CHECK(v2->str() == "#mma<wmma_v2, wpc=[2, 2], instr=[16, 16]>");
  auto back = gpu::parse_layout(v2->str());
  CHECK(back->equals(*v2));
  CHECK_FALSE(back->equals(*gpu::mma_layout(MatrixUnit::Wmma, {2, 2}, {16, 16})));
  CHECK(gpu::mma_layout(MatrixUnit::Wmma, {2, 2}, {16, 16})->str() ==
        "#mma<wmma, wpc=[2, 2], instr=[16, 16]>");
  CHECK_THROWS_AS(gpu::parse_layout("#mma<wmma_v0, wpc=[1, 1], instr=[16, 16]>"), Error);
}

TEST_CASE("arch: the emulator runs a dot on WMMA v2 when asked for generation 2") {
  auto f = dot_kernel(false);
  CompileOptions o;
  o.num_warps = 4;
  CHECK(count(gpu::EmulatedKernel(*f, o, 32, MatrixUnit::Wmma, 2).ir(), "#mma<wmma_v2") > 0);
  CHECK(count(gpu::EmulatedKernel(*f, o, 32, MatrixUnit::Wmma).ir(), "#mma<wmma,") > 0);
}

} // namespace
