// accelerate_matmul: every dot the target's matrix unit can compute gets the unit's accumulator
// layout (MmaLayout) and its operands the matching register fragments (DotOperandLayout), with
// conversions around it. An accumulator carried by a loop is carried in the accumulator layout,
// so that the loop body converts nothing but the operands; remove_layout_conversions then
// folds what is left (and moves elementwise epilogues into the accumulator layout).
#include "gpu_ir/layout.hpp"
#include "gpu_ir/matrix.hpp"
#include "passes/passes.hpp"
#include "passes/rewrite.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>

namespace tritium::gpu {
namespace {

// Warps over the output tile: warp tiles as square as the shape allows (balanced operand
// fragments per warp); warps beyond the tiles replicate along M.
std::vector<int> square_warps(const MmaInstr& in, int64_t m, int64_t n, int num_warps) {
  int wm = 1, wn = 1;
  if (in.unit == MatrixUnit::Wgmma)
    wm = 4; // a warpgroup computes 64 rows, 16 per warp
  const int64_t tm = in.unit == MatrixUnit::Wgmma ? 16 : in.m;
  while (wm * wn < num_warps) {
    const int64_t tiles_m = m / (tm * wm), tiles_n = n / (int64_t{in.n} * wn);
    const bool m_first = m / wm >= n / wn;
    if (tiles_m >= 2 && (m_first || tiles_n < 2))
      wm *= 2;
    else if (tiles_n >= 2)
      wn *= 2;
    else
      wm *= 2;
  }
  return {wm, wn};
}

// Warps over the output tile of a dot whose a is read by `a_dots` dots of its block and whose
// b by `b_dots` (the fused MLP's x feeds its gate and up projections): the split that reads
// the fewest operand elements a warp per K step, m / wm + n / wn with a shared operand's
// fragments counted once for all its dots (x's 128 x 64 tile against two 64 x 128 weights on 8
// warps: [2, 4] reads 64 / 2 + 32 where [4, 2] reads 32 / 2 + 64). Among equals, the squarest.
std::vector<int> warps_for(const MmaInstr& in, int64_t m, int64_t n, int num_warps, int a_dots,
                           int b_dots) {
  std::vector<int> best = square_warps(in, m, n, num_warps);
  // RDNA3's WMMA keeps each fragment in both halves of the wave (8 registers a lane) and the
  // fused MLP's prefill tile already holds 256 VGPRs there: [2, 4] measured worse (gfx1100:
  // 148 -> 284 B of scratch, main loop 414 -> 510 instructions), so it keeps the square split.
  if ((a_dots == 1 && b_dots == 1) || (in.unit == MatrixUnit::Wmma && in.version < 2))
    return best;
  auto cost = [&](int wm, int wn) {
    return static_cast<double>(m / wm) / a_dots + static_cast<double>(n / wn) / b_dots;
  };
  double best_cost = cost(best[0], best[1]);
  for (int wm = 1; wm <= num_warps; wm *= 2) {
    const int wn = num_warps / wm;
    // Every warp its own tiles: no split that replicates.
    if (m < int64_t{in.m} * wm || n < int64_t{in.n} * wn)
      continue;
    if (cost(wm, wn) < best_cost) {
      best = {wm, wn};
      best_cost = cost(wm, wn);
    }
  }
  return best;
}

// Whether `v` is computed elementwise from another dot's result (attention's P): then it is
// in that dot's accumulator registers already, and as wgmma's a in registers costs a renaming.
// (An a computed from loaded data, as the fused MLP's x * w, goes through shared memory either
// way, and the swizzled tile wgmma reads from there is the cheaper path.)
bool from_dot(const ir::Value* v, int depth = 0) {
  const ir::Op* d = v->def;
  if (!d || depth > 16)
    return false;
  if (d->kind == ir::OpKind::Dot)
    return depth > 0;
  if (d->kind != ir::OpKind::ConvertLayout && d->kind != ir::OpKind::Broadcast &&
      !ir::is_elementwise(d->kind))
    return false;
  for (const ir::Value* o : d->operands)
    if (from_dot(o, depth + 1))
      return true;
  return false;
}

// Whether another dot of the same block is computed from this one's result or feeds its
// operands (attention's Q·Kᵀ, softmax, P·V), as Triton's chained-dot test. Such dots all place
// their warps along M: each row of the first's result then lives in one warp, so the softmax's
// row reductions never cross warps and its result is the second dot's operand with no trip
// through shared memory; and the second's accumulator, rescaled by a row vector every
// iteration, shares the first's rows. (Split [4, 1] and [2, 2] on gfx942, the f32 accumulator
// went through LDS twice an iteration and attention at HEAD_DIM 128 did not fit in 64 KiB.)
bool chained(const ir::Op& dot) {
  const ir::Block& blk = *dot.parent;
  std::vector<const ir::Value*> stack{dot.operands[0], dot.operands[1]};
  std::unordered_set<const ir::Op*> seen;
  while (!stack.empty()) {
    const ir::Op* d = stack.back()->def;
    stack.pop_back();
    if (!d || d->parent != &blk || !seen.insert(d).second)
      continue;
    if (d->kind == ir::OpKind::Dot)
      return true;
    for (const ir::Value* o : d->operands)
      stack.push_back(o);
  }
  std::unordered_set<const ir::Value*> reached{dot.result()};
  bool after = false;
  for (const auto& op : blk.ops) {
    if (op.get() == &dot) {
      after = true;
      continue;
    }
    if (!after || std::none_of(op->operands.begin(), op->operands.end(),
                               [&](const ir::Value* v) { return reached.count(v) > 0; }))
      continue;
    if (op->kind == ir::OpKind::Dot)
      return true;
    reached.insert(op->results.begin(), op->results.end());
  }
  return false;
}

// A chained dot's warps: all along M where its rows allow, on the shorter MFMA instruction
// (16 rows) when the 32-row one leaves warps over.
std::vector<int> chained_warps(MmaInstr& in, int64_t m, int64_t n, int64_t k, int num_warps) {
  if (in.unit == MatrixUnit::Mfma && in.m == 32 && m / 32 < num_warps && m / 16 >= num_warps &&
      n % 16 == 0 && k % 16 == 0)
    in.m = in.n = 16, in.k = 4 * in.k_width;
  int wm = 1;
  while (wm < num_warps && m % (int64_t{in.m} * wm * 2) == 0)
    wm *= 2;
  return {wm, num_warps / wm};
}

void accelerate(ir::Function& f, ir::Op& dot, const GpuFeatures& t, int a_dots, int b_dots) {
  ir::Value *a = dot.operands[0], *b = dot.operands[1], *c = dot.operands[2];
  if (a->type.rank() != 2)
    return; // batched dots stay on FMA units
  const int64_t m = a->type.shape[0], k = a->type.shape[1], n = b->type.shape[1];
  std::string precision(dot.has_attr(attr::input_precision)
                            ? ir::enum_name(dot.enum_attr<ir::InputPrecision>())
                            : "");
  auto instr = select_mma_instr(t.matrix, a->type.elem, b->type.elem, c->type.elem, precision, m, n,
                                k, t.matrix_version);
  std::vector<int> warps;
  if (t.matrix == MatrixUnit::Wgmma) {
    if (instr)
      instr = wgmma_instr(*instr, m, n, t.num_warps, warps);
    // What wgmma cannot take (fewer than 64 rows, i8, tf32, f16 accumulators), mma.sync can.
    if (!instr)
      instr = select_mma_instr(MatrixUnit::MmaSync, a->type.elem, b->type.elem, c->type.elem,
                               precision, m, n, k, t.mma_sync_version);
  }
  if (!instr)
    return;
  ir::Block& blk = *dot.parent;
  size_t at = index_in_block(dot);
  ir::LayoutPtr mma;
  if (instr->unit == MatrixUnit::Wgmma) {
    // Operands in shared memory, in the layouts wgmma reads: each tile's contiguous dimension
    // kept (a K-major or M-major, b N-major or K-major), 128-byte swizzle atoms.
    mma = mma_layout(MatrixUnit::Wgmma, warps, {16, instr->n});
    auto in_shared = [&](ir::Value* v) {
      std::vector<int> order{1, 0};
      if (auto* bl = dynamic_cast<const BlockedLayout*>(v->type.layout.get()))
        order = {bl->order[0], bl->order[1]};
      const int eb = v->type.elem.bits() / 8;
      return convert_to(f, blk, at, v,
                        shared_layout(v->type.shape[order[0]], eb, order, /*atoms=*/true), dot.loc);
    };
    for (int i = 0; i < 2; ++i) {
      ir::Value* v = dot.operands[i];
      // An a computed from another dot's result (attention's P = exp2(...) as f16) is read
      // from registers (wgmma's a in registers, the accumulator's fragments renamed in place)
      // instead of being stored to shared memory and fenced in every iteration.
      // (16-bit a only: an fp8 a's register fragments are not wired.)
      if (i == 0 && v->type.elem.bits() == 16 && from_dot(v)) {
        dot.operands[0] =
            convert_to(f, blk, at, v, dot_operand_layout(0, mma, instr->k_width), dot.loc);
        continue;
      }
      // dot(q, trans(k)): k goes to shared memory as it was loaded and the transposition is a
      // view of that tile (wgmma reads either major order), so the pipeliner can copy k
      // straight from global memory, as it does an operand that is not transposed.
      if (v->def && v->def->kind == ir::OpKind::Trans && v->type.rank() == 2) {
        ir::Value* x = in_shared(v->def->operands[0]);
        ir::Type t = v->type;
        t.layout = transposed_shared(x->type.layout, v->def->ints_attr(attr::order));
        ir::Op& tr = insert_op(f, blk, at++, ir::OpKind::Trans, {x}, {t}, v->def->loc);
        tr.attrs = v->def->attrs;
        dot.operands[i] = tr.result();
        continue;
      }
      dot.operands[i] = in_shared(v);
    }
  } else {
    const bool chain = chained(dot);
    std::vector<int> w = chain ? chained_warps(*instr, m, n, k, t.num_warps)
                               : warps_for(*instr, m, n, t.num_warps, a_dots, b_dots);
    // MFMA accumulators transposed, as Triton's: rows whole in a lane's registers (attention's
    // row reductions in a thread, P the next dot's a as it is; vector stores of a GEMM tile).
    // So are RDNA4's (a lane's 8 are then a row's consecutive columns, P the next a as it
    // is). RDNA3's only in chained dots, beyond Triton (which transposes WMMA v2 only): there
    // a lane holds every other column of a row, so a row reduction is 8 registers and one
    // exchange between the wave's halves instead of four, and P becomes the next a with one
    // shuffle per register instead of a trip through LDS; a plain GEMM keeps 16 lanes along
    // a row for its stores.
    const bool transposed = instr->unit == MatrixUnit::Mfma ||
                            (instr->unit == MatrixUnit::Wmma && (instr->version >= 2 || chain));
    mma = mma_layout(instr->unit, w, {instr->m, instr->n}, instr->version, transposed);
    dot.operands[0] =
        convert_to(f, blk, at, a, dot_operand_layout(0, mma, instr->k_width), dot.loc);
    dot.operands[1] =
        convert_to(f, blk, at, b, dot_operand_layout(1, mma, instr->k_width), dot.loc);
  }
  dot.operands[2] = convert_to(f, blk, at, c, mma, dot.loc);
  ir::Value* r = dot.result();
  ir::Type old_t = r->type;
  r->type.layout = mma;
  size_t after = at + 1;
  ir::Op& back = insert_op(f, blk, after, ir::OpKind::ConvertLayout, {r}, {old_t}, dot.loc);
  f.replace_all_uses(r, back.result());
  back.operands[0] = r;
  // acc = dot(a, b, acc) inside a loop that carries acc: carry it in the accumulator layout.
  auto source = [](ir::Value* v) {
    while (v->def && v->def->kind == ir::OpKind::ConvertLayout)
      v = v->def->operands[0];
    return v;
  };
  ir::Value* carried = source(c);
  if (carried->def || !carried->block || !carried->block->parent ||
      !carried->block->parent->parent || carried->index < 1)
    return;
  ir::Op& loop = *carried->block->parent->parent;
  const size_t k_arg = carried->index - 1;
  if (loop.kind == ir::OpKind::For && &loop.body() == carried->block &&
      source(loop.body().terminator()->operands[k_arg]) == r)
    carry_in_layout(f, loop, k_arg, mma);
}

void collect(ir::Block& b, std::vector<ir::Op*>& dots) {
  for (auto& op : b.ops) {
    for (auto& r : op->regions)
      collect(*r->block, dots);
    if (op->kind == ir::OpKind::Dot)
      dots.push_back(op.get());
  }
}

} // namespace

void accelerate_matmul(ir::Function& f, const GpuFeatures& t) {
  if (t.matrix == MatrixUnit::None)
    return;
  std::vector<ir::Op*> dots;
  collect(f.entry(), dots);
  // How many dots of a block read each value as their a, and as their b (counted before any
  // dot's operands are converted).
  auto source = [](const ir::Value* v) {
    while (v->def && v->def->kind == ir::OpKind::ConvertLayout)
      v = v->def->operands[0];
    return v;
  };
  std::map<std::tuple<const ir::Block*, const ir::Value*, int>, int> readers;
  for (ir::Op* d : dots)
    for (int i = 0; i < 2; ++i)
      ++readers[{d->parent, source(d->operands[i]), i}];
  std::vector<std::pair<int, int>> shared;
  for (ir::Op* d : dots)
    shared.push_back({readers[{d->parent, source(d->operands[0]), 0}],
                      readers[{d->parent, source(d->operands[1]), 1}]});
  for (size_t i = 0; i < dots.size(); ++i)
    accelerate(f, *dots[i], t, shared[i].first, shared[i].second);
}

} // namespace tritium::gpu
