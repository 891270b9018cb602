#include "gpu_ir/layout.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>

namespace tritium::gpu {

const char* matrix_unit_name(MatrixUnit u) {
  switch (u) {
  case MatrixUnit::None:
    return "none";
  case MatrixUnit::MmaSync:
    return "mma_sync";
  case MatrixUnit::Wgmma:
    return "wgmma";
  case MatrixUnit::Mfma:
    return "mfma";
  case MatrixUnit::Wmma:
    return "wmma";
  }
  return "?";
}

std::string BlockedLayout::str() const {
  return fmt::format("#blocked<spt={}, tpw={}, wpc={}, order={}>", size_per_thread,
                     threads_per_warp, warps_per_cta, order);
}

std::string SliceLayout::str() const {
  return fmt::format("#slice<dim={}, parent={}>", dim, parent->str());
}

std::string MmaLayout::str() const {
  return fmt::format("#mma<{}{}, wpc={}, instr={}{}>", matrix_unit_name(unit),
                     version > 1 ? fmt::format("_v{}", version) : "", warps_per_cta, instr,
                     transposed ? ", transposed=1" : "");
}

std::string DotOperandLayout::str() const {
  return fmt::format("#dot_op<{}, k_width={}, parent={}>", op_idx, k_width, parent->str());
}

std::string SharedLayout::str() const {
  if (block_cols)
    return fmt::format("#shared<vec={}, per_phase={}, max_phase={}, order={}, block_cols={}>", vec,
                       per_phase, max_phase, order, block_cols);
  return fmt::format("#shared<vec={}, per_phase={}, max_phase={}, order={}>", vec, per_phase,
                     max_phase, order);
}

std::string LinearLayoutAttr::str() const {
  return fmt::format("#linear<shape={}, reg={}, lane={}, warp={}>", bases->shape, bases->reg,
                     bases->lane, bases->warp);
}

bool is_pow2(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

int log2_exact(int64_t v) {
  return std::countr_zero(static_cast<uint64_t>(v));
}

bool BlockedLayout::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const BlockedLayout*>(&other);
  return o && size_per_thread == o->size_per_thread && threads_per_warp == o->threads_per_warp &&
         warps_per_cta == o->warps_per_cta && order == o->order;
}

bool SliceLayout::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const SliceLayout*>(&other);
  return o && dim == o->dim && ir::same_layout(parent, o->parent);
}

bool MmaLayout::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const MmaLayout*>(&other);
  return o && unit == o->unit && version == o->version && warps_per_cta == o->warps_per_cta &&
         instr == o->instr && transposed == o->transposed;
}

bool DotOperandLayout::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const DotOperandLayout*>(&other);
  return o && op_idx == o->op_idx && k_width == o->k_width && ir::same_layout(parent, o->parent);
}

bool LinearLayoutAttr::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const LinearLayoutAttr*>(&other);
  return o && *bases == *o->bases;
}

bool SharedLayout::equals(const ir::Layout& other) const {
  auto* o = dynamic_cast<const SharedLayout*>(&other);
  return o && vec == o->vec && per_phase == o->per_phase && max_phase == o->max_phase &&
         order == o->order && block_cols == o->block_cols;
}

