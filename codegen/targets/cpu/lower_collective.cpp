// Reduce and scan. The combine region is applied in the interpreter's order, so results are
// bit-identical: a scan sequentially along the axis; a reduction in the order of
// ir/reduce_order.hpp, P partial results over every P-th element and then a halving tree. The
// loops run the axis outermost and the independent lanes innermost and contiguous, P partials
// of each lane side by side, which is what the vectorizer turns into SIMD: a 1-D reduction of
// f32 keeps 32 partials (four AVX2 registers), not one chain of dependent steps.
#include "lowering.hpp"

#include <tritium/ir/reduce_order.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::OpKind;

namespace {

// Whether `v` already has the axis-major layout [len][lanes] the loops below read.
bool is_axis_major(const View& v, int64_t axis) {
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(v.shape.size()) - 1; d >= 0; --d)
    if (d != axis) {
      if (v.shape[d] != 1 && v.strides[d] != s)
        return false;
      s *= v.shape[d];
    }
  return v.shape[axis] == 1 || v.strides[axis] == s;
}

// Whether `v` is +0.0: a constant or a splat of one.
bool is_plus_zero(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (d && d->kind == OpKind::Splat)
    d = d->operand(0)->def;
  if (!d || d->kind != OpKind::Constant || !d->operands.empty())
    return false;
  const ir::AttrValue& a = d->attrs.at(attr::value);
  if (const auto* i = std::get_if<int64_t>(&a))
    return *i == 0;
  const auto* f = std::get_if<double>(&a);
  return f && *f == 0.0 && !std::signbit(*f);
}

// The combine op of a reduction of one operand whose region is that one op on its two
// arguments (`a + b`, `max(a, b)`, ...), then the yield; nullptr for any other region.
const ir::Op* single_combine(const ir::Op& reduce) {
  if (reduce.operands.size() != 1)
    return nullptr;
  const ir::Block& body = reduce.body();
  if (body.ops.size() != 2 || body.ops[0]->results.size() != 1 ||
      body.ops[1]->operands.size() != 1 || body.ops[1]->operand(0) != body.ops[0]->result())
    return nullptr;
  const ir::Op& c = *body.ops[0];
  if (c.operands.size() != 2 || !((c.operand(0) == body.args[0] && c.operand(1) == body.args[1]) ||
                                  (c.operand(0) == body.args[1] && c.operand(1) == body.args[0])))
    return nullptr;
  return &c;
}

// For a float sum of `in = 0.0 + y` (Triton's looped layer norm accumulates `_mean += a` into a
// zero tile), y: the add can be left out of every element but the partials' first. A partial
// that starts as 0 + x is never -0 (0 + -0 is +0, and p + q is -0 only for p = q = -0), and for
// p != -0, p + (0 + y) and p + y are the same float for every y (they could differ only at
// y = -0). Not where y is a product: without the add, fp fusion could fold it into the sum.
const ir::Value* summand_without_zero(const ir::Op& reduce, const ir::Value* in) {
  const ir::Op* combine = single_combine(reduce);
  if (!combine || combine->kind != OpKind::Add || !in->type.elem.is_float() || !in->def ||
      in->def->kind != OpKind::Add)
    return nullptr;
  for (int z = 0; z < 2; ++z) {
    const ir::Value* y = in->def->operand(1 - z);
    if (is_plus_zero(in->def->operand(z)) && !(y->def && y->def->kind == OpKind::Mul))
      return y;
  }
  return nullptr;
}

// The combine op, where it lowers the same on vectors as on scalars: add, mul, min, max, and, or
// or xor of f32, f64 or integers (f16 and bf16 results round through scalar types); else nullptr.
const ir::Op* vector_combine(const ir::Op& reduce) {
  const ir::Op* c = single_combine(reduce);
  if (!c)
    return nullptr;
  switch (c->kind) {
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Min:
  case OpKind::Max:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
    break;
  default:
    return nullptr;
  }
  const DType t = c->result()->type.elem;
  return t.kind == ir::ScalarKind::F32 || t.kind == ir::ScalarKind::F64 || t.is_int() ? c : nullptr;
}

} // namespace

