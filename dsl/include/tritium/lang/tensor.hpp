// tl::tensor<E>: a traced block of elements of C++ element type E (rank 0 is a scalar).
// Operators build IR; the element type of every result is known at compile time, the shape
// when the kernel is traced. Errors name the user's file and line: operators take their
// operands as Arg<E>, whose constructor captures the caller's std::source_location.
#pragma once

#include <tritium/lang/dtypes.hpp>
#include <tritium/lang/tracer.hpp>

#include <concepts>
#include <initializer_list>
#include <type_traits>
#include <variant>
#include <vector>

namespace tritium::lang {

template <Element E>
class basic_tensor;
namespace detail {
template <class T>
struct element_of;
} // namespace detail

// A compile-time kernel parameter (Triton's tl.constexpr): part of the specialization key.
template <class T>
struct constexpr_ {
  T value{};
  constexpr constexpr_() = default;
  constexpr constexpr_(T v) : value(v) {}
  constexpr operator T() const { return value; }
};

template <class T>
struct is_constexpr_param : std::false_type {};
template <class T>
struct is_constexpr_param<constexpr_<T>> : std::true_type {};

// C++ scalars usable as operands next to a tensor of element type E.
template <class S>
concept Literal = std::is_arithmetic_v<S>;

namespace detail {

template <class E, class S>
concept LiteralFits = Literal<S> &&(std::integral<S> || dtype_traits<E>::is_float) &&
                      (dtype_traits<E>::is_float || dtype_traits<E>::is_int);

template <class E>
ir::Value* literal(double v, const Loc& loc) {
  if constexpr (dtype_traits<E>::is_float)
    return constant_float(v, dtype_of<E>(), {}, loc);
  else
    return constant_int(static_cast<int64_t>(v), dtype_of<E>(), {}, loc);
}
template <class E>
ir::Value* literal_int(int64_t v, const Loc& loc) {
  if constexpr (dtype_traits<E>::is_float)
    return constant_float(static_cast<double>(v), dtype_of<E>(), {}, loc);
  else
    return constant_int(v, dtype_of<E>(), {}, loc);
}

} // namespace detail

// An operand of element type E with the location of the expression it appears in.
template <Element E>
struct Arg {
  ir::Value* v;
  detail::Loc loc;
  Arg(const basic_tensor<E>& t, detail::Loc l = detail::Loc::current());
  template <class S>
  requires detail::LiteralFits<E, S> Arg(S s, detail::Loc l = detail::Loc::current())
      : v(std::integral<S> ? detail::literal_int<E>(static_cast<int64_t>(s), l)
                           : detail::literal<E>(static_cast<double>(s), l)),
        loc(l) {}
  template <class S>
  requires detail::LiteralFits<E, S> Arg(constexpr_<S> s, detail::Loc l = detail::Loc::current())
      : Arg(s.value, l) {}
};

// Any integer operand (tensor or literal): pointer offsets, shift amounts.
struct IntArg {
  ir::Value* v;
  detail::Loc loc;
  template <IntElement I>
  IntArg(const basic_tensor<I>& t, detail::Loc l = detail::Loc::current());
  template <std::integral S>
  IntArg(S s, detail::Loc l = detail::Loc::current())
      : v(detail::constant_int(static_cast<int64_t>(s),
                               sizeof(S) > 4 ? dtype_of<int64_t>() : dtype_of<int32_t>(), {}, l)),
        loc(l) {}
  template <std::integral S>
  IntArg(constexpr_<S> s, detail::Loc l = detail::Loc::current()) : IntArg(s.value, l) {}
};

// Index specifiers for Triton's `x[:, None]` idiom: x[{tl::_, tl::None}].
struct all_t {};
struct newaxis_t {};
inline constexpr all_t _{};
inline constexpr newaxis_t None{};
inline constexpr newaxis_t newaxis{};
using Index = std::variant<all_t, newaxis_t>;
// The braced index list of x[{...}], with the location of the expression it appears in.
struct Indices {
  std::initializer_list<Index> items;
  detail::Loc loc;
  Indices(std::initializer_list<Index> i, detail::Loc l = detail::Loc::current())
      : items(i), loc(l) {}
};

namespace detail {
// The element type a literal S takes next to a tensor of element type E.
template <class E, class S>
using literal_elem_t =
    std::conditional_t<std::floating_point<S> && !dtype_traits<E>::is_float, float, E>;
} // namespace detail

// An operand of another element type than E, for compound assignment (x += y with y of
// another type converts the result back to E); it keeps the caller's location.
template <Element E>
struct MixedArg {
  ir::Value* v;
  ir::DType common; // the promoted type the operation runs in
  detail::Loc loc;
  template <ScalarElement B>
  requires(ScalarElement<E> && !std::same_as<B, E>)
      MixedArg(const basic_tensor<B>& t, detail::Loc l = detail::Loc::current());
};

template <Element E>
class basic_tensor : public detail::HandleBase {
public:
  using element_type = E;

