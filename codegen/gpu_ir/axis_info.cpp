// AxisInfo: contiguity, divisibility and constancy of every value, per dimension. Seeds are the
// launch specialization (Function::arg_info: pointers 16-byte aligned, integers % 16 == 0,
// integers == 1 as constants) and hint ops; each op kind has one transfer rule below.
// Loop-carried values start from their initial value and are met with what the body yields
// until nothing changes.
#include "gpu_ir/axis_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace tritium::gpu {
namespace {

using ir::OpKind;

constexpr int64_t kMaxDiv = int64_t{1} << 30;

int64_t pow2_divisor(int64_t v) {
  if (v == 0)
    return kMaxDiv;
  int64_t p = 1;
  while ((v & p) == 0 && p < kMaxDiv)
    p <<= 1;
  return p;
}

int64_t gcd(int64_t a, int64_t b) {
  return std::gcd(a, b);
}

class Analysis {
public:
  explicit Analysis(const ir::Function& f) : f_(f) {}

  AxisInfoMap run() {
    const auto& args = f_.args();
    for (size_t i = 0; i < args.size(); ++i) {
      const ir::ArgInfo& a = f_.arg_info.at(i);
      AxisInfo info = unknown(args[i]->type);
      info.divisibility[0] =
          a.is_constant ? pow2_divisor(a.constant) : std::max<int64_t>(1, a.divisibility);
      if (a.is_constant)
        info.constant = a.constant;
      map_[args[i]] = info;
    }
    block(f_.entry());
    return std::move(map_);
  }

private:
  static int dims(const ir::Type& t) { return std::max(1, t.rank()); }
  static AxisInfo unknown(const ir::Type& t) {
    int n = dims(t);
    return {std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1),
            std::nullopt};
  }
  static AxisInfo constant_info(const ir::Type& t, int64_t v) {
    AxisInfo a = unknown(t);
    for (int d = 0; d < dims(t); ++d) {
      a.divisibility[d] = pow2_divisor(v);
      a.constancy[d] = t.is_scalar() ? 1 : t.shape[d];
    }
    a.constant = v;
    return a;
  }
  const AxisInfo& get(const ir::Value* v) {
    auto it = map_.find(v);
    if (it == map_.end())
      it = map_.emplace(v, unknown(v->type)).first;
    return it->second;
  }
  static bool meet_into(AxisInfo& into, const AxisInfo& other) {
    AxisInfo before = into;
    for (size_t d = 0; d < into.contiguity.size() && d < other.contiguity.size(); ++d) {
      into.contiguity[d] = gcd(into.contiguity[d], other.contiguity[d]);
      into.divisibility[d] = gcd(into.divisibility[d], other.divisibility[d]);
      into.constancy[d] = gcd(into.constancy[d], other.constancy[d]);
    }
    if (into.constant != other.constant)
      into.constant.reset();
    return before.contiguity != into.contiguity || before.divisibility != into.divisibility ||
           before.constancy != into.constancy || before.constant != into.constant;
  }

  void block(const ir::Block& b) {
    for (const auto& op : b.ops)
      visit(*op);
  }

  void visit(const ir::Op& op) {
    if (op.kind == OpKind::For || op.kind == OpKind::While) {
      loop(op);
      return;
    }
    if (op.kind == OpKind::If) {
      block(op.body(0));
      block(op.body(1));
      for (size_t i = 0; i < op.results.size(); ++i) {
        AxisInfo a = get(op.body(0).terminator()->operand(i));
        meet_into(a, get(op.body(1).terminator()->operand(i)));
        map_[op.results[i]] = a;
      }
      return;
    }
    for (auto& r : op.regions) // combine regions of reduce / scan: scalars, nothing to learn
      block(*r->block);
    for (size_t i = 0; i < op.results.size(); ++i)
      map_[op.results[i]] = i == 0 ? transfer(op) : unknown(op.results[i]->type);
  }