// One reduce or scan op being lowered: its operands packed axis-major, the partials, and the
// state the reduction's versions share (masks known true or off, snapshots).
class CollectiveLowering {
public:
  CollectiveLowering(KernelLowering& l, const ir::Op& op);
  void scan();
  void reduce();

private:
  using Cache = std::unordered_map<const ir::Value*, llvm::Value*>;
  using Partials = std::vector<std::vector<llvm::Value*>>; // [operand][partial]

  llvm::Value* at(const View& v, llvm::Value* lin) {
    return b.CreateInBoundsGEP(v.ty, v.base, v.offset ? b.CreateAdd(lin, L.i64(v.offset)) : lin);
  }
  llvm::Value* i64(int64_t v) { return L.i64(v); }
  View axis_major(View v) const;
  llvm::Value* input(size_t k, llvm::Value* s, Cache& cache);
  llvm::Value* later_input(size_t k, llvm::Value* s, Cache& cache);
  llvm::Value* acc_at(size_t k, llvm::Value* t) {
    return L.elements_.from_scratch(b.CreateLoad(acc[k].ty, at(acc[k], t)), o[k]->type.elem);
  }
  void fold(int64_t count, const std::function<llvm::Value*(llvm::Value*)>& src_of,
            bool from_input);
  void know_masks(std::optional<bool> value);
  void chunk_in_registers(llvm::Value* base, Partials& vals, bool first);
  Partials merge_partials(const Partials& x, llvm::BasicBlock* from_x, const Partials& y,
                          llvm::BasicBlock* from_y);
  Partials register_chunks(const Partials& vals, llvm::Value* lo, llvm::Value* hi,
                           bool settle = false);
  void store_partials(const Partials& vals);
  Partials load_partials();
  ReloadLowering::VersionValues result(const Partials& vals);
  llvm::Value* clamp(llvm::Value* v, llvm::Value* lo, int64_t hi) {
    v = b.CreateSelect(b.CreateICmpSLT(v, lo), lo, v);
    return b.CreateSelect(b.CreateICmpSGT(v, i64(hi)), i64(hi), v);
  }
  void chunk(llvm::Value* c);
  void fold_rest() {
    fold(
        rest * lanes, [&](llvm::Value* t) { return b.CreateAdd(i64(chunks * row), t); }, true);
  }
  ReloadLowering::VersionValues partials(bool direct);
  Partials partials_past_masked(Partials fast_vals,
                                std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> resume,
                                llvm::Value* after, llvm::BasicBlock* rest_bb);
  void halving_tree(const ReloadLowering::VersionValues& flat);

  KernelLowering& L;
  llvm::IRBuilder<>& b;
  const ir::Op& op;
  const std::vector<ir::Value*>& o;
  const size_t n;
  const std::vector<int64_t>& shape;
  int64_t axis, len, lanes = 1, parts = 1;
  std::vector<View> in, acc, out;

  // The reduction's state.
  std::vector<const ir::Op*> loads; // the reloaded inputs' loads
  std::vector<const ir::Value*> masks;
  bool masks_true = false, from_snapshots = false;
  const ir::Value* summand = nullptr; // an input combined into a partial that holds an element
  int64_t row = 0, chunks = 0, rest = 0;
  llvm::Value* leading = nullptr;  // elements where every reloaded load's mask holds
  llvm::Value* trailing = nullptr; // past it, every reloaded load's mask is off
  bool input_first = false, invariant_tail = false, to_scalars = false;
};

CollectiveLowering::CollectiveLowering(KernelLowering& l, const ir::Op& op_)
    : L(l), b(l.b()), op(op_), o(op_.operands), n(o.size()), shape(o[0]->type.shape) {
  axis = op.int_attr(attr::axis);
  len = shape[axis];
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis)
      lanes *= shape[d];
  const bool is_scan = op.kind == OpKind::Scan;
  // Partial results per lane (1 for a scan), side by side: acc is [parts][lanes].
  parts = is_scan ? 1 : ir::reduce_partials(len, lanes);
  // Inputs are packed axis-major, as [len][outer * inner]: each step along the axis is then
  // one contiguous loop over independent lanes, which vectorizes whatever the axis is.
  in.resize(n);
  acc.resize(n);
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (L.reloads_.is_reloaded(o[k])) { // a 1-D reduction re-issues the loads (lower_reload.cpp)
      acc[k] = L.new_buffer(o[k]->type.elem, {parts * lanes});
      continue;
    }
    const View& v = L.view(o[k]);
    if (is_axis_major(v, axis)) {
      in[k] = v; // read in place: no packing copy
    } else {
      in[k] = axis_major(L.new_buffer(o[k]->type.elem, {len * lanes}));
      L.copy(v, in[k], o[k]->type.elem);
    }
    acc[k] = L.new_buffer(o[k]->type.elem, {parts * lanes});
    if (is_scan)
      out[k] = axis_major(L.new_buffer(o[k]->type.elem, {len * lanes}));
  }
}

