// rmsnorm_bwd: the backward pass of y = x rstd w (RMSNorm, Liger's): per row
// dx = rstd (m - rstd^2 mean(m x) x) with m = dy w, and dw = sum over rows of dy x rstd, which
// each program accumulates over its range of rows before sum_partials_kernel adds them up.
#include "norm_bwd.hpp"

namespace {
using namespace zoo;

void rmsnorm_bwd_kernel(tl::ptr<tl::f16> DY, tl::ptr<tl::f16> X, tl::ptr<tl::f16> W,
                        tl::ptr<float> Rstd, tl::ptr<tl::f16> DX, tl::ptr<float> DW_partial,
                        tl::i32 n_rows, tl::i32 n_cols, tl::i32 rows_per_program,
                        tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto w = tl::load(W + cols, mask, 0).to<float>();
  auto dw = tl::zeros<float>({BLOCK});
  auto row_start = pid * rows_per_program;
  auto row_end = tl::minimum(row_start + rows_per_program, n_rows);
  for (auto row : tl::range(row_start, row_end)) {
    auto offs = row.to<int64_t>() * n_cols + cols;
    auto dy = tl::load(DY + offs, mask, 0).to<float>();
    auto x = tl::load(X + offs, mask, 0).to<float>();
    auto rstd = tl::load(Rstd + row);
    auto m = dy * w;
    auto dx = rstd * (m - (rstd * rstd / n_cols) * tl::sum(m * x, 0) * x);
    tl::store(DX + offs, dx, mask);
    dw += dy * x * rstd;
  }
  tl::store(DW_partial + pid * n_cols + cols, dw, mask);
}

// rows x cols
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x4096", "4096x8192"};
  return {"37x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int M = int(d[0]), N = int(d[1]);
  auto in = norm_bwd::inputs(M, N, false, 41);
  auto dy = ctx.dev.from_host(in.dy), x = ctx.dev.from_host(in.x), w = ctx.dev.from_host(in.w);
  auto rstd = ctx.dev.from_host(in.rstd);
  const int P = norm_bwd::programs(ctx.dev, M), rows_per_program = tritium::cdiv(M, P);
  auto dx = ctx.dev.alloc<half>(in.x.size());
  auto dw_partial = ctx.dev.alloc<float>(size_t(P) * N), dw = ctx.dev.alloc<float>(N);
  auto kernel = tritium::jit(rmsnorm_bwd_kernel, "rmsnorm_bwd_kernel");
  auto sum = tritium::jit(norm_bwd::sum_partials_kernel, "sum_partials_kernel");
  const int block = next_pow2(N);
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] {
    kernel[{P}](dy, x, w, rstd, dx, dw_partial, M, N, rows_per_program, block);
    sum[{tritium::cdiv(N, norm_bwd::sum_block_n)}](dw_partial, dw, P, N, norm_bwd::sum_block_m,
                                                   norm_bwd::sum_block_n);
  });
  std::vector<double> ref_dx(in.x.size()), ref_dw(N);
  for (int r = 0; r < M; ++r) {
    const size_t base = size_t(r) * N;
    const double rs = in.rstd[r];
    double mx = 0;
    for (int c = 0; c < N; ++c)
      mx += to_double(in.dy[base + c]) * to_double(in.w[c]) * to_double(in.x[base + c]);
    for (int c = 0; c < N; ++c) {
      double m = to_double(in.dy[base + c]) * to_double(in.w[c]), xv = to_double(in.x[base + c]);
      ref_dx[base + c] = rs * (m - rs * rs * mx / N * xv);
      ref_dw[c] += to_double(in.dy[base + c]) * xv * rs;
    }
  }
  Outcome o = combine({compare("dx", dx.to_host(), ref_dx, 2e-3, 4e-3),
                       compare("dw", dw.to_host(), ref_dw, 1e-3, 1e-4)});
  o.bytes = 3.0 * in.x.size() * sizeof(half);
  return o;
}

const int registered = add({"rmsnorm_bwd", "norm", shapes, run});

} // namespace
