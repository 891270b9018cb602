// The functions of Triton's language (tl.*), spelled tl::* in C++.
#pragma once

#include <tritium/error.hpp>
#include <tritium/lang/tensor.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tritium::lang {

using detail::Loc;
using Shape = std::vector<int64_t>;

// --- grid and index ----------------------------------------------------------------------
inline i32 program_id(int axis, Loc loc = Loc::current()) {
  return i32(detail::program_id(axis, loc));
}
inline i32 num_programs(int axis, Loc loc = Loc::current()) {
  return i32(detail::num_programs(axis, loc));
}
// [start, end): a power-of-two number of consecutive i32 values.
inline i32 arange(int64_t start, int64_t end, Loc loc = Loc::current()) {
  return i32(detail::arange(start, end, loc));
}

// Ceiling division, on the host and on traced integers.
template <std::integral A, std::integral B>
constexpr auto cdiv(A a, B b) {
  if (b == 0)
    throw Error("tritium::cdiv(" + std::to_string(a) + ", 0): division by zero");
  return (a + b - 1) / b;
}
template <IntElement E>
basic_tensor<E> cdiv(Arg<E> a, Arg<E> b) {
  ir::Value* one = detail::constant_int(1, dtype_of<E>(), {}, a.loc);
  ir::Value* num = detail::arith(ir::OpKind::Add, a.v, b.v, dtype_of<E>(), a.loc);
  num = detail::arith(ir::OpKind::Sub, num, one, dtype_of<E>(), a.loc);
  return basic_tensor<E>(detail::arith(ir::OpKind::Div, num, b.v, dtype_of<E>(), a.loc));
}
template <IntElement E>
basic_tensor<E> cdiv(const basic_tensor<E>& a, std::type_identity_t<Arg<E>> b) {
  return cdiv<E>(Arg<E>(a, b.loc), b);
}

// Triton's tl.swizzle2d: maps row-major program indices (i, j) of a size_i x size_j grid to
// column-major order within groups of size_g rows, so that neighbouring programs reuse the
// same rows of A (the "grouped ordering" of Triton's matmul tutorial). Returns (new_i, new_j).
inline std::pair<i32, i32> swizzle2d(const i32& i, const i32& j,
                                     std::type_identity_t<Arg<int32_t>> size_i,
                                     std::type_identity_t<Arg<int32_t>> size_j,
                                     std::type_identity_t<Arg<int32_t>> size_g) {
  Loc loc = size_i.loc;
  i32 si(size_i.v), sj(size_j.v), sg(size_g.v);
  i32 ij = i * sj + j;
  i32 size_gj = sg * sj;
  i32 group_id = ij / size_gj;
  i32 off_i = group_id * sg;
  i32 rows = i32(
      detail::arith(ir::OpKind::Min, (si - off_i).use(loc), sg.use(loc), dtype_of<int32_t>(), loc));
  ij = ij % size_gj;
  return {off_i + ij % rows, ij / rows};
}

// --- creation and conversion -------------------------------------------------------------
// An integer value keeps every bit (through a double, 2^53 + 1 became 2^53).
template <Element E, Literal V = double>
basic_tensor<E> full(Shape shape, V value, Loc loc = Loc::current()) {
  if constexpr (std::integral<V>)
    return basic_tensor<E>(
        detail::constant_int(static_cast<int64_t>(value), dtype_of<E>(), std::move(shape), loc));
  else
    return basic_tensor<E>(
        detail::constant_float(static_cast<double>(value), dtype_of<E>(), std::move(shape), loc));
}
template <Element E>
basic_tensor<E> zeros(Shape shape, Loc loc = Loc::current()) {
  return full<E>(std::move(shape), 0.0, loc);
}
template <Element E>
basic_tensor<E> zeros_like(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return full<E>(x.use(loc)->type.shape, 0.0, loc);
}
// zeros_like<T>(x): x's shape, element type T (Triton spells it tl.zeros(x.shape, T)).
template <class T, Element E>
basic_tensor<element_of_t<T>> zeros_like(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return full<element_of_t<T>>(x.use(loc)->type.shape, 0.0, loc);
}
template <Element E, Literal V = double>
basic_tensor<E> full_like(const basic_tensor<E>& x, V value, Loc loc = Loc::current()) {
  return full<E>(x.use(loc)->type.shape, value, loc);
}
template <class T, Element E>
basic_tensor<element_of_t<T>> full_like(const basic_tensor<E>& x, double value,
                                        Loc loc = Loc::current()) {
  return full<element_of_t<T>>(x.use(loc)->type.shape, value, loc);
}
// A scalar of type E (Triton's plain Python numbers given a dtype).
template <Element E>
basic_tensor<E> scalar(double value, Loc loc = Loc::current()) {
  return full<E>({}, value, loc);
}
template <class T, Element E>
basic_tensor<element_of_t<T>> cast(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return basic_tensor<element_of_t<T>>(detail::cast(x.use(loc), dtype_of<element_of_t<T>>(), loc));
}
template <class T, Element E>
basic_tensor<element_of_t<T>> bitcast(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return basic_tensor<element_of_t<T>>(
      detail::bitcast(x.use(loc), dtype_of<element_of_t<T>>(), loc));
}