// --- parsing what str() writes ---------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// "#kind<a, key=b, …>": the kind and its fields (key "" for positional ones), split at the
// commas outside brackets.
struct Fields {
  std::string_view text, kind;
  std::vector<std::pair<std::string_view, std::string_view>> items;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("layout '{}': {}", text, what));
  }
  std::string_view get(std::string_view key) const {
    for (const auto& [k, v] : items)
      if (k == key)
        return v;
    fail(fmt::format("no field '{}'", key));
  }
  bool has(std::string_view key) const {
    for (const auto& [k, v] : items)
      if (k == key)
        return true;
    return false;
  }
  std::string_view positional(size_t i) const {
    size_t n = 0;
    for (const auto& [k, v] : items)
      if (k.empty() && n++ == i)
        return v;
    fail(fmt::format("no field {}", i));
  }
  int64_t integer(std::string_view v) const {
    v = trim(v);
    int64_t out = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size())
      fail(fmt::format("'{}' is not an integer", v));
    return out;
  }
  int int_field(std::string_view key) const { return static_cast<int>(integer(get(key))); }
  // "[a, b, …]" as integers (list) or "[[…], […]]" as lists of integers.
  std::vector<std::string_view> elements(std::string_view v, std::string_view key) const {
    v = trim(v);
    if (v.size() < 2 || v.front() != '[' || v.back() != ']')
      fail(fmt::format("field '{}' is not a list", key));
    std::vector<std::string_view> out;
    v = trim(v.substr(1, v.size() - 2));
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= v.size() && !v.empty(); ++i) {
      char c = i < v.size() ? v[i] : ',';
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      if (c == ',' && depth == 0) {
        out.push_back(trim(v.substr(start, i - start)));
        start = i + 1;
      }
    }
    return out;
  }
  std::vector<std::vector<int64_t>> lists(std::string_view key) const {
    std::vector<std::vector<int64_t>> out;
    for (std::string_view item : elements(get(key), key)) {
      out.emplace_back();
      for (std::string_view x : elements(item, key))
        out.back().push_back(integer(x));
    }
    return out;
  }
  std::vector<int> ints(std::string_view key) const {
    std::string_view v = trim(get(key));
    if (v.size() < 2 || v.front() != '[' || v.back() != ']')
      fail(fmt::format("field '{}' is not a list", key));
    std::vector<int> out;
    v = trim(v.substr(1, v.size() - 2));
    while (!v.empty()) {
      size_t comma = v.find(',');
      out.push_back(static_cast<int>(integer(v.substr(0, comma))));
      v = comma == std::string_view::npos ? std::string_view() : trim(v.substr(comma + 1));
    }
    return out;
  }
};

Fields split_fields(std::string_view text) {
  Fields f{text, {}, {}};
  std::string_view s = trim(text);
  size_t open = s.find('<');
  if (s.empty() || s.front() != '#' || open == std::string_view::npos || s.back() != '>')
    f.fail("expected '#kind<…>'");
  f.kind = s.substr(1, open - 1);
  std::string_view body = s.substr(open + 1, s.size() - open - 2);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    char c = i < body.size() ? body[i] : ',';
    if (c == '<' || c == '[')
      ++depth;
    else if (c == '>' || c == ']')
      --depth;
    else if (c == ',' && depth == 0) {
      std::string_view item = trim(body.substr(start, i - start));
      start = i + 1;
      if (item.empty())
        continue;
      size_t eq = item.find('=');
      size_t bracket = item.find_first_of("<[");
      if (eq != std::string_view::npos && (bracket == std::string_view::npos || eq < bracket))
        f.items.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
      else
        f.items.emplace_back(std::string_view(), item);
    }
  }
  if (depth != 0)
    f.fail("unbalanced brackets");
  return f;
}

// One function per layout kind, named as str() names it.
ir::LayoutPtr parse_blocked(const Fields& f) {
  auto l = std::make_shared<BlockedLayout>();
  l->size_per_thread = f.ints("spt");
  l->threads_per_warp = f.ints("tpw");
  l->warps_per_cta = f.ints("wpc");
  l->order = f.ints("order");
  size_t rank = l->order.size();
  if (l->size_per_thread.size() != rank || l->threads_per_warp.size() != rank ||
      l->warps_per_cta.size() != rank)
    f.fail("spt, tpw, wpc and order must have one entry per dimension");
  return l;
}

ir::LayoutPtr parse_slice(const Fields& f) {
  auto l = std::make_shared<SliceLayout>();
  l->dim = f.int_field("dim");
  l->parent = parse_layout(f.get("parent"));
  return l;
}