  void loop(const ir::Op& op) {
    // For: body args are (iv, carried...) with inits operands[3...]; While: before-region
    // args take operands, after-region args take the condition's values.
    const bool is_for = op.kind == OpKind::For;
    const ir::Block& first = op.body(0);
    size_t skip = is_for ? 1 : 0;
    for (size_t i = 0; i + skip < first.args.size(); ++i)
      map_[first.args[i + skip]] = get(op.operands[i + (is_for ? 3 : 0)]);
    if (is_for) {
      // lo, lo + step, …: every value is a multiple of what divides both (Triton's rule), so
      // `off + tl::arange(0, BLOCK)` stays aligned and loads through it vectorize.
      AxisInfo iv = unknown(first.args[0]->type);
      iv.divisibility[0] =
          gcd(get(op.operand(0)).divisibility[0], get(op.operand(2)).divisibility[0]);
      map_[first.args[0]] = iv;
    }
    for (int iter = 0; iter < 8; ++iter) {
      block(first);
      const ir::Block* last = &first;
      if (!is_for) {
        const ir::Op* cond = first.terminator();
        const ir::Block& after = op.body(1);
        for (size_t i = 0; i < after.args.size(); ++i)
          map_[after.args[i]] = get(cond->operand(i + 1));
        block(after);
        last = &after;
      }
      const ir::Op* y = last->terminator();
      bool changed = false;
      for (size_t i = 0; i + skip < first.args.size(); ++i)
        changed |= meet_into(map_[first.args[i + skip]], get(y->operand(i)));
      if (!changed)
        break;
    }
    for (size_t i = 0; i < op.results.size(); ++i) {
      if (is_for)
        map_[op.results[i]] = get(first.args[i + 1]);
      else
        map_[op.results[i]] = get(first.terminator()->operand(i + 1));
    }
  }

  const AxisInfo& in(const ir::Op& op, unsigned i) { return get(op.operand(i)); }

  AxisInfo transfer(const ir::Op& op) {
    const ir::Type& t = op.result()->type;
    AxisInfo r = unknown(t);
    const int n = dims(t);
    switch (op.kind) {
    case OpKind::Constant:
      return constant_of(op, t, n, std::move(r));
    case OpKind::Arange:
      return arange_of(op, t, n, std::move(r));
    case OpKind::Splat:
      return splat_of(op, t, n, std::move(r));
    case OpKind::Broadcast:
      return broadcast_of(op, t, n, std::move(r));
    case OpKind::ExpandDims:
      return expand_dims_of(op, t, n, std::move(r));
    case OpKind::Hint:
      return hint_of(op, t, n, std::move(r));
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::AddPtr:
      return add_of(op, t, n, std::move(r));
    case OpKind::Mul:
      return mul_of(op, t, n, std::move(r));
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Shl:
    case OpKind::Shr:
    case OpKind::Min:
    case OpKind::Max:
      return int_binary_of(op, t, n, std::move(r));
    case OpKind::Cmp:
      return cmp_of(op, t, n, std::move(r));
    case OpKind::Select:
      return select_of(op, t, n, std::move(r));
    case OpKind::Cast:
      return cast_of(op, t, n, std::move(r));
    case OpKind::Neg:
    case OpKind::Not:
    case OpKind::Abs:
    case OpKind::Bitcast:
      return unary_of(op, t, n, std::move(r));
    case OpKind::Trans:
      return trans_of(op, t, n, std::move(r));
    default:
      if (op.kind == OpKind::ConvertLayout)
        return in(op, 0);
      return r;
    }
  }