// --- shape -----------------------------------------------------------------------------
template <Element E>
basic_tensor<E> expand_dims(const basic_tensor<E>& x, int axis, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::expand_dims(x.use(loc), axis, loc));
}
template <Element E>
basic_tensor<E> broadcast_to(const basic_tensor<E>& x, Shape shape, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::broadcast_to(x.use(loc), shape, loc));
}
template <Element E>
basic_tensor<E> reshape(const basic_tensor<E>& x, Shape shape, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::reshape(x.use(loc), std::move(shape), loc));
}
template <Element E>
basic_tensor<E> view(const basic_tensor<E>& x, Shape shape, Loc loc = Loc::current()) {
  return reshape(x, std::move(shape), loc);
}
template <Element E>
basic_tensor<E> ravel(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return reshape(x, {x.use(loc)->type.numel()}, loc);
}
template <Element E>
basic_tensor<E> permute(const basic_tensor<E>& x, Shape order, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::trans(x.use(loc), std::move(order), loc));
}
// Reverses the dimensions (2-D: the transpose), or applies `order` when given.
template <Element E>
basic_tensor<E> trans(const basic_tensor<E>& x, Shape order = {}, Loc loc = Loc::current()) {
  if (order.empty())
    for (int i = x.use(loc)->type.rank() - 1; i >= 0; --i)
      order.push_back(i);
  return basic_tensor<E>(detail::trans(x.use(loc), std::move(order), loc));
}
template <Element E>
basic_tensor<E> join(const basic_tensor<E>& a, const basic_tensor<E>& b, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::join(a.use(loc), b.use(loc), loc));
}
template <Element E>
std::pair<basic_tensor<E>, basic_tensor<E>> split(const basic_tensor<E>& x,
                                                  Loc loc = Loc::current()) {
  auto [a, b] = detail::split(x.use(loc), loc);
  return {basic_tensor<E>(a), basic_tensor<E>(b)};
}
// Concatenation along dimension 0 (Triton's cat with can_reorder semantics kept in order).
template <Element E>
basic_tensor<E> cat(const basic_tensor<E>& a, const basic_tensor<E>& b, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::cat(a.use(loc), b.use(loc), loc));
}
// Interleaves a and b along their last dimension: [a0, b0, a1, b1, ...] (join, then reshape).
template <Element E>
basic_tensor<E> interleave(const basic_tensor<E>& a, const basic_tensor<E>& b,
                           Loc loc = Loc::current()) {
  ir::Value* j = detail::join(a.use(loc), b.use(loc), loc);
  Shape s = j->type.shape;
  s.pop_back();
  if (s.empty())
    detail::fail(loc, "interleave needs tensors of rank 1 or more");
  s.back() *= 2;
  return basic_tensor<E>(detail::reshape(j, s, loc));
}
// Reverses x along `axis` (default: the last). Built from reshape, trans, split and join, so
// every backend runs it without an op of its own: reversing a power-of-two index is
// complementing each of its bits, and complementing one bit swaps the halves of a size-2
// dimension.
template <Element E>
basic_tensor<E> flip(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt,
                     Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::flip(x.use(loc), axis ? *axis : -1, loc));
}

// --- elementwise -------------------------------------------------------------------------
// The element type of an elementwise function of a and b (tensors or literals): Triton's
// promotion, a literal taking the tensor's type where it fits.
template <class A, class B>
using where_elem_t = typename detail::mixed_elem<A, B>::type;

// cond ? a : b, elementwise, broadcasting all three.
template <class A, class B>
auto where(const i1& cond, const A& a, const B& b, Loc loc = Loc::current()) {
  using R = where_elem_t<A, B>;
  return basic_tensor<R>(detail::select(cond.use(loc), detail::operand_value<R>(a, loc),
                                        detail::operand_value<R>(b, loc), dtype_of<R>(), loc));
}

#define TRITIUM_BINARY_FN(NAME, KIND)                                                              \
  template <class A, class B>                                                                      \
  auto NAME(const A& a, const B& b, Loc loc = Loc::current()) {                                    \
    using R = where_elem_t<A, B>;                                                                  \
    return basic_tensor<R>(detail::arith(ir::OpKind::KIND, detail::operand_value<R>(a, loc),       \
                                         detail::operand_value<R>(b, loc), dtype_of<R>(), loc));   \
  }
TRITIUM_BINARY_FN(umulhi, Umulhi)
TRITIUM_BINARY_FN(pow, Pow)
#undef TRITIUM_BINARY_FN

// Triton's tl.PropagateNan: NONE returns the non-NaN operand when one is NaN (IEEE
// minNum/maxNum); ALL returns NaN when either operand is NaN.
enum class PropagateNan { NONE, ALL };

#define TRITIUM_MINMAX_FN(NAME, KIND)                                                              \
  template <class A, class B>                                                                      \
  auto NAME(const A& a, const B& b, PropagateNan nan = PropagateNan::NONE,                         \
            Loc loc = Loc::current()) {                                                            \
    using R = where_elem_t<A, B>;                                                                  \
    ir::Value* x = detail::operand_value<R>(a, loc);                                               \
    ir::Value* y = detail::operand_value<R>(b, loc);                                               \
    ir::Value* r = detail::arith(ir::OpKind::KIND, x, y, dtype_of<R>(), loc);                      \
    if constexpr (dtype_traits<R>::is_float) {                                                     \
      if (nan == PropagateNan::ALL) {                                                              \
        /* x + y is NaN exactly when either is; x != x tests for NaN. */                           \
        ir::Value* s = detail::arith(ir::OpKind::Add, x, y, dtype_of<R>(), loc);                   \
        r = detail::select(detail::compare(ir::CmpPred::Ne, s, s, dtype_of<R>(), loc), s, r,       \
                           dtype_of<R>(), loc);                                                    \
      }                                                                                            \
    }                                                                                              \
    return basic_tensor<R>(r);                                                                     \
  }
