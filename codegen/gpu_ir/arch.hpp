// The architecture model: every GPU target tritium knows, one table entry each, parsed once
// from the target string. The compiler's targets (codegen/targets/{amdgpu,nvptx}), the
// emulator, the runtimes and the tools read facts here instead of comparing strings, so that
// a new chip of a known family is one entry in arch.cpp. No LLVM here: the AOT launcher
// (libtritium_aot, which has none) links it too.
#pragma once

#include "layout.hpp"

#include <tritium/ir/types.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace tritium::gpu {

enum class Vendor : uint8_t { Nvidia, Amd };

enum class Family : uint8_t {
  Ampere, // sm_80, sm_86
  Ada,    // sm_89
  Hopper, // sm_90, sm_90a
  Cdna1,  // gfx908
  Cdna2,  // gfx90a
  Cdna3,  // gfx940, gfx941, gfx942
  Rdna3,  // gfx1100-gfx1103
  Rdna35, // gfx1150, gfx1151
  Rdna4,  // gfx1200, gfx1201
};
const char* family_name(Family f);

// A set of operand element types, one bit per ir::ScalarKind.
class KindSet {
public:
  constexpr KindSet() = default;
  constexpr KindSet(std::initializer_list<ir::ScalarKind> kinds) {
    for (ir::ScalarKind k : kinds)
      bits_ |= bit(k);
  }
  constexpr bool contains(ir::ScalarKind k) const { return (bits_ & bit(k)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }

private:
  static constexpr uint32_t bit(ir::ScalarKind k) { return uint32_t{1} << static_cast<int>(k); }
  uint32_t bits_ = 0;
};

// A target's matrix unit. The version is the unit's generation: MFMA 1 (CDNA1), 2 (CDNA2), 3
// (CDNA3); WMMA 1 (RDNA3, 3.5), 2 (RDNA4, whose operand and accumulator fragments differ).
// `operands` are the element types its instructions multiply (tf32 is f32 here).
struct MatrixModel {
  MatrixUnit unit = MatrixUnit::None;
  int version = 0;
  KindSet operands;
};

// Hardware features the code generator uses.
enum class Feature : uint32_t {
  None = 0,
  AsyncCopy = 1u << 0,   // cp.async (global -> shared without registers)
  Ldmatrix = 1u << 1,    // ldmatrix
  Wgmma = 1u << 2,       // warpgroup MMA reading shared memory
  Tma = 1u << 3,         // the Tensor Memory Accelerator and mbarriers
  BufferOps = 1u << 4,   // AMD buffer loads and stores (raw buffer resources)
  DppRowXmask = 1u << 5, // DPP row_xmask (GFX10+): any lane XOR within a row of 16
  PermlaneX16 = 1u << 6, // v_permlanex16 (GFX10+): lanes read the other row of 16 (a VALU op)
  Stmatrix = 1u << 7,    // stmatrix (sm_90+): ldmatrix's inverse
};
constexpr Feature operator|(Feature a, Feature b) {
  return static_cast<Feature>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

// AMD: the ISA version gfx<major><minor><stepping> (stepping in hex: gfx90a is 9.0.10), which
// ROCm's device libraries read as __oclc_ISA_version. NVIDIA: the compute capability.
struct IsaVersion {
  int major = 0, minor = 0, stepping = 0;
};

struct Arch {
  std::string_view name; // what LLVM calls the processor: "gfx942", "sm_90a"
  Vendor vendor;
  Family family;
  int warp_size;
  int shared_bytes; // shared memory (LDS) one block may use; NVIDIA: the opt-in maximum
  // The register file as the occupancy estimate sees it: 32-bit registers of one
  // multiprocessor (NVIDIA SM) or compute unit, the most one thread may use, and the most
  // threads resident on one.
  int registers_per_cu;
  int max_registers_per_thread;
  int max_threads_per_cu;
  MatrixModel matrix;
  Feature features;
  IsaVersion isa;
  int ptx_version = 0; // NVIDIA: the lowest PTX ISA (x10) with everything used here; AMD: 0
  // NVIDIA: the generation of mma.sync, the unit itself or, where wgmma is (sm_90a), the one
  // that takes what wgmma cannot (fewer than 64 rows); AMD: 0.
  int mma_sync_version = 0;

  bool is_amd() const { return vendor == Vendor::Amd; }
  bool is_nvidia() const { return vendor == Vendor::Nvidia; }
  bool has(Feature f) const {
    return (static_cast<uint32_t>(features) & static_cast<uint32_t>(f)) != 0;
  }
  // NVIDIA: 10 x major + minor (80, 90); what the CUDA driver reports for a device.
  int sm() const { return 10 * isa.major + isa.minor; }
  // NVIDIA's architecture-specific targets (sm_90a) run only on their own compute capability.
  bool arch_specific() const { return name.ends_with('a') && is_nvidia(); }
};

// The entry for `target`: a known name, with AMD target features ("gfx942:sramecc+:xnack-")
// ignored. Throws tritium::Error naming `target` and every known target.
const Arch& arch_of(std::string_view target);
// The same, or null for an unknown target.
const Arch* find_arch(std::string_view target);
// `target` without AMD feature suffixes: "gfx942:sramecc+:xnack-" -> "gfx942".
std::string_view strip_target_features(std::string_view target);
// The generation `version` of `unit` as the first target that has it describes it; null when
// no known target has it.
const MatrixModel* matrix_model(MatrixUnit unit, int version);
// Every entry, NVIDIA first, each vendor oldest first.
std::span<const Arch> known_archs();
// "sm_80, sm_86, …" for messages.
std::string known_arch_list();

} // namespace tritium::gpu