  AxisInfo constant_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const auto& v = op.attrs.at(attr::value);
    if (auto* i = std::get_if<int64_t>(&v))
      return constant_info(t, *i);
    for (int d = 0; d < n; ++d)
      r.constancy[d] = t.is_scalar() ? 1 : t.shape[d];
    return r;
  }

  AxisInfo arange_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    int64_t start = op.int_attr(attr::start);
    r.contiguity[0] = t.shape[0];
    r.divisibility[0] = pow2_divisor(start);
    return r;
  }

  AxisInfo splat_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo& a = in(op, 0);
    for (int d = 0; d < n; ++d) {
      r.divisibility[d] = a.divisibility[0];
      r.constancy[d] = t.shape[d];
    }
    r.constant = a.constant;
    return r;
  }

  AxisInfo broadcast_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo& a = in(op, 0);
    const auto& s = op.operand(0)->type.shape;
    for (int d = 0; d < n; ++d) {
      r.divisibility[d] = a.divisibility[d];
      if (s[d] == 1 && t.shape[d] != 1) {
        r.constancy[d] = t.shape[d];
      } else {
        r.contiguity[d] = a.contiguity[d];
        r.constancy[d] = a.constancy[d];
      }
    }
    r.constant = a.constant;
    return r;
  }

  AxisInfo expand_dims_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo& a = in(op, 0);
    int axis = static_cast<int>(op.int_attr(attr::axis));
    if (op.operand(0)->type.is_scalar())
      return r;
    r.contiguity = a.contiguity;
    r.divisibility = a.divisibility;
    r.constancy = a.constancy;
    r.contiguity.insert(r.contiguity.begin() + axis, 1);
    // Along the new dimension each element is a run of its own: what divides every element
    // (a contiguous run's first element only is a multiple of its divisibility).
    int64_t every = kMaxDiv;
    for (size_t d = 0; d < a.divisibility.size(); ++d)
      every = gcd(every, a.contiguity[d] > 1 ? 1 : a.divisibility[d]);
    if (a.constant)
      every = a.divisibility[0];
    r.divisibility.insert(r.divisibility.begin() + axis, every);
    r.constancy.insert(r.constancy.begin() + axis, 1);
    r.constant = a.constant;
    return r;
  }

  AxisInfo hint_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    r = in(op, 0);
    for (const char* key : {"multiple_of", "max_contiguous", "max_constancy"}) {
      auto it = op.attrs.find(key);
      if (it == op.attrs.end())
        continue;
      std::vector<int64_t> vals;
      if (auto* i = std::get_if<int64_t>(&it->second))
        vals.assign(n, *i);
      else if (auto* v = std::get_if<std::vector<int64_t>>(&it->second))
        vals = *v;
      for (int d = 0; d < n && d < static_cast<int>(vals.size()); ++d) {
        const std::string_view k = key;
        auto& slot = k == "multiple_of"      ? r.divisibility[d]
                     : k == "max_contiguous" ? r.contiguity[d]
                                             : r.constancy[d];
        slot = std::max(slot, vals[d]);
      }
    }
    return r;
  }

  // Add, Sub, AddPtr (the offset scaled to bytes).
  AxisInfo add_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo &a = in(op, 0), &b = in(op, 1);
    int64_t scale = 1;
    if (op.kind == OpKind::AddPtr)
      scale = std::max(1, op.operand(0)->type.elem.element_of_pointer().bits() / 8);
    for (int d = 0; d < n; ++d) {
      int64_t c = gcd(a.contiguity[d], b.constancy[d]);
      if (op.kind != OpKind::Sub)
        c = std::max(c, gcd(a.constancy[d], b.contiguity[d]));
      r.contiguity[d] = c;
      r.divisibility[d] = std::min(kMaxDiv, gcd(a.divisibility[d], b.divisibility[d] * scale));
      r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    }
    if (a.constant && b.constant && op.kind != OpKind::AddPtr)
      r.constant = op.kind == OpKind::Add ? *a.constant + *b.constant : *a.constant - *b.constant;
    return r;
  }

  AxisInfo mul_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo &a = in(op, 0), &b = in(op, 1);
    for (int d = 0; d < n; ++d) {
      // Divisibility is the first element's of each contiguous run; once multiplied (by
      // anything but 1), every element is a run of its own, and the other elements of a
      // run [x, x+1, ...] are odd or even whatever x is: count such a factor as 1 (as
      // Triton does). B's row offsets k * stride_bk with stride_bk = 300 are multiples of 4,
      // not of k's 32.
      const int64_t a_div = a.contiguity[d] > 1 && b.constant != 1 ? 1 : a.divisibility[d];
      const int64_t b_div = b.contiguity[d] > 1 && a.constant != 1 ? 1 : b.divisibility[d];
      r.divisibility[d] = std::min(kMaxDiv, a_div * b_div);
      r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      if (b.constant == 1)
        r.contiguity[d] = a.contiguity[d];
      if (a.constant == 1)
        r.contiguity[d] = b.contiguity[d];
    }
    if (a.constant && b.constant)
      r.constant = *a.constant * *b.constant;
    return r;
  }

  // Div, Rem, the bitwise ops, shifts, Min and Max: constancy, and the runs that division
  // and remainder by an aligned divisor keep.
  AxisInfo int_binary_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo &a = in(op, 0), &b = in(op, 1);
    for (int d = 0; d < n; ++d)
      r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    if (op.kind == OpKind::Shl && b.constant && *b.constant >= 0 && *b.constant < 31)
      for (int d = 0; d < n; ++d)
        r.divisibility[d] = std::min(kMaxDiv, (a.contiguity[d] > 1 ? int64_t{1} : a.divisibility[d])
                                                  << *b.constant);
    // x / y and x % y over a contiguous run of x aligned to a divisor of y (y the same over
    // the run): constant resp. contiguous, as y's multiples can only fall at a run's start.
    // (Like Triton's, this assumes x >= 0.)
    if ((op.kind == OpKind::Div || op.kind == OpKind::Rem) && t.elem.is_int() &&
        (!b.constant || *b.constant > 0))
      for (int d = 0; d < n; ++d) {
        const int64_t y_div = b.constant ? *b.constant : b.divisibility[d];
        int64_t run = std::min(gcd(a.contiguity[d], gcd(a.divisibility[d], y_div)),
                               b.constant ? kMaxDiv : b.constancy[d]);
        if (op.kind == OpKind::Div) {
          r.constancy[d] = std::max(r.constancy[d], run);
        } else {
          r.contiguity[d] = std::max<int64_t>(1, run);
          r.divisibility[d] = std::max<int64_t>(1, gcd(a.divisibility[d], y_div));
        }
      }
    return r;
  }

  AxisInfo cmp_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo &a = in(op, 0), &b = in(op, 1);
    const ir::CmpPred pred = op.enum_attr<ir::CmpPred>();
    using P = ir::CmpPred;
    for (int d = 0; d < n; ++d) {
      r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      // A contiguous run compared against a constant can only flip at a multiple of the
      // constant's divisibility (for < >= on the left, > <= with the sides swapped).
      bool lhs_run = (pred == P::Lt || pred == P::Ge) && b.constancy[d] > 1;
      bool rhs_run = (pred == P::Gt || pred == P::Le) && a.constancy[d] > 1;
      const AxisInfo& run = lhs_run ? a : b;
      const AxisInfo& other = lhs_run ? b : a;
      if ((lhs_run || rhs_run) && run.contiguity[d] > 1 && !t.is_scalar())
        r.constancy[d] =
            std::max(r.constancy[d],
                     gcd(run.contiguity[d], gcd(run.divisibility[d], other.divisibility[d])));
    }
    return r;
  }

  AxisInfo select_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    const AxisInfo &c = in(op, 0), &a = in(op, 1), &b = in(op, 2);
    for (int d = 0; d < n; ++d) {
      r.constancy[d] = gcd(c.constancy[d], gcd(a.constancy[d], b.constancy[d]));
      r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
      r.contiguity[d] = gcd(c.constancy[d], std::min(a.contiguity[d], b.contiguity[d]));
    }
    return r;
  }

  // Integer widening keeps everything; other casts, constancy only.
  AxisInfo cast_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    if (t.elem.is_int() && op.operand(0)->type.elem.is_int() &&
        t.elem.bits() >= op.operand(0)->type.elem.bits())
      return in(op, 0);
    for (int d = 0; d < n; ++d)
      r.constancy[d] = in(op, 0).constancy[d];
    return r;
  }

  // Neg, Not, Abs, Bitcast: constancy only.
  AxisInfo unary_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    for (int d = 0; d < n; ++d)
      r.constancy[d] = in(op, 0).constancy[d];
    return r;
  }

  AxisInfo trans_of(const ir::Op& op, const ir::Type& t, int n, AxisInfo r) {
    // The same facts per dimension, in the new order (a transposed mask stays constant along
    // the runs it was constant along: a transpose kernel's stores stay vectorized).
    const AxisInfo& a = in(op, 0);
    const auto& order = op.ints_attr(attr::order);
    if (static_cast<int>(order.size()) != n || static_cast<int>(a.contiguity.size()) != n)
      return r;
    for (int d = 0; d < n; ++d) {
      const auto from = static_cast<size_t>(order[static_cast<size_t>(d)]);
      r.contiguity[d] = a.contiguity[from];
      r.divisibility[d] = a.divisibility[from];
      r.constancy[d] = a.constancy[from];
    }
    r.constant = a.constant;
    return r;
  }

  const ir::Function& f_;
  AxisInfoMap map_;
};

} // namespace

AxisInfoMap analyze_axis_info(const ir::Function& f) {
  return Analysis(f).run();
}

std::string to_string(const AxisInfo& info) {
  std::string s = fmt::format("contiguity={} divisibility={} constancy={}", info.contiguity,
                              info.divisibility, info.constancy);
  if (info.constant)
    s += fmt::format(" constant={}", *info.constant);
  return s;
}

} // namespace tritium::gpu
