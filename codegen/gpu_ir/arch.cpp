// The table of known GPU targets. Sources: NVIDIA's CUDA C++ Programming Guide (compute
// capabilities table: shared memory per block, registers, resident threads) and PTX ISA
// release notes (the first PTX version of each target); AMD's CDNA / RDNA ISA references and
// LLVM's AMDGPUUsage (processors, wave sizes, LDS, ISA versions). AMD register and thread
// numbers are filled where nothing yet reads them only when the ISA reference states them.
#include "arch.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <array>

namespace tritium::gpu {
namespace {

using ir::ScalarKind;
using enum Family;

constexpr int KiB = 1024;

// Operand types per unit: mma.sync and wgmma take f16, bf16, tf32 (f32) and 8-bit integers;
// MFMA v1 (gfx908) has f16 but its bf16 instructions are the older 2-K-per-lane ones, not the
// _1k forms the lowering emits (gfx90a+); WMMA f16 and bf16.
constexpr KindSet nvidia_operands{ScalarKind::F16, ScalarKind::BF16, ScalarKind::F32,
                                  ScalarKind::I8, ScalarKind::U8};
constexpr KindSet half_operands{ScalarKind::F16, ScalarKind::BF16};
// CDNA3's MFMA also multiplies its fp8 formats (the fnuz ones: e4m3fnuz, e5m2fnuz), either with
// either (v_mfma_f32_{32x32x16,16x16x32}_{fp8,bf8}_{fp8,bf8}).
constexpr KindSet cdna3_operands{ScalarKind::F16, ScalarKind::BF16, ScalarKind::F8E4B8,
                                 ScalarKind::F8E5B16};
// RDNA4's WMMA also multiplies the OCP fp8 formats (v_wmma_f32_16x16x16_{fp8,bf8}_{fp8,bf8}).
constexpr KindSet rdna4_operands{ScalarKind::F16, ScalarKind::BF16, ScalarKind::F8E4NV,
                                 ScalarKind::F8E5};
// mma.sync of sm_89 and later also multiplies the two OCP fp8 formats, either with either
// (m16n8k32, f32 accumulation; PTX 8.4): its second generation here.
constexpr KindSet ada_operands{ScalarKind::F16, ScalarKind::BF16,   ScalarKind::F32, ScalarKind::I8,
                               ScalarKind::U8,  ScalarKind::F8E4NV, ScalarKind::F8E5};
// sm_90a's wgmma also multiplies the two OCP fp8 formats, either with either (k32).
constexpr KindSet hopper_operands{ScalarKind::F16, ScalarKind::BF16, ScalarKind::F32,
                                  ScalarKind::I8,  ScalarKind::U8,   ScalarKind::F8E4NV,
                                  ScalarKind::F8E5};

constexpr Feature ampere = Feature::AsyncCopy | Feature::Ldmatrix;

// NVIDIA: 64K registers per SM and at most 255 per thread on every target here.
constexpr Arch nvidia(std::string_view name, Family f, int shared_kib, int threads, int sm,
                      MatrixUnit unit, Feature features, int ptx) {
  const int mma_sync = sm >= 89 ? 2 : 1;
  const KindSet operands = unit == MatrixUnit::Wgmma ? hopper_operands
                           : mma_sync == 2           ? ada_operands
                                                     : nvidia_operands;
  return {name,
          Vendor::Nvidia,
          f,
          32,
          shared_kib * KiB,
          65536,
          255,
          threads,
          {unit, unit == MatrixUnit::Wgmma ? 1 : mma_sync, operands},
          features,
          {sm / 10, sm % 10, 0},
          ptx,
          mma_sync};
}

// AMD CDNA: wave64, 64 KiB of LDS per work-group, four SIMDs of 512 registers a lane (VGPRs
// and AGPRs) per CU; `waves` per SIMD.
constexpr Arch cdna(std::string_view name, Family f, int waves, int mfma, KindSet operands,
                    IsaVersion isa) {
  return {name,
          Vendor::Amd,
          f,
          64,
          64 * KiB,
          4 * 512 * 64,
          512,
          waves * 4 * 64,
          {MatrixUnit::Mfma, mfma, operands},
          Feature::BufferOps,
          isa};
}

// AMD RDNA: wave32, 64 KiB of LDS per work-group, 256 VGPRs a thread. The register file per
// CU differs between chips of one family and nothing reads it on RDNA: 0.
constexpr Arch rdna(std::string_view name, Family f, int wmma, Feature features, IsaVersion isa,
                    KindSet operands = half_operands) {
  return {name,
          Vendor::Amd,
          f,
          32,
          64 * KiB,
          0,
          256,
          0,
          {MatrixUnit::Wmma, wmma, operands},
          features | Feature::DppRowXmask | Feature::PermlaneX16, // every RDNA is GFX10+
          isa};
}

// gfx12's buffer resource descriptor (word 3) is laid out unlike gfx11's, which is all that
// resource() in amdgpu.cpp writes; RDNA4 uses global loads until that is written and checked.
constexpr std::array archs{
    nvidia("sm_80", Ampere, 163, 2048, 80, MatrixUnit::MmaSync, ampere, 70),
    nvidia("sm_86", Ampere, 99, 1536, 86, MatrixUnit::MmaSync, ampere, 71),
    // 8.4: the first PTX with mma.sync e4m3/e5m2 (sm_89+); it also has tensormap.replace (8.3,
    // TMA maps built on the device). A CUDA 12.4 driver or later loads it.
    nvidia("sm_89", Ada, 99, 1536, 89, MatrixUnit::MmaSync, ampere, 84),
    nvidia("sm_90", Hopper, 227, 2048, 90, MatrixUnit::MmaSync, ampere | Feature::Stmatrix, 84),
    nvidia("sm_90a", Hopper, 227, 2048, 90, MatrixUnit::Wgmma,
           ampere | Feature::Stmatrix | Feature::Wgmma | Feature::Tma, 84),
    cdna("gfx908", Cdna1, 10, 1, KindSet{ScalarKind::F16}, {9, 0, 8}),
    cdna("gfx90a", Cdna2, 8, 2, half_operands, {9, 0, 10}),
    cdna("gfx940", Cdna3, 8, 3, cdna3_operands, {9, 4, 0}),
    cdna("gfx941", Cdna3, 8, 3, cdna3_operands, {9, 4, 1}),
    cdna("gfx942", Cdna3, 8, 3, cdna3_operands, {9, 4, 2}),
    rdna("gfx1100", Rdna3, 1, Feature::BufferOps, {11, 0, 0}),
    rdna("gfx1101", Rdna3, 1, Feature::BufferOps, {11, 0, 1}),
    rdna("gfx1102", Rdna3, 1, Feature::BufferOps, {11, 0, 2}),
    rdna("gfx1103", Rdna3, 1, Feature::BufferOps, {11, 0, 3}),
    rdna("gfx1150", Rdna35, 1, Feature::BufferOps, {11, 5, 0}),
    rdna("gfx1151", Rdna35, 1, Feature::BufferOps, {11, 5, 1}),
    rdna("gfx1200", Rdna4, 2, Feature::None, {12, 0, 0}, rdna4_operands),
    rdna("gfx1201", Rdna4, 2, Feature::None, {12, 0, 1}, rdna4_operands),
};

} // namespace

const char* family_name(Family f) {
  switch (f) {
  case Ampere:
    return "Ampere";
  case Ada:
    return "Ada";
  case Hopper:
    return "Hopper";
  case Cdna1:
    return "CDNA1";
  case Cdna2:
    return "CDNA2";
  case Cdna3:
    return "CDNA3";
  case Rdna3:
    return "RDNA3";
  case Rdna35:
    return "RDNA3.5";
  case Rdna4:
    return "RDNA4";
  }
  return "?";
}

std::string_view strip_target_features(std::string_view target) {
  return target.substr(0, target.find(':'));
}

const Arch* find_arch(std::string_view target) {
  const std::string_view name = strip_target_features(target);
  for (const Arch& a : archs)
    if (a.name == name)
      return &a;
  return nullptr;
}

const Arch& arch_of(std::string_view target) {
  if (const Arch* a = find_arch(target))
    return *a;
  throw Error(fmt::format("unknown GPU architecture '{}' (known: {})", target, known_arch_list()));
}

const MatrixModel* matrix_model(MatrixUnit unit, int version) {
  for (const Arch& a : archs)
    if (a.matrix.unit == unit && a.matrix.version == version)
      return &a.matrix;
  return nullptr;
}

std::span<const Arch> known_archs() {
  return archs;
}

std::string known_arch_list() {
  std::string s;
  for (const Arch& a : archs)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", a.name);
  return s;
}

} // namespace tritium::gpu
