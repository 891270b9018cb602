#include <tritium/ir/bounds_checks.hpp>

#include <tritium/ir/builder.hpp>

#include "hoist_pure_op.hpp"
#include "tile_element.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

namespace tritium::ir {

namespace {

// Which argument a pointer value derives from: a lattice of "not yet known" (kPending), one
// argument's index, or "none or several" (kNone), solved by iterating to a fixed point so that
// loop-carried pointers (advanced by addptr every trip) keep their argument.
constexpr int kPending = -2;
constexpr int kNone = -1;

// Checks pass: the branches that report are the unlikely ones.
const Attrs kLikelyElse{{attr::likely, int64_t{1}}};

int merge(int a, int b) {
  if (a == kPending)
    return b;
  if (b == kPending || a == b)
    return a;
  return kNone;
}

class Origins {
public:
  explicit Origins(const Function& f) {
    for (const Value* a : f.args())
      if (a->type.elem.is_ptr())
        of_[a] = static_cast<int>(a->index);
    do {
      changed_ = false;
      visit(f.entry());
    } while (changed_);
  }

  int of(const Value* v) const {
    auto it = of_.find(v);
    return it == of_.end() ? kPending : it->second;
  }

private:
  void set(const Value* v, int o) {
    if (!v->type.elem.is_ptr())
      return;
    int& slot = of_.try_emplace(v, kPending).first->second;
    int merged = merge(slot, o);
    if (merged != slot) {
      slot = merged;
      changed_ = true;
    }
  }

  void visit(const Block& b) {
    for (const auto& op : b.ops) {
      transfer(*op);
      for (const auto& r : op->regions)
        visit(*r->block);
    }
  }

  void transfer(const Op& op) {
    const auto& o = op.operands;
    switch (op.kind) {
    case OpKind::AddPtr:
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Trans:
    case OpKind::ConvertLayout:
    case OpKind::Hint:
    case OpKind::Bitcast:
    case OpKind::Split:
      for (const Value* r : op.results)
        set(r, of(o[0]));
      return;
    case OpKind::Join:
    case OpKind::Cat:
      set(op.result(), merge(of(o[0]), of(o[1])));
      return;
    case OpKind::Select:
      set(op.result(), merge(of(o[1]), of(o[2])));
      return;
    case OpKind::For: {
      const Block& body = op.body();
      const Op* yield = body.terminator();
      for (size_t k = 0; k < op.results.size(); ++k) {
        int m = merge(of(o[3 + k]), of(yield->operand(k)));
        set(body.args[k + 1], m);
        set(op.result(k), m);
      }
      return;
    }
    case OpKind::If:
      for (size_t k = 0; k < op.results.size(); ++k)
        set(op.result(k), merge(of(op.body(0).terminator()->operand(k)),
                                of(op.body(1).terminator()->operand(k))));
      return;
    case OpKind::While: {
      const Op* cond = op.body(0).terminator();
      const Op* yield = op.body(1).terminator();
      for (size_t k = 0; k < o.size(); ++k)
        set(op.body(0).args[k], merge(of(o[k]), of(yield->operand(k))));
      for (size_t k = 0; k < op.results.size(); ++k) {
        set(op.body(1).args[k], of(cond->operand(k + 1)));
        set(op.result(k), of(cond->operand(k + 1)));
      }
      return;
    }
    default:
      // A pointer loaded from memory, made from an integer, or returned by an atomic.
      for (const Value* r : op.results)
        set(r, kNone);
      return;
    }
  }

