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
LV* Context::shuffle_any(LV* v, F shfl32) {
  llvm::Type* t = v->getType();
  unsigned bits = static_cast<unsigned>(s_.m->getDataLayout().getTypeSizeInBits(t));
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

LV* Context::shuffle_xor(LV* v, int lane_mask) {
  return shuffle_any(v, [&](LV* w) { return ti_.shuffle_xor(b_, w, lane_mask); });
}

LV* Context::shuffle_idx(LV* v, LV* src_lane) {
  return shuffle_any(v, [&](LV* w) { return ti_.shuffle_idx(b_, w, src_lane); });
}

// Reduction: within each thread, then across the lanes holding the axis (xor butterfly),
// then across warps through shared memory. Every thread ends with the results its slice
// layout gives it.
void CollectiveLowering::reduce(const ir::Op& op) {
  const size_t n = op.operands.size();
  const ir::Value* x0 = op.operand(0);
  const int axis = static_cast<int>(op.int_attr(attr::axis));
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
      a = s_.driver->combine(op, a, xj);
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
        a = s_.driver->combine(op, a, other);
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
        total = s_.driver->combine(op, total, row(r));
      a = total;
    }
  // Warps along the axis, and this warp's index among them (its axis bits, packed).
  int64_t warps = 1;
  LV* warp_axis = b_.getInt32(0);
  for (size_t j = 0; j < d.warp.size(); ++j)
    if (LinearLayout::dim_of(d.warp[j]) == axis) {
      LV* bit = b_.CreateAnd(b_.CreateLShr(s_.warp, static_cast<uint64_t>(j)), 1);
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
    read_partials(op, d, axis, warps, out_numel, base, out_idx, acc);
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

// The reduction's results from every warp's partials in shared memory: smem[operand][warp
// along the axis][result element] at `base`, `out_idx` each group's result element.
void CollectiveLowering::read_partials(const ir::Op& op, const LinearLayout& d, int axis,
                                       int64_t warps, int64_t out_numel,
                                       const std::vector<int64_t>& base,
                                       const std::vector<LV*>& out_idx,
                                       std::vector<std::vector<LV*>>& acc) {
  const size_t n = op.operands.size();
  // Past four partials a result, reading them all into every thread holds them at once (the
  // assembler issues the loads together: int8 quantization's 16 partials took 40 registers
  // against 31 on sm_90a, 26 VGPRs against 18 on gfx942). Each lane then reads the partial of
  // warp lane % warps and a butterfly over those lanes combines them, one read and log2(warps)
  // exchanges (each a shuffle on NVIDIA, a DPP modifier on AMD), where those lanes hold the
  // same results (their id bits run along the axis or replicate).
  bool same_results = warps > 4 && warps <= ws_;
  for (int64_t j = 0; same_results && (int64_t{1} << j) < warps; ++j) {
    const int dim = LinearLayout::dim_of(d.lane[static_cast<size_t>(j)]);
    same_results = dim == axis || dim < 0;
  }
  if (same_results) {
    LV* w = b_.CreateAnd(s_.lane, b_.getInt32(static_cast<uint32_t>(warps - 1)));
    for (size_t g = 0; g < acc.size(); ++g) {
      std::vector<LV*> a;
      for (size_t k = 0; k < n; ++k) {
        DType e = op.operand(k)->type.elem;
        LV* slot = b_.CreateAdd(b_.CreateMul(w, b_.getInt32(static_cast<uint32_t>(out_numel))),
                                out_idx[g]);
        a.push_back(from_smem(e, slot, base[k]));
      }
      for (int64_t m = warps / 2; m >= 1; m /= 2) {
        std::vector<LV*> other;
        for (LV* v : a)
          other.push_back(shuffle_xor(v, static_cast<int>(m)));
        a = s_.driver->combine(op, a, other);
      }
      acc[g] = a;
    }
  } else {
    for (size_t g = 0; g < acc.size(); ++g) {
      std::vector<LV*> a;
      for (int64_t w = 0; w < warps; ++w) {
        std::vector<LV*> xw;
        for (size_t k = 0; k < n; ++k) {
          DType e = op.operand(k)->type.elem;
          LV* slot = b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(w * out_numel)), out_idx[g]);
          xw.push_back(from_smem(e, slot, base[k]));
        }
        a = w == 0 ? xw : s_.driver->combine(op, a, xw);
      }
      acc[g] = a;
    }
  }
}

// a then b in scan order, either possibly absent.
CollectiveLowering::Partial CollectiveLowering::then(const ir::Op& op, const Partial& a,
                                                     const Partial& b) {
  if (!a.has)
    return b;
  if (!b.has)
    return a;
  std::vector<LV*> both = s_.driver->combine(op, a.v, b.v);
  Partial r;
  for (size_t k = 0; k < both.size(); ++k)
    r.v.push_back(b_.CreateSelect(a.has, b_.CreateSelect(b.has, both[k], a.v[k]), b.v[k]));
  r.has = b_.CreateOr(a.has, b.has);
  return r;
}

} // namespace tritium::gpu
