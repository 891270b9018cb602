// var_mean: the unbiased variance and the mean of each row, x [M, N] f32 -> [M], [M]
// (torch.var_mean(x, dim=1); FlagGems' var_mean). One program per row: every lane keeps a
// Welford state (count, mean, M2) over its elements of each block, and tl::reduce merges the
// lanes' states with Chan's formula, which stays accurate where E[x^2] - E[x]^2 cancels.
#include "check.hpp"

namespace {
using namespace zoo;

void var_mean_kernel(tl::ptr<float> X, tl::ptr<float> Var, tl::ptr<float> Mean, tl::i32 N,
                     tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  X += row.to<int64_t>() * N;
  auto mean = tl::zeros<float>({BLOCK});
  auto m2 = tl::zeros<float>({BLOCK});
  auto count = tl::zeros<float>({BLOCK});
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + tl::arange(0, BLOCK);
    auto mask = cols < N;
    auto x = tl::load(X + cols, mask, 0.f);
    count += tl::where(mask, 1.f, 0.f);
    auto delta = x - mean;
    mean += tl::where(mask, delta / tl::maximum(count, 1.f), 0.f);
    m2 += tl::where(mask, delta * (x - mean), 0.f);
  }
  auto [row_mean, row_m2, row_count] = tl::reduce(
      std::tuple{mean, m2, count}, 0,
      [](auto mean_a, auto m2_a, auto n_a, auto mean_b, auto m2_b, auto n_b) {
        auto n = n_a + n_b;
        auto delta = mean_b - mean_a;
        auto w_b = tl::where(n == 0.f, 0.f, n_b / n);
        return std::tuple{mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n};
      });
  tl::store(Var + row, row_m2 / (row_count - 1.f));
  tl::store(Mean + row, row_mean);
}

// M x N
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "1024x32000"};
  return {"5x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  auto hx = random_vector<float>(size_t(M) * N, 23, 9, 11); // mean far from 0: tests cancellation
  auto x = ctx.dev.from_host(hx);
  auto var = ctx.dev.alloc<float>(M), mean = ctx.dev.alloc<float>(M);
  auto kernel = tritium::jit(var_mean_kernel, "var_mean_kernel");
  const int block = ctx.full ? 1024 : 128;
  ctx.launch([&] { kernel[{M}](x, var, mean, N, block); });
  std::vector<double> ref_var, ref_mean;
  for (int i = 0; i < M; ++i) {
    double m = 0, v = 0;
    for (int j = 0; j < N; ++j)
      m += hx[size_t(i) * N + j];
    m /= N;
    for (int j = 0; j < N; ++j)
      v += (hx[size_t(i) * N + j] - m) * (hx[size_t(i) * N + j] - m);
    ref_var.push_back(v / (N - 1));
    ref_mean.push_back(m);
  }
  Outcome o = combine({compare("var", var.to_host(), ref_var, 1e-6, 1e-4),
                       compare("mean", mean.to_host(), ref_mean, 1e-6, 1e-5)});
  o.bytes = double(hx.size()) * sizeof(float);
  return o;
}

const int registered = add({"var_mean", "reduction", shapes, run});

} // namespace