  std::unordered_map<const Value*, int> of_;
  bool changed_ = false;
};

bool is_access(const Op& op) {
  return op.kind == OpKind::Load || op.kind == OpKind::Store || op.kind == OpKind::AtomicRmw ||
         op.kind == OpKind::AtomicCas;
}

// Where the access's mask is, or would be.
size_t mask_index(const Op& op) {
  switch (op.kind) {
  case OpKind::Load:
    return 1;
  case OpKind::Store:
  case OpKind::AtomicRmw:
    return 2;
  default:
    return 3;
  }
}

class Rewriter {
public:
  Rewriter(Function& f, const Origins& origins, BoundsChecked& out)
      : f_(f), origins_(origins), out_(out), b_(f, f.entry()) {
    // The hidden arguments, after the kernel's own.
    const size_t own = f.args().size();
    for (size_t k = 0; k < own; ++k) {
      if (!f.args()[k]->type.elem.is_ptr())
        continue;
      extent_[static_cast<int>(k)] = b_.add_block_arg(f.entry(), Type(ScalarKind::I64));
      f.arg_info.push_back(ArgInfo{.name = "extent of argument " + std::to_string(k)});
      ++out_.pointer_args;
    }
    record_ = b_.add_block_arg(f.entry(), Type(DType::pointer_to(ScalarKind::I64)));
    f.arg_info.push_back(ArgInfo{.name = "bounds-check record", .divisibility = 16});
  }

  void rewrite(Block& block) {
    std::vector<std::unique_ptr<Op>> old = std::move(block.ops);
    block.ops.clear();
    b_.set_block(block);
    for (auto& op : old) {
      for (Value*& v : op->operands)
        if (auto it = subst_.find(v); it != subst_.end())
          v = it->second;
      for (auto& r : op->regions)
        rewrite(*r->block);
      b_.set_block(block);
      Block* into = is_access(*op) ? check(*op) : nullptr;
      if (!into) {
        block.ops.push_back(std::move(op));
        continue;
      }
      // The access as it was, on the path where nothing fails.
      Op& branch = *block.ops.back();
      op->parent = into;
      std::vector<Value*> results = op->results;
      into->ops.push_back(std::move(op));
      b_.set_block(*into);
      b_.create(OpKind::Yield, results, {});
      for (size_t k = 0; k < results.size(); ++k)
        subst_[results[k]] = branch.result(k);
      b_.set_block(block);
    }
  }

private:
  Value* op1(OpKind k, std::vector<Value*> operands, Type t, Attrs a = {}) {
    return b_.create1(k, std::move(operands), std::move(t), std::move(a));
  }
  Value* splat(Value* s, const std::vector<int64_t>& shape) {
    return shape.empty() ? s : op1(OpKind::Splat, {s}, s->type.with_shape(shape));
  }
  Value* i64(int64_t v, const std::vector<int64_t>& shape) {
    return b_.constant_int(v, Type(ScalarKind::I64, shape));
  }
  Value* binary(OpKind k, Value* a, Value* c) { return op1(k, {a, c}, a->type); }
  Value* cmp(CmpPred p, Value* a, Value* c) {
    return op1(OpKind::Cmp, {a, c}, Type(ScalarKind::I1, a->type.shape),
               {{std::string(EnumAttr<CmpPred>::key), p}});
  }
  Value* to_i64(Value* v) { return op1(OpKind::Cast, {v}, v->type.with_elem(ScalarKind::I64)); }
  // Each pointer's distance in bytes from argument `arg`, as i64.
  Value* byte_offset(Value* p, int arg) {
    Value* base = op1(OpKind::Cast, {f_.args()[arg]}, Type(ScalarKind::I64));
    return binary(OpKind::Sub, to_i64(p), splat(base, p->type.shape));
  }

  // The byte offset to report for each element of an access through `p`: from its split
  // offsets where it has them (the exact value, equal to the access's own wherever no i32 step
  // wrapped, and a wrap is reported first), so that the pointers are used by the access alone
  // and LLVM computes them on its path, not ahead of the branch.
  Value* reported_offset(Value* p, int arg, int bytes) {
    auto split = split_offsets(p, arg);
    if (!split)
      return byte_offset(p, arg);
    std::unordered_map<const Value*, Value*> memo;
    Value* t = wide(split->tile, memo);
    if (!t)
      t = to_i64(split->tile);
    const auto& shape = t->type.shape;
    return binary(OpKind::Mul, binary(OpKind::Add, t, splat(scalar_sum(*split), shape)),
                  i64(bytes, shape));
  }

