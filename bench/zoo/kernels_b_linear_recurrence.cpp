// linear_recurrence: h_t = a_t * h_{t-1} + x_t along each row of [R, L] f32 matrices (the
// diagonal linear RNN of LRU / Griffin / accelerated-scan, a first-order IIR filter). One
// program takes BLOCK_R rows and walks the sequence in chunks of BLOCK_L: within a chunk
// tl::associative_scan composes the (a, x) pairs, (a1, x1) then (a2, x2) being
// (a1 a2, a2 x1 + x2); the state entering the chunk is folded in with the scanned products,
// and the last column is the state leaving it.
#include "kernels_b_util.hpp"

namespace {
using namespace zoo_b;

void linear_recurrence_kernel(tl::ptr<float> a_ptr, tl::ptr<float> x_ptr, tl::ptr<float> h_ptr,
                              tl::i32 R, tl::i32 L, tl::constexpr_<int> BLOCK_R,
                              tl::constexpr_<int> BLOCK_L) {
  auto offs_r = tl::program_id(0) * BLOCK_R + tl::arange(0, BLOCK_R);
  auto r_mask = offs_r < R;
  auto offs_l = tl::arange(0, BLOCK_L);
  auto combine = [](tl::f32 a1, tl::f32 x1, tl::f32 a2, tl::f32 x2) {
    return std::tuple{a1 * a2, a2 * x1 + x2};
  };
  auto h = tl::zeros<float>({BLOCK_R});
  for (auto start : tl::range(0, L, BLOCK_L)) {
    auto cols = start + offs_l;
    auto mask = r_mask[{_, None}] && (cols < L)[{None, _}];
    auto offs = offs_r[{_, None}] * L + cols[{None, _}];
    // Past the end: the identity pair (1, 0), which leaves the state as it is.
    auto a = tl::load(a_ptr + offs, mask, 1.0);
    auto x = tl::load(x_ptr + offs, mask, 0.0);
    auto [a_cum, x_cum] = tl::associative_scan(std::tuple{a, x}, 1, combine);
    auto hs = a_cum * h[{_, None}] + x_cum;
    tl::store(h_ptr + offs, hs, mask);
    // The state leaving the chunk is its last column (the padding carried it unchanged).
    // tl::reduce would need a commutative combine, which this one is not.
    h = tl::sum(tl::where(offs_l[{None, _}] == BLOCK_L - 1, hs, 0.f), 1);
  }
}

std::vector<std::string> shapes(bool full) {
  if (full)
    return {"r8192_l4096", "r1024_l32768"};
  return {"r24_l100", "r5_l33"};
}

zoo::Outcome run(zoo::Context& ctx, const std::string& shape) {
  Dims d{shape};
  const int R = d["r"], L = d["l"];
  Rng rng("linear_recurrence " + shape);
  // Decays in [0.5, 1): the state remembers a few steps to a few hundred.
  auto ha = rng.uniform_vec<float>(size_t(R) * L, 0.5, 0.999);
  auto hx = rng.uniform_vec<float>(ha.size(), -1, 1);
  auto a = ctx.dev.from_host(ha);
  auto x = ctx.dev.from_host(hx);
  auto h = ctx.dev.alloc<float>(ha.size());

  auto kernel = tritium::jit(linear_recurrence_kernel, "linear_recurrence_kernel");
  const int block_r = is_gpu(ctx.dev) ? 4 : 8;
  const int block_l = is_gpu(ctx.dev) ? 1024 : 32;
  kernel.options({.num_warps = 4});
  ctx.launch([&] { kernel[{tritium::cdiv(R, block_r)}](a, x, h, R, L, block_r, block_l); });

  auto got = h.to_host();
  // f32 against double: a long memory (a near 1) sums up to ~1000 terms.
  Check chk{1e-4, 1e-4};
  for (size_t r : sample(size_t(R), 256, rng)) {
    double s = 0;
    for (int t = 0; t < L; ++t) {
      size_t i = r * L + t;
      s = ha[i] * s + hx[i];
      chk.add(got[i], s, "h", i);
    }
  }
  return outcome(chk, 12.0 * ha.size(), 0);
}

[[maybe_unused]] const int registered = zoo::add({"linear_recurrence", "scan", shapes, run});
} // namespace
