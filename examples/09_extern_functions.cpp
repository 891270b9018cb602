// Tutorial 09: calling math functions the language lacks (libdevice, extern functions).
//
// Triton's tutorial 07, in C++. The language has ops for the common math functions (exp, log,
// sin, sqrt, ...); for the rest of the C math library a kernel calls the function by name:
//   y = tl::libdevice::asin(x);                 // Triton: libdevice.asin(x)
//   y = tl::extern_elementwise("atan2", a, b);  // any listed C math function, by its C name
// Every device runs the call from its own library: the interpreter and the CPU call the host's
// libm (in double, rounded to the operand type, so both give the same bits), NVIDIA GPUs link
// CUDA's libdevice (__nv_asinf; TRITIUM_LIBDEVICE or CUDA_HOME say where it is), AMD GPUs link
// ROCm's ocml (__ocml_asin_f32; Debian's rocm-device-libs, or TRITIUM_OCML). Only what the
// kernel calls is linked. f16 and bf16 operands are computed in f32. You will learn:
//   * tl::libdevice::NAME(x) and tl::extern_elementwise("name", x [, y]);
//   * that a name outside the list is an error naming your line, while tracing.
//
// Usage: 09_extern_functions [--full | --small]
//   Checks asin on the tutorial's 98432 elements (4099 on the interpreter or with --small),
//   atan2, hypot and cbrt in f32, and asin on f64 and f16, against plain C++ <cmath>; where the
//   device is not the interpreter (or with --full) measures asin on 2^24 elements.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::half;

// The tutorial's kernel: y = asin(x), elementwise.
template <class T>
void asin_kernel(tl::ptr<T> x_ptr, tl::ptr<T> y_ptr, tl::i32 n_elements,
                 tl::constexpr_<int> BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  x = tl::libdevice::asin(x);
  tl::store(y_ptr + offsets, x, mask);
}

// Three more, by their C names: two-argument functions broadcast like any binary op.
void more_kernel(tl::ptr<float> a_ptr, tl::ptr<float> b_ptr, tl::ptr<float> out_ptr,
                 tl::i32 n_elements, tl::constexpr_<int> BLOCK_SIZE) {
  auto offsets = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto a = tl::load(a_ptr + offsets, mask, 1.f);
  auto b = tl::load(b_ptr + offsets, mask, 1.f);
  tl::store(out_ptr + offsets, tl::extern_elementwise("atan2", a, b), mask);
  tl::store(out_ptr + n_elements + offsets, tl::libdevice::hypot(a, b), mask);
  tl::store(out_ptr + 2 * n_elements + offsets, tl::extern_elementwise("cbrt", a), mask);
}

constexpr int block_size = 1024;

template <class T>
void asin(const Buffer<T>& x, Buffer<T>& y) {
  static auto kernel = tritium::jit(asin_kernel<T>, "asin_kernel");
  int n = int(x.size());
  kernel[{tritium::cdiv(n, block_size)}](x, y, n, block_size);
}

// Largest |got - want| / (ulps of T at want), with `want` from the host's <cmath> in double.
// The GPU libraries are within a few ulp of it (libdevice: asin 2 ulp in f32); the interpreter
// and the CPU call the same libm, so they agree with it to the rounding of the result.
template <class T>
double ulp_error(T got, double want) {
  double eps = std::is_same_v<T, half>    ? std::ldexp(1.0, -10)
               : std::is_same_v<T, float> ? std::ldexp(1.0, -23)
                                          : std::ldexp(1.0, -52);
  double tiny = std::is_same_v<T, half> ? std::ldexp(1.0, -24) : std::ldexp(1.0, -149);
  double ulp = std::max(std::ldexp(eps, std::ilogb(std::fabs(want) > 0 ? want : 1.0)), tiny);
  return std::fabs(double(got) - want) / ulp;
}

template <class T>
bool check_asin(const tritium::Device& dev, int n, const char* type) {
  std::mt19937 rng(n);
  std::uniform_real_distribution<double> uni(-1.0, 1.0); // torch.rand * 2 - 1 in spirit
  std::vector<T> hx(n);
  for (auto& v : hx)
    v = T(uni(rng));
  auto x = dev.from_host(hx);
  auto y = dev.alloc<T>(n);
  asin(x, y);
  auto hy = y.to_host();
  double worst = 0;
  for (int i = 0; i < n; ++i)
    worst = std::max(worst, ulp_error(hy[i], std::asin(double(hx[i]))));
  const double bound = 4; // ulps
  bool ok = worst <= bound;
  fmt::print("asin {} on {} elements: within {:.2f} ulp of <cmath> (bound {})  {}\n", type, n,
             worst, bound, ok ? "ok" : "WRONG");
  return ok;
}

bool check_more(const tritium::Device& dev, int n) {
  std::mt19937 rng(n + 1);
  std::uniform_real_distribution<float> uni(-10.f, 10.f);
  std::vector<float> ha(n), hb(n);
  for (auto& v : ha)
    v = uni(rng);
  for (auto& v : hb)
    v = uni(rng);
  auto a = dev.from_host(ha), b = dev.from_host(hb);
  auto out = dev.alloc<float>(3 * size_t(n));
  static auto kernel = tritium::jit(more_kernel, "more_kernel");
  kernel[{tritium::cdiv(n, block_size)}](a, b, out, n, block_size);
  auto r = out.to_host();
  double w[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    w[0] = std::max(w[0], ulp_error(r[i], std::atan2(double(ha[i]), double(hb[i]))));
    w[1] = std::max(w[1], ulp_error(r[n + i], std::hypot(double(ha[i]), double(hb[i]))));
    w[2] = std::max(w[2], ulp_error(r[2 * n + i], std::cbrt(double(ha[i]))));
  }
  const double bound = 4;
  bool ok = w[0] <= bound && w[1] <= bound && w[2] <= bound;
  fmt::print("atan2 / hypot / cbrt f32 on {} elements: within {:.2f} / {:.2f} / {:.2f} ulp of "
             "<cmath> (bound {})  {}\n",
             n, w[0], w[1], w[2], bound, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int n) {
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i)
    hx[i] = float(i % 2001) / 1000.f - 1.f;
  auto x = dev.from_host(hx);
  auto y = dev.alloc<float>(n);
  asin(x, y);
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    asin(x, y);
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  fmt::print("asin f32 on {} elements: {:.3f} ms, {:.0f} GB/s\n", n, best * 1e3,
             8.0 * n / best / 1e9);
}

int main(int argc, char** argv) {
  try {
    bool full = false, small = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--full") == 0)
        full = true;
      else if (std::strcmp(argv[i], "--small") == 0)
        small = true;
      else {
        fmt::print(stderr, "usage: {} [--full | --small]\n", argv[0]);
        return 2;
      }
    }
    auto dev = tritium::default_device();
    const bool interpreter = dev.name() == "interpreter";
    const bool reduced = small || (interpreter && !full);
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    const int n = reduced ? 4099 : 98432; // the tutorial's size
    bool ok = check_asin<float>(dev, n, "f32");
    ok = check_asin<double>(dev, n, "f64") && ok;
    ok = check_asin<half>(dev, n, "f16") && ok;
    ok = check_more(dev, n) && ok;
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    if (!reduced)
      benchmark(dev, gpu || full ? 1 << 24 : 1 << 20);
    else
      fmt::print("benchmark skipped ({})\n",
                 small ? "--small" : "the interpreter runs one element at a time");
    if (!ok) {
      fmt::print("FAILED: results differ from <cmath>\n");
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