TRITIUM_MINMAX_FN(minimum, Min)
TRITIUM_MINMAX_FN(maximum, Max)
#undef TRITIUM_MINMAX_FN

// Floating-point division (Triton's `/` and fdiv); integer operands are converted to f32. As
// in Triton, an f32 quotient may be approximate on GPUs (NVIDIA: div.full.f32, within 2 ulp),
// and on the CPU (x times 1 / d where d is invariant in the loop, within 2 ulp for |d| in
// [2^-126, 2^126]); div_rn is always correctly rounded.
template <class A, class B>
auto fdiv(const A& a, const B& b, Loc loc = Loc::current()) {
  using P = where_elem_t<A, B>;
  using R = std::conditional_t<dtype_traits<P>::is_float, P, float>;
  return basic_tensor<R>(detail::arith(ir::OpKind::Div, detail::operand_value<R>(a, loc),
                                       detail::operand_value<R>(b, loc), dtype_of<R>(), loc));
}
template <class A, class B>
auto div_rn(const A& a, const B& b, Loc loc = Loc::current()) {
  auto q = fdiv(a, b, loc);
  if (ir::Op* d = q.use(loc)->def; d && d->kind == ir::OpKind::Div)
    d->attrs[attr::rn] = int64_t{1}; // correctly rounded on every device
  return q;
}

template <FloatElement E>
basic_tensor<E> fma(Arg<E> a, Arg<E> b, Arg<E> c) {
  return basic_tensor<E>(detail::fma(a.v, b.v, c.v, dtype_of<E>(), a.loc));
}
template <FloatElement E>
basic_tensor<E> fma(const basic_tensor<E>& a, std::type_identity_t<Arg<E>> b,
                    std::type_identity_t<Arg<E>> c) {
  return fma<E>(Arg<E>(a, b.loc), b, c);
}

template <Element E>
basic_tensor<E> clamp(const basic_tensor<E>& x, std::type_identity_t<Arg<E>> lo,
                      std::type_identity_t<Arg<E>> hi) {
  ir::Value* v = detail::arith(ir::OpKind::Max, x.use(lo.loc), lo.v, dtype_of<E>(), lo.loc);
  return basic_tensor<E>(detail::arith(ir::OpKind::Min, v, hi.v, dtype_of<E>(), lo.loc));
}

#define TRITIUM_FLOAT_UNARY(NAME, KIND)                                                            \
  template <FloatElement E>                                                                        \
  basic_tensor<E> NAME(const basic_tensor<E>& x, Loc loc = Loc::current()) {                       \
    return basic_tensor<E>(detail::unary(ir::OpKind::KIND, x.use(loc), loc));                      \
  }
TRITIUM_FLOAT_UNARY(exp, Exp)
TRITIUM_FLOAT_UNARY(exp2, Exp2)
TRITIUM_FLOAT_UNARY(log1p, Log1p)
TRITIUM_FLOAT_UNARY(log, Log)
TRITIUM_FLOAT_UNARY(log2, Log2)
// As Triton's: sqrt may be approximate on GPUs for f32 (NVIDIA: sqrt.approx.ftz.f32, within
// about 1 ulp, subnormals flushed); sqrt_rn is always correctly rounded.
TRITIUM_FLOAT_UNARY(sqrt, Sqrt)
TRITIUM_FLOAT_UNARY(rsqrt, Rsqrt)
TRITIUM_FLOAT_UNARY(sin, Sin)
TRITIUM_FLOAT_UNARY(cos, Cos)
TRITIUM_FLOAT_UNARY(tanh, Tanh)
TRITIUM_FLOAT_UNARY(erf, Erf)
TRITIUM_FLOAT_UNARY(floor, Floor)
template <FloatElement E>
basic_tensor<E> sqrt_rn(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  auto r = sqrt(x, loc);
  if (ir::Op* d = r.use(loc)->def; d && d->kind == ir::OpKind::Sqrt)
    d->attrs[attr::rn] = int64_t{1}; // correctly rounded on every device
  return r;
}
TRITIUM_FLOAT_UNARY(ceil, Ceil)
#undef TRITIUM_FLOAT_UNARY

// A function of the C math library the language has no op for, by its C name (Triton's
// libdevice functions and extern_elementwise): tl::extern_elementwise("asin", x),
// tl::extern_elementwise("atan2", y, x). Every device runs it from its own library (the host's
// libm, CUDA's libdevice, ROCm's ocml); ir/extern_math.hpp lists the names.
template <FloatElement E>
basic_tensor<E> extern_elementwise(std::string_view name, const basic_tensor<E>& x,
                                   Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::extern_elementwise(name, {x.use(loc)}, loc));
}
template <class A, class B>
auto extern_elementwise(std::string_view name, const A& a, const B& b, Loc loc = Loc::current()) {
  using R = where_elem_t<A, B>;
  static_assert(dtype_traits<R>::is_float,
                "extern_elementwise: the C math functions take floating-point operands");
  return basic_tensor<R>(detail::extern_elementwise(
      name, {detail::operand_value<R>(a, loc), detail::operand_value<R>(b, loc)}, loc));
}

