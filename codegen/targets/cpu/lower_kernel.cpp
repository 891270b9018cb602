// The lowering stage: tritium IR -> one LLVM function per kernel. This file holds the driver:
// ops in program order, fusion groups, views, scratch buffers and structured control flow.
// Element semantics live in lower_scalar.cpp; collectives, dot and atomics in their own files.
#include "expand_histogram.hpp"
#include "grid_loop.hpp"
#include "lowering.hpp"
#include "pointer_offsets.hpp"
#include "single_trip_loops.hpp"
#include "target.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace tritium::cpu {

using ir::DType;
using ir::Op;
using ir::OpCategory;
using ir::OpKind;

namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

bool is_rank0(const ir::Value* v) {
  return v->type.is_scalar();
}

// Whether a kernel converts f16 tensors and does nothing costly besides: no
// transcendental or external function, no dot, on tensors (per-row scalars do not count). On a
// CPU whose f16_convert_bits is narrower than its registers (target.cpp), such a kernel runs
// faster at that width throughout: its reductions too, which the SLP vectorizer builds and no
// loop hint reaches (Zen 4, one thread, row in L1: an f16 variance pass, convert, subtract and
// fma, 187 ns per 4096 elements with 512-bit operations and 143 with 256-bit ones; the row
// layer norm 220 -> 209 ns a row at 1024 columns). Softmax's exp and SiLU's ran 20 % slower
// at 256 bits: kernels with those keep the full width.
bool narrow_kernel(const ir::Function& f) {
  bool converts = false, costly = false;
  ir::walk(f.entry(), [&](const Op& op) {
    if (op.results.empty() || op.result()->type.is_scalar())
      return;
    const ir::OpCategory c = ir::op_category(op.kind);
    costly = costly || c == ir::OpCategory::Math || c == ir::OpCategory::Extern ||
             op.kind == OpKind::Dot;
    // (bf16 converts by shifts, which no measurement here says run faster narrower.)
    if (op.kind == OpKind::Cast)
      converts = converts || op.operand(0)->type.elem.kind == ir::ScalarKind::F16 ||
                 op.result()->type.elem.kind == ir::ScalarKind::F16;
  });
  return converts && !costly;
}

} // namespace

bool contiguous(const View& v) {
  auto rm = row_major(v.shape);
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1 && v.strides[d] != rm[d])
      return false;
  return true;
}

KernelLowering::KernelLowering(const ir::Function& f, const CpuTarget& target,
                               llvm::LLVMContext& ctx, llvm::Module& m, std::string name,
                               bool fp_fusion)
    : name_(std::move(name)), f_(f), target_(target), ctx_(ctx), module_(m), builder_(ctx),
      entry_builder_(ctx), fp_fusion_(fp_fusion) {}

std::string KernelLowering::where(const Op& op) const {
  return fmt::format("{}: in kernel '{}', op '{}'", op.loc.str(), f_.name, ir::op_name(op.kind));
}

llvm::FunctionCallee KernelLowering::host_fn(const char* name, llvm::Type* ret,
                                             std::vector<llvm::Type*> args) {
  return module_.getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
}

llvm::Value* KernelLowering::global_string(const std::string& s) {
  return entry_builder_.CreateGlobalStringPtr(s);
}

void KernelLowering::run() {
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  // One program; it returns whether it reported a failure (grid_loop.cpp stops there).
  auto* fty = llvm::FunctionType::get(builder_.getInt1Ty(), {ptr, ptr, ptr, ptr}, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name_, module_);
  fn_->addFnAttr("target-cpu", target_.cpu);
  fn_->addFnAttr("target-features", target_.features);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  narrow_ = target_.f16_convert_bits < target_.vector_bits && narrow_kernel(f_);
  // The host's tuning may prefer narrower vectors than its registers (target.cpp).
  fn_->addFnAttr("prefer-vector-width",
                 std::to_string(narrow_ ? target_.f16_convert_bits : target_.vector_bits));
  if (narrow_) // or wider types stay legal and the backend keeps 512-bit operations
    fn_->addFnAttr("min-legal-vector-width", "0");
  for (unsigned i = 0; i < 3; ++i)
    fn_->addParamAttr(i, llvm::Attribute::NoAlias);
  fn_->addParamAttr(2, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
  args_arg_ = fn_->getArg(0);
  // As Triton and the GPU backends (enable_fp_fusion, on by default): a float multiply feeding
  // an add may become one fma, rounded once. A layer norm's output pass is a multiply and an
  // add per element after three conversions; fused, rows in L3 ran 6-13 % faster.
  llvm::FastMathFlags contract;
  contract.setAllowContract(fp_fusion_);
  builder_.setFastMathFlags(contract);
  scratch_arg_ = fn_->getArg(2);
  state_arg_ = fn_->getArg(3);

  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  builder_.SetInsertPoint(entry);
  builder_.CreateBr(body);
  entry_builder_.SetInsertPoint(entry->getTerminator());
  failed_ = entry_builder_.CreateAlloca(entry_builder_.getInt1Ty(), nullptr, "failed");
  entry_builder_.CreateStore(entry_builder_.getFalse(), failed_);
  for (int i = 0; i < 6; ++i)
    pids_[i] = entry_builder_.CreateLoad(
        entry_builder_.getInt64Ty(),
        entry_builder_.CreateConstGEP1_64(entry_builder_.getInt64Ty(), fn_->getArg(1), i));
  streaming_bytes_ = entry_builder_.CreateLoad(
      entry_builder_.getInt64Ty(),
      entry_builder_.CreateConstGEP1_64(entry_builder_.getInt64Ty(), fn_->getArg(1), 6));
  builder_.SetInsertPoint(body);

  // Kernel arguments arrive as 64-bit slots.
  const auto& params = f_.args();
  for (size_t i = 0; i < params.size(); ++i) {
    DType t = params[i]->type.elem;
    llvm::Value* slot = builder_.CreateLoad(
        builder_.getInt64Ty(), builder_.CreateConstGEP1_64(builder_.getInt64Ty(), args_arg_, i));
    llvm::Value* v;
    if (t.is_float())
      v = scalar_.round_from_double(builder_.CreateBitCast(slot, builder_.getDoubleTy()), t);
    else if (t.is_ptr())
      v = builder_.CreateIntToPtr(slot, reg_type(t));
    else
      v = builder_.CreateTrunc(slot, reg_type(t));
    set_scalar(params[i], v);
  }
  branch_to_general();

  ir::walk(f_.entry(), [&](const Op& op) {
    has_atomics_ = has_atomics_ || op.kind == OpKind::AtomicRmw || op.kind == OpKind::AtomicCas;
    for (ir::Value* v : op.operands)
      users_[v].push_back(&op);
    for (const auto& r : op.regions)
      for (size_t i = 0; i < r->block->ops.size(); ++i)
        position_[r->block->ops[i].get()] = i;
  });
  for (size_t i = 0; i < f_.entry().ops.size(); ++i)
    position_[f_.entry().ops[i].get()] = i;
  // Splat inits read by nothing but loops that start from them lazily get no buffer.
  std::unordered_set<const ir::Value*> lazy, needed;
  ir::walk(f_.entry(), [&](const Op& op) {
    if (op.kind == OpKind::For)
      for (size_t i = 3; i < op.operands.size(); ++i)
        (lazy_init_slot(op, i - 3) ? lazy : needed).insert(op.operand(i));
  });
  for (const ir::Value* v : lazy)
    if (!needed.count(v) && std::all_of(users_[v].begin(), users_[v].end(),
                                        [](const Op* u) { return u->kind == OpKind::For; }))
      lazy_init_values_.insert(v);
  plan_streams();
  lower_block(f_.entry());
  flush();
  drop_unused_streams();
  builder_.CreateRet(builder_.CreateLoad(builder_.getInt1Ty(), failed_));

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*fn_, &os))
    throw Error(
        fmt::format("cpu backend: kernel '{}' lowered to invalid LLVM IR: {}", f_.name, os.str()));
}

void KernelLowering::branch_to_general() {
  if (!general_)
    return;
  auto& b = builder_;
  llvm::Value* once = b.getTrue();
  for (const auto& bound : single_trip_) {
    llvm::Value* v[3];
    for (int k = 0; k < 3; ++k) {
      const ir::Value* x = bound[k];
      DType t = x->type.elem;
      v[k] = loop_bound(x->def ? scalar_.constant(*x->def, t) : scalar(x), t);
    }
    auto [span, stride] = loop_span(v[0], v[1], v[2]);
    once = b.CreateAnd(once,
                       b.CreateAnd(b.CreateICmpSGT(span, i64(0)), b.CreateICmpSLE(span, stride)));
  }
  auto* general = llvm::BasicBlock::Create(ctx_, "loops", fn_);
  auto* single = llvm::BasicBlock::Create(ctx_, "single_trip", fn_);
  b.CreateCondBr(once, single, general);
  b.SetInsertPoint(general);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : fn_->args())
    args.push_back(&a);
  b.CreateRet(b.CreateCall(general_, args));
  b.SetInsertPoint(single);
}

