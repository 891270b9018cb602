#include "gpu_ir/matrix.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tritium::gpu {

using ir::DType;
using ir::ScalarKind;

std::optional<MmaInstr> select_mma_instr(MatrixUnit unit, DType a, DType b, DType acc,
                                         const std::string& input_precision, int64_t m, int64_t n,
                                         int64_t k, int version, int instr_m) {
  // fp8 operands of two formats meet in one instruction (e4m3 x e5m2); others are one type.
  const bool fp8 = a.is_storage_float() && b.is_storage_float() && a.bits() == 8;
  if ((!(a == b) && !fp8) || unit == MatrixUnit::None)
    return std::nullopt;
  const MatrixModel* model = matrix_model(unit, version);
  if (!model)
    throw Error(
        fmt::format("no generation {} of the {} matrix unit", version, matrix_unit_name(unit)));
  if (!model->operands.contains(a.kind) || !model->operands.contains(b.kind))
    return std::nullopt;
  MmaInstr i;
  i.unit = unit;
  i.version = version;
  i.a = a;
  i.b = b;
  i.acc = acc;
  const bool half = a.kind == ScalarKind::F16 || a.kind == ScalarKind::BF16;
  const bool f32_acc = acc.kind == ScalarKind::F32;
  const bool byte = a.kind == ScalarKind::I8 || a.kind == ScalarKind::U8;
  const bool tf32 =
      a.kind == ScalarKind::F32 && f32_acc && !input_precision.empty() && input_precision != "ieee";
  switch (unit) {
  case MatrixUnit::None:
    return std::nullopt;
  case MatrixUnit::MmaSync:
  case MatrixUnit::Wgmma: {
    // f16 -> f32 or f16, bf16 -> f32 (m16n8k16); tf32 (k8); s8/u8 -> s32 (k32); e4m3/e5m2 ->
    // f32 (k32; the model lists them for wgmma and for mma.sync from sm_89).
    if (half && (f32_acc || (a.kind == ScalarKind::F16 && acc == a)))
      i.k = 16;
    else if (tf32)
      i.k = 8, i.tf32 = true;
    else if (byte && acc.kind == ScalarKind::I32)
      i.k = 32;
    else if (fp8 && f32_acc)
      i.k = 32;
    else
      return std::nullopt;
    i.k_width = 32 / a.bits();
    if (unit == MatrixUnit::MmaSync) {
      i.m = 16, i.n = 8;
    } else {
      i.m = 64;
      i.n = static_cast<int>(std::min<int64_t>(n, 256));
    }
    break;
  }
  case MatrixUnit::Mfma:
    // v_mfma_f32_{32x32x8,16x16x16}{f16,bf16_1k}: four K per lane; CDNA3's fp8
    // v_mfma_f32_{32x32x16,16x16x32}_*8_*8: eight, twice the K.
    if (!(half || fp8) || !f32_acc)
      return std::nullopt;
    i.k_width = fp8 ? 8 : 4;
    if (m >= 32 && n >= 32 && instr_m != 16)
      i.m = i.n = 32, i.k = 2 * i.k_width;
    else
      i.m = i.n = 16, i.k = 4 * i.k_width;
    break;
  case MatrixUnit::Wmma:
    // v_wmma_f32_16x16x16_{f16,bf16}. gfx11: 16 K per lane, lanes 16-31 repeat 0-15; gfx12:
    // 8 K per lane, lanes 16-31 hold K 8-15 (its fp8 forms alike, 8 bytes a lane).
    if (!(half || (fp8 && version >= 2)) || !f32_acc)
      return std::nullopt;
    i.m = i.n = 16, i.k = 16, i.k_width = version >= 2 ? 8 : 16;
    break;
  }
  if (m % i.m || n % i.n || k % i.k)
    return std::nullopt;
  return i;
}

// The warpgroups split the tile into gm x gn blocks. Each wgmma reads its 64 x k slice of a
// and its k x n slice of b from shared memory, so a block of Mw x Nw re-reads b once per 64
// rows and a once per 256 columns: the split that reads least is chosen (rows first on a tie,
// as Triton does). 128 x 256 on 8 warps was 2 x 128-column blocks, 8 m64n128k16 per 64 of K;
// it is now 64-row blocks, 4 m64n256k16: 17 % less shared-memory traffic, the pipe that bound
// the GEMM (Nsight Compute on an H200: shared pipe 79 %, Triton's kernel 86 % at 8 % less
// time).
std::optional<MmaInstr> wgmma_instr(const MmaInstr& in, int64_t m, int64_t n, int num_warps,
                                    std::vector<int>& warps) {
  const bool operands = in.a.bits() == 16 || (in.a.is_storage_float() && in.a.bits() == 8);
  if (in.acc.kind != ir::ScalarKind::F32 || in.tf32 || !operands || num_warps % 4 || m % 64 ||
      (n % 64 && n != 32))
    return std::nullopt;
  const int groups = num_warps / 4;
  int best_gm = 0;
  int64_t best_reads = 0;
  for (int gm = groups; gm >= 1; gm /= 2) {
    const int gn = groups / gm;
    const int64_t mw = m / gm, nw = n / gn;
    if (m % gm || n % gn || mw % 64 || (nw % 64 && nw != 32))
      continue;
    const int64_t instr_n = std::min<int64_t>(256, nw);
    const int64_t reads = (mw / 64) * (nw / instr_n) * (64 * 16 + 16 * instr_n);
    if (!best_gm || reads < best_reads)
      best_gm = static_cast<int>(gm), best_reads = reads;
  }
  if (!best_gm)
    return std::nullopt; // more warpgroups than tiles
  const int gm = best_gm, gn = groups / gm;
  MmaInstr w = in;
  w.n = static_cast<int>(std::min<int64_t>(256, n / gn));
  warps = {4 * gm, gn};
  return w;
}

} // namespace tritium::gpu
