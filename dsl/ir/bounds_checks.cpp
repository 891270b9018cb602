#include <tritium/ir/bounds_checks.hpp>

#include <tritium/ir/builder.hpp>

#include "clone_op.hpp"
#include "hoist_pure_op.hpp"
#include "loop_invariant_bounds.hpp"
#include "offset_bounds.hpp"
#include "pointer_offsets.hpp"
#include "pointer_origins.hpp"
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

// Checks pass: the branches that report are the unlikely ones.
const Attrs kLikelyElse{{attr::likely, int64_t{1}}};

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
  Rewriter(Function& f, Origins& origins, BoundsChecked& out)
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
    find_inductions(f.entry(), inductions_);
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
      if (op->kind == OpKind::For && version(block, op))
        continue;
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
  // A loop whose accesses are bounded ahead of it, on every trip (their pointers the argument
  // advanced by scalars, tiles and induction steps; the tiles bounded by aranges, the scalars
  // made before the loop and its induction value), runs as written where those bounds show
  // that nothing can fail: the GEMM's K loop keeps its pipelined copies and pays a few scalar
  // compares for the whole loop. A checked copy runs otherwise (ragged edges, a bad argument).
  bool version(Block& block, std::unique_ptr<Op>& loop) {
    // The guard and both copies read what the ops before the loop became (a scalar loaded
    // ahead of it and checked now comes out of its If).
    substitute(*loop);
    const size_t mark = block.ops.size();
    b_.set_block(block);
    b_.set_loc(loop->loc);
    Value* safe = safe_trips(*loop);
    if (!safe) {
      block.ops.resize(mark);
      return false;
    }
    std::vector<Type> types;
    for (const Value* r : loop->results)
      types.push_back(r->type);
    Op& branch = b_.create(OpKind::If, {safe}, types, {{attr::likely, int64_t{0}}}, 2);
    b_.set_block(branch.body(1));
    std::unordered_map<const Value*, Value*> map;
    Op& copy = clone_op(b_, *loop, map);
    find_inductions(branch.body(1), inductions_);
    for (auto [from, to] : map)
      origins_.alias(to, from);
    b_.create(OpKind::Yield, copy.results, {});
    for (auto& r : copy.regions)
      rewrite(*r->block);
    loop->parent = &branch.body(0);
    std::vector<Value*> results = loop->results;
    branch.body(0).ops.push_back(std::move(loop));
    b_.set_block(branch.body(0));
    b_.create(OpKind::Yield, results, {});
    for (size_t k = 0; k < results.size(); ++k)
      subst_[results[k]] = branch.result(k);
    b_.set_block(block);
    return true;
  }

  // The results of ops already rewritten, where the ops nested in `op` read them.
  void substitute(Op& op) {
    for (auto& r : op.regions)
      for (auto& o : r->block->ops) {
        for (Value*& v : o->operands)
          if (auto it = subst_.find(v); it != subst_.end())
            v = it->second;
        substitute(*o);
      }
  }

  // A scalar true where no access in `loop` can fail on any trip, built where the builder is
  // (ahead of the loop); null where some access's offsets cannot be bounded there.
  Value* safe_trips(const Op& loop) {
    Value* lb = wide64(loop.operand(0));
    Value* ub = wide64(loop.operand(1));
    Value* step = wide64(loop.operand(2));
    Value* one = i64(1, {});
    Value* zero = i64(0, {});
    Value* n = binary(
        OpKind::Div,
        binary(OpKind::Sub, binary(OpKind::Add, ub, step), binary(OpKind::Add, lb, one)), step);
    Value* last = binary(OpKind::Max, binary(OpKind::Sub, n, one), zero);
    OffsetBounds bounds(b_, &loop, {lb, binary(OpKind::Add, lb, binary(OpKind::Mul, last, step))});
    Value* safe = cmp(CmpPred::Ge, step, one); // the trips above count a forward loop only
    AheadOf ahead(b_, loop);
    bool known = true;
    walk(loop.body(), [&](const Op& op) {
      Value* p = is_access(op) ? op.operand(0) : nullptr;
      const int arg = p ? origins_.of(p) : -1;
      if (!known || arg < 0)
        return; // not an access, or one that is never checked
      auto split = pointer_offsets(p, f_.args()[arg], inductions_);
      if (!split) {
        known = false;
        return;
      }
      Value* lo = zero;
      Value* hi = zero;
      auto add = [&](Value* v) {
        auto range = bounds.of(v);
        if (!range && !v->type.is_scalar())
          range = reduced(v, op, ahead, safe);
        known = known && range;
        if (range) {
          lo = binary(OpKind::Add, lo, range->lo);
          hi = binary(OpKind::Add, hi, range->hi);
        }
      };
      for (Value* t : split->tiles)
        add(t);
      for (Value* v : split->scalars)
        add(v);
      for (const Induction& s : split->steps) {
        if (s.loop != &loop && made_in(s.loop->body().args[0], loop)) {
          known = false; // a loop inside this one: its trips are not known ahead
          return;
        }
        Value* span = s.loop == &loop ? binary(OpKind::Mul, last, step_of(s))
                                      : binary(OpKind::Mul, trip(*s.loop), step_of(s));
        lo = binary(OpKind::Add, lo, s.loop == &loop ? binary(OpKind::Min, span, zero) : span);
        hi = binary(OpKind::Add, hi, s.loop == &loop ? binary(OpKind::Max, span, zero) : span);
      }
      const DType elem = p->type.elem.element_of_pointer();
      if (known)
        safe = binary(OpKind::And, safe,
                      inside(b_.constant_int(1, Type(ScalarKind::I1)), lo, hi, arg,
                             elem.is_bool() ? 1 : elem.bits() / 8));
    });
    return known ? binary(OpKind::And, safe, bounds.fits()) : nullptr;
  }

  // Bounds of the offsets tile `t` of `access` from its own elements, reduced ahead of the loop,
  // over those that the mask's loop-invariant factors let through (a routed GEMM's padding
  // rows hold a sentinel token that its mask drops). The exact value is reduced, and `safe`
  // asks that it fit in i32, so that where it holds the access's own i32 arithmetic is exact.
  std::optional<Interval> reduced(Value* t, const Op& access, AheadOf& ahead, Value*& safe) {
    Value* at = ahead(t);
    if (!at)
      return std::nullopt;
    std::unordered_map<const Value*, Value*> memo;
    Value* exact = wide(at, memo);
    if (!exact)
      exact = wide64(at);
    const size_t mi = mask_index(access);
    Value* keep =
        access.operands.size() > mi ? invariant_factors(b_, ahead, access.operands[mi]) : nullptr;
    if (keep && keep->type.shape != exact->type.shape)
      keep = nullptr;
    Interval r = reduced_bounds(b_, exact, keep);
    if (t->type.elem.kind == ScalarKind::I32)
      safe = binary(OpKind::And, safe,
                    binary(OpKind::And, cmp(CmpPred::Ge, r.lo, i64(INT32_MIN, {})),
                           cmp(CmpPred::Le, r.hi, i64(INT32_MAX, {}))));
    return r;
  }

  template <typename F>
  static void walk(const Block& b, const F& f) {
    for (const auto& op : b.ops) {
      f(*op);
      for (const auto& r : op->regions)
        walk(*r->block, f);
    }
  }

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
    auto split = one_tile(p, arg);
    if (!split)
      return byte_offset(p, arg);
    std::unordered_map<const Value*, Value*> memo;
    Value* t = wide(split->tiles[0], memo);
    if (!t)
      t = to_i64(split->tiles[0]);
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
    for (Value* q = p; q; q = below(q)) {
      if (!q->def || q->def->kind != OpKind::AddPtr)
        continue; // a loop-carried induction: its start's offsets are next
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

  // What an addptr or a loop's induction advanced to make `q`, or null.
  Value* below(Value* q) const {
    if (q->def)
      return q->def->kind == OpKind::AddPtr ? q->def->operand(0) : nullptr;
    auto step = inductions_.find(q);
    return step == inductions_.end() ? nullptr : step->second.init;
  }

  // The common case checked in i32, without the pointers: `p` is the argument advanced by
  // scalar offsets, by one tile of i32 element offsets t (`x + row * stride + cols`) and by the
  // steps of loops that carry it. With s the scalars' and steps' sum (exact, in i64) and n the
  // extent in elements, the access is in bounds where -s <= t <= n - s - 1, both bounds clamped
  // to i32 (exact: t is an i32), and aligned where the argument is. Null where `p` is not made
  // that way (two tiles of offsets, i64 offsets, a pointer read from memory): the caller checks
  // the pointers themselves.
  Value* in_bounds_i32(Value* p, int arg, int bytes) {
    auto split = one_tile(p, arg);
    if (!split)
      return nullptr;
    const auto& shape = p->type.shape;
    auto [lo, hi] = tile_limits(*split, arg, bytes);
    auto clamp_i32 = [&](Value* v) {
      v = binary(OpKind::Max, binary(OpKind::Min, v, i64(INT32_MAX, {})), i64(INT32_MIN, {}));
      return op1(OpKind::Cast, {v}, Type(ScalarKind::I32));
    };
    Value* tile = split->tiles[0];
    Value* ok = binary(OpKind::And, cmp(CmpPred::Ge, tile, splat(clamp_i32(lo), shape)),
                       cmp(CmpPred::Le, tile, splat(clamp_i32(hi), shape)));
    if (bytes > 1)
      ok = binary(OpKind::And, ok, splat(aligned(to_i64(f_.args()[arg]), bytes), shape));
    return ok;
  }

  // `p`'s offsets where they are one tile of p's shape beside scalars and steps.
  std::optional<PointerOffsets> one_tile(Value* p, int arg) {
    auto split = pointer_offsets(p, f_.args()[arg], inductions_);
    if (!split || split->tiles.size() != 1 || split->tiles[0]->type.shape != p->type.shape)
      return std::nullopt;
    return split;
  }

  // The elements an induction advances by, where the builder is.
  Value* step_of(const Induction& s) { return s.constant ? i64(*s.constant, {}) : wide64(s.d); }

  Value* wide64(Value* v) { return v->type.elem.kind == ScalarKind::I64 ? v : to_i64(v); }

  // The trip `loop` is on, from 0, where the builder is (inside it), as i64.
  Value* trip(const Op& loop) {
    Value* j = binary(OpKind::Sub, wide64(loop.body().args[0]), wide64(loop.operand(0)));
    const Op* step = loop.operand(2)->def;
    if (step && step->kind == OpKind::Constant && step->int_attr(attr::value) == 1)
      return j;
    return binary(OpKind::Div, j, wide64(loop.operand(2)));
  }

  // The scalar offsets' and the steps' sum, in i64 (each widened as addptr widens it), for the
  // trips the builder is on.
  Value* scalar_sum(const PointerOffsets& split) {
    Value* sum = i64(0, {});
    for (Value* v : split.scalars)
      sum = binary(OpKind::Add, sum, wide64(v));
    for (const Induction& s : split.steps)
      sum = binary(OpKind::Add, sum, binary(OpKind::Mul, trip(*s.loop), step_of(s)));
    return sum;
  }

  // The tile's elements are in bounds between lo = -s and hi = n - s - 1 (i64 scalars), s the
  // scalars' sum and n the extent in elements.
  std::pair<Value*, Value*> tile_limits(const PointerOffsets& split, int arg, int bytes) {
    Value* sum = scalar_sum(split);
    Value* n = elements(arg, bytes);
    return {binary(OpKind::Sub, i64(0, {}), sum),
            binary(OpKind::Sub, binary(OpKind::Sub, n, sum), i64(1, {}))};
  }
  Value* elements(int arg, int bytes) {
    return binary(OpKind::Div, extent_.at(arg), i64(bytes, {}));
  }

  // A scalar that is false only where no element of the access can fail: the offsets lie, by
  // their scalar bounds, inside the buffer; no i32 sum or product on their way can wrap; the
  // argument is aligned. Null where the offsets are not made of scalars, aranges and constants
  // through +, -, *, / and % (the per-element checks alone decide then).
  Value* maybe_failing(Value* p, int arg, int bytes) {
    auto split = pointer_offsets(p, f_.args()[arg], inductions_);
    if (!split || split->tiles.empty())
      return nullptr;
    OffsetBounds bounds(b_);
    Value* lo = scalar_sum(*split);
    Value* hi = lo;
    for (Value* t : split->tiles) {
      auto range = bounds.of(t);
      if (!range)
        return nullptr;
      lo = binary(OpKind::Add, lo, range->lo);
      hi = binary(OpKind::Add, hi, range->hi);
    }
    // The scalar offsets' own i32 arithmetic, which must not wrap either.
    for (Value* v : split->scalars)
      (void)bounds.of(v);
    return not_(inside(bounds.fits(), lo, hi, arg, bytes));
  }

  // `fits` and every element offset in [lo, hi] inside argument `arg`, which is aligned.
  Value* inside(Value* fits, Value* lo, Value* hi, int arg, int bytes) {
    Value* safe =
        binary(OpKind::And, fits,
               binary(OpKind::And, cmp(CmpPred::Ge, lo, i64(0, {})),
                      cmp(CmpPred::Le, hi, binary(OpKind::Sub, elements(arg, bytes), i64(1, {})))));
    if (bytes > 1)
      safe = binary(OpKind::And, safe, aligned(to_i64(f_.args()[arg]), bytes));
    return safe;
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
  Value* reduce_all(Value* v, OpKind combine) { return ir::reduce_all(b_, v, combine); }

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
  Origins& origins_;
  BoundsChecked& out_;
  Builder b_;
  std::unordered_map<int, Value*> extent_;
  Value* record_ = nullptr;
  std::unordered_map<const Value*, Value*> subst_; // an access's results -> its branch's
  Inductions inductions_;
};

} // namespace

BoundsChecked insert_bounds_checks(const Function& f) {
  BoundsChecked out;
  out.fn = clone(f);
  hoist_loop_invariants(out.fn->entry());
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
