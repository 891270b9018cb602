// Helpers shared by the zoo's part-B entries (kernels_b_*.cpp): deterministic inputs, the
// tolerance check against a float64 reference, and the few host-side facts about devices the
// entries need to pick tiles. Everything here is inline: each entry is its own translation unit.
#pragma once

#include "zoo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace zoo_b {

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::bfloat16;
using tritium::Buffer;
using tritium::Device;
using tritium::half;

// GPUs get the library's tiles and the full shapes; host devices (cpu, interpreter,
// gpu-emulator) get small tiles, since the interpreter and the emulator pay per element/thread.
inline bool is_gpu(const Device& d) {
  return d.name() == "cuda" || d.name() == "hip";
}
inline bool is_interpreter(const Device& d) {
  return d.name() == "interpreter";
}
inline bool is_emulator(const Device& d) {
  return d.name() == "gpu-emulator";
}

inline double to_d(half v) {
  return double(float(v));
}
inline double to_d(bfloat16 v) {
  return double(float(v));
}
template <class T>
double to_d(T v) {
  return double(v);
}

// Seeded from the entry's name and shape, so that every run (and every device) sees the same
// inputs.
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(const std::string& key) : gen(std::hash<std::string>{}(key)) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen);
  }
  double normal(double mean, double sd) { return std::normal_distribution<double>(mean, sd)(gen); }
  int integer(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(gen);
  } // [lo, hi]
  template <class T>
  std::vector<T> uniform_vec(size_t n, double lo, double hi) {
    std::vector<T> v(n);
    for (auto& x : v)
      x = T(float(uniform(lo, hi)));
    return v;
  }
  template <class T>
  std::vector<T> normal_vec(size_t n, double mean, double sd) {
    std::vector<T> v(n);
    for (auto& x : v)
      x = T(float(normal(mean, sd)));
    return v;
  }
};

// The worst |got - ref| / (atol + rtol |ref|) over the values checked; the first value past
// the tolerance is kept for the note.
struct Check {
  double atol, rtol;
  double worst = 0;
  size_t checked = 0;
  std::string first_bad;
  void add(double got, double ref, const std::string_view what = {}, size_t index = 0) {
    ++checked;
    double r;
    if (std::isnan(got) || std::isnan(ref))
      r = std::isnan(got) && std::isnan(ref) ? 0 : INFINITY;
    else if (atol + rtol * std::fabs(ref) == 0) // exact: any difference fails, finitely
      r = got == ref ? 0 : 1 + std::fabs(got - ref);
    else
      r = std::fabs(got - ref) / (atol + rtol * std::fabs(ref));
    if (r > 1 && first_bad.empty())
      first_bad = fmt::format("{}[{}] = {} against {}", what.empty() ? "y" : what, index, got, ref);
    worst = std::max(worst, r);
  }
};

inline zoo::Outcome outcome(const Check& c, double bytes, double flops, std::string note = "") {
  zoo::Outcome o;
  o.ok = c.worst <= 1 && c.checked > 0;
  o.worst = c.worst;
  o.bytes = bytes;
  o.flops = flops;
  if (c.checked == 0)
    o.note = "nothing checked";
  else if (!c.first_bad.empty())
    o.note = c.first_bad;
  if (!note.empty())
    o.note = o.note.empty() ? note : o.note + "; " + note;
  return o;
}

// Two checks of one case: ok when both are, the worse one's ratio, both notes.
inline zoo::Outcome both(zoo::Outcome o, const zoo::Outcome& p) {
  o.ok = o.ok && p.ok;
  o.worst = std::max(o.worst, p.worst);
  if (!p.note.empty())
    o.note = o.note.empty() ? p.note : o.note + "; " + p.note;
  return o;
}

// Activations of T tokens x H for the quantization entries: each row in its own range
// e^U(-3, 3), as outlier tokens have, and row 1 all zeros.
inline std::vector<half> token_rows(int T, int H, Rng& rng) {
  std::vector<half> x(size_t(T) * H);
  for (int t = 0; t < T; ++t) {
    double range = t == 1 ? 0 : std::exp(rng.uniform(-3, 3));
    for (int i = 0; i < H; ++i)
      x[size_t(t) * H + i] = half(float(rng.uniform(-range, range)));
  }
  return x;
}

// Which of n outputs the float64 reference recomputes: all of them when there are few, else
// `limit` picked at random (the full shapes' references would take minutes on the host).
inline std::vector<size_t> sample(size_t n, size_t limit, Rng& rng) {
  std::vector<size_t> out;
  if (n <= limit) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i)
      out[i] = i;
    return out;
  }
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  for (size_t i = 0; i < limit; ++i)
    out.push_back(pick(rng.gen));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// "m16_n64_k256" -> m = 16, n = 64, k = 256: the shape labels spell their dimensions so that
// the driver's output and the Triton twin's are read alike. A missing key is an error.
struct Dims {
  std::string label;
  int operator[](const std::string& key) const {
    size_t pos = 0;
    while (pos < label.size()) {
      size_t end = label.find('_', pos);
      if (end == std::string::npos)
        end = label.size();
      std::string tok = label.substr(pos, end - pos);
      size_t digit = tok.find_first_of("0123456789");
      if (digit != std::string::npos && tok.substr(0, digit) == key)
        return std::stoi(tok.substr(digit));
      pos = end + 1;
    }
    throw tritium::Error(fmt::format("shape '{}' has no '{}'", label, key));
  }
  bool has(const std::string& key) const {
    try {
      (void)(*this)[key];
      return true;
    } catch (const tritium::Error&) {
      return false;
    }
  }
};

inline int next_pow2(int n) {
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

// Zeroes n floats: the reset that a kernel accumulating with atomics needs before each timed
// launch (Triton's twins call torch.zero_(), also inside the timed region).
inline void zero_f32_kernel(tl::ptr<float> x, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(x + offs, tl::zeros<float>({BLOCK}), offs < n);
}
inline void zero_i32_kernel(tl::ptr<int32_t> x, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(x + offs, tl::zeros<int32_t>({BLOCK}), offs < n);
}
// Zeroes a buffer with the kernels above. One per entry run (not a static): jit caches by
// arguments, not by options, and writes TRITIUM_DUMP's files only when it compiles, so each
// case's dump folder gets its own copy (bench/compare/zoo.py launches it from there).
struct Zero {
  decltype(tritium::jit(zero_f32_kernel, "")) f32 = tritium::jit(zero_f32_kernel, "zoo_zero_f32");
  decltype(tritium::jit(zero_i32_kernel, "")) i32 = tritium::jit(zero_i32_kernel, "zoo_zero_i32");
  void operator()(Buffer<float>& x) {
    int n = int(x.size());
    f32[{tritium::cdiv(n, 1024)}](x, n, 1024);
  }
  void operator()(Buffer<int32_t>& x) {
    int n = int(x.size());
    i32[{tritium::cdiv(n, 1024)}](x, n, 1024);
  }
};

} // namespace zoo_b
