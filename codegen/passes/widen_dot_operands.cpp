// widen_dot_operands: a dot of fp8 operands (ir/dtypes.def's storage floats) reads them as f16,
// which holds every value of every fp8 format exactly, so the product and the f32 sum are the
// interpreter's. The f16 matrix instructions then take them, converted in registers from the
// bytes loaded (the mixed-operand path of int8 weights), at the f16 rate: no target here has
// an fp8 matrix instruction wired yet (sm_89 mma e4m3, sm_90a wgmma e4m3, gfx942 MFMA fp8).
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

namespace tritium::gpu {
namespace {

void widen_block(ir::Function& f, ir::Block& b) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      widen_block(f, *r->block);
    if (op.kind != ir::OpKind::Dot)
      continue;
    for (size_t k = 0; k < 2; ++k) {
      ir::Value* v = op.operands[k];
      if (!v->type.elem.is_storage_float())
        continue;
      ir::Type t = v->type.with_elem(ir::DType(ir::ScalarKind::F16));
      t.layout = v->type.layout;
      ir::Op& cast = insert_op(f, b, i++, ir::OpKind::Cast, {v}, {t}, op.loc);
      op.operands[k] = cast.result();
    }
  }
}

} // namespace

void widen_dot_operands(ir::Function& f, const GpuFeatures&) {
  widen_block(f, f.entry());
}

} // namespace tritium::gpu
