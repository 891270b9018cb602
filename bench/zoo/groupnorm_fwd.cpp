// groupnorm_fwd: group normalization of x [N, C, HW] fp16 with G groups (a diffusion U-Net's
// GroupNorm(32, C)), y = (x - mean) * rstd * w[c] + b[c], statistics in f32 per (sample,
// group); also writes mean and rstd [N, G] for the backward pass. A group's C/G channels are
// one contiguous range of (C/G) * HW elements: one program per (sample, group) walks it in
// blocks twice, once for the sums of x and x^2, once to normalize.
#include "check.hpp"

namespace {
using namespace zoo;

void groupnorm_fwd_kernel(tl::ptr<tl::f16> X, tl::ptr<tl::f16> W, tl::ptr<tl::f16> B,
                          tl::ptr<tl::f16> Y, tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::i32 C,
                          tl::i32 HW, tl::i32 G, tl::f32 eps, tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(0); // sample * G + group
  auto group = pid % G;
  auto cpg = C / G;
  auto size = cpg * HW;
  auto base = pid.to<int64_t>() * size;
  X += base;
  Y += base;
  auto sum = tl::zeros<float>({BLOCK});
  auto sum_sq = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, size, BLOCK)) {
    auto idx = off + tl::arange(0, BLOCK);
    auto x = tl::load(X + idx, idx < size, 0.0).to<float>();
    sum += x;
    sum_sq += x * x;
  }
  auto mean = tl::sum(sum, 0) / size;
  auto var = tl::sum(sum_sq, 0) / size - mean * mean;
  auto rstd = tl::rsqrt(var + eps);
  tl::store(Mean + pid, mean);
  tl::store(Rstd + pid, rstd);
  for (auto off : tl::range(0, size, BLOCK)) {
    auto idx = off + tl::arange(0, BLOCK);
    auto mask = idx < size;
    auto channel = group * cpg + idx / HW;
    auto w = tl::load(W + channel, mask).to<float>();
    auto b = tl::load(B + channel, mask).to<float>();
    auto x = tl::load(X + idx, mask, 0.0).to<float>();
    tl::store(Y + idx, (x - mean) * rstd * w + b, mask);
  }
}

// N x C x HW x G
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"32x256x4096x32", "16x512x1024x32"};
  return {"2x12x50x4"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int N = int(d[0]), C = int(d[1]), HW = int(d[2]), G = int(d[3]);
  const float eps = 1e-5f;
  const size_t n = size_t(N) * C * HW;
  auto hx = random_vector<half>(n, 5, -2, 3);
  auto hw = random_vector<half>(C, 6, 0.5, 1.5), hb = random_vector<half>(C, 7);
  auto x = ctx.dev.from_host(hx), w = ctx.dev.from_host(hw), b = ctx.dev.from_host(hb);
  auto y = ctx.dev.alloc<half>(n);
  auto mean = ctx.dev.alloc<float>(size_t(N) * G), rstd = ctx.dev.alloc<float>(size_t(N) * G);
  auto kernel = tritium::jit(groupnorm_fwd_kernel, "groupnorm_fwd_kernel");
  kernel.options({.num_warps = 8});
  ctx.launch([&] { kernel[{N * G}](x, w, b, y, mean, rstd, C, HW, G, eps, 2048); });
  std::vector<double> ref_y(n), ref_mean, ref_rstd;
  const size_t group_size = size_t(C / G) * HW;
  for (int g = 0; g < N * G; ++g) {
    const size_t base = g * group_size;
    double m = 0, v = 0;
    for (size_t i = 0; i < group_size; ++i)
      m += to_double(hx[base + i]);
    m /= group_size;
    for (size_t i = 0; i < group_size; ++i)
      v += (to_double(hx[base + i]) - m) * (to_double(hx[base + i]) - m);
    double rs = 1 / std::sqrt(v / group_size + eps);
    ref_mean.push_back(m);
    ref_rstd.push_back(rs);
    for (size_t i = 0; i < group_size; ++i) {
      int c = (g % G) * (C / G) + int(i / HW);
      ref_y[base + i] = (to_double(hx[base + i]) - m) * rs * to_double(hw[c]) + to_double(hb[c]);
    }
  }
  Outcome o = combine({compare("y", y.to_host(), ref_y, 4e-3, 4e-3),
                       compare("mean", mean.to_host(), ref_mean, 1e-5, 1e-4),
                       compare("rstd", rstd.to_host(), ref_rstd, 1e-5, 1e-4)});
  o.bytes = 2.0 * n * sizeof(half);
  return o;
}

const int registered = add({"groupnorm_fwd", "norm", shapes, run});

} // namespace
