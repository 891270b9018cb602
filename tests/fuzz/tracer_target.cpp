// The tracer fuzzer: the input bytes are a program of DSL calls (creation, arithmetic, shape
// ops, memory, reductions, dot, loops and branches) over a few slots of each element type,
// run as the body of a kernel that is then traced. Sizes, axes and shapes come from the
// bytes too, so invalid ones (non-powers of two, axes out of range, shapes that do not
// broadcast, slots never assigned) reach the tracer's checks as well as valid ones.
#include "fuzz_targets.hpp"

#include <tritium/ir/printer.hpp>
#include <tritium/tritium.hpp>

#include <array>
#include <string>

namespace tritium::fuzz {
namespace {

namespace tl = tritium::tl;

// The input, one choice at a time; past its end every choice is 0, so any input is a program
// that ends.
class Choices {
public:
  Choices(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  int pick(int n) { return n <= 1 ? 0 : byte() % n; }
  bool done() const { return p_ >= end_; }
  int64_t dim() { // mostly powers of two up to 64, sometimes anything
    uint8_t b = byte();
    return b < 224 ? int64_t{1} << (b % 7) : static_cast<int64_t>(b) - 240;
  }
  tl::Shape shape() {
    tl::Shape s(pick(4));
    for (auto& d : s)
      d = dim();
    return s;
  }

private:
  const uint8_t* p_;
  const uint8_t* end_;
};

thread_local Choices* in = nullptr;

constexpr int kSlots = 4;
constexpr int kMaxDepth = 3;
constexpr int kMaxSteps = 64;

struct Slots {
  std::array<tl::f32, kSlots> f;
  std::array<tl::i32, kSlots> i;
  std::array<tl::i1, 2> m;
  std::array<tl::f16, 2> h;
  tl::ptr<float> pf;
  tl::ptr<int32_t> pi;
  tl::i32 n;
};

tl::f32& F(Slots& s) {
  return s.f[in->pick(kSlots)];
}
tl::i32& I(Slots& s) {
  return s.i[in->pick(kSlots)];
}
tl::i1& M(Slots& s) {
  return s.m[in->pick(2)];
}
tl::f16& H(Slots& s) {
  return s.h[in->pick(2)];
}

template <class T>
std::optional<int> axis_or_all(const T& x) {
  int a = in->pick(x.rank() + 2);
  if (a == 0)
    return std::nullopt;
  return a - 1; // sometimes one past the last axis
}

void steps(Slots& s, int depth);

void step(Slots& s, int depth) {
  switch (in->pick(40)) {
  case 0: {
    int64_t size = in->dim();
    I(s) = tl::arange(in->pick(3) * size, in->pick(3) * size + size);
    break;
  }
  case 1:
    F(s) = tl::zeros<float>(in->shape());
    break;
  case 2:
    I(s) = tl::full<int32_t>(in->shape(), in->pick(256) - 128);
    break;
  case 3: {
    tl::i32& off = I(s);
    if (in->pick(2))
      F(s) = tl::load(s.pf + off);
    else
      F(s) = tl::load(s.pf + off, M(s), -1.0f);
    break;
  }
  case 4: {
    tl::i32& off = I(s);
    I(s) = in->pick(2) ? tl::load(s.pi + off, M(s)) : tl::load(s.pi + off);
    break;
  }
  case 5: {
    tl::f32 &a = F(s), &b = F(s);
    switch (in->pick(8)) {
    case 0:
      F(s) = a + b;
      break;
    case 1:
      F(s) = a - b;
      break;
    case 2:
      F(s) = a * b;
      break;
    case 3:
      F(s) = a / b;
      break;
    case 4:
      F(s) = tl::maximum(a, b);
      break;
    case 5:
      F(s) = tl::minimum(a, b);
      break;
    case 6:
      F(s) = tl::fma(a, b, F(s));
      break;
    default:
      F(s) = a * 0.5f + 1;
      break;
    }
    break;
  }
  case 6: {
    tl::i32 &a = I(s), &b = I(s);
    switch (in->pick(9)) {
    case 0:
      I(s) = a + b;
      break;
    case 1:
      I(s) = a - b;
      break;
    case 2:
      I(s) = a * b;
      break;
    case 3:
      I(s) = a / b;
      break;
    case 4:
      I(s) = a % b;
      break;
    case 5:
      I(s) = a & b;
      break;
    case 6:
      I(s) = a ^ b;
      break;
    case 7:
      I(s) = a << b;
      break;
    default:
      I(s) = a >> 3;
      break;
    }
    break;
  }
  case 7:
    switch (in->pick(4)) {
    case 0:
      M(s) = F(s) < F(s);
      break;
    case 1:
      M(s) = I(s) == I(s);
      break;
    case 2:
      M(s) = I(s) < s.n;
      break;
    default:
      M(s) = M(s) && !M(s);
      break;
    }
    break;
  case 8:
    F(s) = tl::where(M(s), F(s), F(s));
    break;
  case 9:
    switch (in->pick(4)) {
    case 0:
      F(s) = I(s).to<float>();
      break;
    case 1:
      I(s) = F(s).to<int32_t>();
      break;
    case 2:
      H(s) = F(s).to<tritium::half>();
      break;
    default:
      F(s) = H(s).to<float>();
      break;
    }
    break;
  case 10: {
    tl::f32& x = F(s);
    switch (in->pick(6)) {
    case 0:
      F(s) = tl::exp(x);
      break;
    case 1:
      F(s) = tl::log(x);
      break;
    case 2:
      F(s) = tl::sqrt(x);
      break;
    case 3:
      F(s) = tl::abs(x);
      break;
    case 4:
      F(s) = -x;
      break;
    default:
      F(s) = tl::sigmoid(x);
      break;
    }
    break;
  }
  case 11: {
    tl::f32& x = F(s);
    auto axis = axis_or_all(x);
    bool keep = in->pick(2);
    switch (in->pick(3)) {
    case 0:
      F(s) = tl::sum(x, axis, keep);
      break;
    case 1:
      F(s) = tl::max(x, axis, keep);
      break;
    default:
      F(s) = tl::min(x, axis, keep);
      break;
    }
    break;
  }
  case 12: {
    tl::i32& x = I(s);
    I(s) = tl::argmax(x, in->pick(x.rank() + 1), in->pick(2));
    break;
  }
  case 13: {
    tl::f32& x = F(s);
    F(s) = tl::cumsum(x, in->pick(x.rank() + 1), in->pick(2));
    break;
  }
  case 14: {
    tl::i32& x = I(s);
    I(s) = tl::reduce(
        x, in->pick(x.rank() + 1), [](tl::i32 a, tl::i32 b) { return a ^ b; }, in->pick(2));
    break;
  }
  case 15: {
    tl::f32& x = F(s);
    F(s) = tl::expand_dims(x, in->pick(x.rank() + 2) - 1);
    break;
  }
  case 16:
    F(s) = tl::broadcast_to(F(s), in->shape());
    break;
  case 17:
    I(s) = tl::reshape(I(s), in->shape());
    break;
  case 18:
    F(s) = tl::trans(F(s));
    break;
  case 19: {
    tl::f32 &a = F(s), &b = F(s);
    switch (in->pick(3)) {
    case 0:
      F(s) = tl::join(a, b);
      break;
    case 1:
      F(s) = tl::cat(a, b);
      break;
    default:
      F(s) = tl::interleave(a, b);
      break;
    }
    break;
  }
  case 20: {
    auto [a, b] = tl::split(F(s));
    F(s) = in->pick(2) ? a : b;
    break;
  }
  case 21:
    F(s) = F(s)[{tl::_, tl::None}];
    break;
  case 22: {
    tl::f32 &a = F(s), &b = F(s);
    if (in->pick(2))
      F(s) = tl::dot(a, b);
    else
      F(s) = tl::dot(H(s), H(s), F(s), in->pick(2) ? "ieee" : "tf32");
    break;
  }
  case 23: {
    tl::i32& off = I(s);
    if (in->pick(2))
      tl::store(s.pf + off, F(s));
    else
      tl::store(s.pf + off, F(s), M(s));
    break;
  }
  case 24: {
    tl::i32& off = I(s);
    I(s) = tl::atomic_add(s.pi + off, I(s), M(s));
    break;
  }
  case 25:
    if (depth < kMaxDepth) {
      tl::i32& lo = I(s);
      for (auto k : tl::range(lo, s.n, in->pick(3) + 1)) {
        I(s) = I(s) + k;
        steps(s, depth + 1);
      }
    }
    break;
  case 26:
    if (depth < kMaxDepth)
      for (int64_t k : tl::static_range(in->pick(3), in->pick(3), in->pick(3) - 1)) {
        F(s) = F(s) + static_cast<float>(k);
        steps(s, depth + 1);
      }
    break;
  case 27:
    if (depth < kMaxDepth)
      tl::if_(
          M(s), [&] { steps(s, depth + 1); }, [&] { steps(s, depth + 1); });
    break;
  case 28:
    if (depth < kMaxDepth) {
      tl::i32& counter = I(s);
      tl::while_([&] { return counter < s.n; },
                 [&] {
                   counter = counter + 1;
                   steps(s, depth + 1);
                 });
    }
    break;
  case 29:
    I(s) = tl::program_id(in->pick(4)) * in->dim() + I(s);
    break;
  case 30:
    F(s) = F(s) + tl::scalar<float>(in->pick(8));
    break;
  case 31: // forget a value: later uses must be reported, not crash
    if (in->pick(2))
      F(s) = tl::f32();
    else
      I(s) = tl::i32();
    break;
  case 32: {
    tl::f32& x = F(s);
    F(s) = tl::permute(x, in->shape());
    break;
  }
  case 33:
    F(s) = tl::flip(F(s), in->pick(2) ? std::optional<int>(in->pick(4) - 1) : std::nullopt);
    break;
  case 34:
    I(s) = tl::multiple_of(I(s), in->dim());
    break;
  case 35:
    I(s) = tl::histogram(I(s), static_cast<int>(in->dim()));
    break;
  case 36: {
    tl::f32& x = F(s);
    F(s) = tl::gather(x, I(s), in->pick(3));
    break;
  }
  case 37:
    F(s) = tl::sort(F(s));
    break;
  case 38:
    tl::device_assert(M(s), "fuzz");
    break;
  default:
    I(s) = tl::cdiv(I(s), I(s));
    break;
  }
}

void steps(Slots& s, int depth) {
  int count = 1 + in->pick(depth == 0 ? kMaxSteps : 4);
  for (int k = 0; k < count && !in->done(); ++k)
    step(s, depth);
}

void fuzz_kernel(tl::ptr<float> pf, tl::ptr<int32_t> pi, tl::i32 n) {
  Slots s{.pf = pf, .pi = pi, .n = n};
  for (auto& f : s.f)
    f = tl::zeros<float>({16});
  s.i[0] = tl::arange(0, 16);
  steps(s, 0);
}

void trivial_kernel(tl::ptr<float> p) {
  tl::store(p + tl::arange(0, 4), tl::zeros<float>({4}));
}

} // namespace

void tracer(const uint8_t* data, size_t size) {
  Choices choices(data, size);
  in = &choices;
  std::array<lang::ArgSpec, 3> specs{};
  specs[2].info.divisibility = 16;
  try {
    std::unique_ptr<ir::Function> f =
        lang::trace(fuzz_kernel, "fuzz_kernel", std::span<const lang::ArgSpec>(specs));
    std::string text = ir::print(*f);
    std::unique_ptr<ir::Function> again;
    try {
      again = ir::parse(text);
      ir::verify(*again);
    } catch (const Error& e) {
      fuzz_failure(std::string("a traced kernel's text does not parse back: ") + e.what(), text);
    }
    if (ir::print(*again) != text)
      fuzz_failure("print(parse(print(trace))) != print(trace)", text);
  } catch (const Error& e) {
    // Every error of a trace names the kernel.
    if (std::string_view(e.what()).find("fuzz_kernel") == std::string_view::npos)
      fuzz_failure("a trace error does not name the kernel", e.what());
  }
  in = nullptr;
  // Whatever happened, the thread traces the next kernel from a clean state.
  std::array<lang::ArgSpec, 1> one{};
  try {
    lang::trace(trivial_kernel, "trivial_kernel", std::span<const lang::ArgSpec>(one));
  } catch (const Error& e) {
    fuzz_failure("a failed trace left the tracer unusable", e.what());
  }
}

} // namespace tritium::fuzz
