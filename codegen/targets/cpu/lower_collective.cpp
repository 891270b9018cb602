// Reduce and scan. The combine region is applied in the interpreter's order (sequentially
// along the axis), so results are bit-identical; the loops run the axis outermost and the
// independent lanes (all other dimensions) innermost and contiguous, which is what the
// vectorizer turns into SIMD. A 1-D reduction has one lane and stays a scalar loop.
#include "lowering.hpp"

#include <numeric>

namespace tritium::cpu {

using ir::DType;
using ir::OpKind;

void KernelLowering::lower_reduce_or_scan(const ir::Op& op) {
  flush(); // the combine region is emitted inside loops: no group may be pending there
  auto& b = builder_;
  const auto& o = op.operands;
  size_t n = o.size();
  const auto& shape = o[0]->type.shape;
  int64_t axis = op.int_attr("axis");
  int64_t len = shape[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  bool scan = op.kind == OpKind::Scan;
  bool reverse = scan && op.int_attr("reverse", 0);

  // Inputs are packed axis-major, as [len][outer * inner]: each step along the axis is then
  // one contiguous loop over independent lanes, which vectorizes whatever the axis is.
  const int64_t lanes = outer * inner;
  auto axis_major = [&](View v) {
    v.strides.assign(shape.size(), 0);
    int64_t s = 1;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d)
      if (d != axis) {
        v.strides[d] = s;
        s *= shape[d];
      }
    v.strides[axis] = lanes;
    v.shape = shape;
    return v;
  };
  std::vector<View> in(n), acc(n), out(n);
  for (size_t k = 0; k < n; ++k) {
    in[k] = axis_major(new_buffer(o[k]->type.elem, {len * lanes}));
    copy(view(o[k]), in[k], o[k]->type.elem);
    acc[k] = new_buffer(o[k]->type.elem, {lanes});
    if (scan)
      out[k] = axis_major(new_buffer(o[k]->type.elem, {len * lanes}));
  }
  auto at = [&](const View& v, llvm::Value* lin) { return b.CreateInBoundsGEP(v.ty, v.base, lin); };
  auto step = [&](llvm::Value* j, bool first) {
    llvm::Value* jj = reverse ? b.CreateSub(i64(len - 1), j) : j;
    llvm::Value* row = b.CreateMul(jj, i64(lanes));
    loop(i64(0), i64(lanes), 1, [&](llvm::Value* q) {
      llvm::Value* src = b.CreateAdd(row, q);
      std::vector<llvm::Value*> cur(n), args;
      for (size_t k = 0; k < n; ++k)
        cur[k] = from_scratch(b.CreateLoad(in[k].ty, at(in[k], src)), o[k]->type.elem);
      if (!first) {
        for (size_t k = 0; k < n; ++k)
          args.push_back(from_scratch(b.CreateLoad(acc[k].ty, at(acc[k], q)), o[k]->type.elem));
        args.insert(args.end(), cur.begin(), cur.end());
        cur = inline_region(op.body(), args);
      }
      for (size_t k = 0; k < n; ++k) {
        b.CreateStore(to_scratch(cur[k], o[k]->type.elem), at(acc[k], q));
        if (scan)
          b.CreateStore(to_scratch(cur[k], o[k]->type.elem), at(out[k], src));
      }
    });
  };
  step(i64(0), true);
  if (len > 1)
    loop(i64(1), i64(len), 1, [&](llvm::Value* j) { step(j, false); });

  for (size_t k = 0; k < n; ++k) {
    const ir::Value* r = op.results[k];
    if (scan) {
      set_view(r, out[k]);
    } else if (r->type.is_scalar()) {
      set_scalar(r, from_scratch(b.CreateLoad(acc[k].ty, acc[k].base), r->type.elem));
    } else {
      View v = acc[k];
      v.shape = r->type.shape;
      v.strides.assign(v.shape.size(), 1);
      for (int d = static_cast<int>(v.shape.size()) - 2; d >= 0; --d)
        v.strides[d] = v.strides[d + 1] * v.shape[d + 1];
      set_view(r, v);
    }
  }
}

} // namespace tritium::cpu