namespace {

// Whether the loop body starting at `first` converts between f16 and f32 at least as often as it
// computes in floating point: then the conversions, not the arithmetic, bound its speed.
bool conversion_bound(llvm::BasicBlock* first) {
  int conversions = 0, arithmetic = 0;
  for (auto bb = first->getIterator(); bb != first->getParent()->end(); ++bb)
    for (const llvm::Instruction& inst : *bb) {
      if ((llvm::isa<llvm::FPExtInst>(inst) &&
           inst.getOperand(0)->getType()->getScalarType()->isHalfTy()) ||
          (llvm::isa<llvm::FPTruncInst>(inst) && inst.getType()->getScalarType()->isHalfTy()))
        ++conversions;
      else if (llvm::isa<llvm::BinaryOperator>(inst) || llvm::isa<llvm::UnaryOperator>(inst) ||
               llvm::isa<llvm::CallInst>(inst))
        arithmetic += inst.getType()->isFPOrFPVectorTy();
    }
  return conversions > 0 && conversions >= arithmetic;
}

} // namespace

// LLVM 19's cost model prices masked loads and stores of f16 (and the f16 <-> f32 conversions)
// as if scalarized at 8 and 16 lanes, so loops over f16 memory were vectorized 4 lanes wide
// (128 bits of a 512-bit machine) while the same loop over f32 got 16; at 16 lanes they compile
// to one masked vmovdqu16 and one vcvtph2ps per 16 elements. A fused elementwise loop is the
// case the vectorizer handles best, so its width is fixed to the f32 lanes of a register,
// unless the body calls a function that has no vector version at that width (a libm call, a
// math intrinsic LLVM would scalarize, a host function): forcing those would call the scalar
// function once per lane where the cost model picks a narrower library version. A loop bound by
// f16 conversions runs at the target's f16_convert_bits instead, interleaved so that an
// iteration still covers a full register's elements (target.cpp says where that is narrower).
llvm::MDNode* KernelLowering::full_width_hint(llvm::BasicBlock* first) {
  int lanes = target_.vector_bits / 32, interleave = 1;
  if (target_.f16_convert_bits < target_.vector_bits && (narrow_ || conversion_bound(first))) {
    interleave = target_.vector_bits / target_.f16_convert_bits;
    lanes = target_.f16_convert_bits / 32;
  }
  const std::string at_width = fmt::format("_ZGV_LLVM_N{}", lanes);
  bool transcendental = false;
  for (auto bb = first->getIterator(); bb != fn_->end(); ++bb)
    for (const llvm::Instruction& inst : *bb) {
      const auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
      if (!call)
        continue;
      if (call->getFnAttr("vector-function-abi-variant").getValueAsString().contains(at_width)) {
        transcendental = true; // libmvec's, or ours (ldexp.hpp: exp's last step)
        continue;
      }
      const llvm::Function* callee = call->getCalledFunction();
      if (!callee || !callee->isIntrinsic())
        return nullptr;
      switch (callee->getIntrinsicID()) {
      case llvm::Intrinsic::exp:
      case llvm::Intrinsic::exp2:
      case llvm::Intrinsic::exp10:
      case llvm::Intrinsic::log:
      case llvm::Intrinsic::log2:
      case llvm::Intrinsic::log10:
      case llvm::Intrinsic::sin:
      case llvm::Intrinsic::cos:
      case llvm::Intrinsic::tan:
      case llvm::Intrinsic::pow:
        return nullptr;
      default:
        break;
      }
    }
  auto hint = [&](const char* name, int value) -> llvm::Metadata* {
    llvm::Metadata* kv[] = {llvm::MDString::get(ctx_, name),
                            llvm::ConstantAsMetadata::get(builder_.getInt32(value))};
    return llvm::MDNode::get(ctx_, kv);
  };
  // An exp or a libmvec call is a chain of 15-20 dependent operations per vector: one at a time,
  // the out-of-order window holds too few iterations to fill the pipes. Four interleaved made
  // SiLU.mul 7-9 % and GELU.mul 13-17 % faster on an Emerald Rapids, in cache and from DRAM
  // (bench/RESULTS.md, eighteenth session); LLVM's cost model interleaves only small loops.
  if (transcendental && interleave == 1)
    interleave = 4;
  std::vector<llvm::Metadata*> ops = {nullptr, hint("llvm.loop.vectorize.width", lanes)};
  if (interleave > 1)
    ops.push_back(hint("llvm.loop.interleave.count", interleave));
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
  id->replaceOperandWith(0, id); // a loop id refers to itself
  return id;
}

void KernelLowering::loop(llvm::Value* lo, llvm::Value* hi, int64_t step,
                          const std::function<void(llvm::Value*)>& body, bool full_width) {
  auto& b = builder_;
  if (full_width && prefetch_strips_ && step == 1) {
    // Strips of kPrefetchStrip elements, each after its share of the streams' lines
    // (lower_prefetch.cpp): whole strips of a constant trip count, then the rest.
    prefetch_strips_ = false;
    const int64_t k = kPrefetchStrip;
    llvm::Value* n = b.CreateSub(hi, lo);
    n = b.CreateSelect(b.CreateICmpSGT(n, i64(0)), n, i64(0));
    llvm::Value* whole = b.CreateAdd(lo, b.CreateMul(b.CreateSDiv(n, i64(k)), i64(k)));
    loop(lo, whole, k, [&](llvm::Value* s) {
      prefetch_share(prefetch_offset_ ? b.CreateAdd(s, prefetch_offset_) : s, k);
      loop(s, b.CreateAdd(s, i64(k), "", true, true), 1, body, true);
    });
    prefetch_share(prefetch_offset_ ? b.CreateAdd(whole, prefetch_offset_) : whole, k);
    loop(whole, hi, 1, body, true);
    prefetch_strips_ = true;
    return;
  }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* exit = llvm::BasicBlock::Create(ctx_, "loop.exit", fn_);
  auto* first = llvm::BasicBlock::Create(ctx_, "loop.body", fn_);
  b.CreateCondBr(b.CreateICmpSLT(lo, hi), first, exit);
  b.SetInsertPoint(first);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, "i");
  iv->addIncoming(lo, pre);
  body(iv);
  llvm::Value* next = b.CreateAdd(iv, i64(step), "i.next", true, true);
  iv->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst* latch = b.CreateCondBr(b.CreateICmpSLT(next, hi), first, exit);
  if (full_width)
    if (llvm::MDNode* hint = full_width_hint(first))
      latch->setMetadata(llvm::LLVMContext::MD_loop, hint);
  b.SetInsertPoint(exit);
}

void KernelLowering::loop_nest(const std::vector<int64_t>& shape,
                               const std::function<void(const std::vector<llvm::Value*>&)>& body,
                               bool full_width) {
  std::vector<llvm::Value*> idx;
  std::function<void(size_t)> level = [&](size_t d) {
    if (d == shape.size())
      return body(idx);
    loop(
        i64(0), i64(shape[d]), 1,
        [&](llvm::Value* i) {
          idx.push_back(i);
          level(d + 1);
          idx.pop_back();
        },
        full_width && d + 1 == shape.size());
  };
  level(0);
}

llvm::Value* KernelLowering::element_ptr(const View& v, const std::vector<llvm::Value*>& idx) {
  llvm::Value* lin = i64(v.offset);
  for (size_t d = 0; d < idx.size(); ++d)
    if (v.shape[d] != 1 && v.strides[d] != 0)
      lin = builder_.CreateAdd(lin, builder_.CreateMul(idx[d], i64(v.strides[d]), "", true, true),
                               "", true, true);
  return builder_.CreateInBoundsGEP(v.ty, v.base, lin);
}

View KernelLowering::new_buffer(DType t, const std::vector<int64_t>& shape) {
  View v;
  v.ty = scratch_type(t);
  v.shape = shape;
  v.strides = row_major(shape);
  int64_t bytes = static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(v.ty)) *
                  std::max<int64_t>(1, numel(shape));
  int64_t at = (scratch_size_ + 63) / 64 * 64;
  scratch_size_ = at + bytes;
  v.base = entry_builder_.CreateConstInBoundsGEP1_64(entry_builder_.getInt8Ty(), scratch_arg_, at);
  v.root = next_root_++;
  return v;
}