ir::LayoutPtr parse_mma(const Fields& f) {
  auto l = std::make_shared<MmaLayout>();
  std::string_view unit = trim(f.positional(0));
  // "wmma_v2": the unit, then its generation.
  std::string_view name = unit;
  if (size_t v = unit.rfind("_v"); v != std::string_view::npos && v + 2 < unit.size() &&
                                   std::isdigit(static_cast<unsigned char>(unit[v + 2]))) {
    name = unit.substr(0, v);
    l->version = static_cast<int>(f.integer(unit.substr(v + 2)));
  }
  bool found = false;
  for (MatrixUnit u : {MatrixUnit::MmaSync, MatrixUnit::Wgmma, MatrixUnit::Mfma, MatrixUnit::Wmma})
    if (name == matrix_unit_name(u)) {
      l->unit = u;
      found = true;
    }
  if (!found || l->version < 1)
    f.fail(fmt::format("unknown matrix unit '{}'", unit));
  l->warps_per_cta = f.ints("wpc");
  l->instr = f.ints("instr");
  l->transposed = f.has("transposed") && f.int_field("transposed") != 0;
  if (l->transposed && l->unit != MatrixUnit::Mfma && l->unit != MatrixUnit::Wmma)
    f.fail("only AMD accumulators (MFMA, WMMA) are transposed");
  return l;
}

ir::LayoutPtr parse_dot_operand(const Fields& f) {
  auto l = std::make_shared<DotOperandLayout>();
  l->op_idx = static_cast<int>(f.integer(f.positional(0)));
  l->k_width = f.int_field("k_width");
  l->parent = parse_layout(f.get("parent"));
  return l;
}

ir::LayoutPtr parse_shared(const Fields& f) {
  auto l = std::make_shared<SharedLayout>();
  l->vec = f.int_field("vec");
  l->per_phase = f.int_field("per_phase");
  l->max_phase = f.int_field("max_phase");
  l->order = f.ints("order");
  l->block_cols = f.has("block_cols") ? f.int_field("block_cols") : 0;
  return l;
}

ir::LayoutPtr parse_linear(const Fields& f) {
  LinearLayout l;
  for (std::string_view x : f.elements(f.get("shape"), "shape"))
    l.shape.push_back(f.integer(x));
  l.reg = f.lists("reg");
  l.lane = f.lists("lane");
  l.warp = f.lists("warp");
  for (const auto* bases : {&l.reg, &l.lane, &l.warp})
    for (const auto& c : *bases) {
      if (c.size() != l.shape.size())
        f.fail("a basis must have one entry per dimension");
      int nonzero = 0;
      for (size_t d = 0; d < c.size(); ++d) {
        if (c[d] && (!is_pow2(c[d]) || c[d] >= l.shape[d]))
          f.fail("a basis entry must be a power of two inside the shape");
        nonzero += c[d] != 0;
      }
      if (nonzero > 1)
        f.fail("a basis selects at most one dimension");
    }
  return linear_layout(std::move(l));
}

} // namespace

ir::LayoutPtr parse_layout(std::string_view text) {
  static const std::pair<std::string_view, ir::LayoutPtr (*)(const Fields&)> kinds[] = {
      {"blocked", parse_blocked},    {"slice", parse_slice},   {"mma", parse_mma},
      {"dot_op", parse_dot_operand}, {"shared", parse_shared}, {"linear", parse_linear},
  };
  Fields f = split_fields(text);
  for (const auto& [name, parse] : kinds)
    if (f.kind == name)
      return parse(f);
  f.fail(fmt::format("unknown layout kind '{}'", f.kind));
}

// --- LinearLayout ------------------------------------------------------------------------

LinearLayout::Coord LinearLayout::reg_offset(int r) const {
  Coord c(shape.size(), 0);
  for (size_t i = 0; i < reg.size(); ++i)
    if (r >> i & 1)
      for (size_t d = 0; d < c.size(); ++d)
        c[d] |= reg[i][d];
  return c;
}

