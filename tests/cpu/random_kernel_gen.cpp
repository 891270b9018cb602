#include "random_kernel_gen.hpp"

#include <tritium/ir/printer.hpp>

#include <algorithm>
#include <functional>
#include <numeric>

namespace tritium::testing {
namespace {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;
using ir::Type;
using ir::Value;

const std::vector<ScalarKind> kKinds = {
    ScalarKind::I1,  ScalarKind::I8,  ScalarKind::I16,    ScalarKind::I32,    ScalarKind::I64,
    ScalarKind::U8,  ScalarKind::U32, ScalarKind::U64,    ScalarKind::F16,    ScalarKind::BF16,
    ScalarKind::F32, ScalarKind::F64, ScalarKind::F8E4NV, ScalarKind::F8E5B16};

class Gen {
public:
  Gen(uint64_t seed, bool portable) : rng_(seed), portable_(portable) {}

  RandomKernel run() {
    RandomKernel k;
    k.f = std::make_shared<ir::Function>();
    f_ = k.f.get();
    f_->name = "random_kernel";
    b_ = std::make_unique<ir::Builder>(*f_, f_->entry());
    // Shapes stay small: thousands of kernels run through the interpreter too.
    int rank = pick(3) + 1;
    static const int64_t dims[] = {1, 2, 4, 8, 16, 32};
    for (int i = 0; i < rank; ++i)
      shape_.push_back(dims[pick(rank == 1 ? 6 : rank == 2 ? 5 : 4)]);
    k.shape = shape_;
    int64_t numel = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
    k.grid = 1 + pick(3);
    k.n = k.grid * numel - (coin() ? 0 : pick(static_cast<int>(numel)));
    for (int i = 0; i < 3; ++i)
      k.out_types.push_back(random_kind());

    Value* in_f = arg(DType::pointer_to(ScalarKind::F32));
    Value* in_i = arg(DType::pointer_to(ScalarKind::I32));
    in_i_ = in_i;
    atom_ = arg(DType::pointer_to(ScalarKind::I32));
    std::vector<Value*>& outs = outs_;
    for (DType t : k.out_types)
      outs.push_back(arg(DType::pointer_to(t.kind)));
    n_ = arg(DType(ScalarKind::I32));

    // offs = pid * numel + row-major index; mask = offs < n
    Value* pid = b_->create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{"axis", int64_t{0}}});
    Value* base = b_->create1(OpKind::Mul, {pid, b_->constant_int(numel, Type(ScalarKind::I32))},
                              Type(ScalarKind::I32));
    Value* idx = index_tensor();
    offs_ = b_->create1(OpKind::Add, {splat(base), idx}, ti32());
    mask_ = b_->create1(OpKind::Cmp, {offs_, splat(n_)}, Type(ScalarKind::I1, shape_),
                        {{"pred", tritium::ir::CmpPred::Lt}});
    Value* xf = load(in_f, ScalarKind::F32);
    Value* xi = load(in_i, ScalarKind::I32);
    pool_ = {xf, xi, n_};

    int steps = 4 + pick(12);
    for (int s = 0; s < steps; ++s)
      step(0);

    for (size_t i = 0; i < outs.size(); ++i) {
      Value* v = pool_[pool_.size() - 1 - pick(std::min<int>(4, static_cast<int>(pool_.size())))];
      v = cast(tensor(v), k.out_types[i]);
      Value* p = b_->create1(OpKind::AddPtr, {splat(outs[i]), offs_},
                             Type(DType::pointer_to(k.out_types[i].kind), shape_));
      b_->create(OpKind::Store, {p, v, mask_}, {});
    }
    if (pick(4) == 0)
      update_in_place(k.out_types);
    b_->create(OpKind::Return, {}, {});
    return k;
  }

private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin() { return rng_() & 1; }
  DType random_kind() { return kKinds[pick(static_cast<int>(kKinds.size()))]; }
  Type ti32() { return Type(ScalarKind::I32, shape_); }

