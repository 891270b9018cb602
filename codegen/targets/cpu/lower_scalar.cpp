// Element semantics on the CPU: the shared LLVM layer (codegen/llvm/scalar.hpp) with what the
// CPU decides for itself, so that results are bit for bit the reference interpreter's:
//  * f16/bf16 live in f32 registers (exactly representable values) and are rounded after each
//    op; f32 has more than 2p+2 significand bits, so that double rounding is innocuous;
//  * math functions (exp, log, sin, pow, …) and rsqrt compute in double and round once, as the
//    interpreter does: the C library's function by its name in ops.def, or, where the loop
//    vectorizer knows a vector version, the LLVM intrinsic on double; but exp and log of 32-
//    and 16-bit floats use the vector math library's f32 functions, within a few ulp (an op
//    marked rn = 1 keeps the double path);
//  * an f32 quotient allows a reciprocal (within 2 ulp, as Triton's `/` on GPUs); div_rn not;
//  * user memory holds f16/bf16 as 16 bits and i1 as a byte.
#include "ldexp.hpp"
#include "lowering.hpp"

#include "target.hpp"
#include "vector_variants.hpp"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

namespace tritium::cpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

llvm::Type* ElementLowering::scratch_type(DType t) {
  return t.is_bool() ? llvm::Type::getInt8Ty(k_.ctx_) : reg_type(t);
}
llvm::Value* ElementLowering::to_scratch(llvm::Value* v, DType t) {
  return t.is_bool() ? k_.builder_.CreateZExt(v, k_.builder_.getInt8Ty()) : v;
}
llvm::Value* ElementLowering::from_scratch(llvm::Value* v, DType t) {
  return t.is_bool() ? k_.builder_.CreateTrunc(v, k_.builder_.getInt1Ty()) : v;
}

llvm::Value* ElementLowering::load_user(llvm::Value* ptr, DType t) {
  llvm::Value* v = k_.builder_.CreateLoad(scalar_.memory_type(t), ptr);
  if (t.is_bool()) // the low bit, as the interpreter reads a bool
    return k_.builder_.CreateTrunc(v, k_.builder_.getInt1Ty());
  if (t.kind == ScalarKind::F16 || t.kind == ScalarKind::BF16) // 16 bits into an f32 register
    return scalar_.from_bits(v, t);
  return v;
}

int64_t ElementLowering::memory_bytes(DType t) {
  return static_cast<int64_t>(k_.module_.getDataLayout().getTypeStoreSize(scalar_.memory_type(t)));
}

void ElementLowering::store_user(llvm::Value* ptr, llvm::Value* v, DType t) {
  if (t.is_bool())
    v = k_.builder_.CreateZExt(v, k_.builder_.getInt8Ty());
  else if (t.kind == ScalarKind::F16 || t.kind == ScalarKind::BF16)
    v = scalar_.to_bits(v, t);
  k_.builder_.CreateStore(v, ptr);
}

// An f32 quotient may be approximate, as on GPUs (Triton's `/`, NVIDIA's div.full.f32): the
// quotient allows a reciprocal, so LLVM's LICM turns x / d with d invariant in the loop into x
// times 1 / d, computed once. That is within 2 ulp while |d| is in [2^-126, 2^126] (1 / d
// normal), and infinite where |d| < 2^-128; div_rn keeps the correctly rounded quotient. A
// softmax row's division pass was 22 % of its time in cache (bench/RESULTS.md, 2026-11-26).
llvm::Value* ElementLowering::elementwise(const ir::Op& op, const std::vector<llvm::Value*>& args) {
  llvm::Value* r = scalar_.elementwise(op, args);
  if (op.kind == OpKind::Div && op.operands[0]->type.elem.kind == ScalarKind::F32 &&
      !op.int_attr(attr::rn, 0))
    if (auto* q = llvm::dyn_cast<llvm::Instruction>(r);
        q && q->getOpcode() == llvm::Instruction::FDiv)
      q->setHasAllowReciprocal(true);
  return r;
}