int LinearLayout::reg_index(const Coord& offset) const {
  Coord left = offset;
  int r = 0;
  for (size_t i = 0; i < reg.size(); ++i) {
    int d = dim_of(reg[i]);
    if (d >= 0 && (left[d] & reg[i][d])) {
      r |= 1 << i;
      left[d] &= ~reg[i][d];
    }
  }
  for (int64_t v : left)
    if (v)
      return -1;
  return r;
}

unsigned LinearLayout::replica_lane_mask() const {
  unsigned m = 0;
  for (size_t j = 0; j < lane.size(); ++j)
    if (dim_of(lane[j]) < 0)
      m |= 1u << j;
  return m;
}

unsigned LinearLayout::replica_warp_mask() const {
  unsigned m = 0;
  for (size_t j = 0; j < warp.size(); ++j)
    if (dim_of(warp[j]) < 0)
      m |= 1u << j;
  return m;
}

int LinearLayout::dim_of(const Coord& basis) {
  for (size_t d = 0; d < basis.size(); ++d)
    if (basis[d])
      return static_cast<int>(d);
  return -1;
}

int LinearLayout::bit_of(const Coord& basis) {
  int d = dim_of(basis);
  return d < 0 ? -1 : log2_exact(basis[d]);
}

int LinearLayout::contiguous_regs(int dim) const {
  int n = 0;
  while (n < static_cast<int>(reg.size()) && dim_of(reg[n]) == dim && reg[n][dim] == (1 << n))
    ++n;
  return 1 << n;
}

std::string LinearLayout::str() const {
  return fmt::format("{}: reg={} lane={} warp={}", ir::shape_string(shape), reg, lane, warp);
}

namespace {

// Builds the bases of one layout for one shape. A basis beyond the shape is a replica: zero
// for lanes and warps, absent for registers (a thread holds each element once).
class Bases {
public:
  explicit Bases(std::vector<int64_t> shape) { l_.shape = std::move(shape); }