  Value* arg(DType t) {
    f_->arg_info.push_back({});
    return b_->add_block_arg(f_->entry(), Type(t));
  }

  Value* splat(Value* s, const std::vector<int64_t>& shape) {
    return b_->create1(OpKind::Splat, {s}, Type(s->type.elem, shape));
  }
  Value* splat(Value* s) { return splat(s, shape_); }
  Value* tensor(Value* v) { return v->type.is_scalar() ? splat(v) : v; }

  // The row-major index of every element: sum over d of arange(shape[d]) * stride[d], each
  // expanded and broadcast to the full shape.
  Value* index_tensor() {
    int rank = static_cast<int>(shape_.size());
    Value* sum = nullptr;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      Value* a = b_->create1(OpKind::Arange, {}, Type(ScalarKind::I32, {shape_[d]}),
                             {{"start", int64_t{0}}, {"end", shape_[d]}});
      std::vector<int64_t> s = {shape_[d]};
      for (int e = d - 1; e >= 0; --e) {
        s.insert(s.begin(), 1);
        a = b_->create1(OpKind::ExpandDims, {a}, Type(ScalarKind::I32, s), {{"axis", int64_t{0}}});
      }
      for (int e = d + 1; e < rank; ++e) {
        s.push_back(1);
        a = b_->create1(OpKind::ExpandDims, {a}, Type(ScalarKind::I32, s),
                        {{"axis", int64_t{static_cast<int64_t>(s.size()) - 1}}});
      }
      if (rank > 1)
        a = b_->create1(OpKind::Broadcast, {a}, ti32());
      if (stride != 1)
        a = b_->create1(OpKind::Mul, {a, b_->constant_int(stride, ti32())}, ti32());
      sum = sum ? b_->create1(OpKind::Add, {sum, a}, ti32()) : a;
      stride *= shape_[d];
    }
    return sum;
  }

  Value* load(Value* ptr, ScalarKind k) {
    Value* p = b_->create1(OpKind::AddPtr, {splat(ptr), offs_}, Type(DType::pointer_to(k), shape_));
    if (coin())
      return b_->create1(OpKind::Load, {p, mask_}, Type(k, shape_));
    Value* other = k == ScalarKind::F32 ? b_->constant_float(-2.5, Type(k, shape_))
                                        : b_->constant_int(7, Type(k, shape_));
    return b_->create1(OpKind::Load, {p, mask_, other}, Type(k, shape_));
  }

  Value* cast(Value* v, DType t) {
    if (v->type.elem == t)
      return v;
    return b_->create1(OpKind::Cast, {v}, v->type.with_elem(t));
  }

  Value* any() { return pool_[pick(static_cast<int>(pool_.size()))]; }
  Value* any_tensor() { return tensor(any()); }

  Value* constant(Type t) {
    if (t.elem.is_float()) {
      static const double vals[] = {0.0, 0.5, -1.25, 3.0, 1e-3, 100.0, -0.0, 7.75};
      return b_->constant_float(vals[pick(8)], t);
    }
    static const int64_t vals[] = {0, 1, -1, 2, 3, 5, 31, 127, -128, 65535, 1 << 30};
    return b_->constant_int(vals[pick(11)], t);
  }

  // The same shape and type as `like`, from the pool or a constant.
  Value* partner(Value* like) {
    for (int tries = 0; tries < 4; ++tries) {
      Value* c = any();
      if (c->type == like->type)
        return c;
    }
    Value* c = any();
    if (c->type.shape == like->type.shape && coin())
      return cast(c, like->type.elem);
    return constant(like->type);
  }

  // Float min and max of a +0 and a -0 may return either zero (as Triton's: LLVM's minnum and
  // maxnum, PTX min/max, std::fmin in the interpreter); portable kernels add +0.0 to the
  // result, which turns -0 into +0 and leaves every other value as it is.
  Value* min_max(OpKind k, Value* a, Value* c, const Type& t) {
    Value* r = b_->create1(k, {a, c}, t);
    if (!portable_ || !t.elem.is_float() || (k != OpKind::Min && k != OpKind::Max))
      return r;
    return b_->create1(OpKind::Add, {r, b_->constant_float(0.0, t)}, t);
  }

  Value* binary(Value* a) {
    DType t = a->type.elem;
    // Portable kernels leave out the last two: rem and pow are approximations on GPUs.
    static const OpKind fl[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div,
                                OpKind::Min, OpKind::Max, OpKind::Rem, OpKind::Pow};
    static const OpKind in[] = {OpKind::Add, OpKind::Sub, OpKind::Mul,   OpKind::Div, OpKind::Rem,
                                OpKind::And, OpKind::Or,  OpKind::Xor,   OpKind::Shl, OpKind::Shr,
                                OpKind::Min, OpKind::Max, OpKind::Umulhi};
    OpKind k = t.is_float() ? fl[pick(portable_ ? 6 : 8)] : in[pick(13)];
    Value* c = partner(a);
    // Integer divisors may be 0: x / 0 == 0 and x % 0 == x on every device. A portable float
    // division, and every f32 one, asks for the correctly rounded quotient (tl::math::div_rn):
    // f32 `/` is div.full.f32 on NVIDIA GPUs, within 2 ulp, as in Triton, and a product with
    // the reciprocal on the CPU where the divisor is loop-invariant (cpu_device_test.cpp
    // measures it).
    if (k == OpKind::Div && t.is_float() && (portable_ || t.kind == ScalarKind::F32))
      return b_->create1(k, {a, c}, a->type, {{attr::rn, int64_t{1}}});
    return min_max(k, a, c, a->type);
  }

  Value* unary(Value* a) {
    if (!a->type.elem.is_float()) {
      static const OpKind k[] = {OpKind::Neg, OpKind::Not, OpKind::Abs};
      return b_->create1(k[pick(3)], {a}, a->type);
    }
    static const OpKind k[] = {OpKind::Neg,  OpKind::Abs,  OpKind::Exp,   OpKind::Exp2, OpKind::Log,
                               OpKind::Log2, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Sin,  OpKind::Cos,
                               OpKind::Tanh, OpKind::Erf,  OpKind::Floor, OpKind::Ceil};
    // Correctly rounded everywhere (IEEE): the rest are approximations on GPUs.
    static const OpKind exact[] = {OpKind::Neg, OpKind::Abs, OpKind::Sqrt, OpKind::Floor,
                                   OpKind::Ceil};
    if (portable_) {
      OpKind kind = exact[pick(5)];
      // sqrt as sqrt_rn: f32 tl::sqrt is sqrt.approx.ftz.f32 on NVIDIA GPUs, as in Triton.
      if (kind == OpKind::Sqrt)
        return b_->create1(kind, {a}, a->type, {{attr::rn, int64_t{1}}});
      return b_->create1(kind, {a}, a->type);
    }
    OpKind kind = k[pick(14)];
    // The transcendental ones ask for the correctly rounded result: the CPU's fast f32 versions
    // are within a few ulp of the interpreter's, not equal (reduce_math_test.cpp measures them).
    if (kind != OpKind::Neg && kind != OpKind::Abs && kind != OpKind::Sqrt &&
        kind != OpKind::Rsqrt && kind != OpKind::Floor && kind != OpKind::Ceil)
      return b_->create1(kind, {a}, a->type, {{attr::rn, int64_t{1}}});
    return b_->create1(kind, {a}, a->type);
  }

  // A combine region: one binary op over scalars of `t`.
  void combine_region(ir::Op& op, const std::vector<DType>& ts) {
    ir::Block& body = op.body();
    std::vector<Value*> a, c;
    for (DType t : ts)
      a.push_back(b_->add_block_arg(body, Type(t)));
    for (DType t : ts)
      c.push_back(b_->add_block_arg(body, Type(t)));
    ir::Block& saved = b_->block();
    b_->set_block(body);
    std::vector<Value*> out;
    for (size_t i = 0; i < ts.size(); ++i) {
      DType t = ts[i];
      // Portable kernels combine floats only by max and min, which do not depend on the order.
      static const OpKind fl[] = {OpKind::Max, OpKind::Min, OpKind::Add, OpKind::Mul};
      static const OpKind in[] = {OpKind::Add, OpKind::Max, OpKind::Min, OpKind::Xor, OpKind::Or};
      OpKind k = t.is_float() ? fl[pick(portable_ ? 2 : 4)] : in[pick(5)];
      out.push_back(min_max(k, a[i], c[i], Type(t)));
    }
    b_->create(OpKind::Yield, out, {});
    b_->set_block(saved);
  }

  Value* reduce(Value* x) {
    int axis = pick(static_cast<int>(shape_.size()));
    bool keep = coin();
    auto rs = shape_;
    if (keep)
      rs[axis] = 1;
    else
      rs.erase(rs.begin() + axis);
    ir::Op& op = b_->create(OpKind::Reduce, {x}, {Type(x->type.elem, rs)},
                            {{"axis", int64_t{axis}}, {"keep_dims", int64_t{keep}}}, 1);
    combine_region(op, {x->type.elem});
    Value* r = op.result();
    if (rs.empty()) {
      if (pick(3) == 0) { // a shape op on a scalar
        r = b_->create1(OpKind::ExpandDims, {r}, Type(x->type.elem, {1}), {{"axis", int64_t{0}}});
        return b_->create1(OpKind::Broadcast, {r}, x->type);
      }
      return coin() ? r : splat(r);
    }
    if (!keep) {
      auto es = rs;
      es.insert(es.begin() + axis, 1);
      r = b_->create1(OpKind::ExpandDims, {r}, Type(x->type.elem, es), {{"axis", int64_t{axis}}});
    }
    return b_->create1(OpKind::Broadcast, {r}, x->type);
  }

  Value* scan(Value* x) {
    int axis = pick(static_cast<int>(shape_.size()));
    ir::Op& op = b_->create(OpKind::Scan, {x}, {x->type},
                            {{"axis", int64_t{axis}}, {"reverse", int64_t{coin()}}}, 1);
    combine_region(op, {x->type.elem});
    return op.result();
  }

  // trans, then reshape back to the shape: exercises strided views and the reshape copy.
  Value* transpose(Value* x) {
    if (shape_.size() != 2)
      return x;
    Value* t = b_->create1(OpKind::Trans, {x}, Type(x->type.elem, {shape_[1], shape_[0]}),
                           {{"order", std::vector<int64_t>{1, 0}}});
    if (shape_[0] == shape_[1] && coin())
      return t;
    return b_->create1(OpKind::Reshape, {t}, x->type);
  }

  // join two tensors, then split; or concatenate, reshape and split.
  Value* join_split(Value* x) {
    Value* y = partner(x);
    auto js = shape_;
    js.push_back(2);
    Value* j;
    if (coin()) {
      j = b_->create1(OpKind::Join, {x, y}, Type(x->type.elem, js));
    } else {
      auto cs = shape_;
      cs[0] *= 2;
      Value* c = b_->create1(OpKind::Cat, {x, y}, Type(x->type.elem, cs));
      j = b_->create1(OpKind::Reshape, {c}, Type(x->type.elem, js));
    }
    ir::Op& s = b_->create(OpKind::Split, {j}, {x->type, x->type});
    return s.results[pick(2)];
  }

  Value* for_loop(int depth) {
    Value* v = any_tensor();
    if (coin()) // a carried tensor that starts as a constant (the CPU backend fills it lazily)
      v = constant(v->type);
    Value* acc = b_->constant_int(pick(5), Type(ScalarKind::I32));
    int64_t lb = pick(4) - 1, ub = lb + pick(5), st = 1 + pick(2);
    if (coin())
      std::swap(lb, ub), st = -st;
    Type it(ScalarKind::I32);
    ir::Op& op = b_->create(
        OpKind::For,
        {b_->constant_int(lb, it), b_->constant_int(ub, it), b_->constant_int(st, it), v, acc},
        {v->type, acc->type}, {}, 1);
    ir::Block& body = op.body();
    Value* iv = b_->add_block_arg(body, it);
    Value* cv = b_->add_block_arg(body, v->type);
    Value* ca = b_->add_block_arg(body, acc->type);
    ir::Block& saved = b_->block();
    b_->set_block(body);
    auto saved_pool = pool_;
    pool_.push_back(cv);
    pool_.push_back(iv);
    Value* nv = cast(splat(iv), v->type.elem);
    nv = min_max(coin() ? OpKind::Add : OpKind::Max, cv, nv, v->type);
    pool_.push_back(nv);
    if (depth < 2 && coin())
      step(depth + 1);
    Value* out = pool_.back()->type == v->type ? pool_.back() : nv;
    Value* na = b_->create1(OpKind::Add, {ca, iv}, acc->type);
    b_->create(OpKind::Yield, {out, na}, {});
    pool_ = saved_pool;
    b_->set_block(saved);
    pool_.push_back(op.results[1]);
    return op.results[0];
  }

  Value* if_op(int depth) {
    Value* x = any_tensor();
    // A scalar condition that differs between programs.
    Value* pid = b_->create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{"axis", int64_t{0}}});
    Value* cond = b_->create1(
        OpKind::Cmp, {pid, b_->constant_int(pick(3), Type(ScalarKind::I32))}, Type(ScalarKind::I1),
        {{"pred", coin() ? tritium::ir::CmpPred::Eq : tritium::ir::CmpPred::Ge}});
    ir::Op& op = b_->create(OpKind::If, {cond}, {x->type}, {}, 2);
    ir::Block& saved = b_->block();
    for (int r = 0; r < 2; ++r) {
      b_->set_block(op.body(r));
      auto saved_pool = pool_;
      Value* y = r == 0 ? unary_or_binary(x) : x;
      if (depth < 2 && coin()) {
        step(depth + 1);
        if (pool_.back()->type == x->type)
          y = pool_.back();
      }
      b_->create(OpKind::Yield, {y}, {});
      pool_ = saved_pool;
    }
    b_->set_block(saved);
    return op.result();
  }

  // while (i < k) { x = x op c; i += 1 }
  Value* while_op() {
    Value* x = any_tensor();
    Type it(ScalarKind::I32);
    Value* i0 = b_->constant_int(0, it);
    ir::Op& op = b_->create(OpKind::While, {i0, x}, {it, x->type}, {}, 2);
    ir::Block& saved = b_->block();
    ir::Block& before = op.body(0);
    Value* bi = b_->add_block_arg(before, it);
    Value* bx = b_->add_block_arg(before, x->type);
    b_->set_block(before);
    Value* go = b_->create1(OpKind::Cmp, {bi, b_->constant_int(pick(4), it)}, Type(ScalarKind::I1),
                            {{"pred", tritium::ir::CmpPred::Lt}});
    b_->create(OpKind::Condition, {go, bi, bx}, {});
    ir::Block& after = op.body(1);
    Value* ai = b_->add_block_arg(after, it);
    Value* ax = b_->add_block_arg(after, x->type);
    b_->set_block(after);
    auto saved_pool = pool_;
    pool_ = {ax};
    Value* nx = unary_or_binary(ax);
    pool_ = saved_pool;
    Value* ni = b_->create1(OpKind::Add, {ai, b_->constant_int(1, it)}, it);
    b_->create(OpKind::Yield, {ni, nx}, {});
    b_->set_block(saved);
    return op.results[1];
  }

  Value* atomic(Value* x) {
    // Integer atomics on a few shared words: the final memory does not depend on the order.
    // One kind of atomic per kernel: mixed kinds from parallel programs do not commute.
    using tritium::ir::AtomicOp;
    static const AtomicOp ops[] = {AtomicOp::Add, AtomicOp::Max, AtomicOp::Min,
                                   AtomicOp::And, AtomicOp::Or,  AtomicOp::Xor};
    if (atomic_op_ < 0)
      atomic_op_ = pick(6);
    Value* v = cast(x, ScalarKind::I32);
    Value* slot = b_->create1(OpKind::And, {offs_, b_->constant_int(3, ti32())}, ti32());
    Value* p = b_->create1(OpKind::AddPtr, {splat(atom_), slot},
                           Type(DType::pointer_to(ScalarKind::I32), shape_));
    b_->create(OpKind::AtomicRmw, {p, v, mask_}, {ti32()},
               {{"op", ops[atomic_op_]},
                {"sem", tritium::ir::MemSem::AcqRel},
                {"scope", tritium::ir::MemScope::Gpu}});
    return x;
  }

  // dot over square tiles (every pool tensor has the kernel's shape), in one of the input /
  // accumulator pairings tl::dot supports.
  Value* dot(Value* x) {
    size_t r = shape_.size(); // 2-D, or 3-D batched
    if (r < 2 || shape_[r - 2] != shape_[r - 1])
      return binary(x);
    static const std::pair<ScalarKind, ScalarKind> kinds[] = {
        {ScalarKind::F32, ScalarKind::F32},   {ScalarKind::F16, ScalarKind::F32},
        {ScalarKind::BF16, ScalarKind::F32},  {ScalarKind::I8, ScalarKind::I32},
        {ScalarKind::F64, ScalarKind::F64},   {ScalarKind::F16, ScalarKind::F16},
        {ScalarKind::F8E4NV, ScalarKind::F32}};
    auto [in, acc] = kinds[pick(static_cast<int>(std::size(kinds)))];
    Value* a = cast(dot_operand(x, acc), in);
    Value* c = cast(dot_operand(any_tensor(), acc), in);
    Value* z = cast(dot_operand(any_tensor(), acc), acc);
    static const tritium::ir::InputPrecision precision[] = {tritium::ir::InputPrecision::Ieee,
                                                            tritium::ir::InputPrecision::Tf32};
    return b_->create1(OpKind::Dot, {a, c, z}, z->type, {{"input_precision", precision[pick(2)]}});
  }

  // Rank-0 arithmetic: scalars are SSA values, not loops.
  Value* scalar_op() {
    std::vector<Value*> scalars;
    for (Value* v : pool_)
      if (v->type.is_scalar())
        scalars.push_back(v);
    Value* s = scalars.empty() ? n_ : scalars[pick(static_cast<int>(scalars.size()))];
    s = b_->create1(OpKind::Cast, {s}, Type(random_kind()));
    return coin() ? binary(s) : unary(s);
  }

  // A masked scalar load through a scalar pointer.
  Value* scalar_load() {
    Value* pid = b_->create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{"axis", int64_t{0}}});
    Value* p = b_->create1(OpKind::AddPtr, {in_i_, pid}, in_i_->type);
    Value* m = b_->create1(OpKind::Cmp, {pid, n_}, Type(ScalarKind::I1),
                           {{"pred", tritium::ir::CmpPred::Lt}});
    return b_->create1(OpKind::Load, {p, m}, Type(ScalarKind::I32));
  }

  // Stores to an output, then loads it back in reversed order within the program: each lane
  // reads what another lane stored. As in Triton, lanes of one program are ordered through
  // memory only by a barrier (on a GPU they are threads), so barriers fence the exchange;
  // without them the CPU backend's fused per-lane loops may interleave loads and stores.
  Value* store_reload(Value* x) {
    int k = pick(3);
    ir::DType t = outs_[k]->type.elem.element_of_pointer();
    Type pt(outs_[k]->type.elem, shape_);
    Value* p = b_->create1(OpKind::AddPtr, {splat(outs_[k]), offs_}, pt);
    b_->create(OpKind::Barrier, {}, {});
    b_->create(OpKind::Store, {p, cast(x, t), mask_}, {});
    b_->create(OpKind::Barrier, {}, {});
    int64_t numel = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
    // offs' = 2 * (pid * numel) + numel - 1 - offs  (the same program's block, reversed)
    Value* rev = b_->create1(OpKind::Sub, {b_->constant_int(numel - 1, ti32()), offs_}, ti32());
    Value* pid = b_->create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{"axis", int64_t{0}}});
    Value* base =
        b_->create1(OpKind::Mul, {pid, b_->constant_int(2 * numel, Type(ScalarKind::I32))},
                    Type(ScalarKind::I32));
    rev = b_->create1(OpKind::Add, {rev, splat(base)}, ti32());
    Value* rp = b_->create1(OpKind::AddPtr, {splat(outs_[k]), rev}, pt);
    Value* in_range = b_->create1(OpKind::Cmp, {rev, splat(n_)}, Type(ScalarKind::I1, shape_),
                                  {{"pred", tritium::ir::CmpPred::Lt}});
    Value* r = b_->create1(OpKind::Load, {rp, in_range}, Type(t, shape_));
    b_->create(OpKind::Barrier, {}, {});
    return r;
  }

  // out[i] = out[i] + c, read and written by the same lanes. On a GPU the elements of a small
  // tensor are held by several threads (replicas); if every replica stored, one that loaded
  // after another's store would add c twice.
  void update_in_place(const std::vector<DType>& types) {
    int i = pick(3);
    DType t = types[i];
    Type pt(outs_[i]->type.elem, shape_), vt(t, shape_);
    Value* p = b_->create1(OpKind::AddPtr, {splat(outs_[i]), offs_}, pt);
    b_->create(OpKind::Barrier, {}, {});
    Value* v = b_->create1(OpKind::Load, {p, mask_}, vt);
    Value* c = t.is_bool()    ? nullptr
               : t.is_float() ? b_->constant_float(0.5, vt)
                              : b_->constant_int(3, vt);
    v = c ? b_->create1(OpKind::Add, {v, c}, vt) : b_->create1(OpKind::Not, {v}, vt);
    b_->create(OpKind::Store, {p, v, mask_}, {});
  }

  Value* unary_or_binary(Value* x) { return coin() ? binary(x) : unary_safe(x); }
  Value* unary_safe(Value* x) { return unary(x); }

  void step(int depth) {
    Value* x = any_tensor();
    Value* r = nullptr;
    switch (pick(21)) {
    case 0:
    case 1:
    case 2:
      r = binary(x);
      break;
    case 3:
      r = unary(x);
      break;
    case 4:
      r = cast(x, random_kind());
      break;
    case 5: {
      Value* y = partner(x);
      r = b_->create1(OpKind::Cmp, {x, y}, x->type.with_elem(ScalarKind::I1),
                      {{"pred", static_cast<tritium::ir::CmpPred>(pick(6))}});
      break;
    }
    case 6: {
      Value* c = cast(any_tensor(), ScalarKind::I1);
      r = b_->create1(OpKind::Select, {c, x, partner(x)}, x->type);
      break;
    }
    case 7:
      if (x->type.elem.is_float())
        r = b_->create1(OpKind::Fma, {x, partner(x), partner(x)}, x->type);
      else
        r = binary(x);
      break;
    case 8: {
      static const ScalarKind same32[] = {ScalarKind::I32, ScalarKind::U32, ScalarKind::F32};
      static const ScalarKind same16[] = {ScalarKind::I16, ScalarKind::F16, ScalarKind::BF16};
      static const ScalarKind same64[] = {ScalarKind::I64, ScalarKind::U64, ScalarKind::F64};
      int bits = x->type.elem.is_bool() ? 1 : x->type.elem.bits();
      const ScalarKind* set = bits == 32   ? same32
                              : bits == 16 ? same16
                              : bits == 64 ? same64
                                           : nullptr;
      if (set && x->type.elem.is_float()) {
        // NaN payloads and signs are unspecified (libm and vector libm differ); a bitcast would
        // expose them as integers, so NaNs become 0 first.
        Value* nan = b_->create1(OpKind::Cmp, {x, x}, x->type.with_elem(ScalarKind::I1),
                                 {{"pred", tritium::ir::CmpPred::Ne}});
        x = b_->create1(OpKind::Select, {nan, b_->constant_float(0.0, x->type), x}, x->type);
      }
      r = set ? b_->create1(OpKind::Bitcast, {x}, x->type.with_elem(set[pick(3)])) : unary(x);
      break;
    }
    case 9:
      r = reduce(x);
      break;
    case 10:
      r = scan(x);
      break;
    case 11:
      r = transpose(x);
      break;
    case 12:
      r = join_split(x);
      break;
    case 13:
      r = depth < 2 ? for_loop(depth) : binary(x);
      break;
    case 14:
      r = depth < 2 ? if_op(depth) : binary(x);
      break;
    case 15:
      r = depth < 2 ? while_op() : unary(x);
      break;
    case 16:
      r = depth == 0 ? atomic(x) : binary(x);
      break;
    case 17:
      r = dot(x);
      break;
    case 18:
      r = scalar_op();
      break;
    case 19:
      r = scalar_load();
      break;
    case 20:
      r = depth == 0 ? store_reload(x) : binary(x);
      break;
    }
    pool_.push_back(r);
  }

  // A dot operand. In portable kernels floating-point operands are quantized (NaN -> 0, then
  // multiples of 1/4 in [-8, 8], or of 1/2 in [-2, 2] for an f16 accumulator), so that every
  // product and partial sum is exact and the order of accumulation cannot show.
  Value* dot_operand(Value* v, ScalarKind acc) {
    if (!portable_ || acc == ScalarKind::I32)
      return v;
    Type t = v->type.with_elem(ScalarKind::F32);
    v = cast(v, ScalarKind::F32);
    Value* nan = b_->create1(OpKind::Cmp, {v, v}, t.with_elem(ScalarKind::I1),
                             {{"pred", tritium::ir::CmpPred::Ne}});
    v = b_->create1(OpKind::Select, {nan, b_->constant_float(0.0, t), v}, t);
    double scale = acc == ScalarKind::F16 ? 2.0 : 4.0, bound = acc == ScalarKind::F16 ? 2.0 : 8.0;
    v = b_->create1(OpKind::Max, {v, b_->constant_float(-bound, t)}, t);
    v = b_->create1(OpKind::Min, {v, b_->constant_float(bound, t)}, t);
    v = b_->create1(OpKind::Mul, {v, b_->constant_float(scale, t)}, t);
    v = b_->create1(OpKind::Floor, {v}, t);
    return b_->create1(OpKind::Div, {v, b_->constant_float(scale, t)}, t);
  }

  std::mt19937_64 rng_;
  bool portable_ = false;
  ir::Function* f_ = nullptr;
  std::unique_ptr<ir::Builder> b_;
  std::vector<int64_t> shape_;
  std::vector<Value*> pool_;
  int atomic_op_ = -1;
  std::vector<Value*> outs_;
  Value* in_i_ = nullptr;
  Value *offs_ = nullptr, *mask_ = nullptr, *n_ = nullptr, *atom_ = nullptr;
};

} // namespace

RandomKernel random_kernel(uint64_t seed, bool portable) {
  return Gen(seed, portable).run();
}

} // namespace tritium::testing
