// tl::dot. Operands are packed into contiguous tiles (rounding to tf32 on the way when asked),
// then a register-blocked micro-kernel keeps an MR x (NR * W) block of the accumulator in
// vector registers across the whole k loop (W = the host's f32 lanes). Each output element
// still sums its products one fused multiply-add at a time in k order, exactly as the
// interpreter does, so results are bit-identical.
#include "lowering.hpp"
#include "target.hpp"

#include <llvm/IR/Intrinsics.h>

namespace tritium::cpu {

using ir::DType;
using ir::ScalarKind;

namespace {
// Rows per micro-tile: 6 x 2 accumulators and 3 operand registers fill AVX2's 16 (4 rows left
// a 64x64x32 fp32 dot at 0.79-1.00 of OpenBLAS's sgemm at 1024^3 on a 2-core Zen 3: 8
// accumulators barely cover the FMA units' latency, and 6 loads fed 8 FMAs, against 8 for 12).
// A tile whose rows do not divide ends with one block of kMinMR rows.
constexpr int64_t kMR = 6;
constexpr int64_t kMinMR = 4;
constexpr int64_t kNR = 2; // vector registers per row

// An f32 rounded to tf32's 10 mantissa bits, to nearest even; infinities and NaNs as they are.
llvm::Value* round_to_tf32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* u = b.CreateBitCast(x, b.getInt32Ty());
  llvm::Value* special =
      b.CreateICmpEQ(b.CreateAnd(u, b.getInt32(0x7f800000)), b.getInt32(0x7f800000));
  llvm::Value* r = b.CreateAnd(
      b.CreateAdd(b.CreateAdd(u, b.getInt32(0x0fff)), b.CreateAnd(b.CreateLShr(u, 13), 1)),
      b.getInt32(~0x1fffu));
  return b.CreateBitCast(b.CreateSelect(special, u, r), b.getFloatTy());
}

// The operands packed, C, and how the micro-kernel tiles them (lower_dot).
struct MicroTiles {
  View A, B, C;
  int64_t M, K, N, W, nr, n_full;
};

// One mr x (nr * W) block of C per (i0, j0), kept in registers across the whole k loop.
void micro_rows(KernelLowering& kl, const MicroTiles& t, llvm::Value* bt, int64_t i_lo,
                int64_t i_hi, int64_t mr) {
  auto& b = kl.b();
  const int64_t M = t.M, K = t.K, N = t.N, W = t.W, nr = t.nr;
  auto i64 = [&](int64_t v) { return kl.i64(v); };
  auto ptr = [&](const View& v, llvm::Value* lin) {
    return b.CreateInBoundsGEP(v.ty, v.base, lin);
  };
  auto base_of = [&](int64_t rows, int64_t cols) { return b.CreateMul(bt, i64(rows * cols)); };
  auto* vt = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(W));
  kl.loop(i64(i_lo), i64(i_hi), mr, [&](llvm::Value* i0) {
    kl.loop(i64(0), i64(t.n_full), nr * W, [&](llvm::Value* j0) {
      std::vector<llvm::Value*> cptr(mr * nr), init(mr * nr);
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t n = 0; n < nr; ++n) {
          llvm::Value* lin =
              b.CreateAdd(base_of(M, N), b.CreateAdd(b.CreateMul(b.CreateAdd(i0, i64(r)), i64(N)),
                                                     b.CreateAdd(j0, i64(n * W))));
          cptr[r * nr + n] = ptr(t.C, lin);
          init[r * nr + n] = b.CreateAlignedLoad(vt, cptr[r * nr + n], llvm::Align(4));
        }
      llvm::BasicBlock* pre = b.GetInsertBlock();
      auto* kb = llvm::BasicBlock::Create(kl.ctx(), "dot.k", kl.fn());
      auto* done = llvm::BasicBlock::Create(kl.ctx(), "dot.k.done", kl.fn());
      b.CreateBr(kb);
      b.SetInsertPoint(kb);
      auto* k = b.CreatePHI(b.getInt64Ty(), 2, "k");
      k->addIncoming(i64(0), pre);
      std::vector<llvm::PHINode*> c(mr * nr);
      for (size_t q = 0; q < c.size(); ++q) {
        c[q] = b.CreatePHI(vt, 2);
        c[q]->addIncoming(init[q], pre);
      }
      std::vector<llvm::Value*> bvec(nr);
      for (int64_t n = 0; n < nr; ++n)
        bvec[n] = b.CreateAlignedLoad(
            vt,
            ptr(t.B, b.CreateAdd(base_of(K, N),
                                 b.CreateAdd(b.CreateMul(k, i64(N)), b.CreateAdd(j0, i64(n * W))))),
            llvm::Align(4));
      std::vector<llvm::Value*> next(c.size());
      for (int64_t r = 0; r < mr; ++r) {
        llvm::Value* a = b.CreateLoad(
            b.getFloatTy(),
            ptr(t.A, b.CreateAdd(base_of(M, K),
                                 b.CreateAdd(b.CreateMul(b.CreateAdd(i0, i64(r)), i64(K)), k))));
        llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(W), a);
        for (int64_t n = 0; n < nr; ++n)
          next[r * nr + n] =
              b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {splat, bvec[n], c[r * nr + n]});
      }
      llvm::Value* k1 = b.CreateAdd(k, i64(1), "", true, true);
      k->addIncoming(k1, b.GetInsertBlock());
      for (size_t q = 0; q < c.size(); ++q)
        c[q]->addIncoming(next[q], b.GetInsertBlock());
      b.CreateCondBr(b.CreateICmpSLT(k1, i64(K)), kb, done);
      b.SetInsertPoint(done);
      for (size_t q = 0; q < c.size(); ++q)
        b.CreateAlignedStore(next[q], cptr[q], llvm::Align(4));
    });
  });
}
} // namespace