  void reg(int dim, int64_t v) {
    if (auto c = basis(dim, v); LinearLayout::dim_of(c) >= 0)
      l_.reg.push_back(std::move(c));
  }
  void lane(int dim, int64_t v) { l_.lane.push_back(basis(dim, v)); }
  void warp(int dim, int64_t v) { l_.warp.push_back(basis(dim, v)); }
  // Register bases repeating a tile of `tile` elements along dim until the shape is covered.
  void repeat(int dim, int64_t tile) {
    for (int64_t v = tile; v < l_.shape[dim]; v *= 2)
      reg(dim, v);
  }
  LinearLayout take() { return std::move(l_); }

private:
  LinearLayout::Coord basis(int dim, int64_t v) const {
    LinearLayout::Coord c(l_.shape.size(), 0);
    if (dim >= 0 && v < l_.shape[dim])
      c[dim] = v;
    return c;
  }
  LinearLayout l_;
};

[[noreturn]] void misfit(const ir::Layout& l, const std::vector<int64_t>& shape) {
  throw Error(fmt::format("GPU lowering: layout {} does not fit shape {}", l.str(),
                          ir::shape_string(shape)));
}

LinearLayout resolve_blocked(const BlockedLayout& b, const std::vector<int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  if (static_cast<int>(b.order.size()) != rank)
    misfit(b, shape);
  Bases out(shape);
  // Registers: each dimension's run, then its repetitions; dimensions fastest first.
  for (int d : b.order) {
    for (int64_t v = 1; v < b.size_per_thread[d]; v *= 2)
      out.reg(d, v);
    out.repeat(d, int64_t{b.size_per_thread[d]} * b.threads_per_warp[d] * b.warps_per_cta[d]);
  }
  for (int d : b.order)
    for (int64_t v = 1; v < b.threads_per_warp[d]; v *= 2)
      out.lane(d, v * b.size_per_thread[d]);
  for (int d : b.order)
    for (int64_t v = 1; v < b.warps_per_cta[d]; v *= 2)
      out.warp(d, v * b.size_per_thread[d] * b.threads_per_warp[d]);
  return out.take();
}

// The warps of an Mma layout: along M first, then along N, each warp a tile of m x n.
void mma_warps(Bases& out, const MmaLayout& m, int64_t tile_m, int64_t tile_n, int keep_dim) {
  for (int64_t v = 1; v < m.warps_per_cta[0]; v *= 2)
    out.warp(keep_dim == 1 ? -1 : 0, v * tile_m);
  for (int64_t v = 1; v < m.warps_per_cta[1]; v *= 2)
    out.warp(keep_dim == 0 ? -1 : 1, v * tile_n);
}

// The accumulator: one instruction's tile per warp (or warpgroup), as each ISA defines it.
LinearLayout resolve_mma(const MmaLayout& m, const std::vector<int64_t>& shape) {
  if (shape.size() != 2 || m.warps_per_cta.size() != 2 || m.instr.size() != 2)
    misfit(m, shape);
  Bases out(shape);
  const int64_t im = m.instr[0], in = m.instr[1];
  int64_t tile_m = im, tile_n = in;
  switch (m.unit) {
  case MatrixUnit::MmaSync:
  case MatrixUnit::Wgmma:
    // Per warp 16 rows: lane = 4 * row + column pair; c[0..1] a column pair, c[2..3] 8 rows
    // down, then the next 8 columns (wgmma's N up to 256).
    out.reg(1, 1);
    out.lane(1, 2);
    out.lane(1, 4);
    out.lane(0, 1);
    out.lane(0, 2);
    out.lane(0, 4);
    out.reg(0, 8);
    for (int64_t v = 8; v < in; v *= 2)
      out.reg(1, v);
    tile_m = 16; // wgmma: four warps of 16 rows make the warpgroup's 64
    break;
  case MatrixUnit::Mfma: {
    // Transposed, rows and columns trade places (the instruction computes the tile's transpose).
    const int col = m.transposed ? 0 : 1, row = 1 - col;
    if (im == 32) { // 32x32: lane = column + 32 * (row / 4 % 2); acc[i] rows i%4 + 8 * (i/4)
      for (int64_t v = 1; v < 32; v *= 2)
        out.lane(col, v);
      out.lane(row, 4);
      out.reg(row, 1);
      out.reg(row, 2);
      out.reg(row, 8);
      out.reg(row, 16);
    } else { // 16x16: lane = column + 16 * (row / 4); acc[i] row i % 4
      for (int64_t v = 1; v < 16; v *= 2)
        out.lane(col, v);
      out.lane(row, 4);
      out.lane(row, 8);
      out.reg(row, 1);
      out.reg(row, 2);
    }
    break;
  }
  case MatrixUnit::Wmma: {
    const int col = m.transposed ? 0 : 1, row = 1 - col; // as MFMA's
    for (int64_t v = 1; v < 16; v *= 2)
      out.lane(col, v);
    if (m.version >= 2) { // 16x16: lane = column + 16 * (row / 8); acc[i] row i + 8 * (lane / 16)
      out.lane(row, 8);
      out.reg(row, 1);
      out.reg(row, 2);
      out.reg(row, 4);
    } else { // 16x16: lane = column + 16 * (row % 2); acc[i] row 2 * i + lane / 16
      out.lane(row, 1);
      out.reg(row, 2);
      out.reg(row, 4);
      out.reg(row, 8);
    }
    break;
  }
  case MatrixUnit::None:
    misfit(m, shape);
  }
  mma_warps(out, m, tile_m, tile_n, -1);
  out.repeat(1, tile_n * m.warps_per_cta[1]);
  out.repeat(0, tile_m * m.warps_per_cta[0]);
  return out.take();
}

// Operands in registers, as each ISA's fragment layout puts them. `kd` is the K dimension
// (1 for a, 0 for b), `od` the other one (M or N).
LinearLayout resolve_dot_operand(const DotOperandLayout& o, const std::vector<int64_t>& shape) {
  auto* m = dynamic_cast<const MmaLayout*>(o.parent.get());
  if (!m || shape.size() != 2 || (o.op_idx != 0 && o.op_idx != 1) || !is_pow2(o.k_width))
    misfit(o, shape);
  Bases out(shape);
  const int kd = o.op_idx == 0 ? 1 : 0, od = 1 - kd;
  const int64_t kw = o.k_width;
  int64_t tile_o = 0, instr_k = 0;
  switch (m->unit) {
  case MatrixUnit::MmaSync:
  case MatrixUnit::Wgmma: // a: 16 x 8kw per warp; b: 8kw x 8
    for (int64_t v = 1; v < kw; v *= 2)
      out.reg(kd, v);
    out.lane(kd, kw);
    out.lane(kd, 2 * kw);
    out.lane(od, 1);
    out.lane(od, 2);
    out.lane(od, 4);
    if (o.op_idx == 0)
      out.reg(od, 8);
    out.reg(kd, 4 * kw);
    tile_o = o.op_idx == 0 ? 16 : m->instr[1];
    instr_k = 8 * kw;
    break;
  case MatrixUnit::Mfma: { // kw consecutive K per lane; the lane groups above the tile take more K
    const int64_t t = m->instr[0];
    for (int64_t v = 1; v < kw; v *= 2)
      out.reg(kd, v);
    for (int64_t v = 1; v < t; v *= 2)
      out.lane(od, v);
    for (int64_t v = kw; v < kw * (64 / t); v *= 2)
      out.lane(kd, v);
    tile_o = t;
    instr_k = kw * (64 / t);
    break;
  }
  case MatrixUnit::Wmma:
    // v1: lanes 0-15 hold rows (columns) with all 16 K, lanes 16-31 repeat them. v2: lanes 0-15
    // hold K 0 to kw - 1 of them, lanes 16-31 the next kw.
    for (int64_t v = 1; v < kw; v *= 2)
      out.reg(kd, v);
    for (int64_t v = 1; v < 16; v *= 2)
      out.lane(od, v);
    if (m->version >= 2)
      out.lane(kd, kw);
    else
      out.lane(-1, 0);
    tile_o = 16;
    instr_k = m->version >= 2 ? 2 * kw : kw;
    break;
  case MatrixUnit::None:
    misfit(o, shape);
  }
  // Warps: those along the other operand's dimension hold copies.
  if (m->unit == MatrixUnit::MmaSync || m->unit == MatrixUnit::Wgmma)
    mma_warps(out, *m, 16, m->instr[1], od);
  else
    mma_warps(out, *m, m->instr[0], m->instr[1], od);
  // Repetitions along M (N) before K: the registers one K step needs come in runs, which
  // ldmatrix fills four matrices at a time.
  out.repeat(od, tile_o * m->warps_per_cta[od]);
  out.repeat(kd, instr_k);
  return out.take();
}

// A #linear layout over another shape of the same rank: bases past a smaller dimension become
// replicas (dropped from the registers), a larger one repeats in registers.
LinearLayout resolve_linear(const LinearLayout& l, const std::vector<int64_t>& shape) {
  if (l.shape == shape)
    return l;
  if (l.shape.size() != shape.size())
    throw Error(fmt::format("GPU lowering: layout {} does not fit shape {}", l.str(),
                            ir::shape_string(shape)));
  Bases out(shape);
  auto keep = [&](const LinearLayout::Coord& c, auto add) {
    int d = LinearLayout::dim_of(c);
    add(d, d < 0 ? 0 : c[d]);
  };
  for (const auto& c : l.reg)
    keep(c, [&](int d, int64_t v) { out.reg(d, v); });
  for (size_t d = 0; d < shape.size(); ++d)
    out.repeat(static_cast<int>(d), l.shape[d]);
  for (const auto& c : l.lane)
    keep(c, [&](int d, int64_t v) { out.lane(d, v); });
  for (const auto& c : l.warp)
    keep(c, [&](int d, int64_t v) { out.warp(d, v); });
  return out.take();
}

} // namespace

