// The host target description: the only place that knows which machine the CPU backend
// compiles for. Everything else asks it for the triple, the CPU, and the SIMD width.
#pragma once

#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace tritium::cpu {

struct CpuTarget {
  std::string triple;    // e.g. x86_64-pc-linux-gnu, aarch64-unknown-linux-gnu
  std::string cpu;       // e.g. znver3, neoverse-v1
  std::string features;  // +avx2,+fma,… as LLVM spells them
  int vector_bits = 128; // the widest fixed-width vector register LLVM will use
  // A vector math library the loop vectorizer may call for exp/log/sin/cos/pow (glibc's
  // libmvec on x86-64 Linux, loaded into the process); false where there is none.
  bool libmvec = false;
  std::unique_ptr<llvm::TargetMachine> machine;
};

// Describes the machine this process runs on (computed once, then shared).
const CpuTarget& host_target();

} // namespace tritium::cpu
