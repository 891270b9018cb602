// tritium::jit(kernel): a launchable kernel. The first launch of each specialization traces the
// kernel function, compiles it for the device of its buffers, and caches the result; later
// launches of the same specialization only pack arguments and launch.
//
//   auto add = tritium::jit(add_kernel);
//   add[{tritium::cdiv(n, 1024)}](x, y, out, n, 1024);
#pragma once

#include <tritium/ir/bounds_checks.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/lang/kernel.hpp>
#include <tritium/lang/ops.hpp>
#include <tritium/runtime/device.hpp>

#include <boost/functional/hash.hpp>
#include <boost/hana.hpp>

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <source_location>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace tritium {

using lang::cdiv;

// What compiling kernels has cost this process so far: the specializations traced and compiled
// on launch (autotuned configurations included), and the wall time it took from tracing to the
// kernel loaded on its device (the device's assembler and the binary cache included).
struct CompileStats {
  uint64_t kernels = 0;
  double seconds = 0;
};
CompileStats compile_stats();

namespace detail {

void note_compile(std::chrono::steady_clock::duration took);

std::string function_symbol_name(const void* fn); // best effort, "" if unknown
// The function's symbol name, else one from where it was made into a kernel ("kernel_<file
// stem>_<line>"): two unnamed kernels no longer share one name in dumps, caches and errors.
std::string default_kernel_name(const void* fn, const std::source_location& where);
void check_grid(const LaunchGrid& g, std::string_view kernel);
void check_options(const CompileOptions& o, std::string_view kernel);
// Writes every stage of a freshly compiled kernel under $TRITIUM_DUMP, if set.
void dump_artifacts(std::string_view kernel, const ir::Function& f, const CompileOptions& o,
                    const CompiledKernel& k, const Backend& backend);

// TRITIUM_CHECK=1 or CompileOptions::check_bounds: kernels check every access against its
// buffer (ir::insert_bounds_checks). The variable is read once.
bool checks_bounds(const CompileOptions& o);
// A kernel's checked IR, its sites, and the record its launches report into.
struct BoundsCheck {
  std::shared_ptr<const ir::Function> function;
  std::vector<ir::CheckSite> sites;
  Device device;
  void* record = nullptr; // kCheckRecordWords words, as kernels address them
  // The same words on the host (mapped host memory: read after the wait, with no copy), or
  // null where the record is device memory and is copied back.
  void* mapped = nullptr;
  std::weak_ptr<const void> backend_alive; // the record is freed only while its backend lives
  std::mutex mutex;                        // one checked launch at a time uses the record
  std::atomic<uint64_t> launches{0};       // of this specialization, for retrace_due
  ~BoundsCheck();
};
// Whether this checked launch traces the kernel again (the 2nd, 4th, 8th, ... of its
// specialization): often enough to catch host state that changes, rarely enough to cost
// nothing measurable.
bool retrace_due(BoundsCheck& check);
// Raises the error for a kernel whose trace now differs from the one it was compiled from.
void check_same_trace(uint64_t traced_hash, uint64_t compiled_hash, std::string_view kernel);
std::unique_ptr<BoundsCheck> bounds_check(const ir::Function& f, Device dev,
                                          std::string_view kernel);
// Zeroes the record, launches with its address in the last slot, waits, and raises the
// first failed access as an Error.
void checked_launch(BoundsCheck& check, CompiledKernel& k, const LaunchGrid& grid,
                    std::span<ArgSlot> slots, void* stream, std::string_view kernel);

template <class A>
struct buffer_elem {};
template <class T>
struct buffer_elem<Buffer<T>> {
  using type = T;
};

// Whether a launch argument of type A fits a kernel parameter of type P.
template <class P, class A>
constexpr bool accepts() {
  using Arg = std::remove_cvref_t<A>;
  using Traits = lang::param_traits<P>;
  if constexpr (Traits::is_constexpr) {
    return std::is_convertible_v<Arg, typename Traits::value_type>;
  } else {
    using E = typename Traits::element;
    if constexpr (lang::PointerElement<E>) {
      if constexpr (requires { typename buffer_elem<Arg>::type; })
        return std::is_same_v<typename buffer_elem<Arg>::type, typename E::element_type>;
      else
        return false;
    } else if constexpr (lang::dtype_traits<E>::is_int) {
      return std::is_integral_v<Arg>;
    } else {
      return std::is_arithmetic_v<Arg>;
    }
  }
}

// Instantiated for each argument: a mismatch stops compilation here, and the compiler's
// "required from" line shows the parameter's position and both types.
template <size_t Position, class Param, class Argument>
struct launch_argument_check {
  static_assert(accepts<Param, Argument>(),
                "tritium: a launch argument does not fit its kernel parameter (see "
                "launch_argument_check<position, parameter type, argument type> below): pointers "
                "take tritium::Buffer<T> of the same T, integer parameters take integers, "
                "floating-point parameters take numbers, constexpr_<T> takes values convertible "
                "to T");
  static constexpr bool ok = true;
};

} // namespace detail

namespace detail {
template <class P>
constexpr bool is_pointer_param() {
  if constexpr (lang::param_traits<P>::is_constexpr)
    return false;
  else
    return lang::PointerElement<typename lang::param_traits<P>::element>;
}
} // namespace detail

template <class... P>
class JitFunction {
  static constexpr size_t N = sizeof...(P);
  // Where each runtime (non-constexpr) parameter's value goes in the argument slots.
  static constexpr std::array<size_t, N + 1> slot_index = [] {
    std::array<size_t, N + 1> idx{};
    constexpr bool is_const[] = {lang::param_traits<P>::is_constexpr..., false};
    for (size_t i = 0; i < N; ++i)
      idx[i + 1] = idx[i] + (is_const[i] ? 0 : 1);
    return idx;
  }();
  static constexpr size_t num_slots = slot_index[N];
  // The first pointer parameter (N if none): a device mismatch there is with the stream.
  static constexpr size_t first_pointer = [] {
    constexpr bool is_ptr[] = {detail::is_pointer_param<P>()..., false};
    for (size_t i = 0; i < N; ++i)
      if (is_ptr[i])
        return i;
    return N;
  }();
  static constexpr size_t num_pointers =
      (size_t{0} + ... + (detail::is_pointer_param<P>() ? 1 : 0));
  // The launch's slots: the runtime parameters, then with TRITIUM_CHECK one extent per pointer
  // and the check record's address (see ir::insert_bounds_checks).
  using Slots = std::array<ArgSlot, N + num_pointers + 2>;
  // Per parameter one key word, then the backend and the options.
  using Key = std::array<uint64_t, N + 3>;
  struct KeyHash {
    size_t operator()(const Key& k) const { return boost::hash_range(k.begin(), k.end()); }
  };

public:
  using Fn = void (*)(P...);

  JitFunction(Fn fn, std::string name)
      : fn_(fn), name_(std::move(name)), options_word_(options_word(options_)) {}

  // kernel[grid](args…) launches on the device's own stream; kernel[grid].on(stream)(args…)
  // on `stream`, which must belong to the device of the buffer arguments.
  class Launcher {
  public:
    Launcher(JitFunction* f, LaunchGrid g) : f_(f), g_(g) {}
    Launcher on(const Stream& s) const {
      Launcher l = *this;
      l.stream_ = &s;
      return l;
    }
    template <class... A>
    void operator()(A&&... args) const {
      f_->launch_on(stream_, g_, std::forward<A>(args)...);
    }

  private:
    JitFunction* f_;
    LaunchGrid g_;
    const Stream* stream_ = nullptr;
  };

  Launcher operator[](LaunchGrid grid) { return Launcher(this, grid); }

  // Compile options (num_warps, num_stages) for later launches; part of the cache key.
  JitFunction& options(CompileOptions o) {
    detail::check_options(o, name_);
    options_ = o;
    options_word_ = options_word(o);
    return *this;
  }
  const CompileOptions& options() const { return options_; }
  const std::string& name() const { return name_; }
  size_t num_compiled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cache_.size();
  }
  // A hash of the IR text of the specialization the last launch or compiled() used (0 before
  // any): what an autotuner's stored choice was measured on, so that an edited kernel does
  // not inherit it.
  uint64_t last_ir_hash() const {
    const Entry* e = last_.load(std::memory_order_acquire);
    return e ? e->second.ir_hash : 0;
  }

  // The traced, verified IR of the specialization these arguments select.
  template <class... A>
  std::shared_ptr<const ir::Function> trace(A&&... args) {
    check_arity<A...>();
    Slots slots;
    Key key;
    Device dev;
    bind(slots, key, dev, std::index_sequence_for<P...>{}, args...);
    auto specs = make_specs(key, slots);
    return lang::trace(fn_, name_, std::span<const lang::ArgSpec>(specs));
  }

  // The compiled kernel these arguments select on their device (compiling it if needed).
  template <class... A>
  CompiledKernel& compiled(A&&... args) {
    check_arity<A...>();
    Slots slots;
    Key key;
    Device dev;
    bind(slots, key, dev, std::index_sequence_for<P...>{}, args...);
    return *lookup(key, slots, dev).kernel;
  }

  // The hot path: a cached launch packs the argument slots and the cache key on the stack,
  // finds the kernel without taking a lock (see lookup), and launches it.
  template <class... A>
  void launch(const LaunchGrid& grid, A&&... args) {
    launch_on(nullptr, grid, std::forward<A>(args)...);
  }
  template <class... A>
  void launch(const Stream& stream, const LaunchGrid& grid, A&&... args) {
    launch_on(&stream, grid, std::forward<A>(args)...);
  }

  // Launches from raw slots, one per parameter, constexpr ones included (integers sign-extended,
  // floating-point values as the bits of a double, pointers as addresses on the stream's
  // device): what ahead-of-time launchers hand over for a specialization they were not built
  // with. Without buffers the sizes are unknown, so pointers are not assumed to be under 2 GiB.
  void launch_slots(const Stream& stream, const LaunchGrid& grid, std::span<const ArgSlot> params) {
    if (params.size() != N)
      throw Error("kernel '" + name_ + "': " + std::to_string(params.size()) + " arguments for " +
                  std::to_string(N) + " parameters");
    detail::check_grid(grid, name_);
    Slots slots;
    Key key;
    Device dev = stream.device();
    [&]<size_t... I>(std::index_sequence<I...>) {
      (bind_slot<P>(slots[slot_index[I]], key[I], params[I]), ...);
    }
    (std::index_sequence_for<P...>{});
    key[N] = reinterpret_cast<uintptr_t>(&dev.backend());
    key[N + 1] = static_cast<uint64_t>(options_.num_warps);
    key[N + 2] = options_word_;
    Compiled& k = lookup(key, slots, dev);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return;
    if (k.check) [[unlikely]] {
      // Raw addresses come without sizes: only offsets before the argument are caught, and
      // every access through a null one.
      size_t at = num_slots;
      [&]<size_t... I>(std::index_sequence<I...>) {
        ((detail::is_pointer_param<P>()
              ? void(slots[at++] = slots[slot_index[I]] == 0
                                       ? 0
                                       : static_cast<ArgSlot>(std::numeric_limits<int64_t>::max()))
              : void()),
         ...);
      }
      (std::index_sequence_for<P...>{});
      retrace(key, slots, k);
      return detail::checked_launch(*k.check, *k.kernel, grid, slots_with_extents(slots),
                                    stream.launch_handle(), name_);
    }
    k.kernel->launch(grid, std::span<const ArgSlot>(slots.data(), num_slots),
                     stream.launch_handle());
  }

private:
  // The options other than num_warps, in the specialization key's last word (computed when
  // the options are set: TRITIUM_CHECK is read there, not on every launch).
  static uint64_t options_word(const CompileOptions& o) {
    return static_cast<uint64_t>(static_cast<uint32_t>(o.num_stages)) |
           (o.enable_fp_fusion ? 0 : uint64_t{1} << 32) |
           (detail::checks_bounds(o) ? uint64_t{1} << 33 : 0);
  }

  // The slots a checked kernel takes: its own, the extents, and the record's (last) slot.
  static std::span<ArgSlot> slots_with_extents(Slots& slots) {
    return std::span<ArgSlot>(slots.data(), num_slots + num_pointers + 1);
  }

  // Each pointer argument's extent in bytes, after the kernel's own slots.
  template <class... A>
  static void put_extents(Slots& slots, const A&... args) {
    size_t k = num_slots;
    auto one = [&]<class Param, class Arg>(const Arg& a) {
      if constexpr (detail::is_pointer_param<Param>())
        slots[k++] = static_cast<ArgSlot>(a.bytes());
    };
    (one.template operator()<P>(args), ...);
  }

  // The key word of one raw slot, encoded as bind_one encodes it.
  template <class Param>
  static void bind_slot(ArgSlot& slot, uint64_t& key, ArgSlot v) {
    using Traits = lang::param_traits<Param>;
    if constexpr (Traits::is_constexpr) {
      (void)slot;
      key = v;
    } else {
      using E = typename Traits::element;
      slot = v;
      if constexpr (lang::PointerElement<E>)
        key = v % 16 == 0 ? 16 : 1;
      else if constexpr (lang::dtype_traits<E>::is_int)
        key = v == 1 ? 1 : (static_cast<int64_t>(v) % 16 == 0 ? 16 : 2);
      else
        key = 0;
    }
  }

  template <class... A>
  void launch_on(const Stream* stream, const LaunchGrid& grid, A&&... args) {
    check_arity<A...>();
    detail::check_grid(grid, name_);
    Slots slots;
    Key key;
    Device dev;
    if (stream)
      dev = stream->device();
    bind(slots, key, dev, std::index_sequence_for<P...>{}, args...);
    Compiled& k = lookup(key, slots, dev);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
      return;
    void* handle = stream ? stream->launch_handle() : nullptr;
    if (k.check) [[unlikely]] {
      retrace(key, slots, k);
      put_extents(slots, args...);
      return detail::checked_launch(*k.check, *k.kernel, grid, slots_with_extents(slots), handle,
                                    name_);
    }
    k.kernel->launch(grid, std::span<const ArgSlot>(slots.data(), num_slots), handle);
  }

  template <class... A>
  static constexpr void check_arity() {
    static_assert(sizeof...(A) == N,
                  "tritium: the launch passes a different number of arguments than the kernel "
                  "has parameters");
  }

  // Fills the argument slots and the cache key. The key holds everything the specialization
  // depends on, so the trace inputs (ArgSpecs) are rebuilt from it only on a cache miss.
  template <size_t... I, class... A>
  void bind(Slots& slots, Key& key, Device& dev, std::index_sequence<I...>, A&... args) {
    (void)std::initializer_list<bool>{detail::launch_argument_check<I, P, A>::ok...};
    (bind_one<I, P>(slots[slot_index[I]], key[I], dev, args), ...);
    if (dev == Device())
      dev = default_device();
    key[N] = reinterpret_cast<uintptr_t>(&dev.backend());
    key[N + 1] = static_cast<uint64_t>(options_.num_warps);
    key[N + 2] = options_word_;
  }

  // A constexpr_ value is compiled into the kernel: it must be the value the caller passed.
  // An integer parameter refuses a fraction (64.9) or a value past its range (2^32 + 64 for
  // constexpr_<int>); a floating-point one rounds, as Triton's Python floats do, but refuses
  // a finite value that overflows.
  // Checked before converting: a floating-point value out of the type's range does not convert.
  template <size_t I, class T, class A>
  void check_exact(const A& a) const {
    if constexpr (std::is_arithmetic_v<A> && !std::is_same_v<T, bool>) {
      bool exact = true, in_range = true;
      if constexpr (std::is_integral_v<T> && std::is_floating_point_v<A>) {
        const A bound = std::ldexp(A{1}, std::numeric_limits<T>::digits); // 2^31 for int
        in_range = a < bound && a >= (std::is_signed_v<T> ? -bound : A{0});
        exact = in_range && a == std::trunc(a);
      } else if constexpr (std::is_integral_v<T>) {
        exact = std::in_range<T>(a); // the conversion itself is defined (modulo 2^bits)
      } else if constexpr (std::is_floating_point_v<A>) {
        in_range = !std::isfinite(a) || std::fabs(a) <= std::numeric_limits<T>::max();
        exact = in_range;
      }
      if (!exact) [[unlikely]] {
        std::ostringstream os;
        os.precision(15);
        os << "kernel '" << name_ << "': argument " << I
           << " is a constexpr_ parameter whose type cannot hold " << +a << " exactly (";
        if (in_range)
          os << "it would become " << +static_cast<T>(a) << ")";
        else
          os << "it is out of the type's range)";
        throw Error(os.str());
      }
    }
  }

  template <size_t I, class Param, class A>
  void bind_one(ArgSlot& slot, uint64_t& key, Device& dev, const A& a) {
    using Traits = lang::param_traits<Param>;
    if constexpr (Traits::is_constexpr) {
      using T = typename Traits::value_type;
      check_exact<I, T>(a);
      T v = static_cast<T>(a);
      (void)slot; // constexpr parameters are not passed at launch
      if constexpr (std::is_floating_point_v<T>)
        key = std::bit_cast<uint64_t>(static_cast<double>(v));
      else
        key = static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      using E = typename Traits::element;
      if constexpr (lang::PointerElement<E>) {
        if (a.device() == Device()) [[unlikely]]
          throw Error("kernel '" + name_ + "': argument " + std::to_string(I) +
                      " is an empty tritium::Buffer (default-constructed or moved from), which "
                      "holds no memory");
        if (dev == Device())
          dev = a.device();
        else if (!(dev == a.device()))
          throw Error("kernel '" + name_ + "': argument " + std::to_string(I) +
                      " is a buffer on device '" + a.device().str() + "' but " +
                      (I == first_pointer ? std::string("the launch's stream belongs to '")
                                          : std::string("an earlier buffer argument is on '")) +
                      dev.str() + "'");
        uint64_t addr = reinterpret_cast<uintptr_t>(a.data());
        slot = addr;
        // The pointer's divisibility, and 0x100 when the buffer is under 2 GiB (range32).
        key = (addr % 16 == 0 ? 16 : 1) | (a.bytes() < (uint64_t{1} << 31) ? 0x100 : 0);
      } else if constexpr (lang::dtype_traits<E>::is_int) {
        using Lim =
            std::numeric_limits<std::conditional_t<lang::dtype_traits<E>::bits == 1, bool, E>>;
        if constexpr (!std::is_same_v<E, bool>) {
          if (std::cmp_less(a, Lim::min()) || std::cmp_greater(a, Lim::max()))
            throw Error("kernel '" + name_ + "': argument " + std::to_string(I) + " = " +
                        std::to_string(a) + " does not fit the parameter's type " +
                        ir::to_string(lang::dtype_of<E>()));
        }
        int64_t v = static_cast<int64_t>(a);
        slot = static_cast<uint64_t>(v);
        key = v == 1 ? 1 : (v % 16 == 0 ? 16 : 2); // specialized to 1, divisible by 16, or not
      } else {
        slot = std::bit_cast<uint64_t>(static_cast<double>(a));
        key = 0;
      }
    }
  }

  // The trace inputs of the specialization `key` selects (slots give integer values).
  static std::array<lang::ArgSpec, N> make_specs(const Key& key, const Slots& slots) {
    std::array<lang::ArgSpec, N> specs;
    [&]<size_t... I>(std::index_sequence<I...>) {
      (make_spec<P>(specs[I], key[I], slots[slot_index[I]]), ...);
    }
    (std::index_sequence_for<P...>{});
    return specs;
  }

  template <class Param>
  static void make_spec(lang::ArgSpec& spec, uint64_t key, ArgSlot slot) {
    using Traits = lang::param_traits<Param>;
    if constexpr (Traits::is_constexpr) {
      if constexpr (std::is_floating_point_v<typename Traits::value_type>)
        spec.value = std::bit_cast<double>(key);
      else
        spec.value = static_cast<int64_t>(key);
    } else {
      using E = typename Traits::element;
      if constexpr (lang::PointerElement<E>) {
        spec.info.divisibility = static_cast<int64_t>(key & 0xff);
        spec.info.range32 = (key & 0x100) != 0;
      } else if constexpr (lang::dtype_traits<E>::is_int) {
        int64_t v = static_cast<int64_t>(slot);
        spec.info.is_constant = (v == 1);
        spec.info.constant = v;
        spec.info.divisibility = key == 16 ? 16 : 1;
      }
    }
  }

  // The compiled kernel for `key`. The common case, the same specialization as the last launch,
  // reads one atomic pointer and compares keys: no lock, no hashing. Entries of cache_ never
  // move (unordered_map nodes are stable) and are never erased, so the pointer stays valid.
  struct Compiled;
  // A kernel that reads host state besides its arguments (a global, a static) is compiled
  // with that state as it was at its first launch; C++ cannot tell such a read from a
  // constant, as Triton's AST can. Checked launches trace the kernel again now and then: a
  // trace that differs means the compiled kernel would compute with a stale value.
  void retrace(const Key& key, const Slots& slots, Compiled& k) {
    if (!detail::retrace_due(*k.check))
      return;
    std::lock_guard<std::mutex> lock(mutex_); // traced as lookup traces
    auto specs = make_specs(key, slots);
    auto f = lang::trace(fn_, name_, std::span<const lang::ArgSpec>(specs));
    detail::check_same_trace(boost::hash_value(ir::print(*f)), k.ir_hash, name_);
  }

  Compiled& lookup(const Key& key, const Slots& slots, Device dev) {
    if (Entry* last = last_.load(std::memory_order_acquire); last && last->first == key)
      return last->second;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      const auto started = std::chrono::steady_clock::now();
      auto specs = make_specs(key, slots);
      std::shared_ptr<const ir::Function> f =
          lang::trace(fn_, name_, std::span<const lang::ArgSpec>(specs));
      const uint64_t ir_hash = boost::hash_value(ir::print(*f));
      std::unique_ptr<detail::BoundsCheck> check;
      if (detail::checks_bounds(options_)) {
        check = detail::bounds_check(*f, dev, name_);
        f = check->function;
      }
      auto k = dev.backend().compile(f, options_);
      detail::note_compile(std::chrono::steady_clock::now() - started);
      detail::dump_artifacts(name_, *f, options_, *k, dev.backend());
      it = cache_.emplace(key, Compiled{std::move(k), ir_hash, std::move(check)}).first;
    }
    last_.store(&*it, std::memory_order_release);
    return it->second;
  }

  Fn fn_;
  std::string name_;
  CompileOptions options_;
  uint64_t options_word_;
  mutable std::mutex mutex_;
  struct Compiled {
    std::unique_ptr<CompiledKernel> kernel;
    uint64_t ir_hash;
    std::unique_ptr<detail::BoundsCheck> check; // with TRITIUM_CHECK
  };
  using Cache = std::unordered_map<Key, Compiled, KeyHash>;
  using Entry = Cache::value_type;
  Cache cache_;
  std::atomic<Entry*> last_{nullptr};
};

