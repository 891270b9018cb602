// The semantics of each matrix instruction the GPU lowering emits, per lane, written from the
// vendors' ISA descriptions of the fragment layouts (NVIDIA PTX ISA "Matrix fragments for
// mma.m16n8k*"; AMD CDNA3, RDNA3 and RDNA4 ISA for v_mfma / v_wmma), independently of
// gpu_ir/layout.cpp. The host emulation (emulate.cpp) runs them, so CI checks the layouts the
// compiler assigns against the hardware's definition without the hardware. No LLVM here.
#pragma once

#include "gpu_ir/matrix.hpp"

#include <cstdint>

namespace tritium::gpu {

// A code naming (unit, operand type, accumulator type) that the emulator's hook receives.
int32_t mma_kind(const MmaInstr& instr);

// 32-bit words one lane passes in (a, then b, then c) and gets back (d).
struct MmaWords {
  int a = 0, b = 0, c = 0, d = 0;
};
MmaWords mma_words(int32_t kind);

// Lane `lane`'s d words for one instruction; `in` holds every lane's input words of the warp
// (or wave), lane i's at in + i * stride.
void emulate_mma(int32_t kind, const uint32_t* in, int stride, int lane, uint32_t* out);

// One operand of wgmma in shared memory, as its descriptor describes it (start address as an
// offset into shared memory, swizzle bytes, K-major or MN-major, leading and stride byte
// offsets).
struct EmuSmemMatrix {
  int64_t offset, swizzle, k_major, lbo, sbo;
};

// This thread's d of one wgmma.mma_async m64nNk16 (f16 or bf16 operands, f32 accumulators):
// `lane` and `warp` (0-3) within the warpgroup, `c` its N/2 accumulators, a and b read from
// `smem` through the canonical layouts.
void emulate_wgmma(int32_t kind, int n, const EmuSmemMatrix& a, const EmuSmemMatrix& b,
                   const uint8_t* smem, int warp, int lane, const float* c, float* d);

// The same with a in registers: lane i of the warp holds its four a words at a + i * stride
// (mma.sync's m16n8k16 a fragment of the warp's 16 rows).
void emulate_wgmma_rs(int32_t kind, int n, const uint32_t* a, int stride, const EmuSmemMatrix& b,
                      const uint8_t* smem, int lane, const float* c, float* d);

} // namespace tritium::gpu