  // The row-major index of each element of a tile of `shape`, as i32 (a tile has far fewer than
  // 2^31 elements).
  Value* flat_index(const std::vector<int64_t>& shape) {
    Value* index = nullptr;
    int64_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      Value* a = op1(OpKind::Arange, {}, Type(ScalarKind::I32, {shape[d]}),
                     {{attr::start, int64_t{0}}, {attr::end, shape[d]}});
      std::vector<int64_t> s{shape[d]};
      for (int e = d - 1; e >= 0; --e) {
        s.insert(s.begin(), 1);
        a = op1(OpKind::ExpandDims, {a}, a->type.with_shape(s), {{attr::axis, int64_t{0}}});
      }
      for (size_t e = d + 1; e < shape.size(); ++e) {
        s.push_back(1);
        a = op1(OpKind::ExpandDims, {a}, a->type.with_shape(s),
                {{attr::axis, static_cast<int64_t>(e)}});
      }
      if (s != shape)
        a = op1(OpKind::Broadcast, {a}, a->type.with_shape(shape));
      Value* term = a;
      if (stride > 1)
        term = binary(OpKind::Mul, term, b_.constant_int(stride, Type(ScalarKind::I32, shape)));
      index = index ? binary(OpKind::Add, index, term) : term;
      stride *= shape[d];
    }
    return index;
  }

  // Checks `op` (an access) in the block being rebuilt; returns the block where the access
  // itself goes, or null to leave it where it is.
  Block* check(Op& op) {
    Value* p = op.operand(0);
    const int arg = origins_.of(p);
    if (arg < 0) {
      ++out_.unchecked;
      return nullptr;
    }
    b_.set_loc(op.loc);
    const DType elem = p->type.elem.element_of_pointer();
    const int bytes = elem.is_bool() ? 1 : elem.bits() / 8;
    const size_t mi = mask_index(op);
    Value* mask = op.operands.size() > mi ? op.operands[mi] : nullptr;

    // The access splits on whether any element of the program fails: where none does (the
    // common case) it runs as written, its mask and vector width untouched; else the failing
    // elements are reported and masked off. Where scalar bounds on the offsets show that
    // nothing can fail, not even that is computed: the per-element checks and their
    // block-wide `any` (two barriers) run only where the bounds leave a doubt.
    std::vector<int64_t> sites;
    Checks c;
    Value* first; // the program's first failing element (i32), kNone where none fails
    const Type i32(ScalarKind::I32);
    if (Value* maybe = maybe_failing(p, arg, bytes)) {
      Op& doubt = b_.create(OpKind::If, {maybe}, {i32}, kLikelyElse, 2);
      Block& here = b_.block();
      b_.set_block(doubt.body(0));
      b_.create(OpKind::Yield, {first_failing(checks(p, arg, bytes, mask, op, sites).bad)}, {});
      b_.set_block(doubt.body(1));
      b_.create(OpKind::Yield, {b_.constant_int(kNone, i32)}, {});
      b_.set_block(here);
      doubts_.push_back({&here, &doubt});
      first = doubt.result();
    } else {
      c = checks(p, arg, bytes, mask, op, sites);
      first = first_failing(c.bad);
    }
    Value* failing = cmp(CmpPred::Ne, first, b_.constant_int(kNone, i32));
    std::vector<Type> types;
    for (const Value* r : op.results)
      types.push_back(r->type);
    Op& branch = b_.create(OpKind::If, {failing}, types, kLikelyElse, 2);
    b_.set_block(branch.body(0));
    report(p->type.shape, first, [&] {
      if (!c.bad) // built again where it is needed: the checks ran under the doubt's branch
        c = checks(p, arg, bytes, mask, op, sites);
      return c.faults;
    });
    // The failing program's access is skipped whole: a load yields what its masked-off
    // elements would (`other`, else zero), a store or atomic does nothing. The launch fails
    // anyway, and an access that keeps its in-bounds elements would carry the checks' tiles
    // and the pointers into one more copy of the access, which costs registers on every path.
    std::vector<Value*> skipped;
    const bool other = op.kind == OpKind::Load && op.operands.size() > 2;
    for (const Type& t : types)
      skipped.push_back(other               ? op.operands[2]
                        : t.elem.is_float() ? b_.constant_float(0, t)
                                            : b_.constant_int(0, t));
    b_.create(OpKind::Yield, skipped, {});
    return &branch.body(1);
  }

