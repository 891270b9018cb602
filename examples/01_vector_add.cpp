// Tutorial 01: vector addition.
//
// This is Triton's first tutorial, in C++. You will learn:
//   * the basic programming model of tritium: a kernel is a C++ function over blocks;
//   * tl::program_id, tl::arange, masked tl::load / tl::store and pointer arithmetic;
//   * tl::constexpr_ parameters, which specialize the compiled kernel;
//   * how to launch a kernel on a grid of programs with tritium::jit;
//   * how to time it with tritium::bench, Triton's do_bench for C++.
//
// Run it with TRITIUM_DEVICE=interpreter (or cpu, cuda, hip) to pick a device.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

namespace tl = tritium::tl;

// A kernel is an ordinary C++ function. Each program (one instance of the kernel on the
// launch grid) adds one block of BLOCK_SIZE elements. Parameters are traced values: pointers
// (tl::ptr<float>), scalars (tl::i32) and compile-time constants (tl::constexpr_<int>).
void add_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::ptr<float> output_ptr,
                tl::i32 n_elements, tl::constexpr_<int> BLOCK_SIZE) {
  // Which block is this program's? Programs are laid out on a 1-D grid here.
  auto pid = tl::program_id(0);
  // The offsets this program handles: a block of BLOCK_SIZE consecutive indices.
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  // The last block may run past the end: a mask guards every memory access.
  auto mask = offsets < n_elements;
  // Pointer arithmetic gives a block of pointers; masked-off lanes are never read.
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  auto output = x + y;
  tl::store(output_ptr + offsets, output, mask);
}

// A helper that allocates the output and launches the kernel: what a library would expose.
tritium::Buffer<float> add(const tritium::Buffer<float>& x, const tritium::Buffer<float>& y) {
  // The kernel is traced and compiled on its first launch with a given specialization (the
  // constexpr values, and whether integers are 1 or multiples of 16, and pointers aligned);
  // later launches reuse the compiled code.
  static auto kernel = tritium::jit(add_kernel, "add_kernel");
  auto output = x.device().alloc<float>(x.size());
  int n = static_cast<int>(x.size());
  constexpr int block = 1024;
  // The launch grid: one program per block. Like Triton's `add_kernel[grid](...)`.
  kernel[{tritium::cdiv(n, block)}](x, y, output, n, block);
  return output;
}

int main(int argc, char** argv) {
  try {
    auto dev = tritium::default_device();
    // 98432 elements, as Triton's tutorial: not a multiple of the block, so masks matter.
    size_t n = 98432;
    if (argc > 1) {
      char* end = nullptr;
      n = std::strtoul(argv[1], &end, 10);
      if (argc > 2 || *end != '\0' || n == 0 || n > (1ul << 31)) {
        fmt::print(stderr, "usage: {} [N]  (N: number of elements, 1 to 2^31)\n", argv[0]);
        return 2;
      }
    }
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> dist(0.f, 1.f);
    std::vector<float> hx(n), hy(n);
    for (size_t i = 0; i < n; ++i) {
      hx[i] = dist(rng);
      hy[i] = dist(rng);
    }
    auto x = dev.from_host(hx);
    auto y = dev.from_host(hy);

    auto t0 = std::chrono::steady_clock::now();
    auto out = add(x, y);
    dev.synchronize();
    auto t1 = std::chrono::steady_clock::now();

    // Check against plain C++.
    std::vector<float> result = out.to_host();
    double max_diff = 0;
    for (size_t i = 0; i < n; ++i)
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(result[i] - (hx[i] + hy[i]))));

    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    fmt::print("x + y, first elements: [{:.4f}, {:.4f}, {:.4f}, ...]\n", result[0], result[1],
               result[2]);
    fmt::print("plain C++, first elements: [{:.4f}, {:.4f}, {:.4f}, ...]\n", hx[0] + hy[0],
               hx[1] + hy[1], hx[2] + hy[2]);
    fmt::print("n = {}: max difference between tritium and plain C++ is {}\n", n, max_diff);
    fmt::print("first launch (trace + compile + run): {:.2f} ms\n",
               std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (max_diff != 0) {
      fmt::print("FAILED: results differ\n");
      return 1;
    }
    // The tutorial's benchmark: add(x, y) as a library user calls it, timed by tritium::bench
    // (the median of device times, caches flushed before every timed run). 12 bytes move per
    // element: x and y read, the output written.
    auto r = tritium::bench(dev, [&] { add(x, y); });
    fmt::print("add(x, y): median {:.4f} ms [{:.4f}, {:.4f}] over {} runs, {:.1f} GB/s\n",
               r.median_ms, r.quantiles_ms[1], r.quantiles_ms[2], r.times_ms.size(),
               r.gbps(12.0 * n));
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
