#include "gpu/layout.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tritium::gpu {

std::string BlockedLayout::str() const {
  return fmt::format("#blocked<spt={}, tpw={}, wpc={}, order={}>", size_per_thread,
                     threads_per_warp, warps_per_cta, order);
}

std::string SliceLayout::str() const {
  return fmt::format("#slice<dim={}, parent={}>", dim, parent->str());
}

bool is_pow2(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

bool same_layout(const ir::LayoutPtr& a, const ir::LayoutPtr& b) {
  if (!a || !b)
    return !a && !b;
  return a == b || a->str() == b->str();
}

int Dist::num_regs() const {
  int n = 1;
  for (int e : regs_per_dim)
    n *= e;
  return n;
}

std::vector<int> Dist::reg_digits(int r) const {
  std::vector<int> digits(shape.size(), 0);
  for (int d : reg_order) {
    digits[d] = r % regs_per_dim[d];
    r /= regs_per_dim[d];
  }
  return digits;
}

int Dist::reg_index(const std::vector<int>& digits) const {
  int r = 0;
  for (int k = static_cast<int>(reg_order.size()) - 1; k >= 0; --k) {
    int d = reg_order[k];
    r = r * regs_per_dim[d] + digits[d];
  }
  return r;
}

std::vector<int64_t> Dist::reg_offset(int r) const {
  auto digits = reg_digits(r);
  std::vector<int64_t> off(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    off[d] = (digits[d] / spt[d]) * tile(static_cast<int>(d)) + digits[d] % spt[d];
  return off;
}

Dist resolve(const ir::LayoutPtr& layout, const std::vector<int64_t>& shape) {
  for (int64_t s : shape)
    if (!is_pow2(s))
      throw Error(fmt::format("GPU lowering: tensor shape {} has a dimension that is not a power "
                              "of two",
                              ir::shape_string(shape)));
  if (auto* b = dynamic_cast<const BlockedLayout*>(layout.get())) {
    Dist d;
    int rank = static_cast<int>(shape.size());
    if (static_cast<int>(b->order.size()) != rank)
      throw Error(fmt::format("GPU lowering: layout {} does not fit shape {}", b->str(),
                              ir::shape_string(shape)));
    d.shape = shape;
    d.spt = b->size_per_thread;
    d.tpw = b->threads_per_warp;
    d.wpc = b->warps_per_cta;
    d.reg_order = b->order;
    d.lane_stride.assign(rank, 1);
    d.warp_stride.assign(rank, 1);
    int ls = 1, ws = 1;
    for (int k : b->order) {
      d.lane_stride[k] = ls;
      ls *= d.tpw[k];
      d.warp_stride[k] = ws;
      ws *= d.wpc[k];
    }
    d.regs_per_dim.resize(rank);
    for (int k = 0; k < rank; ++k) {
      int64_t reps = std::max<int64_t>(1, shape[k] / d.tile(k));
      d.regs_per_dim[k] = static_cast<int>(std::min<int64_t>(shape[k], reps * d.spt[k]));
    }
    return d;
  }
  if (auto* s = dynamic_cast<const SliceLayout*>(layout.get())) {
    auto pshape = shape;
    pshape.insert(pshape.begin() + s->dim, 1);
    Dist p = resolve(s->parent, pshape);
    Dist d;
    d.replica_lanes = p.replica_lanes;
    d.replica_warps = p.replica_warps;
    d.replica_lanes.emplace_back(p.lane_stride[s->dim], p.tpw[s->dim]);
    d.replica_warps.emplace_back(p.warp_stride[s->dim], p.wpc[s->dim]);
    for (int k = 0; k < p.rank(); ++k) {
      if (k == s->dim)
        continue;
      d.shape.push_back(p.shape[k]);
      d.spt.push_back(p.spt[k]);
      d.tpw.push_back(p.tpw[k]);
      d.wpc.push_back(p.wpc[k]);
      d.lane_stride.push_back(p.lane_stride[k]);
      d.warp_stride.push_back(p.warp_stride[k]);
      d.regs_per_dim.push_back(p.regs_per_dim[k]);
    }
    for (int k : p.reg_order)
      if (k != s->dim)
        d.reg_order.push_back(k > s->dim ? k - 1 : k);
    return d;
  }
  throw Error(fmt::format("GPU lowering: tensor of shape {} has no distributed layout",
                          ir::shape_string(shape)));
}

ir::LayoutPtr blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& order,
                             int vec, int num_warps, int warp_size) {
  auto b = std::make_shared<BlockedLayout>();
  int rank = static_cast<int>(shape.size());
  b->size_per_thread.assign(rank, 1);
  b->threads_per_warp.assign(rank, 1);
  b->warps_per_cta.assign(rank, 1);
  b->order = order;
  if (rank == 0)
    return b;
  b->size_per_thread[order[0]] =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(vec, shape[order[0]])));
  // Threads first along the fastest dimension, as far as the tensor reaches; the rest of
  // the warp goes to the slowest dimension (replicating if the tensor is small).
  int left = warp_size;
  for (int k : order) {
    int64_t room = std::max<int64_t>(1, shape[k] / b->size_per_thread[k]);
    int t = static_cast<int>(std::min<int64_t>(left, room));
    b->threads_per_warp[k] = t;
    left /= t;
  }
  b->threads_per_warp[order.back()] *= left;
  left = num_warps;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int k = *it;
    int64_t room =
        std::max<int64_t>(1, shape[k] / (int64_t{b->size_per_thread[k]} * b->threads_per_warp[k]));
    int w = static_cast<int>(std::min<int64_t>(left, room));
    b->warps_per_cta[k] = w;
    left /= w;
  }
  b->warps_per_cta[order[0]] *= left;
  return b;
}

ir::LayoutPtr default_layout(const std::vector<int64_t>& shape, int num_warps, int warp_size) {
  std::vector<int> order;
  for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k)
    order.push_back(k);
  return blocked_layout(shape, order, 1, num_warps, warp_size);
}

ir::LayoutPtr slice_layout(int dim, ir::LayoutPtr parent) {
  auto s = std::make_shared<SliceLayout>();
  s->dim = dim;
  s->parent = std::move(parent);
  return s;
}

} // namespace tritium::gpu
