// The lowering stage: tritium IR -> one LLVM function per kernel. This file holds the driver:
// ops in program order, views and scratch buffers. Fusion groups are formed in
// lower_fusion.cpp and emitted in lower_group.cpp, structured control flow is in
// lower_control.cpp, element semantics in lower_scalar.cpp; collectives, dot and atomics in
// their own files.
#include "cpu_passes.hpp"
#include "grid_loop.hpp"
#include "lowering.hpp"
#include "single_trip_loops.hpp"
#include "target.hpp"
#include "llvm/guarded.hpp"

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
  stores_.streaming_bytes_ = entry_builder_.CreateLoad(
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
      v = elements_.scalar_.round_from_double(builder_.CreateBitCast(slot, builder_.getDoubleTy()),
                                              t);
    else if (t.is_ptr())
      v = builder_.CreateIntToPtr(slot, elements_.reg_type(t));
    else
      v = builder_.CreateTrunc(slot, elements_.reg_type(t));
    set_scalar(params[i], v);
  }
  branch_to_general();

  ir::walk(f_.entry(), [&](const Op& op) {
    stores_.has_atomics_ =
        stores_.has_atomics_ || op.kind == OpKind::AtomicRmw || op.kind == OpKind::AtomicCas;
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
        (fusion_.lazy_init_slot(op, i - 3) ? lazy : needed).insert(op.operand(i));
  });
  for (const ir::Value* v : lazy)
    if (!needed.count(v) && std::all_of(users_[v].begin(), users_[v].end(),
                                        [](const Op* u) { return u->kind == OpKind::For; }))
      lazy_init_values_.insert(v);
  prefetch_.plan_streams();
  lower_block(f_.entry());
  flush();
  prefetch_.drop_unused_streams();
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
      v[k] = control_.loop_bound(x->def ? elements_.scalar_.constant(*x->def, t) : scalar(x), t);
    }
    auto [span, stride] = control_.loop_span(v[0], v[1], v[2]);
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
  if (full_width && prefetch_.prefetch_strips_ && step == 1) {
    // Strips of prefetch_.kPrefetchStrip elements, each after its share of the streams' lines
    // (lower_prefetch.cpp): whole strips of a constant trip count, then the rest.
    prefetch_.prefetch_strips_ = false;
    const int64_t k = prefetch_.kPrefetchStrip;
    llvm::Value* n = b.CreateSub(hi, lo);
    n = b.CreateSelect(b.CreateICmpSGT(n, i64(0)), n, i64(0));
    llvm::Value* whole = b.CreateAdd(lo, b.CreateMul(b.CreateSDiv(n, i64(k)), i64(k)));
    loop(lo, whole, k, [&](llvm::Value* s) {
      prefetch_.prefetch_share(
          prefetch_.prefetch_offset_ ? b.CreateAdd(s, prefetch_.prefetch_offset_) : s, k);
      loop(s, b.CreateAdd(s, i64(k), "", true, true), 1, body, true);
    });
    prefetch_.prefetch_share(
        prefetch_.prefetch_offset_ ? b.CreateAdd(whole, prefetch_.prefetch_offset_) : whole, k);
    loop(whole, hi, 1, body, true);
    prefetch_.prefetch_strips_ = true;
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
  v.ty = elements_.scratch_type(t);
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
    fusion_.fill_if(l.first, l.carry, l.value, v->type.elem);
    l.filled = true;
  }
  if (reloads_.is_reloaded(v))
    throw Error(fmt::format("cpu backend: kernel '{}': internal error: a reloaded tensor read as "
                            "a buffer",
                            f_.name));
  if (is_rank0(v) && !values_[v].view.base) {
    // A shape op on a scalar (expand_dims, join, …): a one-element buffer.
    View w = new_buffer(v->type.elem, {});
    builder_.CreateStore(elements_.to_scratch(scalar(v), v->type.elem), w.base);
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
    r = b.CreateTrunc(pid(op.int_attr(attr::axis)), b.getInt32Ty());
    break;
  case OpKind::NumPrograms:
    r = b.CreateTrunc(pid(3 + op.int_attr(attr::axis)), b.getInt32Ty());
    break;
  case OpKind::Constant:
    r = elements_.scalar_.constant(op, op.result()->type.elem);
    break;
  case OpKind::Load: {
    DType t = op.result()->type.elem;
    if (o.size() == 1) {
      r = elements_.load_user(scalar(o[0]), t);
      break;
    }
    llvm::Value* other = o.size() > 2 ? scalar(o[2]) : elements_.scalar_.zero(t);
    r = llvm_ir::guarded(
        b, scalar(o[1]), "load", [&] { return elements_.load_user(scalar(o[0]), t); }, other);
    break;
  }
  case OpKind::Store: {
    DType t = o[1]->type.elem;
    if (o.size() == 2) {
      elements_.store_user(scalar(o[0]), scalar(o[1]), t);
      return;
    }
    llvm_ir::guarded(b, scalar(o[2]), "store", [&]() -> llvm::Value* {
      elements_.store_user(scalar(o[0]), scalar(o[1]), t);
      return nullptr;
    });
    return;
  }
  default: {
    std::vector<llvm::Value*> args;
    for (ir::Value* x : o)
      args.push_back(scalar(x));
    r = elements_.elementwise(op, args);
  }
  }
  set_scalar(op.result(), r);
}

