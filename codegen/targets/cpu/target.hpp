// The host target description: the only place that knows which machine the CPU backend
// compiles for. Everything else asks it for the triple, the CPU, and the SIMD width.
#pragma once

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tritium::cpu {

struct CpuTarget {
  std::string triple;    // e.g. x86_64-pc-linux-gnu, aarch64-unknown-linux-gnu
  std::string cpu;       // e.g. znver3, neoverse-v1
  std::string features;  // +avx2,+fma,… as LLVM spells them
  int vector_bits = 128; // the widest fixed-width vector register LLVM will use
  // The width at which a fused loop whose work is mostly f16 <-> f32 conversions runs fastest
  // (bits; vector_bits on every CPU but those named in target.cpp).
  int f16_convert_bits = 128;
  // The vector math library the loop vectorizer may call for exp/log/sin/cos/pow (glibc's
  // libmvec on x86-64 Linux, loaded into the process), or NoLibrary.
  llvm::TargetLibraryInfoImpl::VectorLibrary vector_library =
      llvm::TargetLibraryInfoImpl::NoLibrary;
  // Vector versions of f32 math functions that LLVM's table for vector_library lacks but the
  // loaded library has: LLVM 19 maps logf to libmvec's 4- and 8-lane functions only (so with
  // 512-bit registers a full-width loop would call logf once per lane), and tanhf, erff, log2f
  // and log1pf, which glibc 2.35 added to libmvec, not at all.
  struct VectorVariant {
    std::string scalar; // the scalar callee: llvm.log.f32, tanhf
    int lanes;
    std::string name; // e.g. _ZGVeN16v_logf
  };
  // Whether f32 `fn` (tanhf) has a vector version here: lower_scalar.cpp then calls it in f32
  // instead of computing in double.
  bool has_vector_variant(const std::string& fn) const;
  std::vector<VectorVariant> vector_variants;
  // The widths (f32 lanes) at which one instruction multiplies by a power of two (ldexp.hpp);
  // exp_f32 scales through it where there are any.
  std::vector<int> ldexp_lanes;
  std::unique_ptr<llvm::TargetMachine> machine;
  // The machine caches subtargets without a lock: whoever optimizes or emits code with it
  // (the JIT's pipeline.cpp, ahead-of-time emit_object.cpp) holds this meanwhile.
  std::unique_ptr<std::mutex> machine_mutex = std::make_unique<std::mutex>();
};

// Describes the machine this process runs on (computed once, then shared).
const CpuTarget& host_target();
// The host's architecture tuned for another CPU of it ("x86-64-v3"): what ahead-of-time kernels
// are compiled for when they must run on machines other than the build's. "" is the host's.
CpuTarget make_cpu_target(const std::string& cpu);

// `m` compiled by `machine` to an object file or assembly text, or nullopt where this LLVM
// cannot emit that kind of file for the target. Code generation rewrites the IR it runs on.
std::optional<std::string> emit_file(llvm::Module& m, llvm::TargetMachine& machine,
                                     llvm::CodeGenFileType type);

} // namespace tritium::cpu