  // An unassigned handle, to be assigned later (e.g. in both branches of tl::if_).
  basic_tensor() = default;
  explicit basic_tensor(ir::Value* v) : HandleBase(v) {}
  basic_tensor(const basic_tensor&) = default;
  basic_tensor& operator=(const basic_tensor&) = default;

  const std::vector<int64_t>& shape() const { return use(detail::Loc::current())->type.shape; }
  int rank() const { return static_cast<int>(shape().size()); }
  int64_t numel() const { return use(detail::Loc::current())->type.numel(); }

  // Conversion to another element type (Triton's .to()).
  template <Element T>
  basic_tensor<T> to(detail::Loc loc = detail::Loc::current()) const {
    return basic_tensor<T>(detail::cast(use(loc), dtype_of<T>(), loc));
  }
  // The same by handle name: x.to<tl::f16>(), and x.to<tl::ptr<tl::f16>>() to turn a 64-bit
  // integer (an address stored in memory) back into a pointer, as Triton's
  // x.to(tl.pointer_type(tl.float16)).
  template <class T>
  requires(!Element<T>) auto to(detail::Loc loc = detail::Loc::current()) const {
    using R = typename detail::element_of<T>::type;
    return basic_tensor<R>(detail::cast(use(loc), dtype_of<R>(), loc));
  }

  // x[{tl::_, tl::None}] inserts a size-1 dimension where None stands.
  basic_tensor operator[](Indices idx) const {
    detail::Loc loc = idx.loc;
    ir::Value* v = use(loc);
    int kept = 0;
    for (const Index& i : idx.items)
      kept += std::holds_alternative<all_t>(i) ? 1 : 0;
    if (kept != v->type.rank())
      detail::fail(loc, "x[{...}] must name each dimension of x with tl::_ (x has rank " +
                            std::to_string(v->type.rank()) + ")");
    int axis = 0;
    for (const Index& i : idx.items) {
      if (std::holds_alternative<newaxis_t>(i))
        v = detail::expand_dims(v, axis, loc);
      ++axis;
    }
    return basic_tensor(v);
  }

  // Compound assignment keeps the handle's element type (the result is converted back).
  basic_tensor& operator+=(Arg<E> b) { return assign(ir::OpKind::Add, b); }
  basic_tensor& operator-=(Arg<E> b) { return assign(ir::OpKind::Sub, b); }
  basic_tensor& operator*=(Arg<E> b) { return assign(ir::OpKind::Mul, b); }
  basic_tensor& operator/=(Arg<E> b) { return assign(ir::OpKind::Div, b); }
  basic_tensor& operator%=(Arg<E> b) { return assign(ir::OpKind::Rem, b); }
  basic_tensor& operator&=(Arg<E> b) { return assign(ir::OpKind::And, b); }
  basic_tensor& operator|=(Arg<E> b) { return assign(ir::OpKind::Or, b); }
  basic_tensor& operator^=(Arg<E> b) { return assign(ir::OpKind::Xor, b); }
  basic_tensor& operator+=(MixedArg<E> b) { return assign_mixed(ir::OpKind::Add, b); }
  basic_tensor& operator-=(MixedArg<E> b) { return assign_mixed(ir::OpKind::Sub, b); }
  basic_tensor& operator*=(MixedArg<E> b) { return assign_mixed(ir::OpKind::Mul, b); }
  basic_tensor& operator/=(MixedArg<E> b) { return assign_mixed(ir::OpKind::Div, b); }
  basic_tensor& operator+=(IntArg off) requires PointerElement<E> {
    set(detail::add_ptr(use(off.loc), off.v, off.loc));
    return *this;
  }

