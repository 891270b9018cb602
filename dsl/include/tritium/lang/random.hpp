// Counter-based random numbers (Triton's tl.rand, tl.randn, tl.randint, tl.philox), built from
// integer ops every backend has: Philox-4x32 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011) with Triton's conventions, so that a (seed, offset) pair gives the same
// numbers here as in Triton.
#pragma once

#include <tritium/lang/ops.hpp>

#include <array>

namespace tritium::lang {

inline constexpr int philox_default_rounds = 10;

namespace detail {

// A seed of any integer type (a literal or a traced scalar) as a u64 scalar.
template <class S>
u64 seed_u64(const S& seed, const Loc& loc) {
  if constexpr (std::integral<S>)
    return u64(constant_int(static_cast<int64_t>(seed), dtype_of<uint64_t>(), {}, loc));
  else
    return u64(cast(seed.use(loc), dtype_of<uint64_t>(), loc));
}

} // namespace detail

// The Philox-4x32 rounds on four 32-bit counters and a 64-bit key (k0 low, k1 high).
inline std::array<u32, 4> philox_impl(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1,
                                      int n_rounds = philox_default_rounds) {
  constexpr uint32_t round_a = 0xD2511F53u, round_b = 0xCD9E8D57u;
  constexpr uint32_t key_a = 0x9E3779B9u, key_b = 0xBB67AE85u;
  for (int i = 0; i < n_rounds; ++i) { // a C++ loop: unrolled while tracing
    u32 a = umulhi(c2, round_b), b = umulhi(c0, round_a);
    u32 n0 = a ^ c1 ^ k0;
    u32 n2 = b ^ c3 ^ k1;
    u32 n1 = c2 * round_b;
    u32 n3 = c0 * round_a;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 = k0 + key_a;
    k1 = k1 + key_b;
  }
  return {c0, c1, c2, c3};
}

// Four blocks of random u32 from counters (c0, c1, c2, c3) under `seed`. Counters of a signed
// type are reinterpreted (Triton bitcasts them).
template <class S, IntElement C>
std::array<u32, 4> philox(const S& seed, const basic_tensor<C>& c0, const basic_tensor<C>& c1,
                          const basic_tensor<C>& c2, const basic_tensor<C>& c3,
                          int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  static_assert(dtype_traits<C>::bits == 32, "philox: counters must be 32-bit integers");
  u64 s = detail::seed_u64(seed, loc);
  u32 lo = u32(detail::cast((s & uint64_t{0xffffffff}).use(loc), dtype_of<uint32_t>(), loc));
  u32 hi = u32(detail::cast((s >> uint64_t{32}).use(loc), dtype_of<uint32_t>(), loc));
  auto as_u32 = [&](const basic_tensor<C>& c) {
    return u32(detail::bitcast(c.use(loc), dtype_of<uint32_t>(), loc));
  };
  return philox_impl(as_u32(c0), as_u32(c1), as_u32(c2), as_u32(c3), lo, hi, n_rounds);
}

// Four blocks of random u32 for each offset (offsets: i32 or u32, usually arange-based).
template <class S, IntElement C>
std::array<u32, 4> randint4x(const S& seed, const basic_tensor<C>& offset,
                             int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  auto zero = offset * 0;
  return philox(seed, offset, zero, zero, zero, n_rounds, loc);
}
template <class S, IntElement C>
u32 randint(const S& seed, const basic_tensor<C>& offset, int n_rounds = philox_default_rounds,
            Loc loc = Loc::current()) {
  return randint4x(seed, offset, n_rounds, loc)[0];
}

// A u32 (or i32) to a float uniform in [0, 1): the bits read as i32, folded to non-negative,
// scaled by 2^-31 (Triton's uint_to_uniform_float).
template <IntElement C>
f32 uint_to_uniform_float(const basic_tensor<C>& x, Loc loc = Loc::current()) {
  static_assert(dtype_traits<C>::bits == 32, "uint_to_uniform_float takes 32-bit integers");
  i32 v(detail::bitcast(x.use(loc), dtype_of<int32_t>(), loc));
  i32 folded = where(v < 0, -v - 1, v, loc);
  return folded.template to<float>(loc) * 4.6566127342e-10f;
}

template <class S, IntElement C>
f32 rand(const S& seed, const basic_tensor<C>& offset, int n_rounds = philox_default_rounds,
         Loc loc = Loc::current()) {
  return uint_to_uniform_float(randint(seed, offset, n_rounds, loc), loc);
}
template <class S, IntElement C>
std::array<f32, 4> rand4x(const S& seed, const basic_tensor<C>& offset,
                          int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  auto r = randint4x(seed, offset, n_rounds, loc);
  return {uint_to_uniform_float(r[0], loc), uint_to_uniform_float(r[1], loc),
          uint_to_uniform_float(r[2], loc), uint_to_uniform_float(r[3], loc)};
}

// Box-Muller: two uniforms in [0, 1) to two independent standard normals.
inline std::pair<f32, f32> pair_uniform_to_normal(const f32& u1, const f32& u2,
                                                  Loc loc = Loc::current()) {
  f32 u = maximum(u1, 1.0e-7f, PropagateNan::NONE, loc);
  f32 th = u2 * 6.283185307179586f;
  f32 r = sqrt(log(u, loc) * -2.0f, loc);
  return {r * cos(th, loc), r * sin(th, loc)};
}

template <class S, IntElement C>
f32 randn(const S& seed, const basic_tensor<C>& offset, int n_rounds = philox_default_rounds,
          Loc loc = Loc::current()) {
  auto r = randint4x(seed, offset, n_rounds, loc);
  return pair_uniform_to_normal(uint_to_uniform_float(r[0], loc), uint_to_uniform_float(r[1], loc),
                                loc)
      .first;
}
template <class S, IntElement C>
std::array<f32, 4> randn4x(const S& seed, const basic_tensor<C>& offset,
                           int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  auto u = rand4x(seed, offset, n_rounds, loc);
  auto [n0, n1] = pair_uniform_to_normal(u[0], u[1], loc);
  auto [n2, n3] = pair_uniform_to_normal(u[2], u[3], loc);
  return {n0, n1, n2, n3};
}

} // namespace tritium::lang