void KernelLowering::copy(const View& src, const View& dst, DType) {
  if (src.base == dst.base && src.offset == dst.offset && src.strides == dst.strides)
    return;
  loop_nest(dst.shape, [&](const std::vector<llvm::Value*>& idx) {
    builder_.CreateStore(builder_.CreateLoad(src.ty, element_ptr(src, idx)), element_ptr(dst, idx));
  });
}

const View& KernelLowering::view(const ir::Value* v) {
  if (group_.defines.count(v))
    flush();
  if (auto it = lazy_init_.find(v); it != lazy_init_.end() && !it->second.filled) {
    // Read as a buffer: the first iteration fills it here, before this reader.
    LazyInit& l = it->second;
    fill_if(l.first, l.carry, l.value, v->type.elem);
    l.filled = true;
  }
  if (is_reloaded(v))
    throw Error(fmt::format("cpu backend: kernel '{}': internal error: a reloaded tensor read as "
                            "a buffer",
                            f_.name));
  if (is_rank0(v) && !values_[v].view.base) {
    // A shape op on a scalar (expand_dims, join, …): a one-element buffer.
    View w = new_buffer(v->type.elem, {});
    builder_.CreateStore(to_scratch(scalar(v), v->type.elem), w.base);
    values_[v].view = w;
  }
  auto it = values_.find(v);
  if (it == values_.end() || !it->second.view.base)
    throw Error(
        fmt::format("cpu backend: kernel '{}': tensor value used before it is defined", f_.name));
  return it->second.view;
}

llvm::Value* KernelLowering::scalar(const ir::Value* v) {
  auto it = values_.find(v);
  if (it == values_.end() || !it->second.scalar)
    throw Error(
        fmt::format("cpu backend: kernel '{}': scalar value used before it is defined", f_.name));
  return it->second.scalar;
}

void KernelLowering::fail_if(llvm::Value* cond, const Op& op, const std::string& what,
                             llvm::Value* lane) {
  auto& b = builder_;
  auto* then = llvm::BasicBlock::Create(ctx_, "fail", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "ok", fn_);
  b.CreateCondBr(cond, then, cont);
  b.SetInsertPoint(then);
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  auto callee = host_fn(kFailFn, b.getVoidTy(), {ptr, ptr, ptr, b.getInt64Ty(), ptr});
  std::string prefix = fmt::format("{}: in kernel '{}'", op.loc.str(), f_.name);
  std::string suffix = fmt::format("op '{}': {}", ir::op_name(op.kind), what);
  b.CreateCall(callee, {state_arg_, global_string(prefix), global_string(suffix),
                        lane ? lane : i64(-1), fn_->getArg(1)});
  b.CreateStore(b.getTrue(), failed_);
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
}

// --- fusion groups ---

// Integer, pointer and mask tensors computed from the launch alone (aranges, splats, offsets,
// pointer arithmetic, comparisons, and views of those) are recomputed per element where a
// group uses them instead of being read back from a buffer: addresses then stay affine in the
// loop indices, and the vectorizer emits contiguous (masked) accesses, not gathers/scatters.
//
// Integer division is the exception: recomputed wherever a loop reads it, a `% N` in an
// address (Triton's tutorial 03 wraps its tile rows and columns) divided again on every trip,
// per element along the contiguous dimension. An integer Div or Rem of tensors whose operands
// are rematerializable is a leaf instead (division_leaf): computed once, in a group of its
// own, into a buffer, which the expressions above it read where they are recomputed.
bool KernelLowering::rematerializable(const ir::Value* v) {
  // The cost is the size of the expression tree (shared subexpressions count once per use,
  // as they are recomputed): small trees only, or code size would grow exponentially.
  constexpr int64_t kMaxCost = 48;
  if (is_rank0(v))
    return true;
  if (auto it = remat_.find(v); it != remat_.end())
    return it->second >= 0;
  int64_t cost = -1;
  if (v->def && !v->type.elem.is_float()) {
    const Op& op = *v->def;
    const bool division = op.kind == OpKind::Div || op.kind == OpKind::Rem;
    bool kind_ok = (ir::is_elementwise(op.kind) && !division) || op.kind == OpKind::Arange ||
                   op.kind == OpKind::Constant || op.kind == OpKind::Splat ||
                   op.kind == OpKind::Broadcast || op.kind == OpKind::ExpandDims ||
                   op.kind == OpKind::Trans;
    if (kind_ok) {
      cost = 1;
      for (const ir::Value* o : op.operands) {
        if (is_rank0(o))
          continue;
        if (division_leaf(o)) {
          cost += 1;
          continue;
        }
        if (!rematerializable(o)) {
          cost = -1;
          break;
        }
        cost += remat_.at(o);
      }
      if (cost > kMaxCost)
        cost = -1;
    }
  }
  remat_[v] = cost;
  return cost >= 0;
}

bool KernelLowering::division_leaf(const ir::Value* v) {
  if (is_rank0(v) || !v->def || v->type.elem.is_float() ||
      (v->def->kind != OpKind::Div && v->def->kind != OpKind::Rem))
    return false;
  return std::all_of(v->def->operands.begin(), v->def->operands.end(),
                     [&](const ir::Value* o) { return rematerializable(o); });
}

// Whether two values compute the same thing from the same values: `cols < N` written twice
// (Triton's layer norm masks a load with one and a `where` with the other).
static bool same_computation(const ir::Value* a, const ir::Value* b, int depth = 8) {
  if (a == b)
    return true;
  if (!a->def || !b->def || depth == 0 || a->index != b->index || !(a->type == b->type))
    return false;
  const Op& x = *a->def;
  const Op& y = *b->def;
  if (x.kind != y.kind || !ir::is_elementwise(x.kind) && x.kind != OpKind::Arange &&
                              x.kind != OpKind::Splat && x.kind != OpKind::Constant)
    return false;
  if (x.attrs != y.attrs || x.operands.size() != y.operands.size())
    return false;
  for (size_t i = 0; i < x.operands.size(); ++i)
    if (!same_computation(x.operand(i), y.operand(i), depth - 1))
      return false;
  return true;
}

std::optional<bool> KernelLowering::known_mask(const ir::Value* v) {
  if (known_masks_.empty() || !v->type.elem.is_bool())
    return std::nullopt;
  if (auto it = known_masks_.find(v); it != known_masks_.end())
    return it->second;
  for (const auto& [m, value] : known_masks_)
    if (same_computation(v, m))
      return value;
  return std::nullopt;
}

llvm::Value* KernelLowering::remat(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                                   bool same_index,
                                   std::unordered_map<const ir::Value*, llvm::Value*>& in) {
  if (same_index)
    if (auto it = in.find(v); it != in.end())
      return it->second;
  if (is_rank0(v))
    return scalar(v);
  if (division_leaf(v)) { // its own group wrote it before (fuse)
    const View& w = values_.at(v).view;
    return from_scratch(builder_.CreateLoad(w.ty, element_ptr(w, idx)), v->type.elem);
  }
  const Op& op = *v->def;
  auto& b = builder_;
  switch (op.kind) {
  case OpKind::Arange:
    return b.CreateTrunc(b.CreateAdd(idx[0], i64(op.int_attr(ir::attr::start))), b.getInt32Ty());
  case OpKind::Constant:
    return scalar_.constant(op, v->type.elem);
  case OpKind::Splat:
    return scalar(op.operand(0));
  case OpKind::Broadcast: {
    std::vector<llvm::Value*> j = idx;
    for (size_t d = 0; d < j.size(); ++d)
      if (op.operand(0)->type.shape[d] == 1)
        j[d] = i64(0);
    return remat(op.operand(0), j, false, in);
  }
  case OpKind::ExpandDims: {
    std::vector<llvm::Value*> j = idx;
    j.erase(j.begin() + op.int_attr(ir::attr::axis));
    return remat(op.operand(0), j, false, in);
  }
  case OpKind::Trans: {
    auto order = op.ints_attr("order");
    std::vector<llvm::Value*> j(idx.size());
    for (size_t d = 0; d < order.size(); ++d)
      j[order[d]] = idx[d];
    return remat(op.operand(0), j, false, in);
  }
  default: {
    std::vector<llvm::Value*> args;
    for (const ir::Value* o : op.operands)
      args.push_back(remat(o, idx, same_index, in));
    return elementwise(op, args);
  }
  }
}