// Triton's libdevice names (triton.language.extra.libdevice) for the same functions.
namespace libdevice {
#define TRITIUM_LIBDEVICE_1(NAME)                                                                  \
  template <FloatElement E>                                                                        \
  basic_tensor<E> NAME(const basic_tensor<E>& x, Loc loc = Loc::current()) {                       \
    return extern_elementwise(#NAME, x, loc);                                                      \
  }
#define TRITIUM_LIBDEVICE_2(NAME)                                                                  \
  template <class A, class B>                                                                      \
  auto NAME(const A& a, const B& b, Loc loc = Loc::current()) {                                    \
    return extern_elementwise(#NAME, a, b, loc);                                                   \
  }
TRITIUM_LIBDEVICE_1(acos)
TRITIUM_LIBDEVICE_1(acosh)
TRITIUM_LIBDEVICE_1(asin)
TRITIUM_LIBDEVICE_1(asinh)
TRITIUM_LIBDEVICE_1(atan)
TRITIUM_LIBDEVICE_1(atanh)
TRITIUM_LIBDEVICE_1(cbrt)
TRITIUM_LIBDEVICE_1(cosh)
TRITIUM_LIBDEVICE_1(erfc)
TRITIUM_LIBDEVICE_1(exp10)
TRITIUM_LIBDEVICE_1(expm1)
TRITIUM_LIBDEVICE_1(j0)
TRITIUM_LIBDEVICE_1(j1)
TRITIUM_LIBDEVICE_1(lgamma)
TRITIUM_LIBDEVICE_1(log10)
TRITIUM_LIBDEVICE_1(log1p)
TRITIUM_LIBDEVICE_1(logb)
TRITIUM_LIBDEVICE_1(nearbyint)
TRITIUM_LIBDEVICE_1(rint)
TRITIUM_LIBDEVICE_1(round)
TRITIUM_LIBDEVICE_1(sinh)
TRITIUM_LIBDEVICE_1(tan)
TRITIUM_LIBDEVICE_1(tgamma)
TRITIUM_LIBDEVICE_1(trunc)
TRITIUM_LIBDEVICE_1(y0)
TRITIUM_LIBDEVICE_1(y1)
TRITIUM_LIBDEVICE_2(atan2)
TRITIUM_LIBDEVICE_2(copysign)
TRITIUM_LIBDEVICE_2(fdim)
TRITIUM_LIBDEVICE_2(fmod)
TRITIUM_LIBDEVICE_2(hypot)
TRITIUM_LIBDEVICE_2(nextafter)
TRITIUM_LIBDEVICE_2(remainder)
#undef TRITIUM_LIBDEVICE_1
#undef TRITIUM_LIBDEVICE_2
} // namespace libdevice

template <ScalarElement E>
basic_tensor<E> abs(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::unary(ir::OpKind::Abs, x.use(loc), loc));
}
// 1 / (1 + exp(-x)), computed in the input's type.
template <FloatElement E>
basic_tensor<E> sigmoid(const basic_tensor<E>& x, Loc loc = Loc::current()) {
  ir::Value* v = x.use(loc);
  ir::Value* one = detail::constant_float(1.0, dtype_of<E>(), {}, loc);
  ir::Value* e = detail::unary(ir::OpKind::Exp, detail::unary(ir::OpKind::Neg, v, loc), loc);
  ir::Value* d = detail::arith(ir::OpKind::Add, one, e, dtype_of<E>(), loc);
  return basic_tensor<E>(detail::arith(ir::OpKind::Div, one, d, dtype_of<E>(), loc));
}

// exp(x - max) / sum(exp(x - max)) along `axis` (Triton's default: 0), computed in x's type.
// With keep_dims false the result keeps x's shape anyway: softmax is elementwise in shape.
template <FloatElement E>
basic_tensor<E> softmax(const basic_tensor<E>& x, int axis = 0, Loc loc = Loc::current()) {
  ir::Value* v = x.use(loc);
  int rank = v->type.rank();
  int a = axis < 0 ? axis + rank : axis;
  // Reduce, then put the reduced axis back as size 1 so that it broadcasts against x.
  auto reduce_keep = [&](ir::Value* t, ir::OpKind k) {
    return detail::expand_dims(detail::reduce_simple(t, axis, false, k, loc), a, loc);
  };
  ir::Value* z =
      detail::arith(ir::OpKind::Sub, v, reduce_keep(v, ir::OpKind::Max), dtype_of<E>(), loc);
  ir::Value* num = detail::unary(ir::OpKind::Exp, z, loc);
  return basic_tensor<E>(
      detail::arith(ir::OpKind::Div, num, reduce_keep(num, ir::OpKind::Add), dtype_of<E>(), loc));
}

// --- memory ------------------------------------------------------------------------------
using LoadOptions = detail::LoadOptions;
using StoreOptions = detail::LoadOptions; // cache_modifier and eviction_policy apply to stores

template <Element E>
basic_tensor<E> load(const basic_tensor<pointer<E>>& p, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::load(p.use(loc), nullptr, nullptr, {}, loc));
}
// Options by name: tl::load(p, {.cache_modifier = ".cg", .eviction_policy = "evict_last"}).
template <Element E>
basic_tensor<E> load(const basic_tensor<pointer<E>>& p, LoadOptions opts,
                     Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::load(p.use(loc), nullptr, nullptr, opts, loc));
}
template <Element E>
basic_tensor<E> load(const basic_tensor<pointer<E>>& p, const i1& mask, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::load(p.use(loc), mask.use(loc), nullptr, {}, loc));
}
// Lanes where `mask` is false read nothing and take `other`.
template <Element E>
basic_tensor<E> load(const basic_tensor<pointer<E>>& p, const i1& mask,
                     std::type_identity_t<Arg<E>> other, LoadOptions opts = {}) {
  return basic_tensor<E>(
      detail::load(p.use(other.loc), mask.use(other.loc), other.v, opts, other.loc));
}