  // Arithmetic on one element type, with literals of a fitting kind.
  friend basic_tensor operator+(Arg<E> a, Arg<E> b) requires ScalarElement<E> {
    return bin(ir::OpKind::Add, a, b);
  }
  friend basic_tensor operator-(Arg<E> a, Arg<E> b) requires ScalarElement<E> {
    return bin(ir::OpKind::Sub, a, b);
  }
  friend basic_tensor operator*(Arg<E> a, Arg<E> b) requires ScalarElement<E> {
    return bin(ir::OpKind::Mul, a, b);
  }
  friend basic_tensor operator/(Arg<E> a, Arg<E> b) requires ScalarElement<E> {
    return bin(ir::OpKind::Div, a, b);
  }
  friend basic_tensor operator%(Arg<E> a, Arg<E> b) requires ScalarElement<E> {
    return bin(ir::OpKind::Rem, a, b);
  }
  friend basic_tensor operator&(Arg<E> a, Arg<E> b) requires IntElement<E> {
    return bin(ir::OpKind::And, a, b);
  }
  friend basic_tensor operator|(Arg<E> a, Arg<E> b) requires IntElement<E> {
    return bin(ir::OpKind::Or, a, b);
  }
  friend basic_tensor operator^(Arg<E> a, Arg<E> b) requires IntElement<E> {
    return bin(ir::OpKind::Xor, a, b);
  }
  friend basic_tensor operator<<(Arg<E> a, Arg<E> b) requires IntElement<E> {
    return bin(ir::OpKind::Shl, a, b);
  }
  friend basic_tensor operator>>(Arg<E> a, Arg<E> b) requires IntElement<E> {
    return bin(ir::OpKind::Shr, a, b);
  }
  // Logical operators on masks are the bitwise ones, as in Triton.
  friend basic_tensor operator&&(Arg<E> a, Arg<E> b) requires std::same_as<E, bool> {
    return bin(ir::OpKind::And, a, b);
  }
  friend basic_tensor operator||(Arg<E> a, Arg<E> b) requires std::same_as<E, bool> {
    return bin(ir::OpKind::Or, a, b);
  }

  friend basic_tensor<bool> operator==(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Eq, a, b); }
  friend basic_tensor<bool> operator!=(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Ne, a, b); }
  friend basic_tensor<bool> operator<(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Lt, a, b); }
  friend basic_tensor<bool> operator<=(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Le, a, b); }
  friend basic_tensor<bool> operator>(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Gt, a, b); }
  friend basic_tensor<bool> operator>=(Arg<E> a, Arg<E> b) { return cmp(ir::CmpPred::Ge, a, b); }

  friend basic_tensor operator-(Arg<E> a) requires ScalarElement<E> {
    return basic_tensor(detail::unary(ir::OpKind::Neg, a.v, a.loc));
  }
  friend basic_tensor operator+(Arg<E> a) requires ScalarElement<E> { return basic_tensor(a.v); }
  friend basic_tensor operator~(Arg<E> a) requires IntElement<E> {
    return basic_tensor(detail::unary(ir::OpKind::Not, a.v, a.loc));
  }
  friend basic_tensor operator!(Arg<E> a) requires std::same_as<E, bool> {
    return basic_tensor(detail::unary(ir::OpKind::Not, a.v, a.loc));
  }

  // Pointer arithmetic: pointers plus or minus integer offsets, in elements.
  friend basic_tensor operator+(Arg<E> p, IntArg off) requires PointerElement<E> {
    return basic_tensor(detail::add_ptr(p.v, off.v, p.loc));
  }
  friend basic_tensor operator+(IntArg off, Arg<E> p) requires PointerElement<E> {
    return basic_tensor(detail::add_ptr(p.v, off.v, p.loc));
  }
  friend basic_tensor operator-(Arg<E> p, IntArg off) requires PointerElement<E> {
    return basic_tensor(
        detail::add_ptr(p.v, detail::unary(ir::OpKind::Neg, off.v, off.loc), p.loc));
  }

private:
  static basic_tensor bin(ir::OpKind k, const Arg<E>& a, const Arg<E>& b) {
    return basic_tensor(detail::arith(k, a.v, b.v, dtype_of<E>(), a.loc));
  }
  static basic_tensor<bool> cmp(ir::CmpPred pred, const Arg<E>& a, const Arg<E>& b) {
    return basic_tensor<bool>(detail::compare(pred, a.v, b.v, dtype_of<E>(), a.loc));
  }
  basic_tensor& assign(ir::OpKind k, const Arg<E>& b) {
    set(detail::arith(k, use(b.loc), b.v, dtype_of<E>(), b.loc));
    return *this;
  }
  basic_tensor& assign_mixed(ir::OpKind k, const MixedArg<E>& b) {
    set(detail::cast(detail::arith(k, use(b.loc), b.v, b.common, b.loc), dtype_of<E>(), b.loc));
    return *this;
  }

  // Operands of different element types follow Triton's promotion (dtypes.hpp). These are
  // hidden friends taking Arg<E> first, so that the expression's location is captured and
  // exactly one overload (the left operand's class) matches.
  template <ScalarElement B>
  using promoted = basic_tensor<promote_t<E, B>>;
  template <class S>
  using promoted_literal = basic_tensor<promote_t<E, detail::literal_elem_t<E, S>>>;