  // One way an access can fail, per element: where `bad`, site `site` with words `a`, `c`.
  // `a` and `c` are built inside the reporting branch, so that their (i64) tiles are not
  // live across the access on the common path.
  struct Fault {
    Value* bad;
    int64_t site;
    std::function<Value*()> a, c;
  };
  // An access's checks, element by element: `ok` where it may go ahead, `faults` the ways it
  // fails and `bad` where one does (within the mask).
  struct Checks {
    Value* ok = nullptr;
    std::vector<Fault> faults;
    Value* bad = nullptr;
  };

  // The checks of the access `op` through `p`, built where the builder is. Its sites are
  // added to the kernel's list the first time (`sites` empty) and reused after.
  Checks checks(Value* p, int arg, int bytes, Value* mask, const Op& op,
                std::vector<int64_t>& sites) {
    const auto& shape = p->type.shape;
    const bool first = sites.empty();
    size_t next = 0;
    auto site_of = [&](const CheckSite& s) {
      if (first)
        sites.push_back(add_site(s));
      return sites.at(next++);
    };
    Value* extent = extent_.at(arg);
    Checks c;
    c.ok = in_bounds_i32(p, arg, bytes);
    if (!c.ok) {
      // In bounds: 0 <= offset <= extent - bytes, and the address a multiple of the element.
      Value* offset = byte_offset(p, arg);
      Value* limit = binary(OpKind::Sub, extent, i64(bytes, {}));
      c.ok = binary(OpKind::And, cmp(CmpPred::Ge, offset, i64(0, shape)),
                    cmp(CmpPred::Le, offset, splat(limit, shape)));
      if (bytes > 1)
        c.ok = binary(OpKind::And, c.ok, aligned(to_i64(p), bytes));
    }
    CheckSite site{op.loc.str(), std::string(op_name(op.kind)), arg, f_.arg_info[arg].name, shape,
                   bytes};
    Value* in_bounds = c.ok;
    // What can fail, the cause first: an i32 offset that wrapped usually breaks the bounds
    // too, and can land inside the buffer. Each addptr of i32 offsets that leads to the
    // access is recomputed in i64 and compared, element by element.
    for (Value* q = p; q->def && q->def->kind == OpKind::AddPtr; q = q->def->operand(0)) {
      Value* narrow = q->def->operand(1);
      if (narrow->type.elem.kind != ScalarKind::I32)
        continue;
      std::unordered_map<const Value*, Value*> memo;
      Value* exact = wide(narrow, memo);
      if (!exact)
        continue; // nothing in it can wrap
      // i32 arithmetic is exact modulo 2^32, so the offset is right where its exact value fits
      // in i32. Asked that way, the check shares nothing with the pointers' own i64 widening,
      // which LLVM would otherwise compute once ahead of both branches and keep live.
      const auto& sh = exact->type.shape;
      Value* same = binary(OpKind::And, cmp(CmpPred::Ge, exact, i64(INT32_MIN, sh)),
                           cmp(CmpPred::Le, exact, i64(INT32_MAX, sh)));
      CheckSite overflow = site;
      overflow.kind = CheckSite::Kind::Overflow;
      c.faults.push_back({not_(same), site_of(overflow),
                          [this, narrow] {
                            std::unordered_map<const Value*, Value*> again;
                            return wide(narrow, again);
                          },
                          [this, narrow] {
                            std::unordered_map<const Value*, Value*> again;
                            Value* exact = wide(narrow, again);
                            return to_i64(
                                op1(OpKind::Cast, {exact}, exact->type.with_elem(ScalarKind::I32)));
                          }});
      c.ok = binary(OpKind::And, c.ok, same);
    }
    c.faults.push_back({not_(in_bounds), site_of(site),
                        [this, p, arg, bytes] { return reported_offset(p, arg, bytes); },
                        [this, extent, shape] { return splat(extent, shape); }});
    c.bad = c.faults.back().bad;
    for (size_t k = c.faults.size() - 1; k-- > 0;)
      c.bad = binary(OpKind::Or, c.faults[k].bad, c.bad);
    if (mask)
      c.bad = binary(OpKind::And, mask, c.bad);
    return c;
  }

