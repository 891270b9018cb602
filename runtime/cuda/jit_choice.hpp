// Which of the driver's two assemblies of one PTX kernel to keep, under TRITIUM_CUDA_JIT=auto
// (cuda_backend.cpp).
//
// The driver turns PTX into machine code two ways, and they allocate registers differently:
// its JIT linker (cuLinkAddData) assembles the PTX as relocatable code and hands back a cubin
// that tritium caches on disk (the default); cuModuleLoadData on the PTX assembles it as a
// whole program, as Triton's ptxas does, and only the driver's own cache keeps it. The
// whole-program assembly aims at occupancy: an elementwise kernel in 512-thread blocks gets 40
// registers and three blocks an SM where the linker gives it 122 and one. But at equal
// occupancy the linker's code was as fast or faster (the one-row layer norm at 12288 columns,
// 128 registers either way: 62.7 us linked, 73.7 whole), and more blocks were not always
// faster (GroupNorm 4 -> 6 blocks, 1.08-1.17 x the time). Measured on an H200 (driver 580,
// 2026-11-29, bench/RESULTS.md), this rule over the zoo gave a geometric mean of 0.941 x
// Triton's time against 0.945 linked, and lost 15-18 % on two layer norms; asking the linker
// for two blocks an SM (lower.cpp's min_blocks_per_sm) took the occupancy wins without those
// losses (0.934). So the linker stays the default and this rule serves `auto`, kept for
// measuring (bench/compare/zoo.py --jit-ab): no local memory (spills) first, then the most
// blocks an SM, then at equal occupancy the most registers, then the linker's.
#pragma once

namespace tritium::cuda {

// What the driver reports of one assembly of a kernel.
struct Assembly {
  int blocks = 0;      // blocks an SM at once (registers, shared memory, threads)
  int registers = 0;   // per thread
  int local_bytes = 0; // per thread: spills
};

// Whether the whole-program assembly is kept over the linker's.
inline bool prefer_whole_program(const Assembly& linked, const Assembly& whole) {
  if ((linked.local_bytes == 0) != (whole.local_bytes == 0))
    return whole.local_bytes == 0;
  if (linked.blocks != whole.blocks)
    return whole.blocks > linked.blocks;
  return whole.registers > linked.registers;
}

} // namespace tritium::cuda