namespace detail {

template <class... P>
constexpr bool all_kernel_params = (lang::KernelParam<P> && ...);
template <class F>
concept FunctionPointer = std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>;
template <class F>
concept CapturelessLambda = !std::is_pointer_v<F> && requires(F f) {
  { +f } -> FunctionPointer;
};

// What jit() and autotune() return for a kernel they cannot take: its static_assert says why,
// and it accepts any launch, so that no second error follows the first.
template <class... P>
struct RejectedKernel {
  static_assert(all_kernel_params<P...>,
                "tritium: every kernel parameter must be tl::ptr<T>, a scalar tensor type "
                "(tl::i32, tl::i64, tl::f32, ...) or tl::constexpr_<T>. For a plain C++ `int` or "
                "`float` parameter write tl::i32 / tl::f32 (a value given at each launch) or "
                "tl::constexpr_<int> (a value the kernel is compiled for); the parameter types "
                "are the arguments of RejectedKernel<...> here");
  RejectedKernel& operator[](LaunchGrid) { return *this; }
  template <class... A>
  void operator()(A&&...) {}
};

template <class F>
struct RejectedCallable {
  static_assert(CapturelessLambda<F>,
                "tritium: a kernel is a function, or a lambda without captures and without "
                "`auto` parameters: a capture would be frozen into the kernel when it is traced. "
                "Pass what the kernel reads as parameters (tl::ptr<T>, tl::i32, "
                "tl::constexpr_<T>)");
  RejectedCallable& operator[](LaunchGrid) { return *this; }
  template <class... A>
  void operator()(A&&...) {}
};

} // namespace detail

// Makes a launchable kernel. The name (used in errors, dumps and caches) is the function's
// symbol name where the program exports it, else made from this call's file and line; pass
// one to be sure.
template <class... P>
requires detail::all_kernel_params<P...> JitFunction<P...>
jit(void (*fn)(P...), std::string name = {},
    std::source_location where = std::source_location::current()) {
  if (name.empty())
    name = detail::default_kernel_name(reinterpret_cast<const void*>(fn), where);
  return JitFunction<P...>(fn, std::move(name));
}
template <class... P>
requires(!detail::all_kernel_params<P...>) detail::RejectedKernel<P...> jit(
    void (*)(P...), std::string = {}, std::source_location = std::source_location::current()) {
  return {};
}
// A lambda without captures is the function it converts to.
template <class F>
requires(!std::is_pointer_v<std::decay_t<F>> && !std::is_function_v<F>) auto jit(
    F f, std::string name = {}, std::source_location where = std::source_location::current()) {
  if constexpr (detail::CapturelessLambda<F>)
    return jit(+f, std::move(name), where);
  else
    return detail::RejectedCallable<F>{};
}

} // namespace tritium
