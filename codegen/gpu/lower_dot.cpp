// dot: on the target's matrix instructions when accelerate_matmul gave it an Mma layout, else
// on FMA units.
#include "gpu/lowering.hpp"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <map>
#include <unordered_set>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

// tf32 keeps 10 mantissa bits: round-to-nearest-even at bit 13 (the interpreter's rule).
LV* DotLowering::round_tf32(LV* x) {
  LV* u = b_.CreateBitCast(x, b_.getInt32Ty());
  LV* finite = b_.CreateICmpNE(b_.CreateAnd(u, 0x7f800000u), b_.getInt32(0x7f800000u));
  LV* odd = b_.CreateAnd(b_.CreateLShr(u, 13), 1);
  LV* rounded =
      b_.CreateAnd(b_.CreateAdd(b_.CreateAdd(u, b_.getInt32(0x0fff)), odd), b_.getInt32(~0x1fffu));
  return b_.CreateBitCast(b_.CreateSelect(finite, rounded, u), b_.getFloatTy());
}

namespace {

// The registers of one instruction come first in a fragment layout: the leading register
// bases inside the instruction's tile. Returns how many registers one instruction takes.
int fragment_size(const LinearLayout& l, int64_t extent0, int64_t extent1) {
  size_t n = 0;
  while (n < l.reg.size() && l.reg[n][0] < extent0 && l.reg[n][1] < extent1)
    ++n;
  for (size_t i = n; i < l.reg.size(); ++i)
    if (l.reg[i][0] < extent0 && l.reg[i][1] < extent1)
      return -1;
  return 1 << n;
}

} // namespace

// The dots computed together with `op` (op first): later dots of its block in its layout and
// types that read one of its operands (the fused MLP's gate and up projections of one x),
// reached across ops without effects and computed from values that exist at `op`. Taken K
// step by K step together, the operand they share is read once a step, and the fragments of
// one step sit side by side (two weight tiles at one offset from each other: one LDS read
// instruction for both on AMD).
std::vector<const ir::Op*> DotLowering::siblings(const ir::Op& op) const {
  std::vector<const ir::Op*> group{&op};
  const ir::Block& blk = *op.parent;
  auto at =
      std::find_if(blk.ops.begin(), blk.ops.end(), [&](const auto& o) { return o.get() == &op; });
  std::unordered_set<const ir::Value*> later(op.results.begin(), op.results.end());
  for (auto it = at + 1; it != blk.ops.end(); ++it) {
    const ir::Op& o = **it;
    const bool ready = std::none_of(o.operands.begin(), o.operands.end(),
                                    [&](const ir::Value* v) { return later.count(v) > 0; });
    if (o.kind == OpKind::Dot && ready && o.attrs == op.attrs &&
        (o.operand(0) == op.operand(0) || o.operand(1) == op.operand(1)) &&
        o.operand(0)->type == op.operand(0)->type && o.operand(1)->type == op.operand(1)->type &&
        o.result()->type == op.result()->type) {
      group.push_back(&o);
      continue;
    }
    if (!ir::has_trait(o.kind, ir::OpTrait::Pure) &&
        ir::op_category(o.kind) != ir::OpCategory::Hint)
      break;
    later.insert(o.results.begin(), o.results.end());
  }
  return group;
}