View CollectiveLowering::axis_major(View v) const {
  v.strides.assign(shape.size(), 0);
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d)
    if (d != axis) {
      v.strides[d] = s;
      s *= shape[d];
    }
  v.strides[axis] = lanes;
  v.shape = shape;
  return v;
}

// Sequentially along the axis, in the interpreter's order; reversed where asked.
void CollectiveLowering::scan() {
  const bool reverse = op.int_attr(attr::reverse, 0);
  auto step = [&](llvm::Value* j, bool first) {
    llvm::Value* jj = reverse ? b.CreateSub(i64(len - 1), j) : j;
    llvm::Value* r = b.CreateMul(jj, i64(lanes));
    L.loop(i64(0), i64(lanes), 1, [&](llvm::Value* q) {
      llvm::Value* src = b.CreateAdd(r, q);
      std::vector<llvm::Value*> cur(n), args;
      for (size_t k = 0; k < n; ++k)
        cur[k] = L.elements_.from_scratch(b.CreateLoad(in[k].ty, at(in[k], src)), o[k]->type.elem);
      if (!first) {
        for (size_t k = 0; k < n; ++k)
          args.push_back(acc_at(k, q));
        args.insert(args.end(), cur.begin(), cur.end());
        cur = L.control_.inline_region(op.body(), args);
      }
      for (size_t k = 0; k < n; ++k) {
        b.CreateStore(L.elements_.to_scratch(cur[k], o[k]->type.elem), at(acc[k], q));
        b.CreateStore(L.elements_.to_scratch(cur[k], o[k]->type.elem), at(out[k], src));
      }
    });
  };
  step(i64(0), true);
  if (len > 1)
    L.loop(i64(1), i64(len), 1, [&](llvm::Value* j) { step(j, false); });
  for (size_t k = 0; k < n; ++k)
    L.set_view(op.results[k], out[k]);
}

// Reloaded inputs: lanes where every load's mask holds read memory unconditionally, and a
// second version of the loops reads rows copied aside before an overlapping store.
llvm::Value* CollectiveLowering::input(size_t k, llvm::Value* s, Cache& cache) {
  if (L.reloads_.is_reloaded(o[k]))
    return L.reloads_.reload(o[k], s, masks_true, from_snapshots, cache);
  return L.elements_.from_scratch(b.CreateLoad(in[k].ty, at(in[k], s)), o[k]->type.elem);
}

llvm::Value* CollectiveLowering::later_input(size_t k, llvm::Value* s, Cache& cache) {
  return summand ? L.reloads_.reload(summand, s, masks_true, from_snapshots, cache)
                 : input(k, s, cache);
}

// acc[t] = combine(acc[t], src[t]) over t < count, one contiguous (vectorized) loop; src is
// the input at src_of(t), or acc itself.
void CollectiveLowering::fold(int64_t count,
                              const std::function<llvm::Value*(llvm::Value*)>& src_of,
                              bool from_input) {
  L.loop(i64(0), i64(count), 1, [&](llvm::Value* t) {
    llvm::Value* s = src_of(t);
    Cache cache;
    std::vector<llvm::Value*> args;
    for (size_t k = 0; k < n; ++k)
      args.push_back(acc_at(k, t));
    for (size_t k = 0; k < n; ++k)
      args.push_back(from_input ? later_input(k, s, cache) : acc_at(k, s));
    std::vector<llvm::Value*> r = L.control_.inline_region(op.body(), args);
    for (size_t k = 0; k < n; ++k)
      b.CreateStore(L.elements_.to_scratch(r[k], o[k]->type.elem), at(acc[k], t));
  });
}

void CollectiveLowering::know_masks(std::optional<bool> value) {
  L.fusion_.known_masks_.clear();
  if (value)
    for (const ir::Value* m : masks)
      L.fusion_.known_masks_[m] = *value;
}

