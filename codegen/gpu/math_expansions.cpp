// Math functions built from exp / log2 / exp2, for targets that have no device library for
// them (AMDGPU without ROCm's ocml, which Debian 12 does not package; NVPTX without
// libdevice). Accuracy: tanh within a few ulp of f32; erf within 2e-7 absolute (Abramowitz &
// Stegun 7.1.26 above 0.5, Taylor series below); pow as exp2(y * log2|x|) with the sign and
// the special cases of x <= 0 handled.
#include "gpu/target_info.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

namespace tritium::gpu {

llvm::Value* expand_math_f64(llvm::IRBuilder<>& b, ir::OpKind kind, llvm::Value* x,
                             const ir::Op& op) {
  using llvm::Value;
  llvm::Type* t = b.getDoubleTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](Value* a, Value* m, Value* d) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a, m, d});
  };
  auto horner = [&](Value* z, const std::vector<double>& coeffs) { // highest degree first
    Value* r = c(coeffs[0]);
    for (size_t i = 1; i < coeffs.size(); ++i)
      r = fma(r, z, c(coeffs[i]));
    return r;
  };
  auto fact = [](int n) {
    double f = 1;
    for (int i = 2; i <= n; ++i)
      f *= i;
    return f;
  };
  auto round = [&](Value* v) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, v); };
  auto ldexp = [&](Value* v, Value* k) {
    return b.CreateIntrinsic(llvm::Intrinsic::ldexp, {t, b.getInt32Ty()},
                             {v, b.CreateFPToSI(k, b.getInt32Ty())});
  };
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  // e^r for |r| <= ln2/2: Taylor series to r^13 (error below 1e-17).
  auto exp_reduced = [&](Value* r) {
    std::vector<double> k;
    for (int i = 13; i >= 0; --i)
      k.push_back(1.0 / fact(i));
    return horner(r, k);
  };
  auto exp = [&](Value* v) {
    Value* k = round(b.CreateFMul(v, c(1.4426950408889634)));
    Value* r = fma(b.CreateFNeg(k), c(ln2_lo), fma(b.CreateFNeg(k), c(ln2_hi), v));
    Value* e = ldexp(exp_reduced(r), k);
    // Saturate far outside the range (k would overflow ldexp's exponent otherwise).
    e = b.CreateSelect(b.CreateFCmpOGT(v, c(709.8)), c(INFINITY), e);
    return b.CreateSelect(b.CreateFCmpOLT(v, c(-745.2)), c(0.0), e);
  };
  auto log = [&](Value* v) {
    // v = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1).
    auto* fr = b.CreateIntrinsic(llvm::Intrinsic::frexp, {t, b.getInt32Ty()}, {v});
    Value* m = b.CreateExtractValue(fr, 0);
    Value* e = b.CreateSIToFP(b.CreateExtractValue(fr, 1), t);
    Value* small = b.CreateFCmpOLT(m, c(0.70710678118654752));
    m = b.CreateSelect(small, b.CreateFMul(m, c(2.0)), m);
    e = b.CreateSelect(small, b.CreateFSub(e, c(1.0)), e);
    Value* s = b.CreateFDiv(b.CreateFSub(m, c(1.0)), b.CreateFAdd(m, c(1.0)));
    Value* s2 = b.CreateFMul(s, s);
    std::vector<double> k;
    for (int i = 10; i >= 1; --i)
      k.push_back(1.0 / (2 * i + 1));
    Value* tail = b.CreateFMul(s2, horner(s2, k)); // s^2/3 + s^4/5 + ...
    Value* lm = b.CreateFMul(c(2.0), fma(s, tail, s));
    Value* r = fma(e, c(ln2_hi), fma(e, c(ln2_lo), lm));
    // Special cases: log 0 = -inf, log of a negative = NaN, log inf = inf, NaN stays.
    r = b.CreateSelect(b.CreateFCmpOEQ(v, c(0.0)), c(-INFINITY), r);
    r = b.CreateSelect(b.CreateFCmpOLT(v, c(0.0)), llvm::ConstantFP::getNaN(t), r);
    r = b.CreateSelect(b.CreateFCmpOEQ(v, c(INFINITY)), c(INFINITY), r);
    return b.CreateSelect(b.CreateFCmpUNO(v, v), v, r);
  };
  auto sincos = [&](Value* v, bool cosine) {
    // k = round(v * 2/pi); r = v - k pi/2 in three parts (Cody & Waite).
    Value* k = round(b.CreateFMul(v, c(0.63661977236758134)));
    Value* nk = b.CreateFNeg(k);
    Value* r = fma(nk, c(1.5707963267341256e+00), v);
    r = fma(nk, c(6.0771005065061922e-11), r);
    r = fma(nk, c(2.0222662487959506e-21), r);
    Value* r2 = b.CreateFMul(r, r);
    std::vector<double> ks, kc;
    for (int i = 8; i >= 1; --i)
      ks.push_back((i % 2 ? -1.0 : 1.0) / fact(2 * i + 1));
    for (int i = 9; i >= 2; --i)
      kc.push_back((i % 2 ? -1.0 : 1.0) / fact(2 * i));
    Value* sn = fma(b.CreateFMul(r, r2), horner(r2, ks), r); // r - r^3/3! + ...
    Value* cs = fma(b.CreateFMul(r2, r2), horner(r2, kc), fma(r2, c(-0.5), c(1.0)));
    // Quadrant q = k mod 4 (cos shifts it by one).
    Value* q = b.CreateAnd(b.CreateFPToSI(k, b.getInt64Ty()), 3);
    if (cosine)
      q = b.CreateAnd(b.CreateAdd(q, b.getInt64(1)), 3);
    Value* odd = b.CreateICmpEQ(b.CreateAnd(q, 1), b.getInt64(1));
    Value* neg = b.CreateICmpUGE(q, b.getInt64(2));
    Value* res = b.CreateSelect(odd, cs, sn);
    return b.CreateSelect(neg, b.CreateFNeg(res), res);
  };
  switch (kind) {
  case ir::OpKind::Exp:
    return exp(x);
  case ir::OpKind::Exp2: {
    // 2^x = 2^k * e^((x - k) ln 2); x - k is exact.
    Value* k = round(x);
    Value* f = b.CreateFSub(x, k);
    Value* e = ldexp(exp_reduced(fma(f, c(ln2_hi), b.CreateFMul(f, c(ln2_lo)))), k);
    e = b.CreateSelect(b.CreateFCmpOGT(x, c(1024.0)), c(INFINITY), e);
    return b.CreateSelect(b.CreateFCmpOLT(x, c(-1075.0)), c(0.0), e);
  }
  case ir::OpKind::Log:
    return log(x);
  case ir::OpKind::Log2:
    return b.CreateFMul(log(x), c(1.4426950408889634));
  case ir::OpKind::Sin:
    return sincos(x, false);
  case ir::OpKind::Cos:
    return sincos(x, true);
  default:
    throw Error(fmt::format("{}: op '{}': no f64 expansion of this math function", op.loc.str(),
                            ir::op_name(kind)));
  }
}