  Value* not_(Value* v) { return op1(OpKind::Not, {v}, v->type); }

  // The common case checked in i32, without the pointers: `p` is the argument advanced by
  // scalar offsets and by one tile of i32 element offsets t (`x + row * stride + cols`). With
  // s the scalars' sum (exact, in i64) and n the extent in elements, the access is in bounds
  // where -s <= t <= n - s - 1, both bounds clamped to i32 (exact: t is an i32), and aligned
  // where the argument is. Null where `p` is not made that way (a loop-carried pointer, two
  // tiles of offsets, i64 offsets): the caller checks the pointers themselves.
  Value* in_bounds_i32(Value* p, int arg, int bytes) {
    auto split = split_offsets(p, arg);
    if (!split)
      return nullptr;
    const auto& shape = p->type.shape;
    auto [lo, hi] = tile_limits(*split, arg, bytes);
    auto clamp_i32 = [&](Value* v) {
      v = binary(OpKind::Max, binary(OpKind::Min, v, i64(INT32_MAX, {})), i64(INT32_MIN, {}));
      return op1(OpKind::Cast, {v}, Type(ScalarKind::I32));
    };
    Value* tile = split->tile;
    Value* ok = binary(OpKind::And, cmp(CmpPred::Ge, tile, splat(clamp_i32(lo), shape)),
                       cmp(CmpPred::Le, tile, splat(clamp_i32(hi), shape)));
    if (bytes > 1)
      ok = binary(OpKind::And, ok, splat(aligned(to_i64(f_.args()[arg]), bytes), shape));
    return ok;
  }

  // `p` as argument `arg` advanced by scalar offsets and one tile of i32 element offsets.
  struct Split {
    Value* tile;
    std::vector<Value*> scalars;
  };
  std::optional<Split> split_offsets(Value* p, int arg) {
    if (p->type.shape.empty())
      return std::nullopt;
    const Op* d = p->def;
    if (!d || d->kind != OpKind::AddPtr)
      return std::nullopt;
    Split out{d->operand(1), {}};
    if (out.tile->type.is_scalar() || out.tile->type.elem.kind != ScalarKind::I32)
      return std::nullopt;
    // Below the tile of offsets, only scalar offsets and the shapes a splat takes.
    for (Value* q = d->operand(0); q != f_.args()[arg]; q = d->operand(0)) {
      d = q->def;
      if (!d)
        return std::nullopt;
      if (d->kind == OpKind::AddPtr && d->operand(1)->type.is_scalar())
        out.scalars.push_back(d->operand(1));
      else if (d->kind != OpKind::Splat && d->kind != OpKind::Broadcast &&
               d->kind != OpKind::ExpandDims)
        return std::nullopt;
    }
    return out;
  }

  // The scalar offsets' sum, in i64 (each widened as addptr widens it).
  Value* scalar_sum(const Split& split) {
    Value* sum = i64(0, {});
    for (Value* v : split.scalars)
      sum = binary(OpKind::Add, sum, v->type.elem.kind == ScalarKind::I64 ? v : to_i64(v));
    return sum;
  }

  // The tile's elements are in bounds between lo = -s and hi = n - s - 1 (i64 scalars), s the
  // scalars' sum and n the extent in elements.
  std::pair<Value*, Value*> tile_limits(const Split& split, int arg, int bytes) {
    Value* sum = scalar_sum(split);
    Value* n = binary(OpKind::Div, extent_.at(arg), i64(bytes, {}));
    return {binary(OpKind::Sub, i64(0, {}), sum),
            binary(OpKind::Sub, binary(OpKind::Sub, n, sum), i64(1, {}))};
  }