// dot on matrix instructions: the operands arrive in their fragment layouts and the
// accumulator in the instruction's; each accumulator tile takes one instruction per K tile,
// in K order. Sibling dots (siblings()) are computed here too, step by step with this one.
void DotLowering::dot_mma(const ir::Op& op, const MmaLayout& m) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1), *c = op.operand(2);
  const int64_t M = a->type.shape[0], K = a->type.shape[1], N = bv->type.shape[1];
  std::string precision(
      op.has_attr(attr::input_precision) ? ir::enum_name(op.enum_attr<ir::InputPrecision>()) : "");
  auto instr = select_mma_instr(m.unit, a->type.elem, bv->type.elem, c->type.elem, precision, M, N,
                                K, m.version, static_cast<int>(m.instr[0]));
  if (!instr)
    fail(op, "no matrix instruction for this dot (internal: accelerate_matmul)");
  MmaInstr swapped = *instr;
  std::swap(swapped.a, swapped.b);
  const LinearLayout la = dist(a), lb = dist(bv), lc = dist(c);
  const int64_t tm = m.instr[0], tn = m.instr[1];
  const int fa = fragment_size(la, tm, instr->k), fb = fragment_size(lb, instr->k, tn),
            fc = fragment_size(lc, tm, tn);
  if (fa < 0 || fb < 0 || fc < 0)
    fail(op, "matrix operands are not in fragment layouts (internal: layout assignment)");
  std::vector<const ir::Op*> group = siblings(op);
  // Tiles by their origin: a (m, k), b (k, n), c (m, n).
  auto tiles = [](const LinearLayout& l, int frag) {
    std::map<std::pair<int64_t, int64_t>, int> t;
    for (int r = 0; r < l.num_regs(); r += frag) {
      auto o = l.reg_offset(r);
      t[{o[0], o[1]}] = r;
    }
    return t;
  };
  auto ta = tiles(la, fa), tb = tiles(lb, fb), tc = tiles(lc, fc);
  auto fragment = [&](const ir::Value* v, int r0, int n) {
    Regs f = s_.shared->operand_regs(v, r0, n);
    if (instr->tf32)
      for (auto& x : f)
        x = round_tf32(x);
    return f;
  };
  // K steps outermost: each step's a and b fragments are read once and used by every
  // accumulator tile; each accumulator still sums K in order.
  std::map<int64_t, std::vector<std::pair<int64_t, int>>> a_by_k, b_by_k; // k -> (m|n, reg)
  for (auto [mk, r] : ta)
    a_by_k[mk.second].push_back({mk.first, r});
  for (auto [kn, r] : tb)
    b_by_k[kn.first].push_back({kn.second, r});
  // One K step ahead: step j+1's fragments are read before step j's instructions, so that
  // their latency hides behind them while only two steps' fragments are live (targets that
  // need it get a scheduling barrier between steps to keep it so).
  std::vector<int64_t> ks;
  for (auto& [k0, tiles_at_k] : a_by_k)
    ks.push_back(k0);
  // A step's fragments by operand value and tile origin along M (a) or N (b): an operand the
  // group's dots share is read once.
  using Step = std::map<std::pair<const ir::Value*, int64_t>, Regs>;
  auto read_step = [&](int64_t k0, Step& fa_regs, Step& fb_regs) {
    for (const ir::Op* d : group) {
      for (auto [mo, r] : a_by_k[k0])
        if (!fa_regs.count({d->operand(0), mo}))
          fa_regs[{d->operand(0), mo}] = fragment(d->operand(0), r, fa);
      for (auto [no, r] : b_by_k[k0])
        if (!fb_regs.count({d->operand(1), no}))
          fb_regs[{d->operand(1), no}] = fragment(d->operand(1), r, fb);
    }
  };
  // Fragments over 4 registers a lane (RDNA3's WMMA, whose wave halves both hold them: 8) are
  // read just before their own step: a step ahead would keep twice a step's fragments live.
  const bool ahead = std::max(fa * a->type.elem.bits(), fb * bv->type.elem.bits()) <= 4 * 32;
  std::vector<Regs> outs;
  for (const ir::Op* d : group)
    outs.push_back(get(d->operand(2)));
  Step cur_a, cur_b;
  if (!ks.empty())
    read_step(ks[0], cur_a, cur_b);
  for (size_t j = 0; j < ks.size(); ++j) {
    Step next_a, next_b;
    if (j > 0 && !ahead) {
      ti_.schedule_barrier(b_);
      cur_a.clear();
      cur_b.clear();
      read_step(ks[j], cur_a, cur_b);
    }
    if (j + 1 < ks.size() && ahead) {
      ti_.schedule_barrier(b_);
      read_step(ks[j + 1], next_a, next_b);
    }
    for (size_t g = 0; g < group.size(); ++g)
      for (auto [mn, rc] : tc) {
        auto ia = cur_a.find({group[g]->operand(0), mn.first});
        auto ib = cur_b.find({group[g]->operand(1), mn.second});
        if (ia == cur_a.end() || ib == cur_b.end())
          fail(op, "matrix operands lack a tile (internal: layout assignment)");
        Regs& out = outs[g];
        Regs acc(out.begin() + rc, out.begin() + rc + fc);
        // Transposed (MFMA): the instruction computes b^T a^T, its accumulator the tile's
        // transpose; a's and b's fragments are laid out alike, so they only trade places (and
        // their types, where they differ: fp8 formats).
        acc = m.transposed ? ti_.matrix().mma(b_, swapped, ib->second, ia->second, acc)
                           : ti_.matrix().mma(b_, *instr, ia->second, ib->second, acc);
        std::copy(acc.begin(), acc.end(), out.begin() + rc);
      }
    if (ahead) {
      cur_a = std::move(next_a);
      cur_b = std::move(next_b);
    }
  }
  for (size_t g = 0; g < group.size(); ++g) {
    set(group[g]->result(), std::move(outs[g]));
    lowered_.insert(group[g]);
  }
}