LinearLayout resolve(const ir::LayoutPtr& layout, const std::vector<int64_t>& shape) {
  for (int64_t s : shape)
    if (!is_pow2(s))
      throw Error(fmt::format("GPU lowering: tensor shape {} has a dimension that is not a power "
                              "of two",
                              ir::shape_string(shape)));
  if (auto* b = dynamic_cast<const BlockedLayout*>(layout.get()))
    return resolve_blocked(*b, shape);
  if (auto* s = dynamic_cast<const SliceLayout*>(layout.get())) {
    auto pshape = shape;
    pshape.insert(pshape.begin() + s->dim, 1);
    LinearLayout p = resolve(s->parent, pshape);
    auto drop = [&](std::vector<LinearLayout::Coord>& bases) {
      for (auto& c : bases)
        c.erase(c.begin() + s->dim);
    };
    drop(p.reg);
    drop(p.lane);
    drop(p.warp);
    p.shape = shape;
    return p;
  }
  if (auto* m = dynamic_cast<const MmaLayout*>(layout.get()))
    return resolve_mma(*m, shape);
  if (auto* l = dynamic_cast<const LinearLayoutAttr*>(layout.get()))
    return resolve_linear(*l->bases, shape);
  if (auto* o = dynamic_cast<const DotOperandLayout*>(layout.get()))
    return resolve_dot_operand(*o, shape);
  throw Error(fmt::format("GPU lowering: tensor of shape {} has no distributed layout",
                          ir::shape_string(shape)));
}

