#include "gpu_ir/conversion_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace tritium::gpu {
namespace {

using Coord = LinearLayout::Coord;

// Numbers the coordinate bits of a shape: dimension d's bit b is first[d] + b.
class CoordBits {
public:
  explicit CoordBits(const std::vector<int64_t>& shape) {
    for (int64_t s : shape) {
      first_.push_back(count_);
      count_ += log2_exact(s);
    }
  }
  int count() const { return count_; }
  // The bit a basis selects, or -1 for a replica.
  int id(const Coord& c) const {
    const int d = LinearLayout::dim_of(c);
    return d < 0 ? -1 : first_[static_cast<size_t>(d)] + LinearLayout::bit_of(c);
  }

private:
  std::vector<int> first_;
  int count_ = 0;
};

int ilog2(int64_t v) {
  return std::bit_width(static_cast<uint64_t>(v)) - 1;
}

// How many leading register bases can form one access of at most 16 bytes.
int vector_bits(const LinearLayout& l, int elem_bytes) {
  int k = 0;
  while (k < static_cast<int>(l.reg.size()) && LinearLayout::dim_of(l.reg[k]) >= 0 &&
         (int64_t{elem_bytes} << (k + 1)) <= 16)
    ++k;
  return k;
}

// How many of `l`'s leading register bases are `lead`'s first k, in order.
int common_prefix(const LinearLayout& lead, int k, const LinearLayout& l) {
  int p = 0;
  while (p < k && p < static_cast<int>(l.reg.size()) && l.reg[p] == lead.reg[p])
    ++p;
  return p;
}

int64_t accesses_of(const ConversionPlan::Side& s) {
  return (int64_t{1} << s.reg.size()) / s.vec;
}

// The phase of a warp's access: lanes whose accesses the hardware serves together (one row of
// banks per phase).
int phase_bits(int access_bytes_log2, int row_bytes_log2, int bank_bytes_log2, int lanes_log2) {
  return std::min(lanes_log2, row_bytes_log2 - std::max(access_bytes_log2, bank_bytes_log2));
}

// A fragment layout as 8x8 matrix instructions of 16-bit elements see it (ConversionPlan::Side::
// matrix): rows of 8 as the vector, the 32 row addresses of four matrices as the lanes; nullopt
// where `l` is no such fragment (or holds fewer than four matrices a thread).
std::optional<LinearLayout> matrix_view(const LinearLayout& l, int elem_bytes) {
  if (elem_bytes != 2 || l.lane.size() != 5 || l.reg.size() < 3)
    return std::nullopt;
  for (const Coord* c : {&l.reg[0], &l.lane[0], &l.lane[1]})
    if (LinearLayout::dim_of(*c) < 0)
      return std::nullopt;
  LinearLayout v = l;
  v.reg = {l.reg[0], l.lane[0], l.lane[1]};
  v.reg.insert(v.reg.end(), l.reg.begin() + 3, l.reg.end());
  v.lane = {l.lane[2], l.lane[3], l.lane[4], l.reg[1], l.reg[2]};
  return v;
}

// The plan whose `lead` side accesses vectors of its first k register bases (`from` and `to`
// as the sides access them: a matrix side in its matrix view).
ConversionPlan build_plan(const LinearLayout& from, const LinearLayout& to, bool lead_is_to, int k,
                          int elem_bytes, int banks, int bank_bytes) {
  const CoordBits bits(from.shape);
  const int eb_log = ilog2(elem_bytes);
  const int bank_log = ilog2(bank_bytes), row_log = ilog2(int64_t{banks} * bank_bytes);
  const LinearLayout& lead = lead_is_to ? to : from;
  const LinearLayout& other = lead_is_to ? from : to;
  const int p = common_prefix(lead, k, other);

  // Offsets: the lead's vector, its lanes (consecutive chunks for a phase), its other
  // registers, its warps, then any bit it does not hold.
  std::vector<int64_t> image(static_cast<size_t>(bits.count()), 0);
  std::vector<bool> placed(image.size(), false);
  int next = 0;
  auto place = [&](const Coord& c) {
    const int id = bits.id(c);
    if (id >= 0 && !placed[static_cast<size_t>(id)]) {
      placed[static_cast<size_t>(id)] = true;
      image[static_cast<size_t>(id)] = int64_t{1} << next++;
    }
  };
  for (int i = 0; i < k; ++i)
    place(lead.reg[static_cast<size_t>(i)]);
  for (const Coord& c : lead.lane)
    place(c);
  for (size_t i = static_cast<size_t>(k); i < lead.reg.size(); ++i)
    place(lead.reg[i]);
  for (const Coord& c : lead.warp)
    place(c);
  for (size_t id = 0; id < image.size(); ++id)
    if (!placed[id])
      image[id] = int64_t{1} << next++;

  // The swizzle: the other side's lanes in one phase that only differ above the bank bits get
  // a free bank bit each, above both sides' vectors (which stay contiguous).
  const int other_access = eb_log + p, lead_access = eb_log + k;
  const int lanes_log = static_cast<int>(other.lane.size());
  const int phase = phase_bits(other_access, row_log, bank_log, lanes_log);
  const int lo = std::max({bank_log, other_access, lead_access});
  uint64_t used = 0; // byte bits of the bank index taken by a lane of the phase
  std::vector<int> high;
  for (int j = 0; j < phase; ++j) {
    const int id = bits.id(other.lane[static_cast<size_t>(j)]);
    if (id < 0)
      continue;
    const uint64_t bytes = static_cast<uint64_t>(image[static_cast<size_t>(id)]) << eb_log;
    if (bytes >> row_log)
      high.push_back(id);
    else
      used |= bytes;
  }
  for (int id : high) {
    int t = lo;
    while (t < row_log && (used >> t & 1))
      ++t;
    if (t >= row_log || t < eb_log)
      break;
    used |= uint64_t{1} << t;
    image[static_cast<size_t>(id)] |= int64_t{1} << (t - eb_log);
  }

  ConversionPlan plan;
  plan.elements = int64_t{1} << bits.count();
  auto side = [&](const LinearLayout& l, int vec_bits) {
    ConversionPlan::Side s;
    auto offsets = [&](const std::vector<Coord>& bases, std::vector<int64_t>& out) {
      for (const Coord& c : bases) {
        const int id = bits.id(c);
        out.push_back(id < 0 ? 0 : image[static_cast<size_t>(id)]);
      }
    };
    offsets(l.reg, s.reg);
    offsets(l.lane, s.lane);
    offsets(l.warp, s.warp);
    s.vec = 1 << vec_bits;
    return s;
  };
  plan.write = side(from, lead_is_to ? p : k);
  plan.read = side(to, lead_is_to ? k : p);
  return plan;
}

// Shared-memory wavefronts a side takes: per access, the rows of banks its bytes fill, times
// the worst bank conflict.
int64_t wavefronts(const ConversionPlan::Side& side, int elem_bytes, int banks, int bank_bytes) {
  const int64_t lanes = int64_t{1} << side.lane.size();
  const int64_t row = int64_t{banks} * bank_bytes;
  const int64_t per_access = std::max<int64_t>(1, (lanes * side.vec * elem_bytes + row - 1) / row);
  return accesses_of(side) * per_access *
         bank_conflicts(side, elem_bytes, static_cast<int>(std::min<int64_t>(lanes, 64)));
}

} // namespace