// Chunk c's elements combined into the partials `vals` as straight-line code (lanes == 1
// here), which the SLP vectorizer turns into a few vector operations per chunk.
void CollectiveLowering::chunk_in_registers(llvm::Value* base, Partials& vals, bool first) {
  if (!L.prefetch_.prefetching_.empty())
    L.prefetch_.prefetch_share(base, row);
  ReloadLowering::RegisterChunk rc{base, parts};
  L.reloads_.register_chunk_ = &rc;
  for (int64_t t = 0; t < parts; ++t) {
    rc.lane = t;
    llvm::Value* s = b.CreateAdd(base, i64(t));
    Cache cache;
    std::vector<llvm::Value*> args;
    for (size_t k = 0; k < n && !first; ++k)
      args.push_back(vals[k][t]);
    for (size_t k = 0; k < n; ++k)
      args.push_back(first ? input(k, s, cache) : later_input(k, s, cache));
    if (!first && input_first)
      std::swap(args[0], args[1]);
    std::vector<llvm::Value*> r = first ? args : L.control_.inline_region(op.body(), args);
    for (size_t k = 0; k < n; ++k)
      vals[k][t] = r[k];
  }
  L.reloads_.register_chunk_ = nullptr;
}

// Partials merged from two predecessors.
CollectiveLowering::Partials CollectiveLowering::merge_partials(const Partials& x,
                                                                llvm::BasicBlock* from_x,
                                                                const Partials& y,
                                                                llvm::BasicBlock* from_y) {
  Partials m = x;
  for (size_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < parts; ++t) {
      auto* phi = b.CreatePHI(x[k][t]->getType(), 2);
      phi->addIncoming(x[k][t], from_x);
      phi->addIncoming(y[k][t], from_y);
      m[k][t] = phi;
    }
  return m;
}

// Chunks lo .. hi-1 in registers, starting from the partials `vals`.
//
// settle: every lane of these chunks reads one invariant value x (same_where_masks_off), so
// each chunk maps the partials p to f(p, x); once a chunk leaves them as they were, so does
// every later one, and the loop stops there. For a sum of masked-off zeros or a max of -inf
// that is after at most two chunks instead of a quarter of a 12288-column row in a
// 16384-lane block. The partials are compared bit for bit: exact for any combine region.
CollectiveLowering::Partials CollectiveLowering::register_chunks(const Partials& vals,
                                                                 llvm::Value* lo, llvm::Value* hi,
                                                                 bool settle) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* body = llvm::BasicBlock::Create(L.ctx(), "partials.chunk", L.fn());
  auto* exit = llvm::BasicBlock::Create(L.ctx(), "partials.chunks", L.fn());
  b.CreateCondBr(b.CreateICmpSLT(lo, hi), body, exit);
  b.SetInsertPoint(body);
  llvm::PHINode* c = b.CreatePHI(b.getInt64Ty(), 2);
  c->addIncoming(lo, pre);
  Partials phis = vals;
  for (size_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < parts; ++t) {
      phis[k][t] = b.CreatePHI(vals[k][t]->getType(), 2);
      llvm::cast<llvm::PHINode>(phis[k][t])->addIncoming(vals[k][t], pre);
    }
  Partials next = phis;
  chunk_in_registers(b.CreateMul(c, i64(row)), next, false);
  llvm::Value* c_next = b.CreateAdd(c, i64(1), "", true, true);
  llvm::Value* more = b.CreateICmpSLT(c_next, hi);
  if (settle) {
    llvm::Value* changed = b.getFalse();
    for (size_t k = 0; k < n; ++k)
      for (int64_t t = 0; t < parts; ++t) {
        llvm::Type* ty = next[k][t]->getType();
        llvm::Type* bits = b.getIntNTy(ty->getPrimitiveSizeInBits().getFixedValue());
        changed = b.CreateOr(changed, b.CreateICmpNE(b.CreateBitCast(next[k][t], bits),
                                                     b.CreateBitCast(phis[k][t], bits)));
      }
    more = b.CreateAnd(more, changed);
  }
  llvm::BasicBlock* latch = b.GetInsertBlock();
  c->addIncoming(c_next, latch);
  for (size_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < parts; ++t)
      llvm::cast<llvm::PHINode>(phis[k][t])->addIncoming(next[k][t], latch);
  b.CreateCondBr(more, body, exit);
  b.SetInsertPoint(exit);
  return merge_partials(vals, pre, next, latch);
}