#define TRITIUM_MIXED_OPS(OP, KIND)                                                                \
  template <ScalarElement B>                                                                       \
  requires(ScalarElement<E> && !std::same_as<B, E>) friend promoted<B> operator OP(                \
      Arg<E> a, const basic_tensor<B>& b) {                                                        \
    using R = promote_t<E, B>;                                                                     \
    return promoted<B>(detail::arith(ir::OpKind::KIND, a.v, b.use(a.loc), dtype_of<R>(), a.loc));  \
  }                                                                                                \
  template <Literal S>                                                                             \
  requires(ScalarElement<E> && !detail::LiteralFits<E, S>) friend promoted_literal<S> operator OP( \
      Arg<E> a, S s) {                                                                             \
    using R = promote_t<E, detail::literal_elem_t<E, S>>;                                          \
    ir::Value* lit = detail::constant_float(static_cast<double>(s), dtype_of<R>(), {}, a.loc);     \
    return promoted_literal<S>(detail::arith(ir::OpKind::KIND, a.v, lit, dtype_of<R>(), a.loc));   \
  }                                                                                                \
  template <Literal S>                                                                             \
  requires(ScalarElement<E> && !detail::LiteralFits<E, S>) friend promoted_literal<S> operator OP( \
      S s, Arg<E> a) {                                                                             \
    using R = promote_t<E, detail::literal_elem_t<E, S>>;                                          \
    ir::Value* lit = detail::constant_float(static_cast<double>(s), dtype_of<R>(), {}, a.loc);     \
    return promoted_literal<S>(detail::arith(ir::OpKind::KIND, lit, a.v, dtype_of<R>(), a.loc));   \
  }
  TRITIUM_MIXED_OPS(+, Add)
  TRITIUM_MIXED_OPS(-, Sub)
  TRITIUM_MIXED_OPS(*, Mul)
  TRITIUM_MIXED_OPS(/, Div)
  TRITIUM_MIXED_OPS(%, Rem)
#undef TRITIUM_MIXED_OPS

#define TRITIUM_MIXED_CMP(OP, PRED)                                                                \
  template <ScalarElement B>                                                                       \
  requires(ScalarElement<E> && !std::same_as<B, E>) friend basic_tensor<bool> operator OP(         \
      Arg<E> a, const basic_tensor<B>& b) {                                                        \
    return basic_tensor<bool>(                                                                     \
        detail::compare(PRED, a.v, b.use(a.loc), dtype_of<promote_t<E, B>>(), a.loc));             \
  }                                                                                                \
  template <Literal S>                                                                             \
  requires(ScalarElement<E> && !detail::LiteralFits<E, S>) friend basic_tensor<bool> operator OP(  \
      Arg<E> a, S s) {                                                                             \
    using R = promote_t<E, detail::literal_elem_t<E, S>>;                                          \
    ir::Value* lit = detail::constant_float(static_cast<double>(s), dtype_of<R>(), {}, a.loc);     \
    return basic_tensor<bool>(detail::compare(PRED, a.v, lit, dtype_of<R>(), a.loc));              \
  }                                                                                                \
  template <Literal S>                                                                             \
  requires(ScalarElement<E> && !detail::LiteralFits<E, S>) friend basic_tensor<bool> operator OP(  \
      S s, Arg<E> a) {                                                                             \
    using R = promote_t<E, detail::literal_elem_t<E, S>>;                                          \
    ir::Value* lit = detail::constant_float(static_cast<double>(s), dtype_of<R>(), {}, a.loc);     \
    return basic_tensor<bool>(detail::compare(PRED, lit, a.v, dtype_of<R>(), a.loc));              \
  }
  TRITIUM_MIXED_CMP(==, ir::CmpPred::Eq)
  TRITIUM_MIXED_CMP(!=, ir::CmpPred::Ne)
  TRITIUM_MIXED_CMP(<, ir::CmpPred::Lt)
  TRITIUM_MIXED_CMP(<=, ir::CmpPred::Le)
  TRITIUM_MIXED_CMP(>, ir::CmpPred::Gt)
  TRITIUM_MIXED_CMP(>=, ir::CmpPred::Ge)
#undef TRITIUM_MIXED_CMP
};

