// layernorm_bwd: the backward pass of y = (x - mean) rstd w + b (Liger's): per row
// dx = (w dy - (x_hat c1 + c2)) rstd with c1 = mean(x_hat w dy), c2 = mean(w dy); dw and db,
// sums over rows of dy x_hat and dy, accumulate per program over its range of rows, and
// sum_partials_kernel adds the programs' partial rows.
#include "norm_bwd.hpp"

namespace {
using namespace zoo;

void layernorm_bwd_kernel(tl::ptr<tl::f16> DY, tl::ptr<tl::f16> X, tl::ptr<tl::f16> W,
                          tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::ptr<tl::f16> DX,
                          tl::ptr<float> DW_partial, tl::ptr<float> DB_partial, tl::i32 n_rows,
                          tl::i32 n_cols, tl::i32 rows_per_program, tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto w = tl::load(W + cols, mask, 0).to<float>();
  auto dw = tl::zeros<float>({BLOCK});
  auto db = tl::zeros<float>({BLOCK});
  auto row_start = pid * rows_per_program;
  auto row_end = tl::minimum(row_start + rows_per_program, n_rows);
  for (auto row : tl::range(row_start, row_end)) {
    auto offs = row.to<int64_t>() * n_cols + cols;
    auto dy = tl::load(DY + offs, mask, 0).to<float>();
    auto x = tl::load(X + offs, mask, 0).to<float>();
    auto x_hat = (x - tl::load(Mean + row)) * tl::load(Rstd + row);
    auto wdy = w * dy;
    auto c1 = tl::sum(x_hat * wdy, 0) / n_cols;
    auto c2 = tl::sum(wdy, 0) / n_cols;
    tl::store(DX + offs, (wdy - (x_hat * c1 + c2)) * tl::load(Rstd + row), mask);
    dw += dy * x_hat;
    db += dy;
  }
  tl::store(DW_partial + pid * n_cols + cols, dw, mask);
  tl::store(DB_partial + pid * n_cols + cols, db, mask);
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
  auto in = norm_bwd::inputs(M, N, true, 45);
  auto dy = ctx.dev.from_host(in.dy), x = ctx.dev.from_host(in.x), w = ctx.dev.from_host(in.w);
  auto mean = ctx.dev.from_host(in.mean), rstd = ctx.dev.from_host(in.rstd);
  const int P = norm_bwd::programs(ctx.dev, M), rows_per_program = tritium::cdiv(M, P);
  auto dx = ctx.dev.alloc<half>(in.x.size());
  auto dw_partial = ctx.dev.alloc<float>(size_t(P) * N), dw = ctx.dev.alloc<float>(N);
  auto db_partial = ctx.dev.alloc<float>(size_t(P) * N), db = ctx.dev.alloc<float>(N);
  auto kernel = tritium::jit(layernorm_bwd_kernel, "layernorm_bwd_kernel");
  auto sum = tritium::jit(norm_bwd::sum_partials_kernel, "sum_partials_kernel");
  const int block = next_pow2(N);
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  const tritium::LaunchGrid sum_grid{tritium::cdiv(N, norm_bwd::sum_block_n)};
  ctx.launch([&] {
    kernel[{P}](dy, x, w, mean, rstd, dx, dw_partial, db_partial, M, N, rows_per_program, block);
    sum[sum_grid](dw_partial, dw, P, N, norm_bwd::sum_block_m, norm_bwd::sum_block_n);
    sum[sum_grid](db_partial, db, P, N, norm_bwd::sum_block_m, norm_bwd::sum_block_n);
  });
  std::vector<double> ref_dx(in.x.size()), ref_dw(N), ref_db(N);
  for (int r = 0; r < M; ++r) {
    const size_t base = size_t(r) * N;
    auto x_hat = [&](int c) { return (to_double(in.x[base + c]) - in.mean[r]) * in.rstd[r]; };
    double c1 = 0, c2 = 0;
    for (int c = 0; c < N; ++c) {
      double wdy = to_double(in.w[c]) * to_double(in.dy[base + c]);
      c1 += x_hat(c) * wdy / N;
      c2 += wdy / N;
    }
    for (int c = 0; c < N; ++c) {
      double dyv = to_double(in.dy[base + c]), wdy = to_double(in.w[c]) * dyv;
      ref_dx[base + c] = (wdy - (x_hat(c) * c1 + c2)) * in.rstd[r];
      ref_dw[c] += dyv * x_hat(c);
      ref_db[c] += dyv;
    }
  }
  Outcome o = combine({compare("dx", dx.to_host(), ref_dx, 2e-3, 4e-3),
                       compare("dw", dw.to_host(), ref_dw, 1e-3, 1e-4),
                       compare("db", db.to_host(), ref_db, 1e-3, 1e-4)});
  o.bytes = 3.0 * in.x.size() * sizeof(half);
  return o;
}

const int registered = add({"layernorm_bwd", "norm", shapes, run});

} // namespace