  // A scalar that is false only where no element of the access can fail: the tile of offsets
  // lies, by its scalar bounds, inside the buffer; no i32 sum or product on its way can wrap;
  // the argument is aligned. Null where the offsets are not made of scalars, aranges and
  // constants through +, - and * (the per-element checks alone decide then).
  Value* maybe_failing(Value* p, int arg, int bytes) {
    auto split = split_offsets(p, arg);
    if (!split)
      return nullptr;
    Value* fits = b_.constant_int(1, Type(ScalarKind::I1));
    std::unordered_map<const Value*, std::optional<Interval>> memo;
    auto range = interval(split->tile, fits, memo);
    if (!range)
      return nullptr;
    // The scalar offsets' own i32 arithmetic, which must not wrap either.
    for (Value* v : split->scalars)
      (void)interval(v, fits, memo);
    auto [lo, hi] = tile_limits(*split, arg, bytes);
    Value* safe = binary(
        OpKind::And, fits,
        binary(OpKind::And, cmp(CmpPred::Ge, range->lo, lo), cmp(CmpPred::Le, range->hi, hi)));
    if (bytes > 1)
      safe = binary(OpKind::And, safe, aligned(to_i64(f_.args()[arg]), bytes));
    return not_(safe);
  }

  // Every element of an i32 tile or scalar lies in [lo, hi] (i64 scalars); each +, - and * on
  // its way adds to `fits` that its own bounds stay in i32, so that no element wrapped. A
  // scalar made otherwise is its own bound (one value for the whole program).
  struct Interval {
    Value* lo;
    Value* hi;
  };
  std::optional<Interval>
  interval(Value* v, Value*& fits,
           std::unordered_map<const Value*, std::optional<Interval>>& memo) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    std::optional<Interval> out;
    const Op* d = v->def;
    if (v->type.elem.kind != ScalarKind::I32) {
      // not an i32: no bounds
    } else if (d && d->kind == OpKind::Arange) {
      out = Interval{i64(d->int_attr(attr::start), {}), i64(d->int_attr(attr::end) - 1, {})};
    } else if (d && d->kind == OpKind::Constant && d->has_attr(attr::value)) {
      Value* x = i64(d->int_attr(attr::value), {});
      out = Interval{x, x};
    } else if (d && (d->kind == OpKind::Splat || d->kind == OpKind::Broadcast ||
                     d->kind == OpKind::ExpandDims)) {
      out = interval(d->operand(0), fits, memo);
    } else if (d && (d->kind == OpKind::Add || d->kind == OpKind::Sub || d->kind == OpKind::Mul)) {
      auto a = interval(d->operand(0), fits, memo);
      auto c = a ? interval(d->operand(1), fits, memo) : std::nullopt;
      if (c) {
        if (d->kind == OpKind::Add) {
          out = Interval{binary(OpKind::Add, a->lo, c->lo), binary(OpKind::Add, a->hi, c->hi)};
        } else if (d->kind == OpKind::Sub) {
          out = Interval{binary(OpKind::Sub, a->lo, c->hi), binary(OpKind::Sub, a->hi, c->lo)};
        } else {
          // Exact in i64 where the operands are in i32; where not, `fits` is false already.
          Value* p1 = binary(OpKind::Mul, a->lo, c->lo);
          Value* p2 = binary(OpKind::Mul, a->lo, c->hi);
          Value* p3 = binary(OpKind::Mul, a->hi, c->lo);
          Value* p4 = binary(OpKind::Mul, a->hi, c->hi);
          out = Interval{
              binary(OpKind::Min, binary(OpKind::Min, p1, p2), binary(OpKind::Min, p3, p4)),
              binary(OpKind::Max, binary(OpKind::Max, p1, p2), binary(OpKind::Max, p3, p4))};
        }
        fits = binary(OpKind::And, fits,
                      binary(OpKind::And, cmp(CmpPred::Ge, out->lo, i64(INT32_MIN, {})),
                             cmp(CmpPred::Le, out->hi, i64(INT32_MAX, {}))));
      }
    } else if (v->type.is_scalar()) {
      Value* x = to_i64(v); // one value for the whole program, whatever made it
      out = Interval{x, x};
    }
    memo[v] = out;
    return out;
  }

  // Whether each address (pointers as i64) is a multiple of `bytes`.
  Value* aligned(Value* address, int bytes) {
    const auto& shape = address->type.shape;
    return cmp(CmpPred::Eq, binary(OpKind::And, address, i64(bytes - 1, shape)), i64(0, shape));
  }

