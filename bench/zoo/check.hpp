// What the zoo's entries share: deterministic inputs, f16/bf16 read as double, and the
// comparison with a float64 reference that makes an Outcome.
#pragma once

#include "zoo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace zoo {

using tritium::bfloat16;
using tritium::Buffer;
using tritium::half;
namespace tl = tritium::tl;

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
    return static_cast<float>(v);
  else
    return static_cast<double>(v);
}

// Uniform in [lo, hi) from a hash of (seed, i) (splitmix64): the same inputs on every run and
// device, and a full-size buffer fills in a fraction of a second.
inline double uniform(uint64_t seed, uint64_t i, double lo = -1, double hi = 1) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
}

template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(uniform(seed, i, lo, hi));
  return v;
}

// The values as the kernel reads them (after rounding to T), for the reference.
template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = to_double(v[i]);
  return out;
}

// |got - ref| <= atol + rtol |ref| everywhere (NaN only where the reference is NaN); worst is
// the largest |got - ref| / (atol + rtol |ref|), the note names the first failing element.
template <class T>
Outcome compare(std::string_view what, const std::vector<T>& got, const std::vector<double>& ref,
                double atol, double rtol) {
  Outcome o;
  o.ok = got.size() == ref.size();
  if (!o.ok) {
    o.note = fmt::format("{}: {} values, expected {}", what, got.size(), ref.size());
    return o;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double g = to_double(got[i]), r = ref[i];
    double ratio = std::fabs(g - r) / (atol + rtol * std::fabs(r));
    if (std::isnan(r) && std::isnan(g))
      ratio = 0;
    else if (std::isinf(r) && g == r)
      ratio = 0;
    else if (std::isnan(ratio))
      ratio = INFINITY;
    if (ratio > 1 && o.ok) {
      o.ok = false;
      o.note = fmt::format("{}[{}] = {} but the reference is {}", what, i, g, r);
    }
    o.worst = std::max(o.worst, ratio);
  }
  return o;
}

// Exact equality (indices, copies, gathers).
template <class T, class R>
Outcome compare_exact(std::string_view what, const std::vector<T>& got, const std::vector<R>& ref) {
  Outcome o;
  o.ok = got.size() == ref.size();
  if (!o.ok) {
    o.note = fmt::format("{}: {} values, expected {}", what, got.size(), ref.size());
    return o;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double g = to_double(got[i]), r = to_double(ref[i]);
    if (!(g == r || (std::isnan(g) && std::isnan(r)))) {
      o.note = fmt::format("{}[{}] = {} but the reference is {}", what, i, g, r);
      o.ok = false;
      o.worst = INFINITY;
      return o;
    }
  }
  return o;
}

// Several comparisons as one: ok if all are, the largest worst, the failures' notes.
inline Outcome combine(std::initializer_list<Outcome> parts) {
  Outcome o;
  o.ok = true;
  for (const Outcome& p : parts) {
    o.ok = o.ok && p.ok;
    o.worst = std::max(o.worst, p.worst);
    if (!p.note.empty())
      o.note += (o.note.empty() ? "" : "; ") + p.note;
  }
  return o;
}

inline int next_pow2(int64_t n) {
  int p = 1;
  while (p < n)
    p *= 2;
  return p;
}

// num_warps for a row block of `block` elements, as Liger's calculate_settings picks it: 32
// warps from 32768 elements, except on AMD, where 32 waves of 64 lanes exceed a workgroup's
// 1024 threads and Liger stops at 16.
inline int row_warps(int block, const tritium::Device& dev) {
  if (block >= 32768)
    return dev.name() == "hip" ? 16 : 32;
  return block >= 8192 ? 16 : block >= 2048 ? 8 : 4;
}

// "4096x128" -> {4096, 128}: entries name shapes by their sizes.
inline std::vector<int64_t> dims(const std::string& shape) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < shape.size()) {
    size_t x = shape.find('x', pos);
    out.push_back(std::stoll(shape.substr(pos, x - pos)));
    pos = x == std::string::npos ? shape.size() : x + 1;
  }
  return out;
}

} // namespace zoo
