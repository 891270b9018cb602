// Control flow on traced values. A C++ `for` over plain integers unrolls at trace time
// (Triton's static_range); tl::range, tl::if_ and tl::while_ emit IR loops and branches whose
// bodies are traced once. Handles that a body reassigns become loop-carried values or branch
// results automatically; their element type and shape must not change.
#pragma once

#include <tritium/lang/ops.hpp>

#include <functional>
#include <ranges>

namespace tritium::lang {

// for (auto k : tl::range(lo, hi, step)) { ... } emits one loop; `k` is the traced induction
// variable: i64 where a bound or the step is, else i32. Leaving the body with break or return is an
// error. Triton's keyword options of tl.range, by name:
//   for (auto k : tl::range(0, n, 1, {.num_stages = 3})) ...
// They are recorded on the loop for the compiler; the interpreter ignores them. -1: unset.
struct RangeOptions {
  int num_stages = -1;
  int loop_unroll_factor = -1;
  bool warp_specialize = false;
  bool disallow_acc_multi_buffer = false;
  bool flatten = false;
};

namespace detail {

// What tl::range traces; range<I> adds the induction variable's C++ type.
class RangeBase {
public:
  RangeBase(IntArg lo, IntArg hi, IntArg step, RangeOptions opts, Loc loc);
  RangeBase(const RangeBase&) = delete;
  RangeBase& operator=(const RangeBase&) = delete;
  ~RangeBase();

protected:
  enum class State { Ready, InBody, BodyDone, Closed };
  bool advance();
  ir::Value *lo_, *hi_, *step_, *iv_ = nullptr;
  ir::Attrs attrs_;
  Loc loc_;
  State state_ = State::Ready;
};

// The induction variable's type: i64 when a bound or the step is (Triton's promotion), else
// i32 — as IntArg types plain integers (wider than 32 bits: i64).
template <class A>
struct range_index {
  using type = int32_t;
};
template <std::integral S>
requires(sizeof(S) > 4) struct range_index<S> {
  using type = int64_t;
};
template <class E>
requires(sizeof(E) > 4) struct range_index<basic_tensor<E>> {
  using type = int64_t;
};
template <class S>
struct range_index<constexpr_<S>> : range_index<S> {};
template <class... A>
using range_index_t =
    std::conditional_t<(std::is_same_v<typename range_index<std::decay_t<A>>::type, int64_t> ||
                        ...),
                       int64_t, int32_t>;

} // namespace detail

template <class I>
class range : detail::RangeBase {
public:
  range(IntArg lo, IntArg hi, IntArg step = 1, RangeOptions opts = {}, Loc loc = Loc::current())
      : RangeBase(lo, hi, step, opts, loc) {}
  range(IntArg hi, Loc loc = Loc::current())
      : RangeBase(IntArg(0, loc), hi, IntArg(1, loc), RangeOptions{}, loc) {}

  class iterator {
  public:
    explicit iterator(range* r) : r_(r) {}
    basic_tensor<I> operator*() const { return basic_tensor<I>(r_->iv_); }
    iterator& operator++() {
      r_->state_ = State::BodyDone;
      return *this;
    }
    bool operator!=(const iterator&) const { return r_->advance(); }

  private:
    range* r_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(this); }
};

template <class Hi>
range(Hi) -> range<detail::range_index_t<Hi>>;
template <class Hi>
range(Hi, Loc) -> range<detail::range_index_t<Hi>>;
template <class Lo, class Hi>
range(Lo, Hi) -> range<detail::range_index_t<Lo, Hi>>;
template <class Lo, class Hi, class St>
range(Lo, Hi, St) -> range<detail::range_index_t<Lo, Hi, St>>;
template <class Lo, class Hi, class St>
range(Lo, Hi, St, RangeOptions) -> range<detail::range_index_t<Lo, Hi, St>>;
template <class Lo, class Hi, class St>
range(Lo, Hi, St, RangeOptions, Loc) -> range<detail::range_index_t<Lo, Hi, St>>;

// Triton's tl.static_range: an ordinary C++ loop, unrolled while tracing.
inline auto static_range(int64_t begin, int64_t end, int64_t step = 1, Loc loc = Loc::current()) {
  if (step == 0)
    detail::fail(loc, "tl::static_range with step 0 never ends");
  // Python's range: empty when the step points away from end.
  int64_t count = step > 0 ? (end > begin ? (end - begin - 1) / step + 1 : 0)
                           : (begin > end ? (begin - end - 1) / -step + 1 : 0);
  return std::views::iota(int64_t{0}, count) |
         std::views::transform([=](int64_t i) { return begin + i * step; });
}
inline auto static_range(int64_t end) {
  return static_range(0, end, 1);
}

// if (cond) then_fn() else else_fn(), with cond a traced i1 scalar.
inline void if_(
    const i1& cond, const std::function<void()>& then_fn,
    const std::function<void()>& else_fn = [] {}, Loc loc = Loc::current()) {
  detail::if_op(cond.use(loc), then_fn, else_fn, loc);
}

// while (cond_fn()) body_fn(); cond_fn returns a traced i1 scalar.
template <class C>
void while_(C cond_fn, const std::function<void()>& body_fn, Loc loc = Loc::current()) {
  detail::while_op([&]() -> ir::Value* { return cond_fn().use(loc); }, body_fn, loc);
}

} // namespace tritium::lang