llvm::Value*
KernelLowering::group_element(const ir::Value* v, const std::vector<llvm::Value*>& idx,
                              llvm::Value* flat,
                              std::unordered_map<const ir::Value*, llvm::Value*>& in_group) {
  if (auto it = in_group.find(v); it != in_group.end())
    return it->second;
  if (is_rank0(v))
    return scalar(v);
  // (A flat loop's one index is the element's index only in a 1-D group; a group of higher
  // rank reading a rematerializable value is never flat.)
  if (rematerializable(v) && (!flat || v->type.rank() == 1))
    return remat(v, idx, true, in_group);
  const View& w = values_.at(v).view;
  llvm::Value* p = flat ? builder_.CreateInBoundsGEP(
                              w.ty, w.base, builder_.CreateAdd(flat, i64(w.offset), "", true, true))
                        : element_ptr(w, idx);
  llvm::Value* r = from_scratch(builder_.CreateLoad(w.ty, p), v->type.elem);
  if (auto it = lazy_init_.find(v); it != lazy_init_.end() && !it->second.filled)
    r = builder_.CreateSelect(it->second.first, it->second.value, r); // the buffer is not filled
  return r;
}

// Whether slot `slot` of the `for` op `loop` starts from a splat it need not write to its
// carried buffer before the loop (see LazyInit): every reader of the carried value is in the
// loop body itself, not in a nested region, where a fill could be skipped.
bool KernelLowering::lazy_init_slot(const Op& loop, size_t slot) const {
  const ir::Value* init = loop.operand(3 + static_cast<unsigned>(slot));
  if (is_rank0(init) || !init->def)
    return false;
  const Op& def = *init->def;
  if (def.kind != OpKind::Constant && !(def.kind == OpKind::Splat && is_rank0(def.operand(0))))
    return false;
  const ir::Block& body = loop.body();
  auto it = users_.find(body.args.at(1 + slot));
  return it == users_.end() || std::all_of(it->second.begin(), it->second.end(),
                                           [&](const Op* u) { return u->parent == &body; });
}

llvm::Value* KernelLowering::splat_value(const ir::Value* v) {
  const Op& def = *v->def;
  return def.kind == OpKind::Constant ? scalar_.constant(def, v->type.elem)
                                      : scalar(def.operand(0));
}

