// Reductions and scans: within a thread, across lanes with shuffles, across warps through
// shared memory.
#include "gpu/lowering.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

template <class F>
LV* Lowering::shuffle_any(LV* v, F shfl32) {
  llvm::Type* t = v->getType();
  unsigned bits = static_cast<unsigned>(m_->getDataLayout().getTypeSizeInBits(t));
  LV* x = t->isPointerTy() ? b_.CreatePtrToInt(v, b_.getInt64Ty()) : v;
  if (!x->getType()->isIntegerTy())
    x = b_.CreateBitCast(x, b_.getIntNTy(bits));
  LV* r;
  if (bits == 64) {
    LV* lo = shfl32(b_.CreateTrunc(x, b_.getInt32Ty()));
    LV* hi = shfl32(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
    r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                    b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
  } else {
    LV* w = bits < 32 ? b_.CreateZExt(x, b_.getInt32Ty()) : x;
    w = shfl32(w);
    r = bits < 32 ? b_.CreateTrunc(w, b_.getIntNTy(bits)) : w;
  }
  if (t->isPointerTy())
    return b_.CreateIntToPtr(r, t);
  return r->getType() == t ? r : b_.CreateBitCast(r, t);
}

LV* Lowering::shuffle_xor(LV* v, int lane_mask) {
  return shuffle_any(v, [&](LV* w) { return ti_.shuffle_xor(b_, w, lane_mask); });
}

LV* Lowering::shuffle_idx(LV* v, LV* src_lane) {
  return shuffle_any(v, [&](LV* w) { return ti_.shuffle_idx(b_, w, src_lane); });
}

// Reduction: within each thread, then across the lanes holding the axis (xor butterfly),
// then across warps through shared memory. Every thread ends with the results its slice
// layout gives it.
void Lowering::reduce(const ir::Op& op) {
  const size_t n = op.operands.size();
  const ir::Value* x0 = op.operand(0);
  const int axis = static_cast<int>(op.int_attr(ir::attr::axis));
  LinearLayout d = dist(x0);
  const int64_t len = d.shape[axis];
  // Groups of registers that differ only along the axis -> one result register each.
  int axis_regs = 0;
  for (size_t i = 0; i < d.reg.size(); ++i)
    if (LinearLayout::dim_of(d.reg[i]) == axis)
      axis_regs |= 1 << i;
  std::map<int, std::vector<int>> groups; // key: register index with the axis bits 0
  for (int r = 0; r < d.num_regs(); ++r)
    groups[r & ~axis_regs].push_back(r);
  std::vector<std::vector<LV*>> acc; // per group, per operand
  std::vector<int> keys;
  for (auto& [key, regs] : groups) {
    std::vector<LV*> a;
    for (size_t k = 0; k < n; ++k)
      a.push_back(get(op.operand(k))[regs[0]]);
    for (size_t j = 1; j < regs.size(); ++j) {
      std::vector<LV*> xj;
      for (size_t k = 0; k < n; ++k)
        xj.push_back(get(op.operand(k))[regs[j]]);
      a = combine(op, a, xj);
    }
    acc.push_back(a);
    keys.push_back(key);
  }
  // A wave64 reduced along all its lanes: its four rows of 16 lanes are reduced by exchanges,
  // then each row's result read from one of its lanes (a scalar read, `v_readlane` on AMD)
  // and combined: a wave64's rows exchange values across 16 and 32 lanes only through the LDS
  // unit (ds_swizzle, ds_bpermute), which the last two steps of the butterfly would take.
  const bool by_rows = ws_ == 64 && static_cast<int>(d.lane.size()) == 6 &&
                       std::all_of(d.lane.begin(), d.lane.end(), [&](const LinearLayout::Coord& c) {
                         return LinearLayout::dim_of(c) == axis;
                       });
  const size_t exchanged = by_rows ? 4 : d.lane.size();
  for (size_t j = 0; j < exchanged; ++j)
    if (LinearLayout::dim_of(d.lane[j]) == axis)
      for (auto& a : acc) {
        std::vector<LV*> other;
        for (LV* v : a)
          other.push_back(shuffle_xor(v, 1 << j));
        a = combine(op, a, other);
      }
  if (by_rows)
    for (auto& a : acc) {
      auto row = [&](int r) {
        std::vector<LV*> out;
        for (LV* v : a)
          out.push_back(shuffle_idx(v, b_.getInt32(static_cast<uint32_t>(16 * r))));
        return out;
      };
      std::vector<LV*> total = row(0);
      for (int r = 1; r < 4; ++r)
        total = combine(op, total, row(r));
      a = total;
    }
  // Warps along the axis, and this warp's index among them (its axis bits, packed).
  int64_t warps = 1;
  LV* warp_axis = b_.getInt32(0);
  for (size_t j = 0; j < d.warp.size(); ++j)
    if (LinearLayout::dim_of(d.warp[j]) == axis) {
      LV* bit = b_.CreateAnd(b_.CreateLShr(warp_, static_cast<uint64_t>(j)), 1);
      warp_axis =
          b_.CreateOr(warp_axis, b_.CreateShl(bit, static_cast<uint64_t>(log2_exact(warps))));
      warps *= 2;
    }
  (void)len;
  if (warps > 1) {
    // smem[operand][warp along axis][result element]
    int64_t out_numel = x0->type.numel() / len;
    ti_.barrier(b_);
    std::vector<int64_t> base;
    int64_t off = 0;
    for (size_t k = 0; k < n; ++k) {
      base.push_back(off);
      off += align16(warps * out_numel * mem_bytes(op.operand(k)->type.elem));
    }
    need_shared(off);
    std::vector<LV*> out_idx;
    for (size_t g = 0; g < acc.size(); ++g) {
      Regs c = coords(d, keys[g]);
      c.erase(c.begin() + axis);
      auto os = x0->type.shape;
      os.erase(os.begin() + axis);
      out_idx.push_back(linear(c, os));
      for (size_t k = 0; k < n; ++k) {
        DType e = op.operand(k)->type.elem;
        LV* slot = b_.CreateAdd(
            b_.CreateMul(warp_axis, b_.getInt32(static_cast<uint32_t>(out_numel))), out_idx[g]);
        b_.CreateStore(to_mem(acc[g][k], e), smem_ptr(slot, base[k], mem_bytes(e)));
      }
    }
    ti_.barrier(b_);
    for (size_t g = 0; g < acc.size(); ++g) {
      std::vector<LV*> a;
      for (int64_t w = 0; w < warps; ++w) {
        std::vector<LV*> xw;
        for (size_t k = 0; k < n; ++k) {
          DType e = op.operand(k)->type.elem;
          LV* slot = b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(w * out_numel)), out_idx[g]);
          xw.push_back(from_smem(e, slot, base[k]));
        }
        a = w == 0 ? xw : combine(op, a, xw);
      }
      acc[g] = a;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* res = op.results[k];
    Regs out;
    if (res->type.is_scalar()) {
      out.push_back(acc[0][k]);
    } else {
      // The slice layout's registers are the input's with the axis digit 0, in order (with
      // keep_dims, the input's layout over a size-1 axis: the same).
      LinearLayout rd = dist(res);
      const bool keep = res->type.rank() == x0->type.rank();
      out.resize(rd.num_regs());
      for (size_t g = 0; g < acc.size(); ++g) {
        auto off = d.reg_offset(keys[g]);
        if (!keep)
          off.erase(off.begin() + axis);
        int j = rd.reg_index(off);
        if (j < 0)
          fail(op, "reduce: the result layout is not a slice of the operand's (internal)");
        out[j] = acc[g][k];
      }
    }
    set(res, std::move(out));
  }
}