// Every choice of vectorized side and vector length, the one with the fewest wavefronts (the
// reading side's longest vector on a tie: it usually feeds a store's vectors); then, where the
// target has the instructions, a matrix side where it takes no more wavefronts and fewer
// instructions. (A wgmma accumulator's epilogue takes as many wavefronts either way, 4-byte
// pairs or stmatrix, and a quarter of the instructions with stmatrix. Fewer instructions do not
// decide between plain plans: wider vectors gathered from more registers cost AMD's GEMM
// epilogues VGPRs, tests/amd_parity.)
ConversionPlan plan_conversion(const LinearLayout& from, const LinearLayout& to, int elem_bytes,
                               MatrixAccess matrix, int banks, int bank_bytes) {
  ConversionPlan best;
  int64_t best_cost = -1;
  auto consider = [&](ConversionPlan plan) {
    const int64_t cost = wavefronts(plan.write, elem_bytes, banks, bank_bytes) +
                         wavefronts(plan.read, elem_bytes, banks, bank_bytes);
    const bool fewer_instructions = accesses_of(plan.write) + accesses_of(plan.read) <
                                    accesses_of(best.write) + accesses_of(best.read);
    if (best_cost < 0 || cost < best_cost ||
        (cost == best_cost && (plan.write.matrix || plan.read.matrix) && fewer_instructions)) {
      best = std::move(plan);
      best_cost = cost;
    }
  };
  for (bool lead_is_to : {true, false})
    for (int k = vector_bits(lead_is_to ? to : from, elem_bytes); k >= 0; --k)
      consider(build_plan(from, to, lead_is_to, k, elem_bytes, banks, bank_bytes));
  // 16-byte rows of matrices: the vector of three bits the view starts with.
  if (matrix.read)
    if (auto view = matrix_view(to, elem_bytes)) {
      ConversionPlan plan = build_plan(from, *view, true, 3, elem_bytes, banks, bank_bytes);
      plan.read.matrix = true;
      consider(std::move(plan));
    }
  if (matrix.write)
    if (auto view = matrix_view(from, elem_bytes)) {
      ConversionPlan plan = build_plan(*view, to, false, 3, elem_bytes, banks, bank_bytes);
      plan.write.matrix = true;
      consider(std::move(plan));
    }
  return best;
}

