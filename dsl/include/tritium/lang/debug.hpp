// Hints to the compiler and debugging: tl::multiple_of / max_contiguous / max_constancy,
// tl::assume, tl::static_assert_, tl::device_print, tl::static_print, tl::device_assert and
// tl::debug_barrier (Triton's names). Part of <tritium/lang/ops.hpp>.
#pragma once

#include <tritium/error.hpp>
#include <tritium/lang/tensor.hpp>

#include <concepts>
#include <string>
#include <string_view>

namespace tritium::lang {

using detail::Loc;

template <Element E>
basic_tensor<E> multiple_of(const basic_tensor<E>& x, int64_t m, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::hint(x.use(loc), attr::multiple_of, m, loc));
}
template <Element E>
basic_tensor<E> max_contiguous(const basic_tensor<E>& x, int64_t m, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::hint(x.use(loc), attr::max_contiguous, m, loc));
}
template <Element E>
basic_tensor<E> max_constancy(const basic_tensor<E>& x, int64_t m, Loc loc = Loc::current()) {
  return basic_tensor<E>(detail::hint(x.use(loc), attr::max_constancy, m, loc));
}
inline void assume(const i1& cond, Loc loc = Loc::current()) {
  detail::debug_op(ir::OpKind::Assume, {cond.use(loc)}, {}, loc);
}
// A trace-time assertion (Triton's tl.static_assert).
inline void static_assert_(bool cond, std::string_view msg = "", Loc loc = Loc::current()) {
  if (!cond)
    detail::fail(loc, "static assertion failed" + (msg.empty() ? "" : ": " + std::string(msg)));
}
// A string that remembers where it was written: variadic functions cannot take a trailing
// defaulted source_location, so their leading message argument carries it.
struct Message {
  std::string_view text;
  Loc loc;
  template <class S>
  requires std::convertible_to<const S&, std::string_view> Message(const S& s,
                                                                   Loc l = Loc::current())
      : text(s), loc(l) {}
};
// Prints the prefix and the values at run time, from every program (Triton's device_print).
template <Element... E>
void device_print(Message prefix, const basic_tensor<E>&... xs) {
  Loc loc = prefix.loc;
  detail::debug_op(ir::OpKind::Print, {xs.use(loc)...}, {{attr::prefix, std::string(prefix.text)}},
                   loc);
}
// Prints the prefix and the values' types (shape and element type) while tracing, once per
// specialization (Triton's static_print); values are not known then.
template <Element... E>
void static_print(Message prefix, const basic_tensor<E>&... xs) {
  std::string line = std::string(prefix.text);
  ((line += " " + ir::to_string(xs.use(prefix.loc)->type)), ...);
  detail::static_print(line, prefix.loc);
}
inline void device_assert(const i1& cond, std::string_view msg = "", Loc loc = Loc::current()) {
  detail::debug_op(ir::OpKind::Assert, {cond.use(loc)}, {{attr::message, std::string(msg)}}, loc);
}
inline void debug_barrier(Loc loc = Loc::current()) {
  detail::debug_op(ir::OpKind::Barrier, {}, {}, loc);
}

} // namespace tritium::lang