void KernelLowering::fill_if(llvm::Value* cond, const View& dst, llvm::Value* value, DType t) {
  auto& b = builder_;
  auto* fill_bb = llvm::BasicBlock::Create(ctx_, "carry.init", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "carry.init.done", fn_);
  b.CreateCondBr(cond, fill_bb, done);
  b.SetInsertPoint(fill_bb);
  llvm::Value* stored = to_scratch(value, t);
  loop(
      i64(0), i64(numel(dst.shape)), 1,
      [&](llvm::Value* i) { b.CreateStore(stored, b.CreateInBoundsGEP(dst.ty, dst.base, i)); },
      true);
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// The leading true lanes of `mask`, of `size`, in closed form where it reads `offs < bound` with
// offs an i32 arange(start, ...) plus, optionally, a splatted scalar s: lane i holds exactly
// when i < bound - s - start, provided no lane's offs wrapped around (else 0: every lane then
// takes the masked path, which is right for any mask). nullptr for another form.
llvm::Value* KernelLowering::prefix_lanes(const ir::Value* mask, int64_t size,
                                          llvm::Value** exact_out) {
  const Op* cmp = mask->def;
  if (!cmp || cmp->kind != OpKind::Cmp || cmp->enum_attr<ir::CmpPred>() != ir::CmpPred::Lt)
    return nullptr;
  const ir::Value* offs = cmp->operand(0);
  const Op* bound = cmp->operand(1)->def;
  if (offs->type.elem.kind != ir::ScalarKind::I32 || !bound || bound->kind != OpKind::Splat)
    return nullptr;
  const Op* range = offs->def;
  const ir::Value* shift = nullptr;
  if (range && range->kind == OpKind::Add) {
    const Op* x = range->operand(0)->def;
    const Op* y = range->operand(1)->def;
    if (x && y && x->kind == OpKind::Splat && y->kind == OpKind::Arange)
      std::swap(x, y);
    if (!x || !y || x->kind != OpKind::Arange || y->kind != OpKind::Splat)
      return nullptr;
    range = x;
    shift = y->operand(0);
  }
  if (!range || range->kind != OpKind::Arange)
    return nullptr;
  auto& b = builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  llvm::Value* first = i64(range->int_attr(ir::attr::start));
  if (shift)
    first = b.CreateAdd(first, b.CreateSExt(scalar(shift), i64_ty));
  llvm::Value* last = b.CreateAdd(first, i64(size - 1));
  llvm::Value* exact =
      b.CreateAnd(b.CreateICmpSGE(first, i64(INT32_MIN)), b.CreateICmpSLE(last, i64(INT32_MAX)));
  llvm::Value* c = b.CreateSub(b.CreateSExt(scalar(bound->operand(0)), i64_ty), first);
  c = b.CreateSelect(b.CreateICmpSLT(c, i64(0)), i64(0), c);
  c = b.CreateSelect(b.CreateICmpSGT(c, i64(size)), i64(size), c);
  if (exact_out)
    *exact_out = exact;
  return b.CreateSelect(exact, c, i64(0));
}

// How many leading lanes of [0, n) every one of the (rematerializable, 1-D) masks holds for,
// when the lanes where all hold are such a prefix (`offs < n`), else 0. Two sums, which the
// loop vectorizer vectorizes (a min reduction over the lane index it did not): the count c of
// lanes where all masks hold and the sum of their indices, which equals c (c - 1) / 2 only for
// the lanes 0 .. c-1 (the least sum of c distinct lane indices).
llvm::Value* KernelLowering::leading_true_lanes(const std::vector<const ir::Value*>& masks,
                                                int64_t n) {
  auto& b = builder_;
  llvm::Type* i64_ty = b.getInt64Ty();
  // Where every mask reads `offs < bound` over an arange, the count needs no scan (which
  // cost a quarter of a 4096-column RMSNorm row on the CPU, once per masked group and program).
  llvm::Value* least = nullptr;
  for (const ir::Value* m : masks) {
    llvm::Value* c = prefix_lanes(m, n);
    if (!c) {
      least = nullptr;
      break;
    }
    least = least ? b.CreateSelect(b.CreateICmpSLT(c, least), c, least) : c;
  }
  if (least)
    return least;
  llvm::AllocaInst* count = entry_builder_.CreateAlloca(i64_ty, nullptr, "lanes.count");
  llvm::AllocaInst* sum = entry_builder_.CreateAlloca(i64_ty, nullptr, "lanes.sum");
  b.CreateStore(i64(0), count);
  b.CreateStore(i64(0), sum);
  loop(
      i64(0), i64(n), 1,
      [&](llvm::Value* i) {
        std::unordered_map<const ir::Value*, llvm::Value*> in;
        llvm::Value* all = b.getTrue();
        for (const ir::Value* m : masks)
          all = b.CreateAnd(all, remat(m, {i}, true, in));
        llvm::Value* one = b.CreateZExt(all, i64_ty);
        b.CreateStore(b.CreateAdd(b.CreateLoad(i64_ty, count), one), count);
        b.CreateStore(b.CreateAdd(b.CreateLoad(i64_ty, sum), b.CreateMul(one, i)), sum);
      },
      true);
  llvm::Value* c = b.CreateLoad(i64_ty, count);
  llvm::Value* prefix = b.CreateICmpEQ(b.CreateLoad(i64_ty, sum),
                                       b.CreateLShr(b.CreateMul(c, b.CreateSub(c, i64(1))), 1));
  return b.CreateSelect(prefix, c, i64(0));
}

// Whether lower_op puts `op` into a fusion group (see fuse), where a value it reads is
// recomputed from the launch rather than read back from a buffer.
bool fusible(const Op& op) {
  switch (ir::op_category(op.kind)) {
  case OpCategory::Binary:
  case OpCategory::Compare:
  case OpCategory::Unary:
  case OpCategory::Math:
  case OpCategory::Extern:
  case OpCategory::Ternary:
  case OpCategory::Select:
  case OpCategory::Convert:
    return true;
  case OpCategory::Hint:
    return op.kind == OpKind::Hint;
  case OpCategory::Source:
  case OpCategory::Shape:
  case OpCategory::Memory:
    return op.kind == OpKind::Constant || op.kind == OpKind::Arange || op.kind == OpKind::Splat ||
           op.kind == OpKind::AddPtr || op.kind == OpKind::Load || op.kind == OpKind::Store;
  case OpCategory::Shared:
  case OpCategory::Collective:
  case OpCategory::Control:
  case OpCategory::Terminator:
  case OpCategory::Debug:
    return false;
  }
  return false;
}

// A group output that its enclosing `for` yields as the next value of a carried tensor whose
// current value only this group reads (lane by lane, at the lane it writes): the group writes
// it into the carried buffer itself, and the yield copies nothing.
const View* KernelLowering::carried_in_place(const ir::Value* r,
                                             const std::unordered_set<const Op*>& group) {
  const ir::Block* blk = r->def->parent;
  const Op* loop_op = blk && blk->parent ? blk->parent->parent : nullptr;
  if (!loop_op || loop_op->kind != OpKind::For)
    return nullptr;
  const Op* y = blk->terminator();
  int slot = -1;
  for (size_t k = 0; k < y->operands.size(); ++k)
    if (y->operands[k] == r) {
      if (slot >= 0)
        return nullptr;
      slot = static_cast<int>(k);
    }
  if (slot < 0)
    return nullptr;
  const ir::Value* arg = blk->args.at(1 + slot);
  for (const Op* u : users_[arg])
    if (!group.count(u))
      return nullptr;
  auto it = values_.find(arg);
  if (it == values_.end() || !it->second.view.base)
    return nullptr;
  const View& carry = it->second.view;
  if (carry.offset != 0 || carry.shape != r->type.shape || carry.strides != row_major(carry.shape))
    return nullptr;
  return &carry;
}

void KernelLowering::flush() {
  if (group_.ops.empty())
    return;
  Group g = std::move(group_);
  group_ = Group{};
  std::unordered_set<const Op*> members(g.ops.begin(), g.ops.end());

  // Only values read outside the group get a buffer, and not those that every reader (other
  // groups) recomputes from the launch alone (offsets, masks) or reloads from memory
  // (lower_reload.cpp).
  std::vector<std::pair<const ir::Value*, View>> outputs;
  for (const Op* op : g.ops)
    for (ir::Value* r : op->results) {
      auto& us = users_[r];
      auto outside = [&](const Op* u) { return !members.count(u); };
      if ((!std::any_of(us.begin(), us.end(), outside) && !division_leaf(r)) ||
          lazy_init_values_.count(r))
        continue;
      bool recomputed = rematerializable(r) && std::all_of(us.begin(), us.end(), [&](const Op* u) {
                          return !outside(u) || fusible(*u);
                        });
      if (recomputed || try_reload(r, members))
        continue;
      if (const View* carry = carried_in_place(r, members))
        outputs.emplace_back(r, *carry);
      else
        outputs.emplace_back(r, new_buffer(r->type.elem, r->type.shape));
    }
  bool stores = false;
  for (const Op* op : g.ops)
    if (op->kind == OpKind::Store) {
      guard_reloads(*op);
      stores = true;
    }
  if (outputs.empty() && !stores)
    return; // every value it computes is recomputed or reloaded where it is read

  // Values of earlier groups this one reloads, and the loads that re-issues.
  std::vector<const ir::Value*> reloads;
  for (const Op* op : g.ops)
    for (ir::Value* o : op->operands)
      if (is_reloaded(o) && !members.count(o->def) &&
          std::find(reloads.begin(), reloads.end(), o) == reloads.end())
        reloads.push_back(o);
  std::vector<const Op*> reloaded_loads_in = reloaded_loads(reloads);

  // One flat loop when every tensor read is contiguous in the group's shape: the best case
  // for the vectorizer. Otherwise a loop nest with the innermost dimension last.
  bool flat = true;
  for (const Op* op : g.ops) {
    if (op->kind == OpKind::Arange && g.shape.size() != 1)
      flat = false;
    for (ir::Value* o : op->operands) {
      if (is_rank0(o) || g.defines.count(o) || is_reloaded(o))
        continue;
      if (rematerializable(o) ? g.shape.size() > 1 : !contiguous(values_.at(o).view))
        flat = false;
    }
  }
  std::vector<int64_t> space = flat ? std::vector<int64_t>{numel(g.shape)} : g.shape;

  // A masked vector load of memory that is not in cache costs several times a plain one (an
  // AMD Zen 5: a fused f16 row copy with `cols < n` masks moved 10 GB/s where the same loop
  // without masks moved 40). Where every mask of a 1-D group is recomputed from the launch
  // (`offs < n`), the loop is split after the leading lanes where all masks hold: those load
  // and store unconditionally, the rest as before (none, for a full block).
  std::vector<const ir::Value*> masks;
  bool split = flat && g.shape.size() == 1;
  for (const Op* op : g.ops) {
    const auto& o = op->operands;
    const ir::Value* mask = op->kind == OpKind::Load && o.size() > 1    ? o[1]
                            : op->kind == OpKind::Store && o.size() > 2 ? o[2]
                                                                        : nullptr;
    if (!mask)
      continue;
    masks.push_back(mask);
    split = split && rematerializable(mask);
  }
  for (const Op* load : reloaded_loads_in)
    if (load->operands.size() > 1)
      masks.push_back(load->operand(1));
  split = split && !masks.empty();
  bool masks_true = false;     // lanes of the split's first loop
  bool from_snapshots = false; // the version for rows copied aside (lower_reload.cpp)

  auto element = [&](const std::vector<llvm::Value*>& idx) {
    auto& b = builder_;
    llvm::Value* fl = flat ? idx[0] : nullptr;
    std::unordered_map<const ir::Value*, llvm::Value*> in;
    auto get = [&](const ir::Value* v) {
      if (std::optional<bool> known = known_mask(v))
        return static_cast<llvm::Value*>(b.getInt1(*known));
      return is_reloaded(v) ? reload(v, idx[0], masks_true, from_snapshots, in)
                            : group_element(v, idx, fl, in);
    };
    for (const Op* op : g.ops) {
      const auto& o = op->operands;
      DType t = op->results.empty() ? o[1]->type.elem : op->result()->type.elem;
      llvm::Value* r = nullptr;
      switch (op->kind) {
      case OpKind::Constant:
        r = scalar_.constant(*op, t);
        break;
      case OpKind::Arange:
        r = b.CreateTrunc(b.CreateAdd(idx.back(), i64(op->int_attr("start"))), b.getInt32Ty());
        break;
      case OpKind::Splat:
        r = get(o[0]);
        break;
      case OpKind::Load: {
        llvm::Value* p = get(o[0]);
        if (o.size() == 1 || masks_true) {
          r = load_user(p, t);
          break;
        }
        llvm::Value* mask = get(o[1]);
        llvm::Value* other = o.size() > 2 ? get(o[2]) : scalar_.zero(t);
        llvm::BasicBlock* from = b.GetInsertBlock();
        auto* yes = llvm::BasicBlock::Create(ctx_, "load", fn_);
        auto* done = llvm::BasicBlock::Create(ctx_, "load.done", fn_);
        b.CreateCondBr(mask, yes, done);
        b.SetInsertPoint(yes);
        llvm::Value* loaded = load_user(p, t);
        llvm::BasicBlock* yes_end = b.GetInsertBlock();
        b.CreateBr(done);
        b.SetInsertPoint(done);
        auto* phi = b.CreatePHI(loaded->getType(), 2);
        phi->addIncoming(loaded, yes_end);
        phi->addIncoming(other, from);
        r = phi;
        break;
      }
      case OpKind::Store: {
        llvm::Value* v = get(o[1]);
        if (llvm::Value* aligned = streaming_pointer(*op)) {
          store_user(aligned, v, t);
          mark_streaming(&b.GetInsertBlock()->back());
          break;
        }
        llvm::Value* p = get(o[0]);
        if (o.size() == 2 || masks_true) {
          store_user(p, v, t);
          break;
        }
        auto* yes = llvm::BasicBlock::Create(ctx_, "store", fn_);
        auto* done = llvm::BasicBlock::Create(ctx_, "store.done", fn_);
        b.CreateCondBr(get(o[2]), yes, done);
        b.SetInsertPoint(yes);
        store_user(p, v, t);
        b.CreateBr(done);
        b.SetInsertPoint(done);
        break;
      }
      default: {
        std::vector<llvm::Value*> args;
        for (ir::Value* x : o)
          args.push_back(get(x));
        r = elementwise(*op, args);
      }
      }
      if (r)
        in[op->result()] = r;
    }
    for (auto& [v, buf] : outputs) {
      llvm::Value* p = fl ? b.CreateInBoundsGEP(buf.ty, buf.base, fl) : element_ptr(buf, idx);
      b.CreateStore(to_scratch(in.at(v), v->type.elem), p);
    }
  };
  // The one store of a 1-D group may stream past the caches (lower_streaming_store.cpp) in the
  // lanes where it stores unconditionally.
  const Op* streaming = streaming_store(g.ops, flat && g.shape.size() == 1);
  auto emit = [&] {
    auto flat_element = [&](llvm::Value* i) { element({i}); };
    if (!split) {
      if (streaming && streaming->operands.size() == 2)
        return store_loop(streaming, i64(0), i64(space[0]), flat_element);
      return loop_nest(space, element, flat);
    }
    llvm::Value* n = i64(space[0]);
    llvm::Value* k = leading_true_lanes(masks, space[0]);
    masks_true = true;
    for (const ir::Value* m : masks)
      known_masks_[m] = true;
    store_loop(streaming, i64(0), k, flat_element);
    known_masks_.clear();
    masks_true = false;
    llvm::Value* needed = masked_lanes_needed(g.ops, masks, outputs.empty(), space[0]);
    if (!needed) {
      llvm::Value* off = all_masks_off_from(masks, space[0]);
      if (!off)
        return loop(k, n, 1, flat_element, true);
      // Past every mask's end, loads read their `other` and stores store nothing: no
      // masked accesses (LLVM scalarizes masked f16 loads), often a loop-invariant value.
      loop(k, off, 1, flat_element, true);
      for (const ir::Value* m : masks)
        known_masks_[m] = false;
      loop(off, n, 1, flat_element, true);
      known_masks_.clear();
      return;
    }
    auto& b = builder_;
    auto* rest = llvm::BasicBlock::Create(ctx_, "masked", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "masked.done", fn_);
    b.CreateCondBr(needed, rest, done);
    b.SetInsertPoint(rest);
    loop(k, n, 1, flat_element, true);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  };
  std::vector<const Op*> accesses = reloaded_loads_in;
  for (const Op* op : g.ops)
    if (op->kind == OpKind::Load || op->kind == OpKind::Store)
      accesses.push_back(op);
  // Prefetches pay off in a pass that computes long enough per element to hide them and moves
  // no memory of its own: softmax's exp pass gained 2-17 %, while RMSNorm's output pass (a
  // store) and the looped layer norm's variance pass (a flat loop before its loops were
  // inlined) lost 4-17 %. (A reduction prefetches too: lower_collective.cpp.)
  bool heavy = std::any_of(g.ops.begin(), g.ops.end(), [](const Op* op) {
    auto c = ir::op_category(op->kind);
    return c == OpCategory::Math || c == OpCategory::Extern;
  });
  // A pass whose store streams past the caches (lower_streaming_store.cpp) writes memory
  // without reading it: the next block's reads overlap its writes, as in a plain copy loop.
  if (flat && heavy && !stores)
    begin_prefetch(accesses, space[0]);
  else if (flat && streaming)
    begin_prefetch(accesses, space[0], launch_streams(*streaming), true);
  else
    begin_prefetch(accesses, 0);
  prefetch_strips_ = !prefetching_.empty();
  emit_reload_versions(reloaded_loads_in, "group", [&](bool snapshots) {
    from_snapshots = snapshots;
    emit();
    from_snapshots = false;
    return VersionValues{};
  });
  end_prefetch();
  for (auto& [v, buf] : outputs)
    set_view(v, buf);
}

// The first lane from which every mask is off, where each reads `offs < n` (closed form), else
// nullptr. A mask whose offsets wrap around may hold anywhere: its end is the block's.
llvm::Value* KernelLowering::all_masks_off_from(const std::vector<const ir::Value*>& masks,
                                                int64_t size) {
  auto& b = builder_;
  llvm::Value* end = i64(0);
  for (const ir::Value* m : masks) {
    llvm::Value* exact = nullptr;
    llvm::Value* c = prefix_lanes(m, size, &exact);
    if (!c)
      return nullptr;
    c = b.CreateSelect(exact, c, i64(size));
    end = b.CreateSelect(b.CreateICmpSGT(c, end), c, end);
  }
  return end;
}

// Whether the masked lanes of a split group can be skipped: when its only effects are its
// stores (no buffered output), all masked, and every load and store reads one `offs < n` mask, the
// lanes past the leading ones have every mask off and do nothing, unless an offset wrapped around
// (then the leading count is 0 and every lane takes the masked loop). Returns that condition
// (an i1: run the masked loop), or nullptr where the masked loop always runs.
llvm::Value* KernelLowering::masked_lanes_needed(const std::vector<const Op*>& ops,
                                                 const std::vector<const ir::Value*>& masks,
                                                 bool only_stores, int64_t size) {
  if (!only_stores || masks.empty())
    return nullptr;
  for (const Op* op : ops)
    if (op->kind == OpKind::Store && op->operands.size() < 3)
      return nullptr; // an unmasked store writes every lane
  for (const ir::Value* m : masks)
    if (m != masks[0])
      return nullptr;
  llvm::Value* exact = nullptr;
  if (!prefix_lanes(masks[0], size, &exact))
    return nullptr;
  return builder_.CreateNot(exact);
}

// --- ops ---

void KernelLowering::lower_block(const ir::Block& blk) {
  for (const auto& op : blk.ops) {
    if (ir::op_category(op->kind) == OpCategory::Terminator)
      return;
    lower_op(*op);
  }
}

void KernelLowering::lower_scalar_op(const Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  llvm::Value* r = nullptr;
  switch (op.kind) {
  case OpKind::ProgramId:
    r = b.CreateTrunc(pid(op.int_attr(ir::attr::axis)), b.getInt32Ty());
    break;
  case OpKind::NumPrograms:
    r = b.CreateTrunc(pid(3 + op.int_attr(ir::attr::axis)), b.getInt32Ty());
    break;
  case OpKind::Constant:
    r = scalar_.constant(op, op.result()->type.elem);
    break;
  case OpKind::Load: {
    DType t = op.result()->type.elem;
    if (o.size() == 1) {
      r = load_user(scalar(o[0]), t);
      break;
    }
    llvm::Value* other = o.size() > 2 ? scalar(o[2]) : scalar_.zero(t);
    llvm::BasicBlock* from = b.GetInsertBlock();
    auto* yes = llvm::BasicBlock::Create(ctx_, "load", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "load.done", fn_);
    b.CreateCondBr(scalar(o[1]), yes, done);
    b.SetInsertPoint(yes);
    llvm::Value* loaded = load_user(scalar(o[0]), t);
    llvm::BasicBlock* yes_end = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    auto* phi = b.CreatePHI(loaded->getType(), 2);
    phi->addIncoming(loaded, yes_end);
    phi->addIncoming(other, from);
    r = phi;
    break;
  }
  case OpKind::Store: {
    DType t = o[1]->type.elem;
    if (o.size() == 2) {
      store_user(scalar(o[0]), scalar(o[1]), t);
      return;
    }
    auto* yes = llvm::BasicBlock::Create(ctx_, "store", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "store.done", fn_);
    b.CreateCondBr(scalar(o[2]), yes, done);
    b.SetInsertPoint(yes);
    store_user(scalar(o[0]), scalar(o[1]), t);
    b.CreateBr(done);
    b.SetInsertPoint(done);
    return;
  }
  default: {
    std::vector<llvm::Value*> args;
    for (ir::Value* x : o)
      args.push_back(scalar(x));
    r = elementwise(op, args);
  }
  }
  set_scalar(op.result(), r);
}

void KernelLowering::lower_view_op(const Op& op) {
  View v = view(op.operand(0));
  const auto& rs = op.results.empty() ? v.shape : op.result()->type.shape;
  switch (op.kind) {
  case OpKind::Broadcast:
    for (size_t d = 0; d < v.shape.size(); ++d)
      if (v.shape[d] == 1 && rs[d] != 1)
        v.strides[d] = 0;
    v.shape = rs;
    break;
  case OpKind::ExpandDims: {
    int64_t axis = op.int_attr(ir::attr::axis);
    v.shape.insert(v.shape.begin() + axis, 1);
    v.strides.insert(v.strides.begin() + axis, 0);
    break;
  }
  case OpKind::Reshape:
    if (!contiguous(v)) {
      View c = new_buffer(op.operand(0)->type.elem, v.shape);
      copy(v, c, op.operand(0)->type.elem);
      v = c;
    }
    v.shape = rs;
    v.strides = row_major(rs);
    break;
  case OpKind::Trans: {
    auto order = op.ints_attr("order");
    View t = v;
    for (size_t d = 0; d < order.size(); ++d) {
      t.shape[d] = v.shape[order[d]];
      t.strides[d] = v.strides[order[d]];
    }
    v = t;
    break;
  }
  case OpKind::Split: {
    View x = v;
    int64_t minor = x.strides.back();
    x.shape.pop_back();
    x.strides.pop_back();
    View y = x;
    y.offset += minor;
    set_view(op.results[0], x);
    set_view(op.results[1], y);
    return;
  }
  default:
    break;
  }
  set_view(op.result(), v);
}

// Every op kind is handled here: each category's enum is switched over without a default, so
// an op added to ops.def that the CPU backend misses does not compile.
void KernelLowering::lower_op(const Op& op) {
  switch (ir::op_category(op.kind)) {
  case OpCategory::Binary:
  case OpCategory::Compare:
  case OpCategory::Unary:
  case OpCategory::Math:
  case OpCategory::Extern:
  case OpCategory::Ternary:
  case OpCategory::Select:
  case OpCategory::Convert:
    return fuse(op);
  case OpCategory::Hint:
    switch (ir::as<ir::HintOp>(op.kind)) {
    case ir::HintOp::Hint:
      return fuse(op);
    case ir::HintOp::DescHint:
      return; // the load it describes computes the block itself
    }
    return;
  case OpCategory::Source:
    switch (ir::as<ir::SourceOp>(op.kind)) {
    case ir::SourceOp::ProgramId:
    case ir::SourceOp::NumPrograms:
      return lower_scalar_op(op);
    case ir::SourceOp::Constant:
    case ir::SourceOp::Arange:
      return fuse(op);
    }
    return;
  case OpCategory::Shape:
    switch (ir::as<ir::ShapeOp>(op.kind)) {
    case ir::ShapeOp::Splat:
      return fuse(op);
    case ir::ShapeOp::Broadcast:
    case ir::ShapeOp::ExpandDims:
    case ir::ShapeOp::Reshape:
    case ir::ShapeOp::Trans:
    case ir::ShapeOp::Split:
    case ir::ShapeOp::ConvertLayout:
      return lower_view_op(op);
    case ir::ShapeOp::Join:
    case ir::ShapeOp::Cat:
      return lower_join_or_cat(op);
    }
    return;
  case OpCategory::Memory:
    switch (ir::as<ir::MemoryOp>(op.kind)) {
    case ir::MemoryOp::AddPtr:
    case ir::MemoryOp::Load:
    case ir::MemoryOp::Store:
      return fuse(op);
    case ir::MemoryOp::AtomicRmw:
    case ir::MemoryOp::AtomicCas:
      flush(); // effects follow earlier ops
      return lower_atomic(op);
    }
    return;
  case OpCategory::Shared:
    throw Error(fmt::format("{}: a GPU-only op (made by the GPU passes); the CPU backend lowers "
                            "the IR as traced",
                            where(op)));
  case OpCategory::Collective:
    switch (ir::as<ir::CollectiveOp>(op.kind)) {
    case ir::CollectiveOp::Reduce:
    case ir::CollectiveOp::Scan:
      return lower_reduce_or_scan(op);
    case ir::CollectiveOp::Dot:
      return lower_dot(op);
    case ir::CollectiveOp::Histogram:
      throw Error(fmt::format("{}: internal: histograms are expanded before lowering", where(op)));
    }
    return;
  case OpCategory::Control:
    flush(); // regions must follow earlier ops
    switch (ir::as<ir::ControlOp>(op.kind)) {
    case ir::ControlOp::For:
      return lower_for(op);
    case ir::ControlOp::If:
      return lower_if(op);
    case ir::ControlOp::While:
      return lower_while(op);
    }
    return;
  case OpCategory::Terminator:
    throw Error(fmt::format("{}: internal error: a terminator is lowered by its block", where(op)));
  case OpCategory::Debug:
    flush(); // effects follow earlier ops
    switch (ir::as<ir::DebugOp>(op.kind)) {
    case ir::DebugOp::Print:
      return lower_print(op);
    case ir::DebugOp::Assert:
    case ir::DebugOp::Assume:
      return lower_check(op);
    case ir::DebugOp::Barrier:
      return;
    }
    return;
  }
}

// Elementwise ops, sources, splats, pointer arithmetic, loads and stores: into the pending
// fusion group of their shape (rank 0: straight-line code).
void KernelLowering::fuse(const Op& op) {
  bool rank0 = !op.results.empty() ? is_rank0(op.result()) : is_rank0(op.operand(0));
  if (rank0) {
    if (op.kind == OpKind::Store) {
      flush();
      guard_reloads(op);
    }
    return lower_scalar_op(op);
  }
  const auto& shape = op.results.empty() ? op.operand(0)->type.shape : op.result()->type.shape;
  // A division leaf (rematerializable) is its group's only op, so that its buffer is whole
  // before any group recomputes an expression that reads it.
  const bool leaf = !op.results.empty() && division_leaf(op.result());
  if (!group_.ops.empty() && (group_.shape != shape || leaf))
    flush();
  group_.shape = shape;
  group_.ops.push_back(&op);
  for (ir::Value* r : op.results)
    group_.defines.insert(r);
  stream_site(op);
  if (op.kind == OpKind::Store || leaf)
    flush(); // later loads must observe the store, lane for lane and op for op
}

void KernelLowering::lower_join_or_cat(const Op& op) {
  DType t = op.result()->type.elem;
  View r = new_buffer(t, op.result()->type.shape);
  View a = view(op.operand(0)), c = view(op.operand(1));
  if (op.kind == OpKind::Join) {
    for (int half = 0; half < 2; ++half) {
      View dst = r;
      dst.shape.pop_back();
      dst.strides.pop_back();
      dst.offset += half;
      copy(half ? c : a, dst, t);
    }
    return set_view(op.result(), r);
  }
  View first = r, second = r;
  first.shape[0] = a.shape[0];
  second.shape[0] = c.shape[0];
  second.offset += a.shape[0] * r.strides[0];
  copy(a, first, t);
  copy(c, second, t);
  set_view(op.result(), r);
}

void KernelLowering::lower_check(const Op& op) {
  std::string what = op.kind == OpKind::Assert ? "device_assert failed: " + op.str_attr("message")
                                               : std::string("tl::assume's condition is false");
  if (is_rank0(op.operand(0)))
    return fail_if(builder_.CreateNot(scalar(op.operand(0))), op, what);
  const View& c = view(op.operand(0));
  auto strides = row_major(c.shape);
  loop_nest(c.shape, [&](const std::vector<llvm::Value*>& idx) {
    llvm::Value* lane = i64(0);
    for (size_t d = 0; d < idx.size(); ++d)
      lane = builder_.CreateAdd(lane, builder_.CreateMul(idx[d], i64(strides[d])));
    llvm::Value* ok =
        from_scratch(builder_.CreateLoad(c.ty, element_ptr(c, idx)), ir::ScalarKind::I1);
    fail_if(builder_.CreateNot(ok), op, what, lane);
  });
}

// --- structured control flow ---

void KernelLowering::yield_into(const std::vector<const ir::Value*>& yielded,
                                const std::vector<View>& dst,
                                const std::unordered_set<int>& clobbered) {
  // A yielded view that reads a buffer about to be overwritten goes through a temporary.
  std::vector<View> src(yielded.size());
  for (size_t i = 0; i < yielded.size(); ++i) {
    if (!dst[i].base)
      continue;
    src[i] = view(yielded[i]);
    bool same = src[i].base == dst[i].base && src[i].offset == dst[i].offset &&
                src[i].strides == dst[i].strides;
    if (!same && clobbered.count(src[i].root)) {
      View tmp = new_buffer(yielded[i]->type.elem, yielded[i]->type.shape);
      copy(src[i], tmp, yielded[i]->type.elem);
      src[i] = tmp;
    }
  }
  for (size_t i = 0; i < yielded.size(); ++i)
    if (dst[i].base)
      copy(src[i], dst[i], yielded[i]->type.elem);
}

llvm::Value* KernelLowering::loop_bound(llvm::Value* v, DType t) {
  return t.is_unsigned() ? builder_.CreateZExt(v, builder_.getInt64Ty())
                         : builder_.CreateSExtOrTrunc(v, builder_.getInt64Ty());
}

KernelLowering::LoopSpan KernelLowering::loop_span(llvm::Value* lb, llvm::Value* ub,
                                                   llvm::Value* step) {
  auto& b = builder_;
  llvm::Value* neg = b.CreateICmpSLT(step, i64(0));
  llvm::Value* span = b.CreateSub(ub, lb);
  return {b.CreateSelect(neg, b.CreateNeg(span), span),
          b.CreateSelect(neg, b.CreateNeg(step), step)};
}

void KernelLowering::lower_for(const Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  DType it = o[0]->type.elem;
  llvm::Value* lb = loop_bound(scalar(o[0]), it);
  llvm::Value* ub = loop_bound(scalar(o[1]), it);
  llvm::Value* step = loop_bound(scalar(o[2]), it);
  fail_if(b.CreateICmpEQ(step, i64(0)), op, "tl::range step is zero");
  // At least 1, for streaming stores' estimate of a launch's bytes (lower_streaming_store.cpp).
  auto [span, stride] = loop_span(lb, ub, step);
  llvm::Value* trips =
      b.CreateSDiv(span, b.CreateSelect(b.CreateICmpEQ(stride, i64(0)), i64(1), stride));
  trips = b.CreateSelect(b.CreateICmpSGT(trips, i64(1)), trips, i64(1));

  const ir::Block& body = op.body();
  size_t n = o.size() - 3;
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  std::vector<bool> lazy(n, false);
  for (size_t i = 0; i < n; ++i)
    if (lazy_init_slot(op, i)) {
      lazy[i] = true;
      carry[i] = new_buffer(o[3 + i]->type.elem, o[3 + i]->type.shape);
      roots.insert(carry[i].root);
    } else if (!is_rank0(o[3 + i])) {
      // A group's buffer read by nothing but this loop becomes the carried buffer itself.
      const ir::Value* init = o[3 + i];
      const View& v = view(init);
      bool adopt = init->def && fusible(*init->def) && users_[init].size() == 1 && v.offset == 0 &&
                   v.shape == init->type.shape && v.strides == row_major(v.shape);
      if (adopt) {
        carry[i] = v;
      } else {
        carry[i] = new_buffer(init->type.elem, init->type.shape);
        copy(v, carry[i], init->type.elem);
      }
      roots.insert(carry[i].root);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for", fn_);
  auto* loop_body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  auto* iv = b.CreatePHI(b.getInt64Ty(), 2, "iv");
  iv->addIncoming(lb, pre);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base) {
      phis[i] = b.CreatePHI(reg_type(o[3 + i]->type.elem), 2);
      phis[i]->addIncoming(scalar(o[3 + i]), pre);
    }
  llvm::Value* up = b.CreateAnd(b.CreateICmpSGT(step, i64(0)), b.CreateICmpSLT(iv, ub));
  llvm::Value* down = b.CreateAnd(b.CreateICmpSLT(step, i64(0)), b.CreateICmpSGT(iv, ub));
  b.CreateCondBr(b.CreateOr(up, down), loop_body, exit);

  b.SetInsertPoint(loop_body);
  llvm::Value* first = b.CreateICmpEQ(iv, lb, "first");
  loop_trips_.push_back(trips);
  for (size_t i = 0; i < n; ++i)
    if (lazy[i])
      lazy_init_[body.args[1 + i]] = {splat_value(o[3 + i]), first, carry[i]};
  set_scalar(body.args[0], b.CreateTrunc(iv, reg_type(it)));
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      set_view(body.args[1 + i], carry[i]);
    else
      set_scalar(body.args[1 + i], phis[i]);
  }
  lower_block(body);
  flush();
  loop_trips_.pop_back();
  const Op* y = body.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next_scalars(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next_scalars[i] = scalar(yielded[i]);
  yield_into(yielded, carry, roots);
  llvm::Value* next = b.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  iv->addIncoming(next, latch);
  for (size_t i = 0; i < n; ++i)
    if (phis[i])
      phis[i]->addIncoming(next_scalars[i], latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < n; ++i)
    if (lazy[i]) {
      // A loop that ran no iteration leaves its init, which no one wrote yet.
      lazy_init_.erase(body.args[1 + i]);
      fill_if(b.CreateICmpEQ(iv, lb), carry[i], splat_value(o[3 + i]), o[3 + i]->type.elem);
    }
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base)
      set_view(op.results[i], carry[i]);
    else
      set_scalar(op.results[i], phis[i]);
  }
}