int bank_conflicts(const ConversionPlan::Side& side, int elem_bytes, int warp_size) {
  const int64_t access = int64_t{side.vec} * elem_bytes;
  const int phase = access >= 16 ? 8 : access == 8 ? 16 : 32;
  const int lanes = std::min(warp_size, 1 << side.lane.size());
  auto xor_of = [](const std::vector<int64_t>& bases, int64_t bits) {
    int64_t v = 0;
    for (size_t i = 0; i < bases.size(); ++i)
      if (bits >> i & 1)
        v ^= bases[i];
    return v;
  };
  int worst = 1;
  const int64_t regs = int64_t{1} << side.reg.size();
  for (int64_t r = 0; r < regs; r += side.vec)
    for (int first = 0; first < lanes; first += phase) {
      std::map<int64_t, std::set<int64_t>> words; // bank -> the words it serves
      for (int lane = first; lane < std::min(lanes, first + phase); ++lane) {
        const int64_t byte = (xor_of(side.reg, r) ^ xor_of(side.lane, lane)) * elem_bytes;
        for (int64_t w = byte / 4; w <= (byte + access - 1) / 4; ++w)
          words[w % 32].insert(w);
      }
      for (const auto& [bank, set] : words)
        worst = std::max(worst, static_cast<int>(set.size()));
    }
  return worst;
}

std::optional<std::vector<std::pair<size_t, size_t>>> lane_swaps(const LinearLayout& from,
                                                                 const LinearLayout& to) {
  if (from.warp != to.warp || from.lane.size() != to.lane.size() || from.reg.size() > to.reg.size())
    return std::nullopt;
  LinearLayout cur = from;
  std::vector<std::pair<size_t, size_t>> swaps;
  for (size_t j = 0; j < cur.lane.size(); ++j) {
    if (cur.lane[j] == to.lane[j])
      continue;
    if (LinearLayout::dim_of(cur.lane[j]) < 0)
      return std::nullopt;
    if (LinearLayout::dim_of(to.lane[j]) < 0) { // gathered: both halves' values in registers
      apply_lane_step(cur, j, kGatherLane);
      swaps.emplace_back(j, kGatherLane);
      continue;
    }
    auto k = std::find(cur.reg.begin(), cur.reg.end(), to.lane[j]);
    if (k == cur.reg.end())
      return std::nullopt;
    const auto ki = static_cast<size_t>(k - cur.reg.begin());
    apply_lane_step(cur, j, ki);
    swaps.emplace_back(j, ki);
  }
  if (cur.reg.size() != to.reg.size())
    return std::nullopt;
  for (int i = 0; i < to.num_regs(); ++i)
    if (cur.reg_index(to.reg_offset(i)) < 0)
      return std::nullopt;
  return swaps;
}

void apply_lane_step(LinearLayout& l, size_t lane_bit, size_t reg_bit) {
  if (reg_bit == kGatherLane) {
    l.reg.push_back(l.lane[lane_bit]);
    std::fill(l.lane[lane_bit].begin(), l.lane[lane_bit].end(), 0);
  } else {
    std::swap(l.lane[lane_bit], l.reg[reg_bit]);
  }
}

bool converts_in_registers(const LinearLayout& from, const LinearLayout& to) {
  if (from == to)
    return true;
  if (from.lane == to.lane && from.warp == to.warp) {
    bool all = true;
    for (int i = 0; i < to.num_regs() && all; ++i)
      all = from.reg_index(to.reg_offset(i)) >= 0;
    if (all)
      return true;
  }
  return lane_swaps(from, to).has_value();
}

