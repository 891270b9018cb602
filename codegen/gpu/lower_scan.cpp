// Inclusive scan (Triton's associative_scan): within each thread's runs along the axis, then
// across lanes (Hillis-Steele over shuffles), then across warps through shared memory, then
// carried from one repetition of the layout tile to the next. `reverse` mirrors every step.
#include "gpu/lowering.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace tritium::gpu {

using ir::DType;

// One scan op being lowered: where the axis lies in its layout, the registers of each line,
// and the partial results of each step.
class ScanLowering {
public:
  ScanLowering(CollectiveLowering& l, const ir::Op& op);
  void run();

private:
  using Values = std::vector<std::vector<std::vector<LV*>>>; // [group][digit or chunk][operand]
  using Partial = CollectiveLowering::Partial;

  void read_layout();
  void group_registers();
  void within_chunks();
  void across_lanes();
  void across_warps();
  void apply();

  std::vector<LV*> in(int r) {
    std::vector<LV*> v;
    for (size_t k = 0; k < n; ++k)
      v.push_back(lw.get(op.operand(k))[r]);
    return v;
  }
  // Chunk k's digits in scan order.
  std::vector<int> chunk_digits(int k) const {
    std::vector<int> js;
    for (int i = 0; i < chunk; ++i)
      js.push_back(k * chunk + (rev ? chunk - 1 - i : i));
    return js;
  }
  // The lane `delta` positions earlier in scan order (meaningful where p >= delta).
  LV* earlier_lane(int64_t delta) {
    LV* step = b.getInt32(static_cast<uint32_t>(delta * ls));
    return rev ? b.CreateAdd(lw.s_.lane, step) : b.CreateSub(lw.s_.lane, step);
  }

  CollectiveLowering& lw;
  llvm::IRBuilder<>& b;
  const ir::Op& op;
  const size_t n;
  const ir::Value* x0;
  const int axis;
  const bool rev;
  LinearLayout d;
  // Along the axis the layout must be blocked: coordinate bits from registers (a chunk), then
  // lanes, then warps, then registers again (repetitions of the tile).
  int axis_regs = 0, chunk_bits = 0, lane_bits = 0, warp_bits = 0, lane0 = -1, warp0 = -1;
  int tile_bits = 0, e = 1, chunk = 1, reps = 1, ls = 1;
  int64_t L = 1, W = 1; // lanes and warps along the axis
  LV *lane_r = nullptr, *warp_r = nullptr;
  LV *p = nullptr, *q = nullptr; // positions in scan order
  // Groups: registers that differ only along the axis, indexed by their axis digit (the chunk
  // position, then the repetition).
  std::map<int, std::vector<int>> groups;
  int G = 0;
  Values acc;         // acc[g][j]: inclusive scan up to digit j inside its chunk
  Values incl;        // incl[g][k]: chunk k's total in this thread, then over the lanes before
  Values lanes_total; // chunk k's total over the whole lane group
  Values tile_total;  // ... over the whole tile
  std::vector<std::vector<Partial>> lane_excl, warp_prefix;
};

ScanLowering::ScanLowering(CollectiveLowering& l, const ir::Op& op_)
    : lw(l), b(l.b_), op(op_), n(op_.operands.size()), x0(op_.operand(0)),
      axis(static_cast<int>(op_.int_attr(attr::axis))), rev(op_.int_attr(attr::reverse, 0) != 0),
      d(l.dist(op_.operand(0))) {}

void ScanLowering::run() {
  read_layout();
  group_registers();
  within_chunks();
  across_lanes();
  across_warps();
  apply();
}

void ScanLowering::read_layout() {
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
          lw.fail(op, "scan over a layout that is not blocked along the axis (internal: layout "
                      "assignment)");
        ++count;
      }
  };
  ids_along(d.lane, chunk_bits, lane_bits, lane0);
  ids_along(d.warp, chunk_bits + lane_bits, warp_bits, warp0);
  tile_bits = chunk_bits + lane_bits + warp_bits;
  e = 1 << std::popcount(static_cast<unsigned>(axis_regs));
  chunk = 1 << chunk_bits;
  reps = e / chunk;
  L = int64_t{1} << lane_bits;
  W = int64_t{1} << warp_bits;
  ls = 1 << std::max(lane0, 0);
  lane_r = b.CreateAnd(b.CreateLShr(lw.s_.lane, static_cast<uint64_t>(std::max(lane0, 0))),
                       static_cast<uint64_t>(L - 1));
  warp_r = b.CreateAnd(b.CreateLShr(lw.s_.warp, static_cast<uint64_t>(std::max(warp0, 0))),
                       static_cast<uint64_t>(W - 1));
  p = rev ? b.CreateSub(b.getInt32(static_cast<uint32_t>(L - 1)), lane_r) : lane_r;
  q = rev ? b.CreateSub(b.getInt32(static_cast<uint32_t>(W - 1)), warp_r) : warp_r;
}

void ScanLowering::group_registers() {
  for (int r = 0; r < d.num_regs(); ++r) {
    int64_t c = d.reg_offset(r)[axis];
    int j = static_cast<int>((c & (chunk - 1)) | ((c >> tile_bits) << chunk_bits));
    auto& g = groups[r & ~axis_regs];
    g.resize(e);
    g[j] = r;
  }
  G = static_cast<int>(groups.size());
}

// A: within each chunk.
void ScanLowering::within_chunks() {
  acc.assign(G, std::vector<std::vector<LV*>>(e));
  incl.assign(G, std::vector<std::vector<LV*>>(reps));
  int gi = 0;
  for (auto& [key, regs] : groups) {
    for (int k = 0; k < reps; ++k) {
      std::vector<LV*> a;
      for (int j : chunk_digits(k)) {
        a = a.empty() ? in(regs[j]) : lw.s_.driver->combine(op, a, in(regs[j]));
        acc[gi][j] = a;
      }
      incl[gi][k] = a; // the chunk's total in this thread
    }
    ++gi;
  }
}