// An operand tile in shared memory, as the matrix instruction's shared-memory operand: the
// canonical layout's strides from the tile's SharedLayout (rows of 128, 64 or 32 bytes, or
// 128-byte blocks of longer rows), at element (r, k) of the tile (r along M or N).
MatrixOps::SmemMatrix DotLowering::smem_matrix(const ir::Value* tile, LV* base, LV* r, int64_t k,
                                               int k_dim) {
  auto* s = dynamic_cast<const SharedLayout*>(tile->type.layout.get());
  const int64_t eb = mem_bytes(tile->type.elem);
  const int fast = s->order[0];
  const int64_t fast_len = tile->type.shape[fast], slow_len = tile->type.shape[1 - fast];
  const int64_t block = s->block_cols ? s->block_cols : fast_len;
  const int64_t row_bytes = block * eb;
  MatrixOps::SmemMatrix m;
  m.swizzle = static_cast<int>(row_bytes);
  m.k_major = fast == k_dim;
  // Element (r, k) of the tile: rows along the slow dimension, columns (cut in blocks) along
  // the fast one. The part of r and the constant part of k are two steps of the address, so
  // that the target sees each K step's address as one base and a constant (NVPTX: its wgmma
  // descriptors differ by an add).
  auto col_bytes = [&](LV* col) {
    return b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(col, b_.getInt32(static_cast<uint32_t>(block))),
                                     b_.getInt32(static_cast<uint32_t>(slow_len * row_bytes))),
                        b_.CreateMul(b_.CreateURem(col, b_.getInt32(static_cast<uint32_t>(block))),
                                     b_.getInt32(static_cast<uint32_t>(eb))));
  };
  const int64_t k_bytes =
      m.k_major ? (k / block) * slow_len * row_bytes + (k % block) * eb : k * row_bytes;
  LV* r_bytes =
      m.k_major ? b_.CreateMul(r, b_.getInt32(static_cast<uint32_t>(row_bytes))) : col_bytes(r);
  m.addr = b_.CreateConstGEP1_64(b_.getInt8Ty(), b_.CreateGEP(b_.getInt8Ty(), base, r_bytes),
                                 static_cast<uint64_t>(k_bytes));
  m.sbo = 8 * row_bytes;                        // eight rows
  m.lbo = m.k_major ? 1 : slow_len * row_bytes; // MN-major: the next block along M (N)
  return m;
}

