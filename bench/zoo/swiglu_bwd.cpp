// swiglu_bwd: the gradients of c = silu(a) * b given dc, Liger's SwiGLU backward (silu
// recomputed, not stored): db = dc silu(a), da = dc b sigmoid(a) (1 + a (1 - sigmoid(a))).
// One program per row of [tokens, intermediate] fp16; da and db go to their own buffers.
#include "glu.hpp"

namespace {
using namespace zoo;

void swiglu_bwd_kernel(tl::ptr<tl::f16> DC, tl::ptr<tl::f16> A, tl::ptr<tl::f16> B,
                       tl::ptr<tl::f16> DA, tl::ptr<tl::f16> DB, tl::i32 n_cols,
                       tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0).to<int64_t>() * n_cols;
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto dc = tl::load(DC + row + cols, mask, 0).to<float>();
  auto a = tl::load(A + row + cols, mask, 0).to<float>();
  auto b = tl::load(B + row + cols, mask, 0).to<float>();
  auto sig = tl::sigmoid(a);
  auto silu = a * sig;
  tl::store(DB + row + cols, dc * silu, mask);
  tl::store(DA + row + cols, dc * (silu * (1.f - sig) + sig) * b, mask);
}

// tokens x intermediate
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x11008", "4096x14336"};
  return {"5x300"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int T = int(d[0]), I = int(d[1]);
  auto hdc = random_vector<half>(size_t(T) * I, 33);
  auto ha = random_vector<half>(hdc.size(), 34, -4, 4);
  auto hb = random_vector<half>(hdc.size(), 35, -2, 2);
  auto dc = ctx.dev.from_host(hdc), a = ctx.dev.from_host(ha), b = ctx.dev.from_host(hb);
  auto da = ctx.dev.alloc<half>(hdc.size()), db = ctx.dev.alloc<half>(hdc.size());
  auto kernel = tritium::jit(swiglu_bwd_kernel, "swiglu_bwd_kernel");
  const int block = next_pow2(I);
  kernel.options({.num_warps = row_warps(block, ctx.dev)});
  ctx.launch([&] { kernel[{T}](dc, a, b, da, db, I, block); });
  std::vector<double> ref_da(hdc.size()), ref_db(hdc.size());
  for (size_t i = 0; i < hdc.size(); ++i) {
    double x = to_double(ha[i]), s = 1 / (1 + std::exp(-x));
    ref_db[i] = to_double(hdc[i]) * glu::silu(x);
    ref_da[i] = to_double(hdc[i]) * to_double(hb[i]) * s * (1 + x * (1 - s));
  }
  Outcome o = combine({compare("da", da.to_host(), ref_da, 2e-3, 4e-3),
                       compare("db", db.to_host(), ref_db, 2e-3, 4e-3)});
  o.bytes = 5.0 * hdc.size() * sizeof(half);
  return o;
}

const int registered = add({"swiglu_bwd", "elementwise", shapes, run});

} // namespace
