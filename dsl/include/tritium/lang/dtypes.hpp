// Element types as C++ types, and Triton's type-promotion rules evaluated at compile time.
//
// An element type is one of: bool (i1), int8_t … int64_t, uint8_t … uint64_t, tritium::half
// (f16), tritium::bfloat16 (bf16), float, double, or tritium::pointer<E> for one of those.
// Promotion (docs/language.md, "Type promotion"):
//   * float beats int; among floats the wider wins; f16 with bf16 gives f32;
//   * between ints the wider wins; at equal width unsigned wins (as Triton and C);
//   * bool promotes to the other operand's type.
#pragma once

#include <tritium/float16.hpp>
#include <tritium/ir/types.hpp>

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace tritium {

// The element type "pointer to E" (global memory).
template <class E>
struct pointer {
  using element_type = E;
};

namespace lang {

template <class T>
struct dtype_traits; // specialized for every element type below

#define TRITIUM_DTYPE(T, K, IS_FLOAT, IS_INT, BITS)                                                \
  template <>                                                                                      \
  struct dtype_traits<T> {                                                                         \
    static constexpr ir::ScalarKind kind = ir::ScalarKind::K;                                      \
    static constexpr bool is_float = IS_FLOAT;                                                     \
    static constexpr bool is_int = IS_INT;                                                         \
    static constexpr int bits = BITS;                                                              \
    static ir::DType dtype() { return ir::DType(kind); }                                           \
  };
TRITIUM_DTYPE(bool, I1, false, true, 1)
TRITIUM_DTYPE(int8_t, I8, false, true, 8)
TRITIUM_DTYPE(int16_t, I16, false, true, 16)
TRITIUM_DTYPE(int32_t, I32, false, true, 32)
TRITIUM_DTYPE(int64_t, I64, false, true, 64)
TRITIUM_DTYPE(uint8_t, U8, false, true, 8)
TRITIUM_DTYPE(uint16_t, U16, false, true, 16)
TRITIUM_DTYPE(uint32_t, U32, false, true, 32)
TRITIUM_DTYPE(uint64_t, U64, false, true, 64)
TRITIUM_DTYPE(half, F16, true, false, 16)
TRITIUM_DTYPE(bfloat16, BF16, true, false, 16)
TRITIUM_DTYPE(float, F32, true, false, 32)
TRITIUM_DTYPE(double, F64, true, false, 64)
#undef TRITIUM_DTYPE

template <class E>
struct dtype_traits<pointer<E>> {
  static constexpr ir::ScalarKind kind = ir::ScalarKind::Ptr;
  static constexpr bool is_float = false;
  static constexpr bool is_int = false;
  static constexpr int bits = 64;
  static ir::DType dtype() { return ir::DType::pointer_to(dtype_traits<E>::kind); }
};

template <class T>
concept Element = requires {
  dtype_traits<T>::kind;
};
template <class T>
concept ScalarElement = Element<T> && !std::same_as<decltype(dtype_traits<T>::kind), void> &&
                        (dtype_traits<T>::is_float || dtype_traits<T>::is_int);
template <class T>
concept FloatElement = Element<T> && dtype_traits<T>::is_float;
template <class T>
concept IntElement = Element<T> && dtype_traits<T>::is_int;

template <class T>
struct is_pointer_element : std::false_type {};
template <class E>
struct is_pointer_element<pointer<E>> : std::true_type {};
template <class T>
concept PointerElement = is_pointer_element<T>::value;

template <class T>
ir::DType dtype_of() {
  return dtype_traits<T>::dtype();
}

namespace detail {

template <class A, class B>
struct promote_impl {
  static constexpr auto pick() {
    using TA = dtype_traits<A>;
    using TB = dtype_traits<B>;
    if constexpr (std::is_same_v<A, B>)
      return std::type_identity<A>{};
    else if constexpr (std::is_same_v<A, bool>)
      return std::type_identity<B>{};
    else if constexpr (std::is_same_v<B, bool>)
      return std::type_identity<A>{};
    else if constexpr (TA::is_float && TB::is_float) {
      if constexpr (TA::bits == 16 && TB::bits == 16)
        return std::type_identity<float>{}; // f16 with bf16
      else if constexpr (TA::bits >= TB::bits)
        return std::type_identity<A>{};
      else
        return std::type_identity<B>{};
    } else if constexpr (TA::is_float)
      return std::type_identity<A>{};
    else if constexpr (TB::is_float)
      return std::type_identity<B>{};
    else if constexpr (TA::bits != TB::bits)
      return std::conditional_t<(TA::bits > TB::bits), std::type_identity<A>,
                                std::type_identity<B>>{};
    else
      return std::conditional_t<std::is_unsigned_v<A>, std::type_identity<A>,
                                std::type_identity<B>>{};
  }
  using type = typename decltype(pick())::type;
};

} // namespace detail

// The element type of a binary arithmetic op on A and B.
template <class A, class B>
using promote_t = typename detail::promote_impl<A, B>::type;

} // namespace lang
} // namespace tritium