void CollectiveLowering::store_partials(const Partials& vals) {
  for (size_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < parts; ++t)
      b.CreateStore(L.elements_.to_scratch(vals[k][t], o[k]->type.elem), at(acc[k], i64(t)));
}

CollectiveLowering::Partials CollectiveLowering::load_partials() {
  Partials vals(n, std::vector<llvm::Value*>(parts));
  for (size_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < parts; ++t)
      vals[k][t] = acc_at(k, i64(t));
  return vals;
}

// A reduction to scalars hands its partials to the halving tree as values, partial by
// partial (t * n + k); any other keeps them in acc.
ReloadLowering::VersionValues CollectiveLowering::result(const Partials& vals) {
  ReloadLowering::VersionValues flat;
  if (!to_scalars) {
    store_partials(vals);
    return flat;
  }
  for (int64_t t = 0; t < parts; ++t)
    for (size_t k = 0; k < n; ++k)
      flat.push_back(vals[k][t]);
  return flat;
}

// Element j joins partial j % parts, a chunk of `parts` elements (per lane) at a time.
void CollectiveLowering::chunk(llvm::Value* c) {
  llvm::Value* base = b.CreateMul(c, i64(row));
  if (!L.prefetch_.prefetching_.empty())
    L.prefetch_.prefetch_share(base, row);
  fold(
      row, [&](llvm::Value* t) { return b.CreateAdd(base, t); }, true);
}

// One version of the reduction's loops (direct: reading memory, not snapshots).
ReloadLowering::VersionValues CollectiveLowering::partials(bool direct) {
  // Chunks 0 .. split-1 lie in the masks' leading lanes (all of them when every input is a
  // buffer: its elements are all there).
  llvm::Value* split = leading         ? clamp(b.CreateSDiv(leading, i64(parts)), i64(0), chunks)
                       : loads.empty() ? i64(chunks)
                                       : i64(1);
  auto* masked_start = llvm::BasicBlock::Create(L.ctx(), "partials.masked", L.fn());
  auto* rest_bb = llvm::BasicBlock::Create(L.ctx(), "partials.rest", L.fn());
  std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> resume; // first chunk left
  const bool in_registers = direct && (leading || loads.empty()) && lanes == 1;
  Partials fast_vals;
  if (in_registers) {
    // Reading memory directly, the partials stay in registers while the leading lanes last.
    // (Accumulated in a buffer, they were stored back every chunk: the buffer may alias the
    // input as far as LLVM knows.)
    auto* fast = llvm::BasicBlock::Create(L.ctx(), "partials.registers", L.fn());
    b.CreateCondBr(b.CreateICmpSGE(split, i64(1)), fast, masked_start);
    b.SetInsertPoint(fast);
    Partials vals(n, std::vector<llvm::Value*>(parts));
    masks_true = true;
    know_masks(true);
    chunk_in_registers(i64(0), vals, true);
    fast_vals = register_chunks(vals, i64(1), split);
    know_masks(std::nullopt);
    masks_true = false;
    resume.emplace_back(split, b.GetInsertBlock());
    b.CreateBr(rest_bb);
  } else {
    b.CreateBr(masked_start);
  }
  b.SetInsertPoint(masked_start);
  // Elements 0 .. parts-1 start the partials.
  L.loop(i64(0), i64(row), 1, [&](llvm::Value* t) {
    Cache cache;
    for (size_t k = 0; k < n; ++k)
      b.CreateStore(L.elements_.to_scratch(input(k, t, cache), o[k]->type.elem), at(acc[k], t));
  });
  llvm::Value* after = i64(1);
  if (leading) {
    after = b.CreateSelect(b.CreateICmpSLT(split, i64(1)), i64(1), split);
    masks_true = true;
    know_masks(true);
    L.loop(i64(1), after, 1, [&](llvm::Value* c) { chunk(c); });
    know_masks(std::nullopt);
    masks_true = false;
  }
  if (!in_registers) {
    resume.emplace_back(after, b.GetInsertBlock());
    b.CreateBr(rest_bb);
    b.SetInsertPoint(rest_bb);
    auto* from = b.CreatePHI(b.getInt64Ty(), 1);
    from->addIncoming(after, resume[0].second);
    L.loop(from, i64(chunks), 1, [&](llvm::Value* c) { chunk(c); });
    if (rest)
      fold_rest();
    return to_scalars ? result(load_partials()) : ReloadLowering::VersionValues{};
  }
  return result(partials_past_masked(std::move(fast_vals), std::move(resume), after, rest_bb));
}