  // The i64 value of an i32 expression computed without wrapping: additions, subtractions and
  // multiplications redone in i64 over their leaves (arguments, program ids, aranges, loop
  // values, anything else), through splats, broadcasts and expand_dims. Null when `v` is a
  // leaf, which cannot have wrapped here.
  Value* wide(Value* v, std::unordered_map<const Value*, Value*>& memo) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    Value* out = nullptr;
    const Op* d = v->def;
    if (d && v->type.elem.kind == ScalarKind::I32) {
      switch (d->kind) {
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul: {
        Value* a = wide(d->operand(0), memo);
        Value* c = wide(d->operand(1), memo);
        out = binary(d->kind, a ? a : to_i64(d->operand(0)), c ? c : to_i64(d->operand(1)));
        break;
      }
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
        if (Value* a = wide(d->operand(0), memo))
          out = op1(d->kind, {a}, v->type.with_elem(ScalarKind::I64), d->attrs);
        break;
      default:
        break;
      }
    }
    memo[v] = out;
    return out;
  }

  int64_t add_site(const CheckSite& s) {
    out_.sites.push_back(s);
    return static_cast<int64_t>(out_.sites.size()) - 1;
  }

  // The first failing element of the launch takes the record; one that fails several ways
  // reports the first of its `faults`. `first` is the program's first failing element of an
  // access of `shape` (the reduction that decided the branch found it); one scalar
  // compare-and-swap claims the record and that element's own thread writes its words, so
  // that nothing is reduced here. The checks are rebuilt after the compare-and-swap, its
  // branch and barrier, so that their tiles are made next to the stores that read them.
  void report(const std::vector<int64_t>& shape, Value* first,
              const std::function<std::vector<Fault>()>& rebuild) {
    Value* zero = i64(0, {});
    Value* old = op1(OpKind::AtomicCas, {record_, zero, i64(1, {})}, Type(ScalarKind::I64),
                     {{std::string(EnumAttr<MemSem>::key), MemSem::Relaxed},
                      {std::string(EnumAttr<MemScope>::key), MemScope::Gpu}});
    Value* won = cmp(CmpPred::Eq, old, zero);
    const std::vector<Fault> faults = rebuild();
    const std::vector<Value*> index = multi_index(b_, first, shape);
    TileElement element(b_);
    Value* here = nullptr; // which element is the first, for a word kept as a tile
    auto put = [&](int word, Value* v) {
      Value* at = op1(OpKind::AddPtr, {record_, b_.constant_int(word, Type(ScalarKind::I32))},
                      record_->type);
      Value* mask = won;
      if (!v->type.is_scalar()) {
        if (Value* one = element.at(v, index)) {
          v = one;
        } else {
          if (!here)
            here = cmp(CmpPred::Eq, flat_index(shape), splat(first, shape));
          at = splat(at, v->type.shape);
          mask = binary(OpKind::And, here, splat(won, v->type.shape));
        }
      }
      b_.create(OpKind::Store, {at, v, mask}, {});
    };
    for (int axis = 0; axis < 3; ++axis)
      put(2 + axis,
          to_i64(op1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{attr::axis, int64_t{axis}}})));
    put(5, to_i64(first));
    // Each word is chosen and written one at a time, so its tile lives no longer than its store.
    put(1, choose(faults, [&](const Fault& f) { return i64(f.site, shape); }));
    put(6, choose(faults, [](const Fault& f) { return f.a(); }));
    put(7, choose(faults, [](const Fault& f) { return f.c(); }));
  }

  // The first of `faults` to fail at each element, as its `word`.
  template <typename Word>
  Value* choose(const std::vector<Fault>& faults, Word word) {
    Value* v = word(faults.back());
    for (size_t k = faults.size() - 1; k-- > 0;)
      v = op1(OpKind::Select, {faults[k].bad, word(faults[k]), v}, v->type);
    return v;
  }

  // A tile combined to a scalar by `combine` (min, max or add), one axis after the other.
  Value* reduce_all(Value* v, OpKind combine) {
    const Type scalar = v->type.scalar();
    while (!v->type.is_scalar()) {
      auto shape = v->type.shape;
      shape.erase(shape.begin());
      Op& r =
          b_.create(OpKind::Reduce, {v}, {Type(scalar.elem, shape)}, {{attr::axis, int64_t{0}}}, 1);
      Block& outer = b_.block();
      Block& body = r.body();
      Value* x = b_.add_block_arg(body, scalar);
      Value* y = b_.add_block_arg(body, scalar);
      b_.set_block(body);
      b_.create(OpKind::Yield, {binary(combine, x, y)}, {});
      b_.set_block(outer);
      v = r.result();
    }
    return v;
  }

  // The row-major index of the first set element of an i1 tile (0 for a set scalar), kNone
  // where none is: one block-wide reduction, which both decides the reporting branch and
  // names the element it reports.
  Value* first_failing(Value* bits) {
    const Type i32(ScalarKind::I32, bits->type.shape);
    Value* none = b_.constant_int(kNone, i32);
    if (bits->type.is_scalar())
      return op1(OpKind::Select, {bits, b_.constant_int(0, i32), none}, i32);
    return reduce_all(op1(OpKind::Select, {bits, flat_index(bits->type.shape), none}, i32),
                      OpKind::Min);
  }

  static constexpr int64_t kNone = INT32_MAX;