// dot on warpgroup instructions that read a and b from shared memory (wgmma): per warpgroup
// and tile of 64 x n, one instruction per K step of 16, issued back to back, then waited for.
void DotLowering::dot_wgmma(const ir::Op& op, const MmaLayout& m) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1), *c = op.operand(2);
  const int64_t M = a->type.shape[0], K = a->type.shape[1], N = bv->type.shape[1];
  std::string precision(
      op.has_attr(attr::input_precision) ? ir::enum_name(op.enum_attr<ir::InputPrecision>()) : "");
  auto instr = select_mma_instr(m.unit, a->type.elem, bv->type.elem, c->type.elem, precision, M, N,
                                K, m.version);
  // a in shared memory or in registers (its fragments: DotOperandLayout), b in shared memory.
  const bool a_regs = dynamic_cast<const DotOperandLayout*>(a->type.layout.get()) != nullptr;
  if (!instr || (!a_regs && !dynamic_cast<const SharedLayout*>(a->type.layout.get())) ||
      !dynamic_cast<const SharedLayout*>(bv->type.layout.get()))
    fail(op, "wgmma needs b in shared memory and a in shared memory or its register fragments "
             "(internal: accelerate_matmul)");
  instr->n = m.instr[1];
  const LinearLayout lc = dist(c);
  const int fc = fragment_size(lc, 16, m.instr[1]);
  if (fc != m.instr[1] / 2)
    fail(op, "wgmma accumulator is not in its fragment layout (internal)");
  // The warpgroup's origin: the warp bits above the warpgroup's four, warp-uniform, so that
  // the descriptors built from it stay in uniform registers (bmm 16 x 1024^3 on an H200, with
  // the descriptors' constant K steps: 1.14 -> 1.11 x Triton's time, paired). Only here: the
  // warp index marked uniform everywhere made paged decode 2-3 % slower.
  Regs wg(2, b_.getInt32(0));
  place_bits(wg, b_.CreateAnd(ti_.warp_uniform(b_, s_.warp), ~3u), lc.warp);
  LV* abase = a_regs ? nullptr : get(a)[0];
  LV* bbase = get(bv)[0];
  Regs out = get(c);
  // a in registers: this thread's four words of rows (+0, +8) and K (+0, +1, +8, +9) from the
  // tile's row offset and K step; the lane and warp parts of the coordinates are the
  // accumulator's (the layouts share them).
  const LinearLayout la = a_regs ? dist(a) : LinearLayout{};
  auto a_words = [&](int64_t row, int64_t k0) {
    Regs elems;
    for (auto [dr, dk] :
         {std::pair{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}}) {
      const int j = la.reg_index({row + dr, k0 + dk});
      if (j < 0)
        fail(op, "wgmma: a's registers are not in its fragment layout (internal)");
      elems.push_back(get(a)[j]);
    }
    return pack_words(b_, elems);
  };
  // max_num_imprecise_acc (fp8), as Triton: where it is at most this dot's K, K goes in chunks
  // of that many, each summed by the tensor core from zero, waited for and added to the
  // accumulator in f32 (the unit's own accumulation is below f32's).
  const int64_t promote = op.int_attr(attr::max_num_imprecise_acc, 0);
  const bool partial = promote > 0 && promote <= K;
  const int64_t chunk = partial ? std::max<int64_t>(instr->k, promote) : K;
  for (int64_t c0 = 0; c0 < K; c0 += chunk) {
    Regs part = partial ? Regs(out.size(), llvm::ConstantFP::get(b_.getFloatTy(), 0.0)) : out;
    ti_.matrix().mma_shared_fence(b_);
    for (int r = 0; r < lc.num_regs(); r += fc) {
      auto o = lc.reg_offset(r);
      LV* m0 = b_.CreateAdd(wg[0], b_.getInt32(static_cast<uint32_t>(o[0])));
      LV* n0 = b_.CreateAdd(wg[1], b_.getInt32(static_cast<uint32_t>(o[1])));
      Regs acc(part.begin() + r, part.begin() + r + fc);
      for (int64_t k0 = c0; k0 < std::min(K, c0 + chunk); k0 += instr->k)
        acc = a_regs ? ti_.matrix().mma_shared_regs(b_, *instr, a_words(o[0], k0),
                                                    smem_matrix(bv, bbase, n0, k0, 0), acc)
                     : ti_.matrix().mma_shared(b_, *instr, smem_matrix(a, abase, m0, k0, 1),
                                               smem_matrix(bv, bbase, n0, k0, 0), acc);
      std::copy(acc.begin(), acc.end(), part.begin() + r);
    }
    if (!partial) {
      out = std::move(part);
      break;
    }
    ti_.matrix().mma_shared_commit(b_);
    part = wgmma_wait(std::move(part));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = b_.CreateFAdd(out[i], part[i]);
  }
  if (partial) { // done: nothing of this dot is in flight
    set(op.result(), std::move(out));
    return;
  }
  ti_.matrix().mma_shared_commit(b_);
  // The pipeline lets a dot that only feeds the next iteration stay in flight (its slot is not
  // written again until the next dot's wait); the loop's drain waits for it.
  const int pending = static_cast<int>(op.int_attr(attr::wgmma_pending, 0));
  if (pending == 0)
    out = wgmma_wait(out);
  else
    ti_.matrix().mma_shared_wait(b_, pending, {});
  s_.wgmma_in_flight = s_.wgmma_in_flight || pending > 0;
  set(op.result(), std::move(out));
}

// Waits for every wgmma group. `own` (a dot's result) and the accumulators left in flight
// (s_.wgmma_live) pass through the wait, so no read of them is scheduled before it.
Regs DotLowering::wgmma_wait(Regs own) {
  std::vector<LV*> live(own.begin(), own.end());
  for (const ir::Value* v : s_.wgmma_live) {
    const Regs& r = get(v);
    live.insert(live.end(), r.begin(), r.end());
  }
  std::vector<LV*> after = ti_.matrix().mma_shared_wait(b_, 0, live);
  size_t at = own.size();
  for (const ir::Value* v : s_.wgmma_live) {
    Regs r(after.begin() + at, after.begin() + at + get(v).size());
    at += r.size();
    set(v, std::move(r));
  }
  s_.wgmma_live.clear();
  return Regs(after.begin(), after.begin() + own.size());
}