template <Element E>
void store(const basic_tensor<pointer<E>>& p, std::type_identity_t<Arg<E>> value,
           LoadOptions opts = {}) {
  detail::store(p.use(value.loc), value.v, nullptr, opts, value.loc);
}
// Lanes where `mask` is false write nothing.
template <Element E>
void store(const basic_tensor<pointer<E>>& p, std::type_identity_t<Arg<E>> value, const i1& mask,
           LoadOptions opts = {}) {
  detail::store(p.use(value.loc), value.v, mask.use(value.loc), opts, value.loc);
}
// A value of another element type is converted to the pointee type, as Triton does.
template <Element E, Element V>
requires(!std::same_as<E, V>) void store(const basic_tensor<pointer<E>>& p,
                                         const basic_tensor<V>& value, StoreOptions opts = {},
                                         Loc loc = Loc::current()) {
  detail::store(p.use(loc), detail::cast(value.use(loc), dtype_of<E>(), loc), nullptr, opts, loc);
}
template <Element E, Element V>
requires(!std::same_as<E, V>) void store(const basic_tensor<pointer<E>>& p,
                                         const basic_tensor<V>& value, const i1& mask,
                                         LoadOptions opts = {}, Loc loc = Loc::current()) {
  detail::store(p.use(loc), detail::cast(value.use(loc), dtype_of<E>(), loc), mask.use(loc), opts,
                loc);
}

#define TRITIUM_ATOMIC(NAME, OP)                                                                   \
  template <Element E>                                                                             \
  basic_tensor<E> NAME(const basic_tensor<pointer<E>>& p, std::type_identity_t<Arg<E>> v,          \
                       std::string_view sem = "acq_rel", std::string_view scope = "gpu") {         \
    return basic_tensor<E>(detail::atomic_rmw(OP, p.use(v.loc), v.v, nullptr, sem, scope, v.loc)); \
  }                                                                                                \
  template <Element E>                                                                             \
  basic_tensor<E> NAME(const basic_tensor<pointer<E>>& p, std::type_identity_t<Arg<E>> v,          \
                       const i1& mask, std::string_view sem = "acq_rel",                           \
                       std::string_view scope = "gpu") {                                           \
    return basic_tensor<E>(                                                                        \
        detail::atomic_rmw(OP, p.use(v.loc), v.v, mask.use(v.loc), sem, scope, v.loc));            \
  }
TRITIUM_ATOMIC(atomic_add, ir::AtomicOp::Add)
TRITIUM_ATOMIC(atomic_max, ir::AtomicOp::Max)
TRITIUM_ATOMIC(atomic_min, ir::AtomicOp::Min)
TRITIUM_ATOMIC(atomic_and, ir::AtomicOp::And)
TRITIUM_ATOMIC(atomic_or, ir::AtomicOp::Or)
TRITIUM_ATOMIC(atomic_xor, ir::AtomicOp::Xor)
TRITIUM_ATOMIC(atomic_xchg, ir::AtomicOp::Xchg)
#undef TRITIUM_ATOMIC

template <Element E>
basic_tensor<E> atomic_cas(const basic_tensor<pointer<E>>& p, std::type_identity_t<Arg<E>> cmp,
                           std::type_identity_t<Arg<E>> v, std::string_view sem = "acq_rel",
                           std::string_view scope = "gpu") {
  return basic_tensor<E>(detail::atomic_cas(p.use(cmp.loc), cmp.v, v.v, sem, scope, cmp.loc));
}

// --- reductions and scans -----------------------------------------------------------------
namespace detail {
template <Element E>
ir::Value* reduce_all_or_axis(const basic_tensor<E>& x, std::optional<int> axis, bool keep_dims,
                              ir::OpKind k, const Loc& loc) {
  ir::Value* v = x.use(loc);
  if (axis)
    return reduce_simple(v, *axis, keep_dims, k, loc);
  if (v->type.rank() == 0)
    return v;
  ir::Value* flat = reshape(v, {v->type.numel()}, loc);
  return reduce_simple(flat, 0, false, k, loc);
}
} // namespace detail