void KernelLowering::lower_if(const Op& op) {
  auto& b = builder_;
  size_t n = op.results.size();
  std::vector<View> out(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(op.results[i])) {
      out[i] = new_buffer(op.results[i]->type.elem, op.results[i]->type.shape);
      roots.insert(out[i].root);
    }
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
  auto* merge = llvm::BasicBlock::Create(ctx_, "endif", fn_);
  b.CreateCondBr(scalar(op.operand(0)), then_bb, else_bb);
  std::vector<std::pair<std::vector<llvm::Value*>, llvm::BasicBlock*>> incoming;
  for (unsigned r = 0; r < 2; ++r) {
    b.SetInsertPoint(r == 0 ? then_bb : else_bb);
    const ir::Block& blk = op.body(r);
    lower_block(blk);
    flush();
    const Op* y = blk.terminator();
    std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
    std::vector<llvm::Value*> scalars(n, nullptr);
    for (size_t i = 0; i < n; ++i)
      if (!out[i].base)
        scalars[i] = scalar(yielded[i]);
    yield_into(yielded, out, roots);
    incoming.emplace_back(scalars, b.GetInsertBlock());
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (size_t i = 0; i < n; ++i) {
    if (out[i].base) {
      set_view(op.results[i], out[i]);
      continue;
    }
    auto* phi = b.CreatePHI(reg_type(op.results[i]->type.elem), 2);
    for (auto& [vals, bb] : incoming)
      phi->addIncoming(vals[i], bb);
    set_scalar(op.results[i], phi);
  }
}

void KernelLowering::lower_while(const Op& op) {
  auto& b = builder_;
  const auto& o = op.operands;
  size_t n = o.size();
  std::vector<View> carry(n);
  std::unordered_set<int> roots;
  for (size_t i = 0; i < n; ++i)
    if (!is_rank0(o[i])) {
      carry[i] = new_buffer(o[i]->type.elem, o[i]->type.shape);
      roots.insert(carry[i].root);
      copy(view(o[i]), carry[i], o[i]->type.elem);
    }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "while", fn_);
  auto* after = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  std::vector<llvm::PHINode*> phis(n, nullptr);
  const ir::Block& before = op.body(0);
  for (size_t i = 0; i < n; ++i) {
    if (carry[i].base) {
      set_view(before.args[i], carry[i]);
      continue;
    }
    phis[i] = b.CreatePHI(reg_type(o[i]->type.elem), 2);
    phis[i]->addIncoming(scalar(o[i]), pre);
    set_scalar(before.args[i], phis[i]);
  }
  lower_block(before);
  flush();
  const Op* c = before.terminator();
  llvm::Value* go = scalar(c->operand(0));
  std::vector<const ir::Value*> passed(c->operands.begin() + 1, c->operands.end());
  // Tensors passed on are views; make sure none is still pending.
  for (const ir::Value* v : passed)
    if (!is_rank0(v))
      (void)view(v);
  b.CreateCondBr(go, after, exit);

  b.SetInsertPoint(after);
  const ir::Block& ab = op.body(1);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      set_scalar(ab.args[i], scalar(passed[i]));
    else
      set_view(ab.args[i], view(passed[i]));
  }
  lower_block(ab);
  flush();
  const Op* y = ab.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<llvm::Value*> next(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!carry[i].base)
      next[i] = scalar(yielded[i]);
  yield_into(yielded, carry, roots);
  for (size_t i = 0; i < n; ++i)
    if (phis[i])
      phis[i]->addIncoming(next[i], b.GetInsertBlock());
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < passed.size(); ++i) {
    if (is_rank0(passed[i]))
      set_scalar(op.results[i], scalar(passed[i]));
    else
      set_view(op.results[i], view(passed[i]));
  }
}