llvm::FunctionCallee ElementLowering::libm(const char* name, int args) {
  auto* d = llvm::Type::getDoubleTy(k_.ctx_);
  std::vector<llvm::Type*> params(args, d);
  auto callee = k_.module_.getOrInsertFunction(name, llvm::FunctionType::get(d, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setOnlyAccessesInaccessibleMemory(); // errno at most
  }
  return callee;
}

// exp, log, sin, cos and pow on f32/f16/bf16 as double intrinsics (where math() has no f32 path
// for them): scalar code calls the C library (what the interpreter does), vectorized loops a
// vector math library where the target has one. Its few-ulp double error vanishes when rounded to
// f32/f16/bf16 (but for ties once in ~10^8 values), so f64 results keep the exact scalar call.
static llvm::Intrinsic::ID vectorizable(OpKind k) {
  switch (k) {
  case OpKind::Exp:
    return llvm::Intrinsic::exp;
  case OpKind::Log:
    return llvm::Intrinsic::log;
  case OpKind::Sin:
    return llvm::Intrinsic::sin;
  case OpKind::Cos:
    return llvm::Intrinsic::cos;
  case OpKind::Pow:
    return llvm::Intrinsic::pow;
  default:
    return llvm::Intrinsic::not_intrinsic;
  }
}

// Names the target's extra vector versions of an f32 math function on the call (LLVM's tables
// keep theirs), so that the loop vectorizer can call them at those widths.
void ElementLowering::add_vector_variants(llvm::CallInst* call) {
  std::vector<VectorVersion> versions;
  for (const CpuTarget::VectorVariant& v : k_.target_.vector_variants)
    if (v.scalar == call->getCalledFunction()->getName())
      versions.push_back({v.lanes, v.name});
  add_vector_versions(call, versions);
}

// The C library's f32 function for the math ops that a vector math library may compute in f32
// (CpuTarget::vector_variants); nullptr for the rest.
static const char* f32_function(OpKind k) {
  switch (k) {
  case OpKind::Tanh:
    return "tanhf";
  case OpKind::Erf:
    return "erff";
  case OpKind::Log2:
    return "log2f";
  case OpKind::Log1p:
    return "log1pf";
  case OpKind::Sin:
    return "sinf";
  case OpKind::Cos:
    return "cosf";
  default:
    return nullptr;
  }
}

// float fn(float), pure: a kernel cannot read errno, and a call that touches no memory is one
// the loop vectorizer widens and LICM hoists.
static llvm::FunctionCallee pure_f32_function(llvm::Module& m, const char* name) {
  auto* f = llvm::Type::getFloatTy(m.getContext());
  auto callee = m.getOrInsertFunction(name, llvm::FunctionType::get(f, {f}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  return callee;
}

// e^x of an f32 as straight-line arithmetic, which the loop vectorizer widens like any other:
// as a call (libmvec's expf) it was most of silu_mul's loop, with every live vector register
// spilled around it. x = k ln2 + r with k = round(x / ln2), |r| <= ln2 / 2 (Cody and Waite:
// ln2 in two parts, the first with 16 significant bits so that k * ln2_hi is exact), e^r by
// a polynomial of degree 6, then scaled by 2^k in two exact powers of two so that the one
// rounding of a subnormal result happens last. Within 3 ulp of the correctly rounded value
// over all f32 (tests/cpu/reduce_math_test.cpp; 1 ulp measured over every f32 in [-104, 89]).
//
// Every step that can be a fused multiply-add is one (llvm.fmuladd: where the host has no FMA
// it is a multiply and an add, which this error bound also covers), and the polynomial
// interpolates e^r at the Chebyshev nodes of [-ln2/2, ln2/2] (near-minimax: the degree-7
// Taylor polynomial had the same 1 ulp with one more step). On an AVX-512 Zen 4 this took
// the vectorized loop from 30 to 25 instructions per 16 elements, the most expensive loop
// of softmax (bench/RESULTS.md, 2026-11-26). Where one instruction scales by 2^k (AVX-512's
// vscalefps, ldexp.hpp), it replaces the two multiplies and the seven integer operations that
// build their factors: the same single rounding, and a loop of exp alone by hand went from 14.2
// to 10.4 cycles per 16 elements on Zen 4.
//
// 2^x (base2) the same way, with k = round(x) and e^(r ln2) for r = x - k (exact, |r| <= 1/2,
// so |r ln2| <= ln2 / 2 again): the product's rounding adds a third of an ulp at most. As one
// C-library exp2 call in double per element it took 2.58 ns an element against exp's 0.19.
llvm::Value* ElementLowering::exp_f32(llvm::Value* x, bool base2) {
  auto& b = k_.builder_;
  llvm::Type* f = b.getFloatTy();
  llvm::Type* i32 = b.getInt32Ty();
  auto c = [&](double v) { return llvm::ConstantFP::get(f, v); };
  auto fma = [&](llvm::Value* m, llvm::Value* n, llvm::Value* a) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f}, {m, n, a});
  };
  // Below -104 the result rounds to 0, above 89 to infinity (base 2: -151 and 129). No compare
  // of x: LLVM narrows a compare of an f16 widened to f32 back to f16, which has no vector
  // compare without AVX512-FP16 (every lane became a scalar ucomiss). maximum/minimum keep a
  // NaN, which flows through the arithmetic below into the result.
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, c(base2 ? -151 : -104));
  xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, xc, c(base2 ? 129 : 89));
  // Round to nearest by adding 1.5 * 2^23 (|k| <= 151): k's bits are then the low bits of the
  // sum's, read as an integer (no conversion of a NaN to an integer, which would be poison).
  llvm::Value* shifter = c(12582912.0);
  llvm::Value* kv = base2 ? b.CreateFAdd(xc, shifter) : fma(xc, c(1.4426950408889634), shifter);
  llvm::Value* k = b.CreateFSub(kv, shifter);
  llvm::Value* r;
  if (base2) {
    r = b.CreateFMul(b.CreateFSub(xc, k), c(0.69314718055994531));
  } else {
    r = fma(k, c(-0.693145751953125), xc);
    r = fma(k, c(-1.428606765330187045e-06), r);
  }
  llvm::Value* p = c(1.3941160753821781e-3);
  for (double coef : {8.3751682889542284e-3, 4.1666352268082596e-2, 0.1666641501129006,
                      0.50000000472593981, 1.0000000378296145, 1.0})
    p = fma(p, r, c(coef));
  if (!k_.target_.ldexp_lanes.empty())
    return call_ldexp(b, k_.target_, p, k);
  llvm::Value* ki = b.CreateSub(b.CreateBitCast(kv, i32), b.CreateBitCast(shifter, i32));
  llvm::Value* k1 = b.CreateAShr(ki, 1);
  llvm::Value* k2 = b.CreateSub(ki, k1);
  auto pow2 = [&](llvm::Value* e) { // 2^e for -126 <= e <= 127
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, b.getInt32(127)), 23), f);
  };
  return b.CreateFMul(b.CreateFMul(p, pow2(k1)), pow2(k2));
}