// Sums along `axis` (all elements when no axis is given). Sums of i1/i8/i16 are i32, as Triton.
template <Element E>
auto sum(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt, bool keep_dims = false,
         Loc loc = Loc::current()) {
  using R = std::conditional_t<dtype_traits<E>::is_int && (dtype_traits<E>::bits < 32), int32_t, E>;
  basic_tensor<R> xr(detail::cast(x.use(loc), dtype_of<R>(), loc));
  return basic_tensor<R>(detail::reduce_all_or_axis(xr, axis, keep_dims, ir::OpKind::Add, loc));
}
template <Element E>
basic_tensor<E> max(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt,
                    bool keep_dims = false, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::reduce_all_or_axis(x, axis, keep_dims, ir::OpKind::Max, loc));
}
template <Element E>
basic_tensor<E> min(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt,
                    bool keep_dims = false, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::reduce_all_or_axis(x, axis, keep_dims, ir::OpKind::Min, loc));
}
template <IntElement E>
basic_tensor<E> xor_sum(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt,
                        bool keep_dims = false, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::reduce_all_or_axis(x, axis, keep_dims, ir::OpKind::Xor, loc));
}

template <IntElement E>
basic_tensor<E> reduce_or(const basic_tensor<E>& x, std::optional<int> axis = std::nullopt,
                          bool keep_dims = false, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::reduce_all_or_axis(x, axis, keep_dims, ir::OpKind::Or, loc));
}

// A reduction with a user combine function: combine(tensor<E> a, tensor<E> b) -> tensor<E>,
// traced once on scalars. It must be associative and commutative, as in Triton.
template <Element E, class F>
basic_tensor<E> reduce(const basic_tensor<E>& x, int axis, F combine, bool keep_dims = false,
                       Loc loc = Loc::current()) {
  auto fn = [&](const std::vector<ir::Value*>& a) -> std::vector<ir::Value*> {
    basic_tensor<E> r = combine(basic_tensor<E>(a[0]), basic_tensor<E>(a[1]));
    return {r.use(loc)};
  };
  return basic_tensor<E>(detail::reduce({x.use(loc)}, axis, keep_dims, fn, loc)[0]);
}
namespace detail {
// Index of the extreme value along axis: `pred` is Gt for argmax, Lt for argmin.
inline std::vector<ir::Value*> arg_extreme(ir::Value* v, int axis, bool keep_dims, ir::CmpPred pred,
                                           const Loc& loc) {
  int rank = v->type.rank();
  if (axis < 0 || axis >= rank)
    fail(loc, "axis out of range for a tensor of rank " + std::to_string(rank));
  ir::Value* idx = arange(0, v->type.shape[axis], loc);
  for (int d = 0; d < axis; ++d)
    idx = expand_dims(idx, 0, loc);
  for (int d = axis + 1; d < rank; ++d)
    idx = expand_dims(idx, d, loc);
  idx = broadcast_to(idx, v->type.shape, loc);
  ir::DType t = v->type.elem;
  auto combine = [&](const std::vector<ir::Value*>& a) -> std::vector<ir::Value*> {
    ir::DType i32t = ir::DType(ir::ScalarKind::I32);
    ir::Value* better = compare(pred, a[0], a[2], t, loc);
    ir::Value* equal = compare(ir::CmpPred::Eq, a[0], a[2], t, loc);
    ir::Value* lower = compare(ir::CmpPred::Lt, a[1], a[3], i32t, loc);
    ir::Value* take_a =
        arith(ir::OpKind::Or, better,
              arith(ir::OpKind::And, equal, lower, ir::DType(ir::ScalarKind::I1), loc),
              ir::DType(ir::ScalarKind::I1), loc);
    return {select(take_a, a[0], a[2], t, loc), select(take_a, a[1], a[3], i32t, loc)};
  };
  return reduce({v, idx}, axis, keep_dims, combine, loc);
}
} // namespace detail

// Index of the maximum (minimum) along axis; ties take the smallest index, as Triton.
template <Element E>
i32 argmax(const basic_tensor<E>& x, int axis, bool keep_dims = false, Loc loc = Loc::current()) {
  return i32(detail::arg_extreme(x.use(loc), axis, keep_dims, ir::CmpPred::Gt, loc)[1]);
}
template <Element E>
i32 argmin(const basic_tensor<E>& x, int axis, bool keep_dims = false, Loc loc = Loc::current()) {
  return i32(detail::arg_extreme(x.use(loc), axis, keep_dims, ir::CmpPred::Lt, loc)[1]);
}

// Triton's max(x, axis, return_indices=True): tl::max(x, axis, tl::return_indices) gives the
// values and their (first) indices.
struct return_indices_t {};
inline constexpr return_indices_t return_indices{};
template <Element E>
std::pair<basic_tensor<E>, i32> max(const basic_tensor<E>& x, int axis, return_indices_t,
                                    bool keep_dims = false, Loc loc = Loc::current()) {
  auto r = detail::arg_extreme(x.use(loc), axis, keep_dims, ir::CmpPred::Gt, loc);
  return {basic_tensor<E>(r[0]), i32(r[1])};
}
template <Element E>
std::pair<basic_tensor<E>, i32> min(const basic_tensor<E>& x, int axis, return_indices_t,
                                    bool keep_dims = false, Loc loc = Loc::current()) {
  auto r = detail::arg_extreme(x.use(loc), axis, keep_dims, ir::CmpPred::Lt, loc);
  return {basic_tensor<E>(r[0]), i32(r[1])};
}