ir::LayoutPtr blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& order,
                             int vec, int num_warps, int warp_size, int second) {
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
  if (rank > 1)
    b->size_per_thread[order[1]] =
        static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(second, shape[order[1]])));
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

ir::LayoutPtr mma_layout(MatrixUnit unit, std::vector<int> warps_per_cta, std::vector<int> instr,
                         int version, bool transposed) {
  auto m = std::make_shared<MmaLayout>();
  m->unit = unit;
  m->version = version;
  m->transposed = transposed;
  m->warps_per_cta = std::move(warps_per_cta);
  m->instr = std::move(instr);
  return m;
}

ir::LayoutPtr transposed_shared(const ir::LayoutPtr& shared, const std::vector<int64_t>& perm) {
  auto view = std::make_shared<SharedLayout>(dynamic_cast<const SharedLayout&>(*shared));
  for (int& o : view->order)
    o = perm[0] == o ? 0 : 1;
  return view;
}

ir::LayoutPtr shared_layout(int64_t cols, int elem_bytes, std::vector<int> order, bool atoms) {
  auto l = std::make_shared<SharedLayout>();
  l->order = std::move(order);
  l->vec = std::max(1, 16 / elem_bytes);
  if (atoms && cols * elem_bytes > 128) {
    l->block_cols = 128 / elem_bytes;
    cols = l->block_cols;
  }
  // 128B swizzle: eight 16-byte chunks per phase group; rows of 64 or 32 bytes share a phase
  // (the hardware's 64B and 32B swizzles).
  const int64_t row_bytes = cols * elem_bytes;
  l->per_phase = static_cast<int>(std::max<int64_t>(1, 128 / std::max<int64_t>(1, row_bytes)));
  l->max_phase = static_cast<int>(std::clamp<int64_t>(row_bytes / 16, 1, 8));
  return l;
}

ir::LayoutPtr linear_layout(LinearLayout bases) {
  auto l = std::make_shared<LinearLayoutAttr>();
  l->bases = std::make_shared<const LinearLayout>(std::move(bases));
  return l;
}

ir::LayoutPtr dot_operand_layout(int op_idx, ir::LayoutPtr parent, int k_width) {
  auto o = std::make_shared<DotOperandLayout>();
  o->op_idx = op_idx;
  o->parent = std::move(parent);
  o->k_width = k_width;
  return o;
}

} // namespace tritium::gpu