// dot on FMA units: a and b to shared memory, each accumulator register sums over k in
// order with the interpreter's rounding rules.
void DotLowering::dot(const ir::Op& op) {
  if (lowered_.count(&op))
    return; // computed with an earlier sibling (dot_mma)
  const ir::Value *a = op.operand(0), *bv = op.operand(1), *c = op.operand(2);
  if (auto* m = dynamic_cast<const MmaLayout*>(op.result()->type.layout.get()))
    return m->unit == MatrixUnit::Wgmma ? dot_wgmma(op, *m) : dot_mma(op, *m);
  DType in = a->type.elem, acc = c->type.elem;
  const int rank = a->type.rank();
  const int64_t K = a->type.shape[rank - 1];
  const bool tf32 =
      in.kind == ScalarKind::F32 &&
      op.enum_attr<ir::InputPrecision>(ir::InputPrecision::Ieee) != ir::InputPrecision::Ieee;
  auto prep = [&](const ir::Value* v) {
    Regs r = get(v);
    if (tf32)
      for (auto& x : r)
        x = round_tf32(x);
    return r;
  };
  ti_.barrier(b_);
  int64_t off_a = 0;
  int64_t off_b = to_smem(a, prep(a), off_a);
  need_shared(off_b + to_smem(bv, prep(bv), off_b));
  ti_.barrier(b_);
  LinearLayout d = dist(c);
  const Regs& init = get(c);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "dot.k", s_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "dot.exit", s_.fn);
  std::vector<Regs> coord;
  for (int r = 0; r < d.num_regs(); ++r)
    coord.push_back(coords(d, r));
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  auto* k = b_.CreatePHI(b_.getInt32Ty(), 2);
  k->addIncoming(b_.getInt32(0), pre);
  std::vector<llvm::PHINode*> phis;
  for (LV* v : init) {
    phis.push_back(b_.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
  }
  const auto& as = a->type.shape;
  const auto& bs = bv->type.shape;
  Regs next;
  for (int r = 0; r < d.num_regs(); ++r) {
    const Regs& cc = coord[r];
    Regs ai = cc, bi = cc;
    ai[rank - 1] = k; // a[..., i, k]
    bi[rank - 2] = k; // b[..., k, j]
    LV* x = from_smem(in, linear(ai, as), off_a);
    LV* y = from_smem(in, linear(bi, bs), off_b);
    next.push_back(fma_acc(x, y, phis[r], in, acc));
  }
  LV* k1 = b_.CreateAdd(k, b_.getInt32(1));
  k->addIncoming(k1, head);
  for (int r = 0; r < d.num_regs(); ++r)
    phis[r]->addIncoming(next[r], head);
  b_.CreateCondBr(b_.CreateICmpEQ(k1, b_.getInt32(static_cast<uint32_t>(K))), exit, head);
  b_.SetInsertPoint(exit);
  set(op.result(), Regs(next.begin(), next.end()));
}

LV* DotLowering::fma_acc(LV* x, LV* y, LV* s, DType in, DType acc) {
  if (acc.is_float()) {
    // f32 accumulators: one fmaf per step; narrower ones: an exact double fma rounded once
    // to the accumulator type, as the interpreter.
    llvm::Type* ct = acc.kind == ScalarKind::F32 ? b_.getFloatTy() : b_.getDoubleTy();
    auto conv = [&](LV* v, DType t) -> LV* {
      if (!t.is_float())
        return t.is_unsigned() ? b_.CreateUIToFP(v, ct) : b_.CreateSIToFP(v, ct);
      unsigned vb = v->getType()->getPrimitiveSizeInBits(), cb = ct->getPrimitiveSizeInBits();
      return vb == cb ? v : vb < cb ? b_.CreateFPExt(v, ct) : b_.CreateFPTrunc(v, ct);
    };
    LV* r =
        b_.CreateIntrinsic(llvm::Intrinsic::fma, {ct}, {conv(x, in), conv(y, in), conv(s, acc)});
    return r->getType() == type(acc) ? r : b_.CreateFPTrunc(r, type(acc));
  }
  llvm::Type* at = type(acc);
  LV* xi = in.is_float() ? cast(x, in, acc) : b_.CreateIntCast(x, at, in.is_signed_int());
  LV* yi = in.is_float() ? cast(y, in, acc) : b_.CreateIntCast(y, at, in.is_signed_int());
  return b_.CreateAdd(s, b_.CreateMul(xi, yi));
}

} // namespace tritium::gpu
