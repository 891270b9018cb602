// embedding: out[t, :] = weight[ids[t], :], token ids int64 into an fp16 table [V, D] (a
// model's input embedding; FlagGems' embedding). One program per token copies its row.
#include "check.hpp"

namespace {
using namespace zoo;

void embedding_kernel(tl::ptr<int64_t> Ids, tl::ptr<tl::f16> Weight, tl::ptr<tl::f16> Out,
                      tl::i32 D, tl::constexpr_<int> BLOCK) {
  auto token = tl::program_id(0);
  auto id = tl::load(Ids + token);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < D;
  tl::store(Out + token.to<int64_t>() * D + cols, tl::load(Weight + id * D + cols, mask), mask);
}

// tokens x vocabulary x hidden
std::vector<std::string> shapes(bool full) {
  if (full)
    return {"4096x32000x4096", "16384x128256x2048"};
  return {"9x50x100"};
}

Outcome run(Context& ctx, const std::string& shape) {
  auto d = dims(shape);
  const int T = int(d[0]), V = int(d[1]), D = int(d[2]);
  auto hw = random_vector<half>(size_t(V) * D, 61);
  std::vector<int64_t> hids(T);
  for (int t = 0; t < T; ++t)
    hids[t] = int64_t(uniform(62, t, 0, V));
  auto ids = ctx.dev.from_host(hids);
  auto w = ctx.dev.from_host(hw);
  auto out = ctx.dev.alloc<half>(size_t(T) * D);
  auto kernel = tritium::jit(embedding_kernel, "embedding_kernel");
  ctx.launch([&] { kernel[{T}](ids, w, out, D, next_pow2(D)); });
  std::vector<half> ref(size_t(T) * D);
  for (int t = 0; t < T; ++t)
    std::copy_n(&hw[size_t(hids[t]) * D], D, &ref[size_t(t) * D]);
  Outcome o = compare_exact("out", out.to_host(), ref);
  o.bytes = 2.0 * ref.size() * sizeof(half);
  return o;
}

const int registered = add({"embedding", "gather", shapes, run});

} // namespace
