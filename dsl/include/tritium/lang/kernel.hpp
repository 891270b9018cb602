// Tracing a kernel function into IR. Parameters are reflected from the function's C++
// signature with Boost.Hana: tl::constexpr_<T> parameters are compile-time values that
// specialize the trace; every other parameter is a traced scalar (a pointer or a number).
#pragma once

#include <tritium/error.hpp>
#include <tritium/lang/tensor.hpp>

#include <boost/hana.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>

namespace tritium::lang {

// How one argument of a launch specializes the kernel.
struct ArgSpec {
  ir::ArgInfo info;                    // runtime parameters: divisibility, constant value
  std::variant<int64_t, double> value; // constexpr parameters: the value
};

template <class P>
struct param_traits; // defined for the parameter types a kernel may take
template <Element E>
struct param_traits<basic_tensor<E>> {
  static constexpr bool is_constexpr = false;
  using element = E;
};
template <class T>
struct param_traits<constexpr_<T>> {
  static constexpr bool is_constexpr = true;
  using value_type = T;
};

template <class P>
concept KernelParam = requires {
  param_traits<std::remove_cvref_t<P>>::is_constexpr;
};

namespace detail {

template <class P>
P make_param(TraceSession& session, const ArgSpec& spec, const Loc& loc) {
  using Traits = param_traits<P>;
  if constexpr (Traits::is_constexpr) {
    using T = typename Traits::value_type;
    return P(std::visit([](auto v) { return static_cast<T>(v); }, spec.value));
  } else {
    using E = typename Traits::element;
    ir::Value* arg = session.add_arg(dtype_of<E>(), spec.info);
    if (spec.info.is_constant) {
      if constexpr (dtype_traits<E>::is_int)
        return P(constant_int(spec.info.constant, dtype_of<E>(), {}, loc));
    }
    return P(arg);
  }
}

} // namespace detail

// Traces fn with one ArgSpec per parameter and returns the verified IR.
template <class... P>
std::unique_ptr<ir::Function> trace(void (*fn)(P...), std::string name,
                                    std::span<const ArgSpec> specs) {
  namespace hana = boost::hana;
  constexpr auto params = hana::tuple_t<std::remove_cvref_t<P>...>;
  static_assert(
      hana::all_of(params,
                   [](auto t) { return hana::bool_c<KernelParam<typename decltype(t)::type>>; }),
      "a kernel's parameters must be tl::tensor/tl::ptr scalars or tl::constexpr_<T>");
  if (specs.size() != sizeof...(P))
    throw Error("trace: " + std::to_string(specs.size()) + " argument specs for a kernel of " +
                std::to_string(sizeof...(P)) + " parameters");
  detail::TraceSession session(name);
  detail::Loc loc = detail::Loc::current();
  {
    // Parameters are built in order (braced initialization sequences them).
    size_t i = 0;
    auto args = hana::unpack(params, [&](auto... t) {
      // A braced list evaluates left to right, so parameters get their specs in order.
      return hana::tuple<typename decltype(t)::type...>{
          detail::make_param<typename decltype(t)::type>(session, specs[i++], loc)...};
    });
    hana::unpack(std::move(args), fn);
  }
  return session.finish();
}

} // namespace tritium::lang
