// widen_dot_operands: a dot of fp8 operands (ir/dtypes.def's storage floats) that the target's
// fp8 matrix instruction cannot take reads them as f16, which holds every value of every fp8
// format exactly, so the product and the f32 sum are the interpreter's. The f16 instructions
// then take them, converted in registers from the bytes loaded (the mixed-operand path of int8
// weights), at the f16 rate.
//
// The fp8 instructions wired: sm_90a's wgmma (e4m3 and e5m2, k32), sm_89+'s mma.sync (the same,
// m16n8k32), CDNA3's MFMA (its fnuz formats), RDNA4's WMMA (e4m3 and e5m2). wgmma reads both
// operands from shared memory with K contiguous (it has no transposed form for 8-bit types); the
// pass runs after coalesce so that each operand's layout says which dimension its tile was loaded
// along: a row-major a and a column-major b (K fastest, how Triton's tutorial and cuBLASLt take
// fp8) go to shared memory as loaded and stay fp8; any other operand order is widened rather than
// transposed through registers on its way to shared memory. mma.sync reads its fragments from
// registers in any order, as it does 8-bit integers; a dot wgmma cannot take (fewer than 64 rows)
// goes to it as fp8 too.
#include "gpu_ir/layout.hpp"
#include "gpu_ir/matrix.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

namespace tritium::gpu {
namespace {

// The dimension `v`'s elements are contiguous along in registers, as its layout (from the load
// coalesce planned) says; a transposition's is its source's, swapped. -1: unknown.
int fast_dim(const ir::Value* v) {
  if (v->def && v->def->kind == ir::OpKind::Trans && v->type.rank() == 2) {
    const int d = fast_dim(v->def->operands[0]);
    return d < 0 ? d : 1 - d;
  }
  auto* bl = dynamic_cast<const BlockedLayout*>(v->type.layout.get());
  return bl && bl->order.size() == 2 ? bl->order[0] : -1;
}

// Whether accelerate_matmul will put this fp8 dot on the target's fp8 instruction: the same
// selection (select_mma_instr; for wgmma also wgmma_instr, and both operands' tiles K-major as
// loaded). MFMA and WMMA read their operands from shared memory K-major whatever the load's
// order (the pipeline lays their tiles out so), and need nothing more.
bool native_fp8(const ir::Op& dot, const GpuFeatures& t) {
  const ir::Value *a = dot.operands[0], *b = dot.operands[1], *c = dot.operands[2];
  if (a->type.rank() != 2)
    return false;
  const int64_t m = a->type.shape[0], k = a->type.shape[1], n = b->type.shape[1];
  auto instr = select_mma_instr(t.matrix, a->type.elem, b->type.elem, c->type.elem, "", m, n, k,
                                t.matrix_version);
  if (t.matrix != MatrixUnit::Wgmma)
    return instr.has_value();
  std::vector<int> warps;
  if (instr && wgmma_instr(*instr, m, n, t.num_warps, warps))
    return fast_dim(a) == 1 && fast_dim(b) == 0;
  // What wgmma cannot take goes to mma.sync (accelerate_matmul), fp8 from its second generation.
  return select_mma_instr(MatrixUnit::MmaSync, a->type.elem, b->type.elem, c->type.elem, "", m, n,
                          k, t.mma_sync_version)
      .has_value();
}

void widen_block(ir::Function& f, ir::Block& b, const GpuFeatures& t) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Op& op = *b.ops[i];
    for (auto& r : op.regions)
      widen_block(f, *r->block, t);
    if (op.kind != ir::OpKind::Dot || native_fp8(op, t))
      continue;
    for (size_t k = 0; k < 2; ++k) {
      ir::Value* v = op.operands[k];
      if (!v->type.elem.is_storage_float())
        continue;
      ir::Type ty = v->type.with_elem(ir::DType(ir::ScalarKind::F16));
      ty.layout = v->type.layout;
      ir::Op& cast = insert_op(f, b, i++, ir::OpKind::Cast, {v}, {ty}, op.loc);
      op.operands[k] = cast.result();
    }
  }
}

} // namespace

void widen_dot_operands(ir::Function& f, const GpuFeatures& t) {
  widen_block(f, f.entry(), t);
}

} // namespace tritium::gpu
