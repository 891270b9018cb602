// Matrix instructions: which one a dot uses on a target (the accelerate_matmul pass and the
// lowering ask the same function, so they always agree), and its shape. No LLVM here.
#pragma once

#include "gpu_ir/arch.hpp"
#include "gpu_ir/layout.hpp"

#include <tritium/ir/types.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tritium::gpu {

struct MmaInstr {
  MatrixUnit unit = MatrixUnit::None;
  int m = 0, n = 0, k = 0; // one instruction's tile (per warp; Wgmma: per warpgroup)
  ir::DType a, b, acc;     // operand and accumulator element types as the hardware sees them
  bool tf32 = false;       // f32 operands rounded to tf32
  // Consecutive K elements per thread in an operand fragment (DotOperandLayout::k_width).
  int k_width = 1;
  int version = 1; // the unit's generation (MatrixModel::version), which MmaLayout keeps
};

// The instruction generation `version` of `unit` offers for an [m, k] x [k, n] dot(a: a_type,
// b: b_type, acc: acc_type) with `input_precision` ("" when absent), if one fits those shapes
// and the generation multiplies a_type (arch.hpp's MatrixModel::operands: gfx908's MFMA has no
// bf16 instruction the lowering emits); otherwise the dot stays on FMA units. `instr_m` (where
// the unit has instructions of several heights, MFMA's 32 and 16) asks for that one; 0: the
// tallest that fits. The lowering asks for the height its accumulator layout was given.
std::optional<MmaInstr> select_mma_instr(MatrixUnit unit, ir::DType a_type, ir::DType b_type,
                                         ir::DType acc_type, const std::string& input_precision,
                                         int64_t m, int64_t n, int64_t k, int version = 1,
                                         int instr_m = 0);

// wgmma's conditions beyond the element types (16-bit operands or fp8, f32 accumulation, whole
// warpgroups, tiles of 64 rows per warpgroup and 32, 64, 128 or 256 columns or a multiple of
// 64), and the warps' split over the tile ({4 * gm, gn} into `warps`); nullopt where wgmma
// cannot take the dot. (A 32-column tile, attention's BLOCK_N = 32, fell back to mma.sync and
// its transposed operand to registers: 6x slower.)
std::optional<MmaInstr> wgmma_instr(const MmaInstr& in, int64_t m, int64_t n, int num_warps,
                                    std::vector<int>& warps);

} // namespace tritium::gpu
