// Tutorial 06: low-memory dropout.
//
// Triton's tutorial 04, in C++. Dropout zeroes each element of x with probability p and scales
// the kept ones by 1 / (1 - p). The usual implementation draws a keep mask on the host and
// reads it back in the kernel: one more tensor the size of x to store and to keep for the
// backward pass. The seeded kernel below draws the mask inside the kernel from a counter-based
// random number generator (Philox), keyed by a seed and by each element's offset: the same
// (seed, offset) gives the same number on every launch and on every device, so the mask never
// needs to be stored; keeping the seed is enough to recompute it. You will learn:
//   * tl::rand(seed, offsets): uniform floats in [0, 1) from a seed and per-element counters;
//   * tl::where to select the kept values;
//   * why a counter-based generator makes the result reproducible: it is a pure function of
//     (seed, offset), so this file checks it against a plain C++ Philox, bit for bit.
//
// Usage: 06_low_memory_dropout [--full | --small]
//   Checks 2^20 + 3 elements (4099 on the interpreter or with --small) against plain C++ on
//   the default device and, where that is not the interpreter, against the interpreter too;
//   where the device is not the interpreter (or with --full) measures 2^26 elements (2^22 on
//   the CPU without --full).

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;

// The baseline: the keep mask comes from memory (a tensor of 0s and 1s made on the host).
void dropout_kernel(tl::ptr<float> x_ptr, tl::ptr<int8_t> x_keep_ptr, tl::ptr<float> output_ptr,
                    tl::i32 n_elements, tl::f32 p, tl::constexpr_<int> BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  // Load data
  auto x = tl::load(x_ptr + offsets, mask);
  auto x_keep = tl::load(x_keep_ptr + offsets, mask);
  // The line that matters: 0 where dropped, x / (1 - p) where kept.
  auto output = tl::where(x_keep != 0, x / (1.f - p), 0.f);
  tl::store(output_ptr + offsets, output, mask);
}

// The seeded version: the keep mask is recomputed from (seed, offsets) in registers.
void seeded_dropout_kernel(tl::ptr<float> x_ptr, tl::ptr<float> output_ptr, tl::i32 n_elements,
                           tl::f32 p, tl::i32 seed, tl::constexpr_<int> BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  // Randomly prune it: a uniform number per element, a pure function of (seed, offset).
  auto random = tl::rand(seed, offsets);
  auto x_keep = random > p;
  auto output = tl::where(x_keep, x / (1.f - p), 0.f);
  tl::store(output_ptr + offsets, output, mask);
}

constexpr int block_size = 1024;

void dropout(const Buffer<float>& x, const Buffer<int8_t>& keep, Buffer<float>& out, float p) {
  static auto kernel = tritium::jit(dropout_kernel, "dropout_kernel");
  int n = int(x.size());
  kernel[{tritium::cdiv(n, block_size)}](x, keep, out, n, p, block_size);
}

void seeded_dropout(const Buffer<float>& x, Buffer<float>& out, float p, int seed) {
  static auto kernel = tritium::jit(seeded_dropout_kernel, "seeded_dropout_kernel");
  int n = int(x.size());
  kernel[{tritium::cdiv(n, block_size)}](x, out, n, p, seed, block_size);
}

// --- plain C++: Philox-4x32-10 and Triton's uint_to_uniform_float --------------------------
// The first of the four words Philox makes from the counters (offset, 0, 0, 0) and the key
// (seed's low and high 32 bits), as tl.rand uses it.
uint32_t philox_first_word(uint64_t seed, uint32_t offset) {
  uint32_t c0 = offset, c1 = 0, c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0, p2 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p2 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p2);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}
float uniform_from_bits(uint32_t bits) {
  int32_t v = int32_t(bits);
  int32_t folded = v < 0 ? -v - 1 : v;
  return float(folded) * 4.6566127342e-10f;
}

struct Check {
  bool ok = true;
  void expect(bool c, const std::string& what) {
    if (!c) {
      fmt::print("  WRONG: {}\n", what);
      ok = false;
    }
  }
};