ConversionRounds split_conversion(const LinearLayout& from, const LinearLayout& to,
                                  int64_t elem_bytes, int64_t max_bytes) {
  ConversionRounds out{{}, from, to};
  int64_t bytes = elem_bytes;
  for (int64_t s : from.shape)
    bytes *= s;
  if (bytes <= max_bytes)
    return out;
  using Place = ConversionRounds::Place;
  auto place = [](const LinearLayout& l, const Coord& c) {
    Place p;
    if (auto i = std::find(l.reg.begin(), l.reg.end(), c); i != l.reg.end())
      p.reg = static_cast<int>(i - l.reg.begin());
    else if (auto w = std::find(l.warp.begin(), l.warp.end(), c); w != l.warp.end())
      p.warp = static_cast<int>(w - l.warp.begin());
    return p;
  };
  // Candidates by cost: registers on both sides, then a register on one, then warps on both;
  // later positions first.
  struct Candidate {
    ConversionRounds::Peel peel;
    Coord basis;
    int kind, late;
  };
  std::vector<Candidate> candidates;
  for (const auto* bases : {&from.reg, &from.warp})
    for (const Coord& c : *bases) {
      if (LinearLayout::dim_of(c) < 0)
        continue;
      const Place f = place(from, c), t = place(to, c);
      if (t.reg < 0 && t.warp < 0)
        continue; // a lane bit of `to`
      const int kind = (f.reg < 0) + (t.reg < 0);
      const int late = kind == 2 ? std::max(f.warp, t.warp)
                                 : std::min(f.reg < 0 ? 64 : f.reg, t.reg < 0 ? 64 : t.reg);
      candidates.push_back({{f, t}, c, kind, late});
    }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.late > b.late;
  });
  std::vector<Coord> peeled;
  for (const Candidate& c : candidates) {
    if (bytes <= max_bytes)
      break;
    out.peeled.push_back(c.peel);
    peeled.push_back(c.basis);
    bytes /= 2;
  }
  if (peeled.empty())
    return out;
  // Remove the peeled register bases, make the peeled warp bases replicas (the round's warps
  // are chosen by the caller), and close the gaps the peeled bits leave in each dimension.
  auto compact = [&](const Coord& c) {
    const int d = LinearLayout::dim_of(c);
    if (d < 0)
      return c;
    if (std::find(peeled.begin(), peeled.end(), c) != peeled.end())
      return Coord(c.size(), 0);
    int below = 0;
    for (const Coord& p : peeled)
      below += LinearLayout::dim_of(p) == d && LinearLayout::bit_of(p) < LinearLayout::bit_of(c);
    Coord r = c;
    r[static_cast<size_t>(d)] >>= below;
    return r;
  };
  for (LinearLayout* l : {&out.from, &out.to}) {
    std::vector<Coord> reg;
    for (const Coord& c : l->reg)
      if (std::find(peeled.begin(), peeled.end(), c) == peeled.end())
        reg.push_back(compact(c));
    l->reg = std::move(reg);
    for (auto* bases : {&l->lane, &l->warp})
      for (Coord& c : *bases)
        c = compact(c);
    for (const Coord& p : peeled)
      l->shape[static_cast<size_t>(LinearLayout::dim_of(p))] /= 2;
  }
  return out;
}

int64_t conversion_round_bytes(int64_t max_shared_bytes) {
  static const int64_t knob = [] {
    const char* v = std::getenv("TRITIUM_CONVERSION_ROUND_BYTES");
    if (!v || !*v)
      return int64_t{-1};
    const long long n = std::atoll(v);
    return n > 0 ? static_cast<int64_t>(n) : std::numeric_limits<int64_t>::max();
  }();
  return knob >= 0 ? knob : std::clamp<int64_t>(max_shared_bytes / 3, 16 * 1024, 64 * 1024);
}

int64_t conversion_round_scratch(const LinearLayout& from, const LinearLayout& to,
                                 int64_t elem_bytes, int64_t max_shared_bytes) {
  const ConversionRounds r =
      split_conversion(from, to, elem_bytes, conversion_round_bytes(max_shared_bytes));
  int64_t bytes = elem_bytes;
  for (int64_t s : r.from.shape)
    bytes *= s;
  return (bytes + 15) / 16 * 16;
}

int ConversionRounds::full_reg(bool to_side, int round, int r) const {
  const LinearLayout& l = to_side ? to : from;
  int full = 0, next = 0, peeled_regs = 0;
  for (const Peel& p : peeled)
    peeled_regs += (to_side ? p.to : p.from).reg >= 0;
  const int n = static_cast<int>(l.reg.size()) + peeled_regs;
  for (int b = 0; b < n; ++b) {
    int bit = -1;
    for (size_t i = 0; i < peeled.size() && bit < 0; ++i)
      if ((to_side ? peeled[i].to : peeled[i].from).reg == b)
        bit = round >> i & 1;
    if (bit < 0)
      bit = r >> next++ & 1;
    full |= bit << b;
  }
  return full;
}

std::pair<unsigned, unsigned> ConversionRounds::warps_of_round(bool to_side, int round) const {
  unsigned mask = 0, value = 0;
  for (size_t i = 0; i < peeled.size(); ++i) {
    const int w = (to_side ? peeled[i].to : peeled[i].from).warp;
    if (w < 0)
      continue;
    mask |= 1u << w;
    value |= static_cast<unsigned>(round >> i & 1) << w;
  }
  return {mask, value};
}

} // namespace tritium::gpu