// Counts of the values 0 .. num_bins - 1 in a 1-D integer tensor (values outside are not
// counted; lanes where `mask` is false neither). num_bins must be a power of two.
template <IntElement E>
i32 histogram(const basic_tensor<E>& x, int num_bins, Loc loc = Loc::current()) {
  return i32(detail::histogram(x.use(loc), nullptr, num_bins, loc));
}
template <IntElement E>
i32 histogram(const basic_tensor<E>& x, int num_bins, const i1& mask, Loc loc = Loc::current()) {
  return i32(detail::histogram(x.use(loc), mask.use(loc), num_bins, loc));
}

// out[..., i, ...] = src[..., index[..., i, ...], ...] along `axis` (Triton's gather): src and
// index have one rank and agree on every other dimension; src's size along axis must be a
// power of two. Built from compares and a sum, so every backend runs it.
template <Element E, IntElement I>
basic_tensor<E> gather(const basic_tensor<E>& src, const basic_tensor<I>& index, int axis,
                       Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::gather(src.use(loc), index.use(loc), axis, loc));
}

// Sorts along the last dimension (Triton's tl.sort: `dim` may only name the last one), which
// must be a power of two; a bitonic network of compares and selects.
template <ScalarElement E>
basic_tensor<E> sort(const basic_tensor<E>& x, std::optional<int> dim = std::nullopt,
                     bool descending = false, Loc loc = Loc::current()) {
  ir::Value* v = x.use(loc);
  int rank = v->type.rank();
  if (dim && *dim != rank - 1 && *dim != -1)
    detail::fail(loc, "sort works along the last dimension only (as Triton), got dim " +
                          std::to_string(*dim) + " of a rank-" + std::to_string(rank) + " tensor");
  return basic_tensor<E>(detail::sort(v, descending, loc));
}
// The k largest values along the last dimension, largest first: a bitonic selection where k and
// the dimension are powers of two, else the first k of a sort.
template <ScalarElement E>
basic_tensor<E> topk(const basic_tensor<E>& x, int k, Loc loc = Loc::current()) {
  ir::Value* v = x.use(loc);
  int rank = v->type.rank();
  if (rank == 0 || k <= 0 || k > v->type.shape.back())
    detail::fail(loc, "topk needs 0 < k <= the last dimension (" +
                          (rank ? std::to_string(v->type.shape.back()) : std::string("scalar")) +
                          "), got k = " + std::to_string(k));
  const int64_t n = v->type.shape.back();
  if ((k & (k - 1)) == 0 && (n & (n - 1)) == 0)
    return basic_tensor<E>(detail::topk(v, k, loc));
  // Otherwise the first k of a full sort.
  ir::Value* sorted = detail::sort(v, true, loc);
  Shape one(rank, 1), out = v->type.shape;
  one.back() = k;
  out.back() = k;
  ir::Value* idx =
      detail::broadcast_to(detail::reshape(detail::arange(0, k, loc), one, loc), out, loc);
  return basic_tensor<E>(detail::gather(sorted, idx, rank - 1, loc));
}

namespace detail {
// Calls combine(a0, ..., aN-1, b0, ..., bN-1) on 2N traced scalars and returns its N results
// (a std::tuple of tensors), as Triton's combine functions over tuples.
template <class... E, class F, size_t... I>
std::vector<ir::Value*> combine_tuple(F& combine, const std::vector<ir::Value*>& a,
                                      std::index_sequence<I...>, const Loc& loc) {
  constexpr size_t n = sizeof...(E);
  auto r = combine(basic_tensor<E>(a[I])..., basic_tensor<E>(a[I + n])...);
  static_assert(std::tuple_size_v<decltype(r)> == n,
                "a combine function over N tensors returns a std::tuple of N tensors");
  return {std::get<I>(r).use(loc)...};
}
template <class... E, size_t... I>
std::tuple<basic_tensor<E>...> tuple_of(const std::vector<ir::Value*>& vs,
                                        std::index_sequence<I...>) {
  return {basic_tensor<E>(vs[I])...};
}
} // namespace detail

// Reductions and scans over several tensors at once (Triton's tuples): combine takes
// (a0, ..., aN-1, b0, ..., bN-1) and returns std::tuple{c0, ..., cN-1}; all tensors share one
// shape.
//   auto [v, i] = tl::reduce(std::tuple{x, idx}, 0, [](tl::f32 a, tl::i32 ia, tl::f32 b,
//                                                     tl::i32 ib) { return std::tuple{...}; });
template <Element... E, class F>
std::tuple<basic_tensor<E>...> reduce(const std::tuple<basic_tensor<E>...>& xs, int axis, F combine,
                                      bool keep_dims = false, Loc loc = Loc::current()) {
  auto seq = std::index_sequence_for<E...>{};
  auto fn = [&](const std::vector<ir::Value*>& a) {
    return detail::combine_tuple<E...>(combine, a, seq, loc);
  };
  std::vector<ir::Value*> in =
      std::apply([&](const auto&... x) { return std::vector<ir::Value*>{x.use(loc)...}; }, xs);
  return detail::tuple_of<E...>(detail::reduce(in, axis, keep_dims, fn, loc), seq);
}
template <Element... E, class F>
std::tuple<basic_tensor<E>...> associative_scan(const std::tuple<basic_tensor<E>...>& xs, int axis,
                                                F combine, bool reverse = false,
                                                Loc loc = Loc::current()) {
  auto seq = std::index_sequence_for<E...>{};
  auto fn = [&](const std::vector<ir::Value*>& a) {
    return detail::combine_tuple<E...>(combine, a, seq, loc);
  };
  std::vector<ir::Value*> in =
      std::apply([&](const auto&... x) { return std::vector<ir::Value*>{x.use(loc)...}; }, xs);
  return detail::tuple_of<E...>(detail::scan(in, axis, reverse, fn, loc), seq);
}