template <Element E>
template <ScalarElement B>
requires(ScalarElement<E> && !std::same_as<B, E>) MixedArg<E>::MixedArg(const basic_tensor<B>& t,
                                                                        detail::Loc l)
    : v(t.use(l)), common(dtype_of<promote_t<E, B>>()), loc(l) {}

template <Element E>
Arg<E>::Arg(const basic_tensor<E>& t, detail::Loc l) : v(t.use(l)), loc(l) {}

template <IntElement I>
IntArg::IntArg(const basic_tensor<I>& t, detail::Loc l) : v(t.use(l)), loc(l) {}

// The user-facing spellings: tl::tensor<float>, tl::tensor<tl::f16>, tl::ptr<float>, tl::i32.
namespace detail {
template <class T>
struct element_of {
  using type = T;
};
template <class E>
struct element_of<basic_tensor<E>> {
  using type = E;
};
} // namespace detail
template <class T>
using element_of_t = typename detail::element_of<T>::type;

template <class T>
using tensor = basic_tensor<element_of_t<T>>;
template <class T>
using ptr = basic_tensor<pointer<element_of_t<T>>>;

using i1 = basic_tensor<bool>;
using i8 = basic_tensor<int8_t>;
using i16 = basic_tensor<int16_t>;
using i32 = basic_tensor<int32_t>;
using i64 = basic_tensor<int64_t>;
using u8 = basic_tensor<uint8_t>;
using u16 = basic_tensor<uint16_t>;
using u32 = basic_tensor<uint32_t>;
using u64 = basic_tensor<uint64_t>;
using f16 = basic_tensor<half>;
using bf16 = basic_tensor<bfloat16>;
using f8e4nv = basic_tensor<float8e4nv>;
using f8e5 = basic_tensor<float8e5>;
using f8e4b8 = basic_tensor<float8e4b8>;
using f8e5b16 = basic_tensor<float8e5b16>;
using f32 = basic_tensor<float>;
using f64 = basic_tensor<double>;

// --- operands of different element types: Triton's promotion -------------------------------
namespace detail {

template <class T>
struct operand_elem {}; // no element: not an operand
template <class E>
struct operand_elem<basic_tensor<E>> {
  using type = E;
};

template <class T>
concept TensorOperand = requires {
  typename operand_elem<std::remove_cvref_t<T>>::type;
};

template <class A, class B>
struct mixed_elem {};
template <Element E>
struct mixed_elem<basic_tensor<E>, basic_tensor<E>> {
  using type = E;
};
template <ScalarElement EA, ScalarElement EB>
requires(!std::same_as<EA, EB>) struct mixed_elem<basic_tensor<EA>, basic_tensor<EB>> {
  using type = promote_t<EA, EB>;
};
template <ScalarElement EA, Literal S>
struct mixed_elem<basic_tensor<EA>, S> {
  using type = promote_t<EA, literal_elem_t<EA, S>>;
};
template <Literal S, ScalarElement EB>
struct mixed_elem<S, basic_tensor<EB>> {
  using type = promote_t<EB, literal_elem_t<EB, S>>;
};
// Two literals (tl::where(mask, 0, -1.0e6)): f32 if either is floating-point, as Triton's
// Python floats; otherwise i32, or i64 for 64-bit integer literals.
template <Literal SA, Literal SB>
struct mixed_elem<SA, SB> {
  using type =
      std::conditional_t<std::floating_point<SA> || std::floating_point<SB>, float,
                         std::conditional_t<(sizeof(SA) > 4 || sizeof(SB) > 4), int64_t, int32_t>>;
};
// A tl::constexpr_ parameter stands where a literal of its type may.
template <ScalarElement EA, Literal S>
struct mixed_elem<basic_tensor<EA>, constexpr_<S>> : mixed_elem<basic_tensor<EA>, S> {};
template <Literal S, ScalarElement EB>
struct mixed_elem<constexpr_<S>, basic_tensor<EB>> : mixed_elem<S, basic_tensor<EB>> {};

template <class E, class T>
ir::Value* operand_value(const T& x, const Loc& loc) {
  if constexpr (TensorOperand<T>)
    return x.use(loc);
  else if constexpr (is_constexpr_param<T>::value)
    return operand_value<E>(x.value, loc);
  else if constexpr (std::floating_point<T>)
    return constant_float(static_cast<double>(x), dtype_of<E>(), {}, loc);
  else if constexpr (dtype_traits<E>::is_float)
    return constant_float(static_cast<double>(x), dtype_of<E>(), {}, loc);
  else
    return constant_int(static_cast<int64_t>(x), dtype_of<E>(), {}, loc);
}

} // namespace detail

} // namespace tritium::lang