llvm::Value* expand_math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                         TargetInfo& ti, const ir::Op& op) {
  using llvm::Value;
  Value* x = args[0];
  llvm::Type* t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto poly = [&](Value* z, std::initializer_list<double> coeffs) {
    Value* r = nullptr;
    for (double k : coeffs) // highest degree first
      r = r ? b.CreateFAdd(b.CreateFMul(r, z), c(k)) : c(k);
    return r;
  };
  Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  switch (ir::as<ir::MathOp>(kind)) {
  case ir::MathOp::Exp:
  case ir::MathOp::Exp2:
  case ir::MathOp::Log:
  case ir::MathOp::Log2:
  case ir::MathOp::Sin:
  case ir::MathOp::Cos:
    // LLVM's intrinsics: the backends expand them on f32; f64 has our own expansions.
    if (t->isDoubleTy())
      return expand_math_f64(b, kind, x, op);
    return b.CreateUnaryIntrinsic(llvm_math_intrinsic(kind), x);
  case ir::MathOp::Tanh: {
    Value* x2 = b.CreateFMul(x, x);
    // Small |x|: x * (1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835).
    Value* small = b.CreateFMul(x, poly(x2, {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3, 1.0}));
    Value* e = ti.math(b, ir::OpKind::Exp, {b.CreateFMul(ax, c(2.0))}, op);
    Value* big = b.CreateFSub(c(1.0), b.CreateFDiv(c(2.0), b.CreateFAdd(e, c(1.0))));
    big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
    return b.CreateSelect(b.CreateFCmpOLT(ax, c(0.125)), small, big);
  }
  case ir::MathOp::Erf: {
    Value* x2 = b.CreateFMul(x, x);
    // 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360)
    Value* small = b.CreateFMul(
        b.CreateFMul(x, c(1.1283791670955126)),
        poly(x2, {1.0 / 9360, -1.0 / 1320, 1.0 / 216, -1.0 / 42, 1.0 / 10, -1.0 / 3, 1.0}));
    Value* tt = b.CreateFDiv(c(1.0), b.CreateFAdd(c(1.0), b.CreateFMul(c(0.3275911), ax)));
    Value* p = b.CreateFMul(
        tt, poly(tt, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}));
    Value* e = ti.math(b, ir::OpKind::Exp, {b.CreateFNeg(x2)}, op);
    Value* big = b.CreateFSub(c(1.0), b.CreateFMul(p, e));
    big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
    return b.CreateSelect(b.CreateFCmpOLT(ax, c(0.5)), small, big);
  }
  case ir::MathOp::Log1p: {
    // log(u) * x / (u - 1) with u = 1 + x: exact where u rounds to 1 (Goldberg).
    Value* u = b.CreateFAdd(c(1.0), x);
    Value* l = ti.math(b, ir::OpKind::Log, {u}, op);
    Value* r = b.CreateFMul(l, b.CreateFDiv(x, b.CreateFSub(u, c(1.0))));
    r = b.CreateSelect(b.CreateFCmpOEQ(u, c(1.0)), x, r);
    return b.CreateSelect(b.CreateFCmpOEQ(u, c(INFINITY)), u, r);
  }
  case ir::MathOp::Pow: {
    Value* y = args[1];
    Value* mag =
        ti.math(b, ir::OpKind::Exp2, {b.CreateFMul(y, ti.math(b, ir::OpKind::Log2, {ax}, op))}, op);
    // x < 0: defined for integral y, negative for odd y.
    Value* yi = b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, y);
    Value* integral = b.CreateFCmpOEQ(yi, y);
    Value* half = b.CreateFMul(y, c(0.5));
    Value* odd = b.CreateAnd(
        integral, b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, half), half));
    Value* neg = b.CreateSelect(integral, b.CreateSelect(odd, b.CreateFNeg(mag), mag),
                                llvm::ConstantFP::getNaN(t));
    Value* r = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), neg, mag);
    // pow(x, 0) = 1 for every x, NaN included.
    return b.CreateSelect(b.CreateFCmpOEQ(y, c(0.0)), c(1.0), r);
  }
  }
  return nullptr;
}

llvm::Intrinsic::ID llvm_math_intrinsic(ir::OpKind kind) {
  switch (kind) {
  case ir::OpKind::Exp:
    return llvm::Intrinsic::exp;
  case ir::OpKind::Exp2:
    return llvm::Intrinsic::exp2;
  case ir::OpKind::Log:
    return llvm::Intrinsic::log;
  case ir::OpKind::Log2:
    return llvm::Intrinsic::log2;
  case ir::OpKind::Sin:
    return llvm::Intrinsic::sin;
  case ir::OpKind::Cos:
    return llvm::Intrinsic::cos;
  default:
    return llvm::Intrinsic::not_intrinsic;
  }
}

} // namespace tritium::gpu