// B: across lanes, inclusive over chunk totals, then the exclusive prefix; the chunk's total
// over the whole lane group is held by the last lane in scan order.
void ScanLowering::across_lanes() {
  lane_excl.assign(G, std::vector<Partial>(reps));
  for (int64_t dlt = 1; dlt < L; dlt *= 2) {
    LV* valid = b.CreateICmpUGE(p, b.getInt32(static_cast<uint32_t>(dlt)));
    LV* src = b.CreateSelect(valid, earlier_lane(dlt), lw.s_.lane);
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k) {
        std::vector<LV*> o;
        for (LV* v : incl[g][k])
          o.push_back(lw.shuffle_idx(v, src));
        std::vector<LV*> c = lw.s_.driver->combine(op, o, incl[g][k]);
        for (size_t t = 0; t < n; ++t)
          incl[g][k][t] = b.CreateSelect(valid, c[t], incl[g][k][t]);
      }
  }
  if (L > 1) {
    LV* valid = b.CreateICmpUGE(p, b.getInt32(1));
    LV* src = b.CreateSelect(valid, earlier_lane(1), lw.s_.lane);
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < reps; ++k) {
        lane_excl[g][k].has = valid;
        for (LV* v : incl[g][k])
          lane_excl[g][k].v.push_back(lw.shuffle_idx(v, src));
      }
  }
  lanes_total.assign(G, std::vector<std::vector<LV*>>(reps));
  LV* last =
      b.CreateAdd(lw.s_.lane, b.CreateMul(b.CreateSub(b.getInt32(static_cast<uint32_t>(L - 1)), p),
                                          b.getInt32(static_cast<uint32_t>(rev ? -ls : ls))));
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < reps; ++k)
      for (LV* v : incl[g][k])
        lanes_total[g][k].push_back(L > 1 ? lw.shuffle_idx(v, last) : v);
}

// C: across warps through shared memory: slot[operand][chunk][warp][line].
void ScanLowering::across_warps() {
  warp_prefix.assign(G, std::vector<Partial>(reps));
  tile_total = lanes_total;
  if (W == 1)
    return;
  lw.ti_.barrier(b);
  // Slots are per line (the coordinates off the axis), not per register group: other threads
  // hold other lines in the same group.
  const int64_t lines = x0->type.numel() / d.shape[axis];
  std::vector<int64_t> base;
  int64_t off = 0;
  for (size_t t = 0; t < n; ++t) {
    base.push_back(off);
    off += align16(int64_t{reps} * W * lines * Context::mem_bytes(op.operand(t)->type.elem));
  }
  lw.need_shared(off);
  std::vector<LV*> line_of;
  for (auto& [key, regs] : groups) {
    Regs c = lw.coords(d, regs[0]);
    c.erase(c.begin() + axis);
    auto os = x0->type.shape;
    os.erase(os.begin() + axis);
    line_of.push_back(lw.linear(c, os));
  }
  auto slot = [&](int k, LV* w, int g) {
    return b.CreateAdd(b.CreateMul(b.CreateAdd(b.getInt32(static_cast<uint32_t>(k * W)), w),
                                   b.getInt32(static_cast<uint32_t>(lines))),
                       line_of[g]);
  };
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < reps; ++k)
      for (size_t t = 0; t < n; ++t) {
        DType et = op.operand(t)->type.elem;
        b.CreateStore(lw.to_mem(lanes_total[g][k][t], et),
                      lw.smem_ptr(slot(k, warp_r, g), base[t], Context::mem_bytes(et)));
      }
  lw.ti_.barrier(b);
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < reps; ++k) {
      Partial pre, all;
      for (int64_t i = 0; i < W; ++i) {
        int64_t w = rev ? W - 1 - i : i;
        Partial x;
        for (size_t t = 0; t < n; ++t)
          x.v.push_back(lw.from_smem(op.operand(t)->type.elem,
                                     slot(k, b.getInt32(static_cast<uint32_t>(w)), g), base[t]));
        x.has = b.getTrue();
        all = lw.then(op, all, x);
        // Warps before this one in scan order.
        x.has = b.CreateICmpULT(b.getInt32(static_cast<uint32_t>(i)), q);
        pre = lw.then(op, pre, x);
      }
      warp_prefix[g][k] = pre;
      tile_total[g][k] = all.v;
    }
}

// D: carried over the repetitions of the tile, then applied to every element.
void ScanLowering::apply() {
  std::vector<int> chunk_order;
  for (int i = 0; i < reps; ++i)
    chunk_order.push_back(rev ? reps - 1 - i : i);
  std::vector<Regs> out(n, Regs(d.num_regs()));
  int gi = 0;
  for (auto& [key, regs] : groups) {
    Partial carry;
    for (int k : chunk_order) {
      Partial prefix = lw.then(op, lw.then(op, carry, warp_prefix[gi][k]), lane_excl[gi][k]);
      for (int j : chunk_digits(k)) {
        Partial self{acc[gi][j], b.getTrue()};
        Partial r = lw.then(op, prefix, self);
        for (size_t t = 0; t < n; ++t)
          out[t][regs[j]] = r.v[t];
      }
      carry = lw.then(op, carry, Partial{tile_total[gi][k], b.getTrue()});
    }
    ++gi;
  }
  for (size_t k = 0; k < n; ++k)
    lw.set(op.results[k], std::move(out[k]));
}

void CollectiveLowering::scan(const ir::Op& op) {
  ScanLowering(*this, op).run();
}

} // namespace tritium::gpu