public:
  // The per-element checks read offsets and masks, rarely loaded data: run ahead of the loads,
  // no loaded tile is live while they do, and a branch that seldom runs adds few registers to
  // the kernel's count, which every path pays in occupancy.
  void hoist_doubts() {
    for (auto [block, doubt] : doubts_)
      hoist_pure_op(*block, *doubt);
  }

private:
  std::vector<std::pair<Block*, Op*>> doubts_;

  Function& f_;
  const Origins& origins_;
  BoundsChecked& out_;
  Builder b_;
  std::unordered_map<int, Value*> extent_;
  Value* record_ = nullptr;
  std::unordered_map<const Value*, Value*> subst_; // an access's results -> its branch's
};

} // namespace

BoundsChecked insert_bounds_checks(const Function& f) {
  BoundsChecked out;
  out.fn = clone(f);
  Origins origins(*out.fn);
  Rewriter rewriter(*out.fn, origins, out);
  rewriter.rewrite(out.fn->entry());
  rewriter.hoist_doubts();
  return out;
}

std::string bounds_failure_message(std::string_view kernel, std::span<const CheckSite> sites,
                                   const CheckRecord& r) {
  const size_t site = static_cast<size_t>(r[1]);
  if (site >= sites.size())
    return fmt::format("kernel '{}': TRITIUM_CHECK: a damaged check record (site {})", kernel,
                       r[1]);
  const CheckSite& s = sites[site];
  // The element's index in its tile, from the row-major flat index.
  std::vector<int64_t> index(s.shape.size());
  int64_t flat = r[5];
  for (size_t d = s.shape.size(); d-- > 0;) {
    index[d] = flat % s.shape[d];
    flat /= s.shape[d];
  }
  const int64_t offset = r[6], extent = r[7];
  const std::string arg = s.arg_name.empty() ? fmt::format("argument {}", s.arg)
                                             : fmt::format("argument {} ('{}')", s.arg, s.arg_name);
  std::string what;
  if (s.kind == CheckSite::Kind::Overflow)
    what = fmt::format("its i32 element offset overflowed: {} wrapped to {}", r[6], r[7]);
  else if (offset < 0 || offset > extent - s.elem_bytes)
    what = fmt::format("byte offset {} is outside the buffer's {} bytes{}", offset, extent,
                       extent == 0 ? " (a null or empty buffer)" : "");
  else
    what = fmt::format("byte offset {} is not a multiple of the element's {} bytes", offset,
                       s.elem_bytes);
  return fmt::format("{}: in kernel '{}', program ({}, {}, {}), element [{}] of the {} through {}: "
                     "{}; TRITIUM_CHECK skipped the access",
                     s.where, kernel, r[2], r[3], r[4], fmt::join(index, ", "), s.op, arg, what);
}

} // namespace tritium::ir