// a then b in scan order, either possibly absent.
Lowering::Partial Lowering::then(const ir::Op& op, const Partial& a, const Partial& b) {
  if (!a.has)
    return b;
  if (!b.has)
    return a;
  std::vector<LV*> both = combine(op, a.v, b.v);
  Partial r;
  for (size_t k = 0; k < both.size(); ++k)
    r.v.push_back(b_.CreateSelect(a.has, b_.CreateSelect(b.has, both[k], a.v[k]), b.v[k]));
  r.has = b_.CreateOr(a.has, b.has);
  return r;
}

// Inclusive scan (Triton's associative_scan): within each thread's runs along the axis, then
// across lanes (Hillis-Steele over shuffles), then across warps through shared memory, then
// carried from one repetition of the layout tile to the next. `reverse` mirrors every step.
void Lowering::scan(const ir::Op& op) {
  const size_t n = op.operands.size();
  const ir::Value* x0 = op.operand(0);
  const int axis = static_cast<int>(op.int_attr(ir::attr::axis));
  const bool rev = op.int_attr("reverse", 0) != 0;
  LinearLayout d = dist(x0);
  // Along the axis the layout must be blocked: coordinate bits from registers (a chunk), then
  // lanes, then warps, then registers again (repetitions of the tile).
  int axis_regs = 0, chunk_bits = 0, lane_bits = 0, warp_bits = 0, lane0 = -1, warp0 = -1;
  for (size_t i = 0; i < d.reg.size(); ++i)
    if (LinearLayout::dim_of(d.reg[i]) == axis) {
      axis_regs |= 1 << i;
      if (LinearLayout::bit_of(d.reg[i]) == chunk_bits)
        ++chunk_bits;
    }
  auto ids_along = [&](const std::vector<LinearLayout::Coord>& bases, int first_bit, int& count,
                       int& first_id) {
    for (size_t j = 0; j < bases.size(); ++j)
      if (LinearLayout::dim_of(bases[j]) == axis) {
        if (first_id < 0)
          first_id = static_cast<int>(j);
        if (static_cast<int>(j) != first_id + count ||
            LinearLayout::bit_of(bases[j]) != first_bit + count)
          fail(op, "scan over a layout that is not blocked along the axis (internal: layout "
                   "assignment)");
        ++count;
      }
  };
  ids_along(d.lane, chunk_bits, lane_bits, lane0);
  ids_along(d.warp, chunk_bits + lane_bits, warp_bits, warp0);
  const int tile_bits = chunk_bits + lane_bits + warp_bits;
  const int e = 1 << std::popcount(static_cast<unsigned>(axis_regs));
  const int chunk = 1 << chunk_bits;
  const int reps = e / chunk;
  const int64_t L = int64_t{1} << lane_bits;
  const int64_t W = int64_t{1} << warp_bits;
  const int ls = 1 << std::max(lane0, 0);
  LV* lane_r = b_.CreateAnd(b_.CreateLShr(lane_, static_cast<uint64_t>(std::max(lane0, 0))),
                            static_cast<uint64_t>(L - 1));
  LV* warp_r = b_.CreateAnd(b_.CreateLShr(warp_, static_cast<uint64_t>(std::max(warp0, 0))),
                            static_cast<uint64_t>(W - 1));
  // Positions in scan order.
  LV* p = rev ? b_.CreateSub(b_.getInt32(static_cast<uint32_t>(L - 1)), lane_r) : lane_r;
  LV* q = rev ? b_.CreateSub(b_.getInt32(static_cast<uint32_t>(W - 1)), warp_r) : warp_r;
  // The lane `delta` positions earlier in scan order (meaningful where p >= delta).
  auto earlier_lane = [&](int64_t delta) {
    LV* step = b_.getInt32(static_cast<uint32_t>(delta * ls));
    return rev ? b_.CreateAdd(lane_, step) : b_.CreateSub(lane_, step);
  };

  // Groups: registers that differ only along the axis, indexed by their axis digit (the chunk
  // position, then the repetition).
  std::map<int, std::vector<int>> groups;
  for (int r = 0; r < d.num_regs(); ++r) {
    int64_t c = d.reg_offset(r)[axis];
    int j = static_cast<int>((c & (chunk - 1)) | ((c >> tile_bits) << chunk_bits));
    auto& g = groups[r & ~axis_regs];
    g.resize(e);
    g[j] = r;
  }
  const int G = static_cast<int>(groups.size());
  auto in = [&](int r) {
    std::vector<LV*> v;
    for (size_t k = 0; k < n; ++k)
      v.push_back(get(op.operand(k))[r]);
    return v;
  };
  // Chunk k's digits in scan order.
  auto chunk_digits = [&](int k) {
    std::vector<int> js;
    for (int i = 0; i < chunk; ++i)
      js.push_back(k * chunk + (rev ? chunk - 1 - i : i));
    return js;
  };
  std::vector<int> chunk_order;
  for (int i = 0; i < reps; ++i)
    chunk_order.push_back(rev ? reps - 1 - i : i);

  // A: within each chunk. acc[g][j] = inclusive scan up to j inside its chunk.
  std::vector<std::vector<std::vector<LV*>>> acc(G, std::vector<std::vector<LV*>>(e));
  std::vector<std::vector<std::vector<LV*>>> incl(G, std::vector<std::vector<LV*>>(reps));
  int gi = 0;
  for (auto& [key, regs] : groups) {
    for (int k = 0; k < reps; ++k) {
      std::vector<LV*> a;
      for (int j : chunk_digits(k)) {
        a = a.empty() ? in(regs[j]) : combine(op, a, in(regs[j]));
        acc[gi][j] = a;
      }
      incl[gi][k] = a; // the chunk's total in this thread
    }
    ++gi;
  }
  // B: across lanes, inclusive over chunk totals, then the exclusive prefix.
  std::vector<std::vector<Partial>> lane_excl(G, std::vector<Partial>(reps));
  for (int64_t dlt = 1; dlt < L; dlt *= 2) {
    LV* valid = b_.CreateICmpUGE(p, b_.getInt32(static_cast<uint32_t>(dlt)));
    LV* src = b_.CreateSelect(valid, earlier_lane(dlt), lane_);
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k) {
        std::vector<LV*> o;
        for (LV* v : incl[g][k])
          o.push_back(shuffle_idx(v, src));
        std::vector<LV*> c = combine(op, o, incl[g][k]);
        for (size_t t = 0; t < n; ++t)
          incl[g][k][t] = b_.CreateSelect(valid, c[t], incl[g][k][t]);
      }
  }
  if (L > 1) {
    LV* valid = b_.CreateICmpUGE(p, b_.getInt32(1));
    LV* src = b_.CreateSelect(valid, earlier_lane(1), lane_);
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k) {
        lane_excl[g][k].has = valid;
        for (LV* v : incl[g][k])
          lane_excl[g][k].v.push_back(shuffle_idx(v, src));
      }
  }
  // The chunk's total over the whole lane group: held by the last lane in scan order.
  std::vector<std::vector<std::vector<LV*>>> lanes_total(G, std::vector<std::vector<LV*>>(reps));
  {
    LV* last =
        b_.CreateAdd(lane_, b_.CreateMul(b_.CreateSub(b_.getInt32(static_cast<uint32_t>(L - 1)), p),
                                         b_.getInt32(static_cast<uint32_t>(rev ? -ls : ls))));
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k)
        for (LV* v : incl[g][k])
          lanes_total[g][k].push_back(L > 1 ? shuffle_idx(v, last) : v);
  }
  // C: across warps through shared memory: slot[operand][chunk][warp][group].
  std::vector<std::vector<Partial>> warp_prefix(G, std::vector<Partial>(reps));
  std::vector<std::vector<std::vector<LV*>>> tile_total = lanes_total;
  if (W > 1) {
    ti_.barrier(b_);
    // Slots are per line (the coordinates off the axis), not per register group: other
    // threads hold other lines in the same group.
    const int64_t lines = x0->type.numel() / d.shape[axis];
    std::vector<int64_t> base;
    int64_t off = 0;
    for (size_t t = 0; t < n; ++t) {
      base.push_back(off);
      off += align16(int64_t{reps} * W * lines * mem_bytes(op.operand(t)->type.elem));
    }
    need_shared(off);
    std::vector<LV*> line_of;
    for (auto& [key, regs] : groups) {
      Regs c = coords(d, regs[0]);
      c.erase(c.begin() + axis);
      auto os = x0->type.shape;
      os.erase(os.begin() + axis);
      line_of.push_back(linear(c, os));
    }
    auto slot = [&](int k, LV* w, int g) {
      return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(k * W)), w),
                                       b_.getInt32(static_cast<uint32_t>(lines))),
                          line_of[g]);
    };
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k)
        for (size_t t = 0; t < n; ++t) {
          DType et = op.operand(t)->type.elem;
          b_.CreateStore(to_mem(lanes_total[g][k][t], et),
                         smem_ptr(slot(k, warp_r, g), base[t], mem_bytes(et)));
        }
    ti_.barrier(b_);
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k) {
        Partial pre, all;
        for (int64_t i = 0; i < W; ++i) {
          int64_t w = rev ? W - 1 - i : i;
          Partial x;
          for (size_t t = 0; t < n; ++t)
            x.v.push_back(from_smem(op.operand(t)->type.elem,
                                    slot(k, b_.getInt32(static_cast<uint32_t>(w)), g), base[t]));
          x.has = b_.getTrue();
          all = then(op, all, x);
          // Warps before this one in scan order.
          x.has = b_.CreateICmpULT(b_.getInt32(static_cast<uint32_t>(i)), q);
          pre = then(op, pre, x);
        }
        warp_prefix[g][k] = pre;
        tile_total[g][k] = all.v;
      }
  }
  // D: carried over the repetitions of the tile, then applied to every element.
  std::vector<Regs> out(n, Regs(d.num_regs()));
  gi = 0;
  for (auto& [key, regs] : groups) {
    Partial carry;
    for (int k : chunk_order) {
      Partial prefix = then(op, then(op, carry, warp_prefix[gi][k]), lane_excl[gi][k]);
      for (int j : chunk_digits(k)) {
        Partial self{acc[gi][j], b_.getTrue()};
        Partial r = then(op, prefix, self);
        for (size_t t = 0; t < n; ++t)
          out[t][regs[j]] = r.v[t];
      }
      carry = then(op, carry, Partial{tile_total[gi][k], b_.getTrue()});
    }
    ++gi;
  }
  for (size_t k = 0; k < n; ++k)
    set(op.results[k], std::move(out[k]));
}

} // namespace tritium::gpu