std::vector<llvm::Value*> KernelLowering::inline_region(const ir::Block& blk,
                                                        const std::vector<llvm::Value*>& args) {
  for (size_t i = 0; i < blk.args.size(); ++i)
    set_scalar(blk.args[i], args[i]);
  lower_block(blk);
  flush();
  std::vector<llvm::Value*> out;
  for (ir::Value* v : blk.terminator()->operands)
    out.push_back(scalar(v));
  return out;
}

LoweredModule lower_to_llvm(const ir::Function& f_in, const CpuTarget& target,
                            llvm::LLVMContext& ctx, const std::string& symbol, bool fp_fusion) {
  LoweredModule out;
  out.module = std::make_unique<llvm::Module>(symbol, ctx);
  out.module->setTargetTriple(target.triple);
  out.module->setDataLayout(target.machine->createDataLayout());
  out.symbol = symbol;
  // Loop-carried pointer tensors become an offset from their initial value
  // (pointer_offsets.cpp); kernels whose loops may run once get a second version with those
  // loops inlined (single_trip_loops.cpp), chosen at entry.
  std::unique_ptr<ir::Function> expanded = expand_histograms(f_in);
  const ir::Function& f_h = expanded ? *expanded : f_in;
  std::unique_ptr<ir::Function> offsets = carry_pointer_offsets(f_h);
  const ir::Function& f = offsets ? *offsets : f_h;
  SingleTripVersion single = inline_single_trip_loops(f);
  llvm::Function* program = nullptr;
  if (!single.function) {
    KernelLowering l(f, target, ctx, *out.module, symbol + ".program", fp_fusion);
    l.run();
    out.scratch_bytes = l.scratch_bytes();
    program = l.fn();
  } else {
    KernelLowering loops(f, target, ctx, *out.module, symbol + ".loops", fp_fusion);
    loops.run();
    KernelLowering once(*single.function, target, ctx, *out.module, symbol + ".program", fp_fusion);
    once.set_general(loops.fn(), std::move(single.bounds));
    once.run();
    out.scratch_bytes = std::max(loops.scratch_bytes(), once.scratch_bytes());
    program = once.fn();
  }
  emit_grid_loop(*program, symbol);
  return out;
}

} // namespace tritium::cpu