// The partials stay values from here on, and go through acc only around the chunks folded
// there (the fast path's partials read back through acc waited on a store forward per
// reduction).
CollectiveLowering::Partials CollectiveLowering::partials_past_masked(
    Partials fast_vals, std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> resume,
    llvm::Value* after, llvm::BasicBlock* rest_bb) {
  Partials masked_vals = load_partials();
  resume.emplace_back(after, b.GetInsertBlock());
  b.CreateBr(rest_bb);
  b.SetInsertPoint(rest_bb);
  auto* from = b.CreatePHI(b.getInt64Ty(), 2);
  for (auto& [v, bb] : resume)
    from->addIncoming(v, bb);
  Partials vals = merge_partials(fast_vals, resume[0].second, masked_vals, resume[1].second);
  // Chunks with some lanes on (folded through acc, where there are any), then chunks whose
  // lanes are all off: no loads there.
  llvm::Value* off =
      trailing
          ? clamp(b.CreateSDiv(b.CreateAdd(trailing, i64(parts - 1)), i64(parts)), from, chunks)
          : i64(chunks);
  auto* partly = llvm::BasicBlock::Create(L.ctx(), "partials.partly", L.fn());
  auto* joined = llvm::BasicBlock::Create(L.ctx(), "partials.joined", L.fn());
  llvm::BasicBlock* skip = b.GetInsertBlock();
  b.CreateCondBr(b.CreateICmpSLT(from, off), partly, joined);
  b.SetInsertPoint(partly);
  store_partials(vals);
  L.loop(from, off, 1, [&](llvm::Value* c) { chunk(c); });
  Partials folded = load_partials();
  llvm::BasicBlock* partly_end = b.GetInsertBlock();
  b.CreateBr(joined);
  b.SetInsertPoint(joined);
  vals = merge_partials(folded, partly_end, vals, skip);
  if (trailing) {
    L.reloads_.reload_masks_false_ = true;
    know_masks(false);
    vals = register_chunks(vals, off, i64(chunks), invariant_tail);
    know_masks(std::nullopt);
    L.reloads_.reload_masks_false_ = false;
  }
  if (rest) {
    store_partials(vals);
    fold_rest();
    vals = load_partials();
  }
  return vals;
}

void CollectiveLowering::reduce() {
  std::vector<const ir::Value*> reloaded;
  for (const ir::Value* v : o)
    if (L.reloads_.is_reloaded(v))
      reloaded.push_back(v);
  loads = L.reloads_.reloaded_loads(reloaded);
  summand = L.reloads_.is_reloaded(o[0]) ? summand_without_zero(op, o[0]) : nullptr;
  row = parts * lanes;
  chunks = len / parts;
  rest = len % parts;
  for (const ir::Op* l : loads)
    if (l->operands.size() > 1)
      masks.push_back(l->operand(1));
  if (!masks.empty())
    leading = L.fusion_.leading_true_lanes(masks, len);
  // A float min or max whose region is that one op takes the element first: x86 lowers
  // maxnum(a, b) to a max and a select on isnan(a), and with the partial as `a` that test
  // was on the loop-carried chain (softmax's max pass, 4096 columns in cache: 1320 -> 1255
  // ns a row). maxnum is commutative but for which zero it returns and NaN payloads, which
  // the comparison with the interpreter leaves open (docs/cpu-backend.md).
  const ir::Op* single = single_combine(op);
  input_first = single && single->result()->type.elem.is_float() &&
                (single->kind == OpKind::Min || single->kind == OpKind::Max);
  // Past `trailing`, every reloaded load's mask is off (its `other` is read): known where
  // each mask is in closed form.
  trailing = leading ? L.fusion_.all_masks_off_from(masks, len) : nullptr;
  invariant_tail = std::all_of(o.begin(), o.end(),
                               [&](const ir::Value* v) {
                                 return L.reloads_.is_reloaded(v) && !v->type.elem.is_ptr() &&
                                        L.reloads_.same_where_masks_off(v, masks);
                               }) &&
                   (!summand || L.reloads_.same_where_masks_off(summand, masks));
  to_scalars = std::all_of(op.results.begin(), op.results.end(),
                           [](const ir::Value* r) { return r->type.is_scalar(); }) &&
               lanes == 1;
  // A reduction over a row an earlier pass read (a layer norm's variance) prefetches the next
  // program's row, a line or so per chunk: memory reads while this pass and the next compute
  // on cached data, and the last pass, whose store streams, only writes.
  L.prefetch_.begin_prefetch(loads, len * lanes);
  ReloadLowering::VersionValues flat =
      L.reloads_.emit_reload_versions(loads, "reduce", [&](bool snap) {
        from_snapshots = snap;
        ReloadLowering::VersionValues r = partials(!snap);
        from_snapshots = false;
        return r;
      });
  L.prefetch_.end_prefetch();
  halving_tree(flat);
}

