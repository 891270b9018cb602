#include "gpu/matrix.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

namespace tritium::gpu {

using ir::DType;
using ir::ScalarKind;

std::optional<MmaInstr> select_mma_instr(MatrixUnit unit, DType a, DType b, DType acc,
                                         const std::string& input_precision, int64_t m, int64_t n,
                                         int64_t k, int version, int instr_m) {
  if (!(a == b) || unit == MatrixUnit::None)
    return std::nullopt;
  const MatrixModel* model = matrix_model(unit, version);
  if (!model)
    throw Error(
        fmt::format("no generation {} of the {} matrix unit", version, matrix_unit_name(unit)));
  if (!model->operands.contains(a.kind))
    return std::nullopt;
  MmaInstr i;
  i.unit = unit;
  i.version = version;
  i.a = i.b = a;
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
    // f16 -> f32 or f16, bf16 -> f32 (m16n8k16); tf32 (k8); s8/u8 -> s32 (k32).
    if (half && (f32_acc || (a.kind == ScalarKind::F16 && acc == a)))
      i.k = 16;
    else if (tf32)
      i.k = 8, i.tf32 = true;
    else if (byte && acc.kind == ScalarKind::I32)
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
    // v_mfma_f32_{32x32x8,16x16x16}{f16,bf16_1k}: four K per lane.
    if (!half || !f32_acc)
      return std::nullopt;
    i.k_width = 4;
    if (m >= 32 && n >= 32 && instr_m != 16)
      i.m = i.n = 32, i.k = 8;
    else
      i.m = i.n = 16, i.k = 16;
    break;
  case MatrixUnit::Wmma:
    // v_wmma_f32_16x16x16_{f16,bf16}. gfx11: 16 K per lane, lanes 16-31 repeat 0-15; gfx12:
    // 8 K per lane, lanes 16-31 hold K 8-15.
    if (!half || !f32_acc)
      return std::nullopt;
    i.m = i.n = 16, i.k = 16, i.k_width = version >= 2 ? 8 : 16;
    break;
  }
  if (m % i.m || n % i.n || k % i.k)
    return std::nullopt;
  return i;
}

} // namespace tritium::gpu
