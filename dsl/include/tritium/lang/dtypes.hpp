// Element types as C++ types, and Triton's type-promotion rules evaluated at compile time.
//
// An element type is one of: bool (i1), int8_t … int64_t, uint8_t … uint64_t, tritium::half
// (f16), tritium::bfloat16 (bf16), float, double, the fp8 formats tritium::float8e4nv,
// float8e5, float8e4b8, float8e5b16 (ir/dtypes.def), or tritium::pointer<E> for one of those.
// Promotion (docs/language.md, "Type promotion"):
//   * float beats int; among floats the wider wins; f16 with bf16 gives f32, two different
//     fp8 formats f16;
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

// One specialization per row of ir/dtypes.def (Ptr has its own, below).
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code)                          \
  TRITIUM_DTYPE_##family(Kind, bits, cpp_type)
#define TRITIUM_DTYPE_Bool(K, B, CPP) TRITIUM_ELEMENT(K, B, CPP)
#define TRITIUM_DTYPE_Signed(K, B, CPP) TRITIUM_ELEMENT(K, B, CPP)
#define TRITIUM_DTYPE_Unsigned(K, B, CPP) TRITIUM_ELEMENT(K, B, CPP)
#define TRITIUM_DTYPE_Float(K, B, CPP) TRITIUM_ELEMENT(K, B, CPP)
#define TRITIUM_DTYPE_Storage(K, B, CPP) TRITIUM_ELEMENT(K, B, CPP)
#define TRITIUM_DTYPE_Pointer(K, B, CPP)
#define TRITIUM_ELEMENT(K, B, CPP)                                                                 \
  template <>                                                                                      \
  struct dtype_traits<CPP> {                                                                       \
    static constexpr ir::ScalarKind kind = ir::ScalarKind::K;                                      \
    static constexpr bool is_float = ir::DType(kind).is_float();                                   \
    static constexpr bool is_int = ir::DType(kind).is_int();                                       \
    static constexpr int bits = B;                                                                 \
    static ir::DType dtype() { return ir::DType(kind); }                                           \
  };
#include <tritium/ir/dtypes.def>
#undef TRITIUM_ELEMENT
#undef TRITIUM_DTYPE_Bool
#undef TRITIUM_DTYPE_Signed
#undef TRITIUM_DTYPE_Unsigned
#undef TRITIUM_DTYPE_Float
#undef TRITIUM_DTYPE_Storage
#undef TRITIUM_DTYPE_Pointer

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
// An fp8 element (ir/dtypes.def's storage floats).
template <class T>
concept StorageFloatElement = FloatElement<T> && ir::DType(dtype_traits<T>::kind)
.is_storage_float();

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
      else if constexpr (TA::bits == 8 && TB::bits == 8)
        return std::type_identity<half>{}; // two different fp8 formats, as Triton
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