void KernelLowering::lower_dot(const ir::Op& op) {
  flush();
  auto& b = builder_;
  const ir::Value *av = op.operand(0), *bv = op.operand(1), *cv = op.operand(2);
  int rank = av->type.rank();
  int64_t batch = rank == 3 ? av->type.shape[0] : 1;
  int64_t M = av->type.shape[rank - 2], K = av->type.shape[rank - 1], N = bv->type.shape[rank - 1];
  DType in = av->type.elem, acc = cv->type.elem;
  bool tf32 =
      in.kind == ScalarKind::F32 &&
      op.enum_attr<ir::InputPrecision>(ir::InputPrecision::Ieee) != ir::InputPrecision::Ieee;
  bool float_path = acc.is_float();
  llvm::Type* acc_ty = elements_.reg_type(acc);

  // Packed operands in the accumulator's register type: [batch, M, K] and [batch, K, N]. A
  // tile already held that way (an fp32 tile loaded for an fp32 dot) is read in place: the
  // copy was a third of the data movement of tutorial 03's matmul step. So is an f16 or bf16
  // tile for an f32 dot: its scratch already holds the exact f32 value, which the copy's
  // conversion left unchanged.
  const bool exact_in_scratch =
      in == acc ||
      (acc.kind == ScalarKind::F32 && (in.kind == ScalarKind::F16 || in.kind == ScalarKind::BF16));
  auto pack = [&](const ir::Value* v, int64_t rows, int64_t cols) {
    View src = view(v);
    if (!tf32 && exact_in_scratch && src.ty == acc_ty && contiguous(src)) {
      if (src.offset)
        src.base = b.CreateInBoundsGEP(src.ty, src.base, i64(src.offset));
      src.offset = 0;
      return src;
    }
    View dst = new_buffer(acc, {batch, rows, cols});
    if (rank == 2) {
      dst.shape.erase(dst.shape.begin());
      dst.strides.erase(dst.strides.begin());
    }
    loop_nest(dst.shape, [&](const std::vector<llvm::Value*>& idx) {
      llvm::Value* x =
          elements_.from_scratch(b.CreateLoad(src.ty, element_ptr(src, idx)), v->type.elem);
      if (tf32)
        x = round_to_tf32(b, x);
      if (float_path) // (an fp8 code decoded: exact in f32, as f16 and bf16 are)
        x = elements_.scalar_.convert(x, v->type.elem, acc);
      else
        x = in.is_unsigned() ? b.CreateZExtOrTrunc(x, acc_ty) : b.CreateSExtOrTrunc(x, acc_ty);
      b.CreateStore(x, element_ptr(dst, idx));
    });
    return dst;
  };
  View A = pack(av, M, K), B = pack(bv, K, N);
  // `acc = dot(a, b, acc)` in a K loop: where the loop's carried accumulator is read by this dot
  // alone and its result is the carried value's next one, the dot accumulates in the carried
  // buffer itself. A copy in and the yield's copy out were 2 x BM x BN floats moved per K step
  // against BM x BN x BK multiply-adds (a 64x64x32 step: an eighth of its instructions).
  std::unordered_set<const ir::Op*> only_this{&op};
  const View* carry = fusion_.carried_in_place(op.result(), only_this);
  const bool in_place = carry && !cv->def && view(cv).base == carry->base;
  View C = in_place ? *carry : new_buffer(acc, cv->type.shape);
  if (!in_place)
    copy(view(cv), C, acc);

  auto ptr = [&](const View& v, llvm::Value* lin) {
    return b.CreateInBoundsGEP(v.ty, v.base, lin);
  };
  auto base_of = [&](llvm::Value* bt, int64_t rows, int64_t cols) {
    return b.CreateMul(bt, i64(rows * cols));
  };

  // Plain loops for what the micro-kernel does not cover: i, k, j with j innermost.
  auto simple = [&](llvm::Value* bt, int64_t i_lo, int64_t i_hi, int64_t j_lo, int64_t j_hi) {
    if (i_lo >= i_hi || j_lo >= j_hi)
      return;
    loop(i64(i_lo), i64(i_hi), 1, [&](llvm::Value* i) {
      loop(i64(0), i64(K), 1, [&](llvm::Value* k) {
        llvm::Value* x = b.CreateLoad(
            acc_ty, ptr(A, b.CreateAdd(base_of(bt, M, K), b.CreateAdd(b.CreateMul(i, i64(K)), k))));
        loop(i64(j_lo), i64(j_hi), 1, [&](llvm::Value* j) {
          llvm::Value* y = b.CreateLoad(
              acc_ty,
              ptr(B, b.CreateAdd(base_of(bt, K, N), b.CreateAdd(b.CreateMul(k, i64(N)), j))));
          llvm::Value* cp =
              ptr(C, b.CreateAdd(base_of(bt, M, N), b.CreateAdd(b.CreateMul(i, i64(N)), j)));
          llvm::Value* s = b.CreateLoad(acc_ty, cp);
          llvm::Value* r =
              float_path ? elements_.scalar_.fma(acc, x, y, s) : b.CreateAdd(s, b.CreateMul(x, y));
          b.CreateStore(r, cp);
        });
      });
    });
  };

  const int64_t W = target_.vector_bits / 32;
  const bool micro = acc.kind == ScalarKind::F32 && N >= W && M >= kMinMR;
  const int64_t nr = micro ? std::min<int64_t>(kNR, N / W) : 0;
  const int64_t n_full = micro ? N / (nr * W) * (nr * W) : 0;
  // Rows in blocks of kMR, then one block of kMinMR where that many are left.
  const int64_t m_big = micro ? M / kMR * kMR : 0;
  const int64_t m_full = micro && M - m_big >= kMinMR ? m_big + kMinMR : m_big;

  loop(i64(0), i64(batch), 1, [&](llvm::Value* bt) {
    if (micro) {
      const MicroTiles t{A, B, C, M, K, N, W, nr, n_full};
      micro_rows(*this, t, bt, 0, m_big, kMR);
      micro_rows(*this, t, bt, m_big, m_full, kMinMR);
      simple(bt, 0, m_full, n_full, N);
      simple(bt, m_full, M, 0, N);
    } else {
      simple(bt, 0, M, 0, N);
    }
  });
  set_view(op.result(), C);
}

} // namespace tritium::cpu