llvm::Value* ElementLowering::math(OpKind kind, DType t, const std::vector<llvm::Value*>& args,
                                   const ir::Op& op) {
  auto& b = k_.builder_;
  // f32, f16 and bf16 exp and exp2: exp_f32; log: the f32 function of the vector math library
  // (glibc's libmvec, 8 lanes per call with AVX2). Within 3 ulp (exp, exp2) and 4 ulp (log) of the
  // correctly rounded result the interpreter computes, measured over every f32 input; the double
  // path below is five times slower. An op with the attribute rn = 1 keeps the double path.
  if ((kind == OpKind::Exp || kind == OpKind::Exp2) && t.kind != ScalarKind::F64 &&
      !op.int_attr(attr::rn, 0)) {
    llvm::Value* r = exp_f32(args[0], kind == OpKind::Exp2);
    return t.kind == ScalarKind::F32 ? r : scalar_.round_from_float(r, t);
  }
  if (kind == OpKind::Log && t.kind != ScalarKind::F64 && !op.int_attr(attr::rn, 0)) {
    llvm::CallInst* r = b.CreateUnaryIntrinsic(vectorizable(kind), args[0]);
    add_vector_variants(r);
    return t.kind == ScalarKind::F32 ? r : scalar_.round_from_float(r, t);
  }
  // tanh, erf, log2, log1p, sin and cos: the C library's f32 function where the vector math
  // library has it (libmvec; tanh, erf, log2 and log1p since glibc 2.35), within 4 ulp of the
  // interpreter's at every width (over every fifth f32: at most 1, 4, 3, 2, 2 and 2). In
  // double, the first four were one scalar call per element, 3.7-10.5 ns (a GELU's tanh 50
  // times its exp), sin and cos 4 lanes a call, 1 ns (bench/RESULTS.md, 2026-11-26). Where the
  // library lacks one, the double path below keeps the interpreter's result.
  if (const char* fn = f32_function(kind); fn && t.kind != ScalarKind::F64 &&
                                           !op.int_attr(attr::rn, 0) &&
                                           k_.target_.has_vector_variant(fn)) {
    llvm::CallInst* r = b.CreateCall(pure_f32_function(k_.module_, fn), {args[0]});
    add_vector_variants(r);
    return t.kind == ScalarKind::F32 ? r : scalar_.round_from_float(r, t);
  }
  auto* d = b.getDoubleTy();
  std::vector<llvm::Value*> wide;
  for (llvm::Value* a : args)
    wide.push_back(t.kind == ScalarKind::F64 ? a : b.CreateFPExt(a, d));
  llvm::Value* r;
  if (kind == OpKind::Rsqrt) {
    r = b.CreateFDiv(llvm::ConstantFP::get(d, 1.0),
                     b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, wide[0]));
  } else if (llvm::Intrinsic::ID id = vectorizable(kind);
             id != llvm::Intrinsic::not_intrinsic && t.kind != ScalarKind::F64) {
    r = b.CreateIntrinsic(id, {d}, wide);
  } else {
    // ops.def names math ops by their C function; extern ops carry it (tl::extern_elementwise).
    bool named = ir::op_category(kind) == ir::OpCategory::Extern;
    std::string name = named ? op.str_attr(attr::symbol) : std::string(ir::op_name(kind));
    r = b.CreateCall(libm(name.c_str(), static_cast<int>(wide.size())), wide);
  }
  return scalar_.round_from_double(r, t);
}

} // namespace tritium::cpu