void KernelLowering::lower_view_op(const Op& op) {
  const bool recomputed =
      op.kind == OpKind::Broadcast || op.kind == OpKind::ExpandDims || op.kind == OpKind::Trans;
  if (recomputed && fusion_.rematerializable(op.result()) && !fusion_.read_from_buffer(op.result()))
    return; // every reader recomputes it (FusionLowering::read_from_buffer)
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
    int64_t axis = op.int_attr(attr::axis);
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
    auto order = op.ints_attr(attr::order);
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
    return fusion_.fuse(op);
  case OpCategory::Hint:
    switch (ir::as<ir::HintOp>(op.kind)) {
    case ir::HintOp::Hint:
      return fusion_.fuse(op);
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
      return fusion_.fuse(op);
    }
    return;
  case OpCategory::Shape:
    switch (ir::as<ir::ShapeOp>(op.kind)) {
    case ir::ShapeOp::Splat:
      return fusion_.fuse(op);
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
      return fusion_.fuse(op);
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
      return control_.lower_for(op);
    case ir::ControlOp::If:
      return control_.lower_if(op);
    case ir::ControlOp::While:
      return control_.lower_while(op);
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
  std::string what = op.kind == OpKind::Assert
                         ? "device_assert failed: " + op.str_attr(attr::message)
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
        elements_.from_scratch(builder_.CreateLoad(c.ty, element_ptr(c, idx)), ir::ScalarKind::I1);
    fail_if(builder_.CreateNot(ok), op, what, lane);
  });
}

LoweredModule lower_to_llvm(const ir::Function& f_in, const CpuTarget& target,
                            llvm::LLVMContext& ctx, const std::string& symbol, bool fp_fusion) {
  LoweredModule out;
  out.module = std::make_unique<llvm::Module>(symbol, ctx);
  out.module->setTargetTriple(target.triple);
  out.module->setDataLayout(target.machine->createDataLayout());
  out.symbol = symbol;
  // The IR passes (cpu_passes.cpp) in order; the last makes the single-trip version, a second
  // copy with the loops that may run once inlined, chosen at entry.
  std::unique_ptr<ir::Function> owned;
  const ir::Function* current = &f_in;
  for (const CpuPass& pass : cpu_passes()) {
    if (pass.second_version)
      break;
    if (std::unique_ptr<ir::Function> g = pass.run(*current)) {
      owned = std::move(g);
      current = owned.get();
    }
  }
  const ir::Function& f = *current;
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
