// Math functions built from exp / log2 / exp2, for targets that have no device library for
// them (AMDGPU without ROCm's ocml, which Debian 12 does not package; NVPTX without
// libdevice). Accuracy: tanh within a few ulp of f32; erf within 2e-7 absolute (Abramowitz &
// Stegun 7.1.26 above 0.5, Taylor series below); pow as exp2(y * log2|x|) with the sign and
// the special cases of x <= 0 handled.
#include "gpu/target_info.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

namespace tritium::gpu {

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
  switch (kind) {
  case ir::OpKind::Tanh: {
    Value* x2 = b.CreateFMul(x, x);
    // Small |x|: x * (1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835).
    Value* small = b.CreateFMul(x, poly(x2, {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3, 1.0}));
    Value* e = ti.math(b, ir::OpKind::Exp, {b.CreateFMul(ax, c(2.0))}, op);
    Value* big = b.CreateFSub(c(1.0), b.CreateFDiv(c(2.0), b.CreateFAdd(e, c(1.0))));
    big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
    return b.CreateSelect(b.CreateFCmpOLT(ax, c(0.125)), small, big);
  }
  case ir::OpKind::Erf: {
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
  case ir::OpKind::Pow: {
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
  default:
    throw Error(fmt::format("{}: op '{}': no expansion of this math function for this target",
                            op.loc.str(), ir::op_name(kind)));
  }
}

} // namespace tritium::gpu