// An inclusive scan with a user combine function (associative).
template <Element E, class F>
basic_tensor<E> associative_scan(const basic_tensor<E>& x, int axis, F combine,
                                 bool reverse = false, Loc loc = Loc::current()) {
  auto fn = [&](const std::vector<ir::Value*>& a) -> std::vector<ir::Value*> {
    basic_tensor<E> r = combine(basic_tensor<E>(a[0]), basic_tensor<E>(a[1]));
    return {r.use(loc)};
  };
  return basic_tensor<E>(detail::scan({x.use(loc)}, axis, reverse, fn, loc)[0]);
}
template <Element E>
basic_tensor<E> cumsum(const basic_tensor<E>& x, int axis = 0, bool reverse = false,
                       Loc loc = Loc::current()) {
  return associative_scan(
      x, axis, [](auto a, auto b) { return a + b; }, reverse, loc);
}
template <Element E>
basic_tensor<E> cumprod(const basic_tensor<E>& x, int axis = 0, bool reverse = false,
                        Loc loc = Loc::current()) {
  return associative_scan(
      x, axis, [](auto a, auto b) { return a * b; }, reverse, loc);
}

// --- linear algebra ------------------------------------------------------------------------
// Both operands of one element type, or two fp8 formats (e4m3 with e5m2, as Triton allows).
template <class A, class B>
concept DotOperands = std::same_as<A, B> ||(StorageFloatElement<A>&& StorageFloatElement<B>);

// tl.dot's keyword arguments beyond the accumulator: tl::dot(a, b, acc, {.input_precision =
// "tf32"}) or {.max_num_imprecise_acc = 128}.
struct DotOptions {
  std::string_view input_precision = "ieee"; // f32 operands: "ieee", "tf32", "tf32x3"
  // fp8 operands: where the matrix unit accumulates below f32 (sm_90a's wgmma), partial sums of
  // this many K are added to the accumulator in f32, as Triton's argument of that name; 0, its
  // default on sm_90: the whole K in the unit's precision.
  int64_t max_num_imprecise_acc = 0;
};

// acc + a @ b. f16/bf16 operands accumulate in f32, fp8 in f32, i8 in i32, f32 in f32 ("ieee"
// or "tf32").
template <Element A, Element B, Element Acc>
requires DotOperands<A, B> basic_tensor<Acc> dot(const basic_tensor<A>& a, const basic_tensor<B>& b,
                                                 const basic_tensor<Acc>& acc, DotOptions o,
                                                 Loc loc = Loc::current()) {
  return basic_tensor<Acc>(detail::dot(a.use(loc), b.use(loc), acc.use(loc), o.input_precision,
                                       o.max_num_imprecise_acc, loc));
}
template <Element A, Element B, Element Acc>
requires DotOperands<A, B> basic_tensor<Acc> dot(const basic_tensor<A>& a, const basic_tensor<B>& b,
                                                 const basic_tensor<Acc>& acc,
                                                 std::string_view input_precision = "ieee",
                                                 Loc loc = Loc::current()) {
  return dot(a, b, acc, DotOptions{.input_precision = input_precision}, loc);
}
template <Element A, Element B>
requires DotOperands<A, B>
auto dot(const basic_tensor<A>& a, const basic_tensor<B>& b, Loc loc = Loc::current()) {
  using Acc = std::conditional_t<dtype_traits<A>::is_int, int32_t,
                                 std::conditional_t<std::same_as<A, double>, double, float>>;
  ir::Value* av = a.use(loc);
  ir::Value* bv = b.use(loc);
  Shape s = av->type.shape;
  if (s.size() >= 2 && bv->type.rank() >= 2)
    s.back() = bv->type.shape.back();
  return dot(a, b, zeros<Acc>(s, loc), "ieee", loc);
}

// Operands of two dtypes: stopped here, with the fix, instead of "no matching function".
template <Element A, Element B, class... Rest>
requires(!DotOperands<A, B>) basic_tensor<float> dot(const basic_tensor<A>&, const basic_tensor<B>&,
                                                     Rest&&...) {
  static_assert(std::same_as<A, B>,
                "tl::dot: both operands must have the same dtype. Convert one first, e.g. "
                "tl::dot(a.to<tl::f16>(), b) for int8 weights dequantized to fp16 (i8 x i8 "
                "accumulates in i32, f16/bf16 in f32)");
  return {};
}

} // namespace tritium::lang

// Hints to the compiler, assertions and printing: tl::multiple_of, tl::device_print, ...
#include <tritium/lang/debug.hpp>