// The halving tree: partial k absorbs partial k + h. Into scalars, in registers: through
// scratch, each level's loads waited on the previous level's stores, a chain of store
// forwards: the layer norms at 512 columns, rows in cache, ran 5-15 % faster without it.
void CollectiveLowering::halving_tree(const ReloadLowering::VersionValues& flat) {
  if (const ir::Op* combine = vector_combine(op); to_scalars && parts > 1 && combine) {
    // One combine op, on whole vectors: lanes 0 .. h-1 absorb lanes h .. 2h-1. Left to the
    // SLP vectorizer, the tree stayed mostly scalar shuffles and adds, about twice the
    // latency (Zen 4: the row layer norm at 256 columns 86.5 -> 79 ns a row).
    llvm::Value* v = llvm::PoisonValue::get(
        llvm::FixedVectorType::get(flat[0]->getType(), static_cast<unsigned>(parts)));
    for (int64_t t = 0; t < parts; ++t)
      v = b.CreateInsertElement(v, flat[t], static_cast<uint64_t>(t));
    for (int64_t h = parts / 2; h >= 1; h /= 2) {
      std::vector<int> lo(h), hi(h);
      std::iota(lo.begin(), lo.end(), 0);
      std::iota(hi.begin(), hi.end(), static_cast<int>(h));
      v = L.elements_.elementwise(*combine,
                                  {b.CreateShuffleVector(v, lo), b.CreateShuffleVector(v, hi)});
    }
    L.set_scalar(op.results[0], b.CreateExtractElement(v, uint64_t{0}));
    return;
  }
  if (to_scalars) {
    std::vector<std::vector<llvm::Value*>> part(parts); // part[t]: partial t of each operand
    for (int64_t t = 0; t < parts; ++t)
      part[t].assign(flat.begin() + t * n, flat.begin() + (t + 1) * n);
    for (int64_t h = parts / 2; h >= 1; h /= 2)
      for (int64_t t = 0; t < h; ++t) {
        std::vector<llvm::Value*> args = part[t];
        args.insert(args.end(), part[t + h].begin(), part[t + h].end());
        part[t] = L.control_.inline_region(op.body(), args);
      }
    for (size_t k = 0; k < n; ++k)
      L.set_scalar(op.results[k], part[0][k]);
    return;
  }
  for (int64_t h = parts / 2; h >= 1; h /= 2)
    fold(
        h * lanes, [&](llvm::Value* t) { return b.CreateAdd(i64(h * lanes), t); }, false);
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* r = op.results[k];
    if (r->type.is_scalar()) {
      L.set_scalar(r, L.elements_.from_scratch(b.CreateLoad(acc[k].ty, acc[k].base), r->type.elem));
    } else {
      View v = acc[k];
      v.shape = r->type.shape;
      v.strides.assign(v.shape.size(), 1);
      for (int d = static_cast<int>(v.shape.size()) - 2; d >= 0; --d)
        v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
      L.set_view(r, v);
    }
  }
}

void KernelLowering::lower_reduce_or_scan(const ir::Op& op) {
  flush(); // the combine region is emitted inside loops: no group may be pending there
  CollectiveLowering c(*this, op);
  if (op.kind == OpKind::Scan)
    c.scan();
  else
    c.reduce();
}

} // namespace tritium::cpu