bool check(const tritium::Device& dev, int n) {
  const float p = 0.5f;
  std::mt19937 rng(n);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> hx(n);
  for (auto& v : hx)
    v = dist(rng) + 8.f; // never 0, so that a kept element is told from a dropped one
  auto x = dev.from_host(hx);
  Check c;

  // The baseline kernel with a mask made on the host.
  std::vector<int8_t> hkeep(n);
  std::bernoulli_distribution keep_dist(1 - p);
  for (auto& k : hkeep)
    k = keep_dist(rng) ? 1 : 0;
  auto keep = dev.from_host(hkeep);
  auto out = dev.alloc<float>(n);
  dropout(x, keep, out, p);
  auto y = out.to_host();
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += y[i] != (hkeep[i] ? hx[i] / (1 - p) : 0.f);
  c.expect(wrong == 0, fmt::format("dropout with a stored mask: {} elements differ", wrong));

  // The seeded kernel: twice with one seed, once with another.
  auto a = dev.alloc<float>(n), b = dev.alloc<float>(n), d = dev.alloc<float>(n);
  seeded_dropout(x, a, p, 123);
  seeded_dropout(x, b, p, 123);
  seeded_dropout(x, d, p, 512);
  auto ya = a.to_host(), yb = b.to_host(), yd = d.to_host();
  c.expect(std::memcmp(ya.data(), yb.data(), n * sizeof(float)) == 0,
           "two launches with seed 123 differ");
  int kept = 0, same_mask = 0, mismatched = 0;
  double max_rel = 0;
  for (int i = 0; i < n; ++i) {
    bool ref_keep = uniform_from_bits(philox_first_word(123, uint32_t(i))) > p;
    bool got_keep = ya[i] != 0.f;
    mismatched += ref_keep != got_keep;
    kept += got_keep;
    same_mask += got_keep == (yd[i] != 0.f);
    if (ref_keep) {
      double ref = double(hx[i]) / (1.0 - p);
      max_rel = std::max(max_rel, std::fabs(ya[i] - ref) / std::fabs(ref));
    }
  }
  double keep_ratio = double(kept) / n;
  c.expect(mismatched == 0,
           fmt::format("{} elements kept or dropped unlike plain C++ Philox", mismatched));
  c.expect(max_rel <= 1e-6, fmt::format("kept values differ from x / (1 - p) by {:.1e}", max_rel));
  // A fair coin over n elements: the keep ratio is within a few 1 / (2 sqrt(n)) of 1/2, and
  // another seed agrees with this mask about half of the time.
  double sigma = 0.5 / std::sqrt(double(n));
  c.expect(std::fabs(keep_ratio - (1 - p)) <= 6 * sigma,
           fmt::format("keep ratio {:.4f}, expected {:.2f}", keep_ratio, 1 - p));
  c.expect(std::fabs(double(same_mask) / n - 0.5) <= 6 * sigma,
           fmt::format("seeds 123 and 512 agree on {:.4f} of the mask", double(same_mask) / n));

  // Determinism across devices: the interpreter (the reference) gives the same bits.
  if (dev.name() != "interpreter") {
    auto interp = tritium::device("interpreter");
    int m = std::min(n, 4099);
    std::vector<float> hsmall(hx.begin(), hx.begin() + m);
    auto xi = interp.from_host(hsmall);
    auto oi = interp.alloc<float>(m);
    seeded_dropout(xi, oi, p, 123);
    auto yi = oi.to_host();
    c.expect(std::memcmp(yi.data(), ya.data(), m * sizeof(float)) == 0,
             fmt::format("the interpreter and {} differ on the first {} elements", dev.name(), m));
  }
  fmt::print("{} elements, p = {}: kept {:.4f}, mask as plain C++ Philox, seeds 123/512 agree on "
             "{:.4f}, kept values within {:.1e} of x / (1 - p)  {}\n",
             n, p, keep_ratio, double(same_mask) / n, max_rel, c.ok ? "ok" : "WRONG");
  return c.ok;
}

template <class F>
double best_of(const tritium::Device& dev, F run) {
  run(); // compile
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 20; ++i) {
    start.record();
    run();
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  return best;
}

void benchmark(const tritium::Device& dev, int n) {
  std::vector<float> hx(n, 1.f);
  std::vector<int8_t> hkeep(n, 1);
  auto x = dev.from_host(hx);
  auto keep = dev.from_host(hkeep);
  auto out = dev.alloc<float>(n);
  double t_mask = best_of(dev, [&] { dropout(x, keep, out, 0.5f); });
  double t_seed = best_of(dev, [&] { seeded_dropout(x, out, 0.5f, 123); });
  // Bytes moved: x read and the output written (plus the mask for the baseline).
  fmt::print("{} elements: stored mask {:.3f} ms ({:.0f} GB/s), seeded {:.3f} ms ({:.0f} GB/s)\n",
             n, t_mask * 1e3, 9.0 * n / t_mask / 1e9, t_seed * 1e3, 8.0 * n / t_seed / 1e9);
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
    bool ok = check(dev, reduced ? 4099 : (1 << 20) + 3);
    // 2^26 elements on GPUs (and with --full); 2^22 on the CPU, which draws them far slower.
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    if (!reduced)
      benchmark(dev, gpu || full ? 1 << 26 : 1 << 22);
    else
      fmt::print("benchmark skipped ({})\n",
                 small ? "--small" : "the interpreter runs one element at a time");
    if (!ok) {
      fmt::print("FAILED: results differ from the plain C++ reference\n");
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
