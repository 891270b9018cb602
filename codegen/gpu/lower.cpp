// IR with layouts -> LLVM IR for one GPU kernel. Every tensor value becomes the list of
// registers its layout gives this thread (gpu/layout.hpp); scalars are one register, the same
// in every thread. Target specifics come only through TargetInfo.
//
// Data that must move between threads goes through shared memory: layout conversions and
// reshapes/transposes/joins/splits/concatenations (write in row-major order, barrier, read
// what this thread needs), the operands of dot (FMA over K), scans, and the cross-warp step of
// reductions (which first combine within a thread, then across lanes with xor shuffles).
#include "gpu/layout.hpp"
#include "gpu/target_info.hpp"
#include "passes/passes.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_map>

namespace tritium::gpu {
namespace {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;
using LV = llvm::Value;
using Regs = std::vector<LV*>;

class Lowering {
public:
  Lowering(const ir::Function& f, TargetInfo& ti, llvm::LLVMContext& ctx, int num_warps)
      : f_(f), ti_(ti), ctx_(ctx), b_(ctx), num_warps_(num_warps), ws_(ti.warp_size()) {}

  std::unique_ptr<llvm::Module> run(int* shared_bytes) {
    auto m = std::make_unique<llvm::Module>(f_.name, ctx_);
    m->setTargetTriple(ti_.triple());
    m->setDataLayout(ti_.data_layout());
    m_ = m.get();
    axis_ = analyze_axis_info(f_);
    std::vector<llvm::Type*> params;
    for (const ir::Value* a : f_.args())
      params.push_back(a->type.elem.is_bool() ? b_.getInt8Ty() : type(a->type.elem));
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f_.name, m_);
    ti_.make_kernel(*fn_, num_warps_ * ws_);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    for (size_t i = 0; i < f_.args().size(); ++i) {
      LV* a = fn_->getArg(static_cast<unsigned>(i));
      a->setName(f_.arg_info[i].name.empty() ? fmt::format("arg{}", i) : f_.arg_info[i].name);
      if (f_.args()[i]->type.elem.is_bool())
        a = b_.CreateTrunc(a, b_.getInt1Ty());
      vals_[f_.args()[i]] = {a};
    }
    tid_ = ti_.thread_id(b_);
    lane_ = b_.CreateURem(tid_, b_.getInt32(ws_), "lane");
    warp_ = b_.CreateUDiv(tid_, b_.getInt32(ws_), "warp");
    block(f_.entry());
    b_.CreateRetVoid();
    *shared_bytes = static_cast<int>(shared_bytes_);
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(*m_, &os))
      throw Error(fmt::format("kernel '{}': internal error, the LLVM IR is invalid: {}", f_.name,
                              os.str()));
    return m;
  }

private:
  [[noreturn]] void fail(const ir::Op& op, const std::string& what) const {
    throw Error(fmt::format("{}: kernel '{}', op '{}': GPU lowering: {}", op.loc.str(), f_.name,
                            ir::op_name(op.kind), what));
  }

  // --- types ---------------------------------------------------------------------------
  llvm::Type* type(DType t) {
    switch (t.kind) {
    case ScalarKind::I1:
      return b_.getInt1Ty();
    case ScalarKind::I8:
    case ScalarKind::U8:
      return b_.getInt8Ty();
    case ScalarKind::I16:
    case ScalarKind::U16:
      return b_.getInt16Ty();
    case ScalarKind::I32:
    case ScalarKind::U32:
      return b_.getInt32Ty();
    case ScalarKind::I64:
    case ScalarKind::U64:
      return b_.getInt64Ty();
    case ScalarKind::F16:
      return b_.getHalfTy();
    case ScalarKind::BF16:
      return b_.getBFloatTy();
    case ScalarKind::F32:
      return b_.getFloatTy();
    case ScalarKind::F64:
      return b_.getDoubleTy();
    case ScalarKind::Ptr:
      return b_.getPtrTy(ti_.global_address_space());
    }
    return nullptr;
  }
  // In memory, i1 is a byte.
  llvm::Type* mem_type(DType t) { return t.is_bool() ? b_.getInt8Ty() : type(t); }
  static int64_t mem_bytes(DType t) { return t.is_bool() ? 1 : t.bits() / 8; }
  LV* to_mem(LV* v, DType t) { return t.is_bool() ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  LV* from_mem(LV* v, DType t) { return t.is_bool() ? b_.CreateTrunc(v, b_.getInt1Ty()) : v; }

  // --- values and layouts --------------------------------------------------------------
  const Regs& get(const ir::Value* v) {
    auto it = vals_.find(v);
    if (it == vals_.end())
      throw Error(
          fmt::format("kernel '{}': internal error, a value used before it is lowered", f_.name));
    return it->second;
  }
  void set(const ir::Value* v, Regs r) { vals_[v] = std::move(r); }

  Dist dist(const ir::Value* v) { return resolve(v->type.layout, v->type.shape); }
  int nregs(const ir::Value* v) { return v->type.is_scalar() ? 1 : dist(v).num_regs(); }

  // This thread's part of each coordinate, masked to the shape (memoized per layout+shape).
  const Regs& thread_base(const Dist& d, const ir::Type& t) {
    std::string key = t.layout->str() + ir::shape_string(t.shape);
    auto it = bases_.find(key);
    if (it != bases_.end())
      return it->second;
    llvm::IRBuilder<>::InsertPointGuard guard(b_);
    // Right after the thread ids, so that every use is dominated.
    auto* w = llvm::cast<llvm::Instruction>(warp_);
    if (llvm::Instruction* next = w->getNextNode())
      b_.SetInsertPoint(next);
    else
      b_.SetInsertPoint(w->getParent());
    Regs base;
    for (int k = 0; k < d.rank(); ++k) {
      LV* l = b_.CreateAnd(b_.CreateLShr(lane_, std::countr_zero(unsigned(d.lane_stride[k]))),
                           d.tpw[k] - 1);
      LV* w = b_.CreateAnd(b_.CreateLShr(warp_, std::countr_zero(unsigned(d.warp_stride[k]))),
                           d.wpc[k] - 1);
      LV* x = b_.CreateAdd(b_.CreateMul(l, b_.getInt32(d.spt[k])),
                           b_.CreateMul(w, b_.getInt32(d.spt[k] * d.tpw[k])));
      base.push_back(b_.CreateAnd(x, b_.getInt32(static_cast<uint32_t>(d.shape[k] - 1))));
    }
    return bases_.emplace(key, std::move(base)).first->second;
  }

  Regs coords(const Dist& d, const ir::Type& t, int r) {
    const Regs& base = thread_base(d, t);
    auto off = d.reg_offset(r);
    Regs c;
    for (int k = 0; k < d.rank(); ++k)
      c.push_back(
          b_.CreateOr(base[k], b_.getInt32(static_cast<uint32_t>(off[k] & (d.shape[k] - 1)))));
    return c;
  }

  LV* linear(const Regs& c, const std::vector<int64_t>& shape) {
    LV* idx = b_.getInt32(0);
    for (size_t k = 0; k < c.size(); ++k)
      idx = b_.CreateAdd(b_.CreateMul(idx, b_.getInt32(static_cast<uint32_t>(shape[k]))), c[k]);
    return idx;
  }

  // Whether this thread is the first holder of its elements (others only replicate them).
  LV* is_owner(const Dist& d, const ir::Type& t) {
    LV* ok = b_.getTrue();
    for (int k = 0; k < d.rank(); ++k) {
      // Lanes/warps beyond the shape along k hold copies.
      int64_t real_lanes = std::clamp<int64_t>(d.shape[k] / d.spt[k], 1, d.tpw[k]);
      int64_t real_warps =
          std::clamp<int64_t>(d.shape[k] / (int64_t{d.spt[k]} * d.tpw[k]), 1, d.wpc[k]);
      LV* l = b_.CreateAnd(b_.CreateLShr(lane_, std::countr_zero(unsigned(d.lane_stride[k]))),
                           d.tpw[k] - 1);
      LV* w = b_.CreateAnd(b_.CreateLShr(warp_, std::countr_zero(unsigned(d.warp_stride[k]))),
                           d.wpc[k] - 1);
      ok = b_.CreateAnd(ok, b_.CreateICmpULT(l, b_.getInt32(static_cast<uint32_t>(real_lanes))));
      ok = b_.CreateAnd(ok, b_.CreateICmpULT(w, b_.getInt32(static_cast<uint32_t>(real_warps))));
    }
    for (auto [stride, count] : d.replica_lanes) {
      LV* l = b_.CreateAnd(b_.CreateLShr(lane_, std::countr_zero(unsigned(stride))), count - 1);
      ok = b_.CreateAnd(ok, b_.CreateICmpEQ(l, b_.getInt32(0)));
    }
    for (auto [stride, count] : d.replica_warps) {
      LV* w = b_.CreateAnd(b_.CreateLShr(warp_, std::countr_zero(unsigned(stride))), count - 1);
      ok = b_.CreateAnd(ok, b_.CreateICmpEQ(w, b_.getInt32(0)));
    }
    (void)t;
    return ok;
  }

  // --- shared memory -------------------------------------------------------------------
  LV* smem_ptr(LV* index, int64_t byte_offset, int64_t elem_bytes) {
    LV* base = ti_.shared_memory_base(b_);
    LV* off = b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(byte_offset)),
                           b_.CreateMul(index, b_.getInt32(static_cast<uint32_t>(elem_bytes))));
    return b_.CreateGEP(b_.getInt8Ty(), base, off);
  }
  void need_shared(int64_t bytes) { shared_bytes_ = std::max(shared_bytes_, bytes); }
  static int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }

  // Writes tensor `v` (registers `regs`) row-major at byte_offset; returns the bytes used.
  int64_t to_smem(const ir::Value* v, const Regs& regs, int64_t byte_offset) {
    DType e = v->type.elem;
    int64_t eb = mem_bytes(e);
    if (v->type.is_scalar()) {
      b_.CreateStore(to_mem(regs[0], e), smem_ptr(b_.getInt32(0), byte_offset, eb));
      return align16(eb);
    }
    Dist d = dist(v);
    for (int r = 0; r < d.num_regs(); ++r)
      b_.CreateStore(to_mem(regs[r], e),
                     smem_ptr(linear(coords(d, v->type, r), v->type.shape), byte_offset, eb));
    return align16(v->type.numel() * eb);
  }
  LV* from_smem(DType e, LV* index, int64_t byte_offset) {
    return from_mem(b_.CreateLoad(mem_type(e), smem_ptr(index, byte_offset, mem_bytes(e))), e);
  }

  // --- blocks --------------------------------------------------------------------------
  void block(const ir::Block& blk) {
    for (const auto& op : blk.ops) {
      if (op_category(op->kind) == ir::OpCategory::Terminator)
        return;
      try {
        lower(*op);
      } catch (const Error& e) {
        // Errors from layout helpers know no op: name it (once).
        if (std::string_view(e.what()).find(fmt::format("kernel '{}'", f_.name)) !=
            std::string_view::npos)
          throw;
        std::string_view what = e.what();
        if (what.starts_with("GPU lowering: "))
          what.remove_prefix(14);
        fail(*op, std::string(what));
      }
    }
  }
  std::vector<Regs> region(const ir::Block& blk, const std::vector<Regs>& args) {
    for (size_t i = 0; i < blk.args.size(); ++i)
      set(blk.args[i], args[i]);
    block(blk);
    std::vector<Regs> out;
    if (const ir::Op* t = blk.terminator(); t && t->kind != OpKind::Return)
      for (const ir::Value* v : t->operands)
        out.push_back(get(v));
    return out;
  }
  // Applies a combine region (reduce / scan) to scalars.
  std::vector<LV*> combine(const ir::Op& op, const std::vector<LV*>& a, const std::vector<LV*>& x) {
    std::vector<Regs> args;
    for (LV* v : a)
      args.push_back({v});
    for (LV* v : x)
      args.push_back({v});
    auto out = region(op.body(), args);
    std::vector<LV*> r;
    for (auto& o : out)
      r.push_back(o[0]);
    return r;
  }

  // --- ops -----------------------------------------------------------------------------
  void lower(const ir::Op& op) {
    switch (op_category(op.kind)) {
    case ir::OpCategory::Binary:
    case ir::OpCategory::Compare:
    case ir::OpCategory::Unary:
    case ir::OpCategory::Ternary:
    case ir::OpCategory::Select:
    case ir::OpCategory::Convert:
    case ir::OpCategory::Hint:
      return elementwise(op);
    default:
      break;
    }
    switch (op.kind) {
    case OpKind::ProgramId:
      return set(op.result(), {ti_.program_id(b_, static_cast<int>(op.int_attr("axis")))});
    case OpKind::NumPrograms:
      return set(op.result(), {ti_.num_programs(b_, static_cast<int>(op.int_attr("axis")))});
    case OpKind::Constant: {
      DType t = op.result()->type.elem;
      const auto& v = op.attrs.at("value");
      LV* c;
      if (t.is_float())
        c = llvm::ConstantFP::get(type(t), std::holds_alternative<double>(v)
                                               ? std::get<double>(v)
                                               : static_cast<double>(std::get<int64_t>(v)));
      else if (t.is_ptr())
        c = b_.CreateIntToPtr(b_.getInt64(static_cast<uint64_t>(std::get<int64_t>(v))), type(t));
      else
        c = llvm::ConstantInt::get(
            type(t), static_cast<uint64_t>(std::holds_alternative<int64_t>(v)
                                               ? std::get<int64_t>(v)
                                               : static_cast<int64_t>(std::get<double>(v))));
      return set(op.result(), Regs(nregs(op.result()), c));
    }
    case OpKind::Arange: {
      Dist d = dist(op.result());
      int64_t start = op.int_attr("start");
      Regs r;
      for (int i = 0; i < d.num_regs(); ++i)
        r.push_back(b_.CreateAdd(coords(d, op.result()->type, i)[0],
                                 b_.getInt32(static_cast<uint32_t>(start))));
      return set(op.result(), std::move(r));
    }
    case OpKind::Splat:
      return set(op.result(), Regs(nregs(op.result()), get(op.operand(0))[0]));
    case OpKind::Broadcast:
      return broadcast(op);
    case OpKind::ExpandDims:
      return expand_dims(op);
    case OpKind::ConvertLayout:
      return convert_layout(op);
    case OpKind::Reshape:
    case OpKind::Trans:
    case OpKind::Join:
    case OpKind::Split:
    case OpKind::Cat:
      return through_smem(op);
    case OpKind::AddPtr: {
      track_base_offset(op);
      const Regs &p = get(op.operand(0)), &o = get(op.operand(1));
      DType ot = op.operand(1)->type.elem;
      llvm::Type* et = mem_type(op.operand(0)->type.elem.element_of_pointer());
      Regs r;
      for (size_t i = 0; i < p.size(); ++i) {
        LV* off = o[i];
        if (ot.bits() < 64)
          off = ot.is_unsigned() ? b_.CreateZExt(off, b_.getInt64Ty())
                                 : b_.CreateSExt(off, b_.getInt64Ty());
        r.push_back(b_.CreateGEP(et, p[i], off));
      }
      return set(op.result(), std::move(r));
    }
    case OpKind::Load:
      return load(op);
    case OpKind::Store:
      return store(op);
    case OpKind::AtomicRmw:
    case OpKind::AtomicCas:
      return atomic(op);
    case OpKind::Reduce:
      return reduce(op);
    case OpKind::Scan:
      return scan(op);
    case OpKind::Dot:
      return dot(op);
    case OpKind::For:
      return for_loop(op);
    case OpKind::If:
      return if_op(op);
    case OpKind::While:
      return while_loop(op);
    case OpKind::Barrier:
      return ti_.barrier(b_);
    case OpKind::Assume:
      for (LV* c : get(op.operand(0)))
        b_.CreateAssumption(c);
      return;
    case OpKind::Assert: {
      // A failed device assertion traps: the runtime reports the fault naming the kernel.
      LV* all = b_.getTrue();
      for (LV* c : get(op.operand(0)))
        all = b_.CreateAnd(all, c);
      auto* fail_bb = llvm::BasicBlock::Create(ctx_, "assert.fail", fn_);
      auto* cont = llvm::BasicBlock::Create(ctx_, "assert.ok", fn_);
      b_.CreateCondBr(all, cont, fail_bb);
      b_.SetInsertPoint(fail_bb);
      b_.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
      b_.CreateUnreachable();
      b_.SetInsertPoint(cont);
      return;
    }
    case OpKind::Print:
      return print(op);
    default:
      fail(op, "this op has no GPU lowering");
    }
  }

  // device_print: one line per element, from the thread that owns it: the program id, the
  // element's index, the prefix and the value (Triton's format).
  void print(const ir::Op& op) {
    const std::string& prefix = op.str_attr("prefix");
    LV* pid[3] = {ti_.program_id(b_, 0), ti_.program_id(b_, 1), ti_.program_id(b_, 2)};
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const ir::Value* v = op.operand(k);
      DType t = v->type.elem;
      const Regs& regs = get(v);
      auto promote = [&](LV* x) -> LV* {
        if (t.is_float())
          return b_.CreateFPExt(x, b_.getDoubleTy());
        if (t.is_ptr())
          return x;
        return b_.CreateIntCast(x, b_.getInt64Ty(), t.is_signed_int());
      };
      const char* conv = t.is_float()      ? "%f"
                         : t.is_ptr()      ? "%p"
                         : t.is_unsigned() ? "%llu"
                                           : "%lld";
      std::string operand = op.operands.size() > 1 ? fmt::format(" (operand {})", k) : "";
      auto emit = [&](LV* cond, LV* index, LV* value) {
        std::string format = fmt::format("pid ({{}}, {{}}, {{}}) idx ({}) {}{}: {}\n",
                                         index ? "%d" : "", prefix, operand, conv);
        format = fmt::format(fmt::runtime(format), "%d", "%d", "%d");
        std::vector<LV*> args{pid[0], pid[1], pid[2]};
        if (index)
          args.push_back(index);
        args.push_back(promote(value));
        guarded(
            cond,
            [&]() -> LV* {
              if (!ti_.printf(b_, format, args))
                fail(op, "device printing needs a device printf, which this target lacks here "
                         "(AMD: ROCm's ockl); use TRITIUM_DEVICE=interpreter to debug");
              return nullptr;
            },
            nullptr);
      };
      if (v->type.is_scalar()) {
        emit(b_.CreateICmpEQ(tid_, b_.getInt32(0)), nullptr, regs[0]);
        continue;
      }
      Dist d = dist(v);
      LV* owner = is_owner(d, v->type);
      for (int r = 0; r < d.num_regs(); ++r)
        emit(owner, linear(coords(d, v->type, r), v->type.shape), regs[r]);
    }
  }

  // Elementwise ops: register i of the result from register i of each operand.
  void elementwise(const ir::Op& op) {
    int n = nregs(op.result());
    Regs r;
    for (int i = 0; i < n; ++i) {
      std::vector<LV*> a;
      for (const ir::Value* v : op.operands)
        a.push_back(get(v)[v->type.is_scalar() ? 0 : i]);
      r.push_back(scalar_op(op, a));
    }
    set(op.result(), std::move(r));
  }

  LV* scalar_op(const ir::Op& op, const std::vector<LV*>& a) {
    DType t = op.operand(0)->type.elem;
    switch (op_category(op.kind)) {
    case ir::OpCategory::Binary:
      return binary(op, t, a[0], a[1]);
    case ir::OpCategory::Compare:
      return compare(op, t, a[0], a[1]);
    case ir::OpCategory::Unary:
      return unary(op, t, a[0]);
    case ir::OpCategory::Ternary:
      if (t.is_float())
        return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a[0]->getType()}, {a[0], a[1], a[2]});
      return b_.CreateAdd(b_.CreateMul(a[0], a[1]), a[2]);
    case ir::OpCategory::Select:
      return b_.CreateSelect(a[0], a[1], a[2]);
    case ir::OpCategory::Convert:
      return op.kind == OpKind::Cast ? cast(a[0], t, op.result()->type.elem)
                                     : bitcast(a[0], t, op.result()->type.elem);
    case ir::OpCategory::Hint:
      return a[0];
    default:
      fail(op, "not an elementwise op");
    }
  }

  LV* binary(const ir::Op& op, DType t, LV* x, LV* y) {
    using I = llvm::Intrinsic::ID;
    if (t.is_float()) {
      switch (op.kind) {
      case OpKind::Add:
        return b_.CreateFAdd(x, y);
      case OpKind::Sub:
        return b_.CreateFSub(x, y);
      case OpKind::Mul:
        return b_.CreateFMul(x, y);
      case OpKind::Div:
        return b_.CreateFDiv(x, y);
      case OpKind::Rem:
        return b_.CreateFRem(x, y);
      case OpKind::Min:
        return b_.CreateBinaryIntrinsic(I(llvm::Intrinsic::minnum), x, y);
      case OpKind::Max:
        return b_.CreateBinaryIntrinsic(I(llvm::Intrinsic::maxnum), x, y);
      case OpKind::Pow:
        return math(op, t, {x, y});
      default:
        fail(op, "not defined on floating-point values");
      }
    }
    const bool u = t.is_unsigned() || t.is_ptr();
    const unsigned bits = static_cast<unsigned>(t.bits());
    switch (op.kind) {
    case OpKind::Add:
      return b_.CreateAdd(x, y);
    case OpKind::Sub:
      return b_.CreateSub(x, y);
    case OpKind::Mul:
      return b_.CreateMul(x, y);
    case OpKind::Div:
      return u ? b_.CreateUDiv(x, y) : b_.CreateSDiv(x, y);
    case OpKind::Rem:
      return u ? b_.CreateURem(x, y) : b_.CreateSRem(x, y);
    case OpKind::And:
      return b_.CreateAnd(x, y);
    case OpKind::Or:
      return b_.CreateOr(x, y);
    case OpKind::Xor:
      return b_.CreateXor(x, y);
    case OpKind::Shl: {
      // Shifting by the width or more gives 0 (the interpreter's rule; LLVM's is poison).
      LV* big = b_.CreateICmpUGE(y, llvm::ConstantInt::get(y->getType(), bits));
      return b_.CreateSelect(big, llvm::ConstantInt::get(x->getType(), 0), b_.CreateShl(x, y));
    }
    case OpKind::Shr: {
      LV* big = b_.CreateICmpUGE(y, llvm::ConstantInt::get(y->getType(), bits));
      if (u)
        return b_.CreateSelect(big, llvm::ConstantInt::get(x->getType(), 0), b_.CreateLShr(x, y));
      LV* s = b_.CreateSelect(big, llvm::ConstantInt::get(y->getType(), bits - 1), y);
      return b_.CreateAShr(x, s);
    }
    case OpKind::Min:
      return b_.CreateBinaryIntrinsic(u ? I(llvm::Intrinsic::umin) : I(llvm::Intrinsic::smin), x,
                                      y);
    case OpKind::Max:
      return b_.CreateBinaryIntrinsic(u ? I(llvm::Intrinsic::umax) : I(llvm::Intrinsic::smax), x,
                                      y);
    case OpKind::Umulhi: {
      llvm::Type* wide = b_.getIntNTy(2 * bits);
      LV* p = b_.CreateMul(b_.CreateZExt(x, wide), b_.CreateZExt(y, wide));
      return b_.CreateTrunc(b_.CreateLShr(p, bits), x->getType());
    }
    default:
      fail(op, "not defined on integers");
    }
  }

  LV* compare(const ir::Op& op, DType t, LV* x, LV* y) {
    const std::string& p = op.str_attr("pred");
    using P = llvm::CmpInst::Predicate;
    if (t.is_float()) {
      P pr = p == "eq"   ? P::FCMP_OEQ
             : p == "ne" ? P::FCMP_UNE
             : p == "lt" ? P::FCMP_OLT
             : p == "le" ? P::FCMP_OLE
             : p == "gt" ? P::FCMP_OGT
                         : P::FCMP_OGE;
      return b_.CreateFCmp(pr, x, y);
    }
    bool u = t.is_unsigned() || t.is_ptr();
    P pr = p == "eq"   ? P::ICMP_EQ
           : p == "ne" ? P::ICMP_NE
           : p == "lt" ? (u ? P::ICMP_ULT : P::ICMP_SLT)
           : p == "le" ? (u ? P::ICMP_ULE : P::ICMP_SLE)
           : p == "gt" ? (u ? P::ICMP_UGT : P::ICMP_SGT)
                       : (u ? P::ICMP_UGE : P::ICMP_SGE);
    return b_.CreateICmp(pr, x, y);
  }

  LV* unary(const ir::Op& op, DType t, LV* x) {
    if (!t.is_float()) {
      switch (op.kind) {
      case OpKind::Neg:
        return b_.CreateNeg(x);
      case OpKind::Not:
        return b_.CreateNot(x);
      case OpKind::Abs:
        return t.is_unsigned() ? x
                               : b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      default:
        fail(op, "not defined on integers");
      }
    }
    using I = llvm::Intrinsic::ID;
    auto intr = [&](I id) { return b_.CreateUnaryIntrinsic(id, x); };
    switch (op.kind) {
    case OpKind::Neg:
      return b_.CreateFNeg(x);
    case OpKind::Abs:
      return intr(llvm::Intrinsic::fabs);
    case OpKind::Floor:
      return intr(llvm::Intrinsic::floor);
    case OpKind::Ceil:
      return intr(llvm::Intrinsic::ceil);
    case OpKind::Sqrt:
      return intr(llvm::Intrinsic::sqrt);
    case OpKind::Rsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), intr(llvm::Intrinsic::sqrt));
    default:
      return math(op, t, {x});
    }
  }

  // Transcendental functions: f16/bf16 go through f32; the target picks the implementation.
  LV* math(const ir::Op& op, DType t, std::vector<LV*> args) {
    bool narrow = t.bits() < 32;
    if (narrow)
      for (auto& a : args)
        a = b_.CreateFPExt(a, b_.getFloatTy());
    LV* r = ti_.math(b_, op.kind, args, op);
    return narrow ? b_.CreateFPTrunc(r, type(t)) : r;
  }

  LV* cast(LV* x, DType from, DType to) {
    if (from == to)
      return x;
    llvm::Type* tt = type(to);
    if (to.is_bool()) {
      if (from.is_float())
        return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
      if (from.is_ptr())
        return b_.CreateIsNotNull(x);
      return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    }
    if (from.is_float() && to.is_float()) {
      if ((from.kind == ScalarKind::F16 && to.kind == ScalarKind::BF16) ||
          (from.kind == ScalarKind::BF16 && to.kind == ScalarKind::F16))
        x = b_.CreateFPExt(x, b_.getFloatTy());
      return x->getType()->getPrimitiveSizeInBits() > tt->getPrimitiveSizeInBits()
                 ? b_.CreateFPTrunc(x, tt)
                 : b_.CreateFPExt(x, tt);
    }
    if (from.is_ptr())
      x = b_.CreatePtrToInt(x, b_.getInt64Ty()), from = DType(ScalarKind::U64);
    if (to.is_ptr()) {
      LV* i = cast(x, from, DType(ScalarKind::U64));
      return b_.CreateIntToPtr(i, tt);
    }
    if (!from.is_float() && to.is_float())
      return from.is_unsigned() ? b_.CreateUIToFP(x, tt) : b_.CreateSIToFP(x, tt);
    if (from.is_float() && !to.is_float()) {
      // Truncation toward zero, saturating, NaN to 0: the interpreter's (and cvt.rzi's) rule.
      auto id = to.is_unsigned() ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
      return b_.CreateIntrinsic(id, {tt, x->getType()}, {x});
    }
    return b_.CreateIntCast(x, tt, from.is_signed_int());
  }

  LV* bitcast(LV* x, DType from, DType to) {
    if (from.is_ptr() && to.is_ptr())
      return x;
    if (from.is_ptr())
      return b_.CreateBitCast(b_.CreatePtrToInt(x, b_.getInt64Ty()), type(to));
    if (to.is_ptr())
      return b_.CreateIntToPtr(b_.CreateBitCast(x, b_.getInt64Ty()), type(to));
    return b_.CreateBitCast(x, type(to));
  }

  // --- shape ops -----------------------------------------------------------------------
  void broadcast(const ir::Op& op) {
    const ir::Value* x = op.operand(0);
    const ir::Value* r = op.result();
    if (x->type.is_scalar())
      return set(r, Regs(nregs(r), get(x)[0]));
    if (!same_layout(x->type.layout, r->type.layout))
      fail(op, "broadcast between different layouts (internal: layout assignment)");
    Dist dx = dist(x), dr = dist(r);
    const Regs& xr = get(x);
    Regs out;
    for (int i = 0; i < dr.num_regs(); ++i) {
      auto dig = dr.reg_digits(i);
      for (int k = 0; k < dr.rank(); ++k)
        if (x->type.shape[k] == 1)
          dig[k] = 0;
      out.push_back(xr[dx.reg_index(dig)]);
    }
    set(r, std::move(out));
  }

  void expand_dims(const ir::Op& op) {
    const ir::Value* x = op.operand(0);
    const ir::Value* r = op.result();
    if (x->type.is_scalar())
      return set(r, Regs(nregs(r), get(x)[0]));
    auto* s = dynamic_cast<const SliceLayout*>(x->type.layout.get());
    if (s && s->dim == op.int_attr("axis") && same_layout(s->parent, r->type.layout))
      return set(r, get(x)); // same registers in the same order
    through_smem(op);
  }

  bool same_dist(const Dist& a, const Dist& b) {
    return a.shape == b.shape && a.spt == b.spt && a.tpw == b.tpw && a.wpc == b.wpc &&
           a.lane_stride == b.lane_stride && a.warp_stride == b.warp_stride &&
           a.regs_per_dim == b.regs_per_dim && a.reg_order == b.reg_order;
  }

  void convert_layout(const ir::Op& op) {
    const ir::Value* x = op.operand(0);
    if (x->type.is_scalar() || same_dist(dist(x), dist(op.result())))
      return set(op.result(), get(x));
    through_smem(op);
  }

  // Shape ops and conversions: operands to shared memory in row-major order, barrier, each
  // result register read from the source element its coordinate maps to.
  void through_smem(const ir::Op& op) {
    ti_.barrier(b_); // earlier readers of shared memory are done
    int64_t off = 0;
    std::vector<int64_t> offsets;
    for (const ir::Value* v : op.operands) {
      offsets.push_back(off);
      off += to_smem(v, get(v), off);
    }
    need_shared(off);
    ti_.barrier(b_);
    const ir::Value* src = op.operand(0);
    const auto& ss = src->type.shape;
    for (size_t ri = 0; ri < op.results.size(); ++ri) {
      const ir::Value* res = op.results[ri];
      Dist d = dist(res);
      const auto& rs = res->type.shape;
      Regs out;
      for (int i = 0; i < d.num_regs(); ++i) {
        Regs c = coords(d, res->type, i);
        LV* idx = nullptr;
        int64_t base = 0;
        switch (op.kind) {
        case OpKind::Trans: {
          const auto& order = op.ints_attr("order");
          Regs sc(ss.size());
          for (size_t k = 0; k < order.size(); ++k)
            sc[order[k]] = c[k];
          idx = linear(sc, ss);
          break;
        }
        case OpKind::Join: {
          Regs head(c.begin(), c.end() - 1);
          idx = linear(head, ss);
          // c.back() picks the operand: a at offsets[0], b at offsets[1].
          LV* pa = smem_ptr(idx, offsets[0], mem_bytes(src->type.elem));
          LV* pb = smem_ptr(idx, offsets[1], mem_bytes(src->type.elem));
          LV* p = b_.CreateSelect(b_.CreateICmpEQ(c.back(), b_.getInt32(0)), pa, pb);
          out.push_back(from_mem(b_.CreateLoad(mem_type(src->type.elem), p), src->type.elem));
          continue;
        }
        case OpKind::Split:
          idx = b_.CreateAdd(b_.CreateMul(linear(c, rs), b_.getInt32(2)),
                             b_.getInt32(static_cast<uint32_t>(ri)));
          break;
        case OpKind::Cat: {
          // Row-major concatenation along dim 0 is appending: b follows a in the index space.
          idx = linear(c, rs);
          int64_t na = src->type.numel();
          LV* in_b = b_.CreateICmpUGE(idx, b_.getInt32(static_cast<uint32_t>(na)));
          LV* pa = smem_ptr(idx, offsets[0], mem_bytes(src->type.elem));
          LV* pb = smem_ptr(b_.CreateSub(idx, b_.getInt32(static_cast<uint32_t>(na))), offsets[1],
                            mem_bytes(src->type.elem));
          out.push_back(
              from_mem(b_.CreateLoad(mem_type(src->type.elem), b_.CreateSelect(in_b, pb, pa)),
                       src->type.elem));
          continue;
        }
        default: // reshape, expand_dims, convert_layout: the same row-major index
          idx = linear(c, rs);
          break;
        }
        out.push_back(from_smem(src->type.elem, idx, offsets[0] + base));
      }
      set(res, std::move(out));
    }
  }

  // --- memory --------------------------------------------------------------------------
  // Whether an integer value is known to be >= 0 (i32 arithmetic is assumed not to overflow,
  // as Triton's AMD buffer-op conversion assumes).
  bool nonneg(const ir::Value* v) {
    if (auto it = nonneg_.find(v); it != nonneg_.end())
      return it->second;
    bool r = false;
    if (const ir::Op* d = v->def) {
      auto all = [&] {
        for (const ir::Value* o : d->operands)
          if (!nonneg(o))
            return false;
        return true;
      };
      switch (d->kind) {
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        r = true;
        break;
      case OpKind::Arange:
        r = d->int_attr("start") >= 0;
        break;
      case OpKind::Constant:
        r = std::holds_alternative<int64_t>(d->attrs.at("value")) &&
            std::get<int64_t>(d->attrs.at("value")) >= 0;
        break;
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::ConvertLayout:
      case OpKind::Hint:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Rem:
      case OpKind::Min:
      case OpKind::Max:
        r = all();
        break;
      case OpKind::And:
        r = nonneg(d->operands[0]) || nonneg(d->operands[1]);
        break;
      default:
        break;
      }
    } else if (v->block == &f_.entry()) {
      const ir::ArgInfo& a = f_.arg_info.at(v->index);
      r = a.is_constant && a.constant >= 0;
    }
    return nonneg_[v] = r;
  }

  // Pointers known as (uniform base, non-negative i32 element offsets): what buffer
  // instructions take.
  struct BaseOffset {
    LV* base;
    Regs offsets;
  };
  void track_base_offset(const ir::Op& op) {
    const ir::Value *p = op.operand(0), *o = op.operand(1);
    if (p->type.is_scalar() || o->type.elem.kind != ScalarKind::I32 || !nonneg(o))
      return;
    const Regs& off = get(o);
    if (p->def && p->def->kind == OpKind::Splat && within_2gib(p->def->operand(0))) {
      split_[op.result()] = {get(p->def->operand(0))[0], off};
    } else if (auto it = split_.find(p); it != split_.end()) {
      BaseOffset s = it->second;
      for (size_t i = 0; i < off.size(); ++i)
        s.offsets[i] = b_.CreateAdd(s.offsets[i], off[i], "", true, true);
      split_[op.result()] = std::move(s);
    }
  }
  // A scalar pointer at a non-negative offset into a kernel argument's buffer of less than
  // 2 GiB: in-bounds accesses from it are less than 2^31 bytes away.
  bool within_2gib(const ir::Value* p) {
    while (p->def && p->def->kind == OpKind::AddPtr && nonneg(p->def->operand(1)))
      p = p->def->operand(0);
    return !p->def && p->block == &f_.entry() && f_.arg_info.at(p->index).range32;
  }
  LV* byte_offset(const BaseOffset& s, size_t r, int64_t elem_bytes) {
    return b_.CreateMul(s.offsets[r], b_.getInt32(static_cast<uint32_t>(elem_bytes)), "", true,
                        true);
  }

  // Elements per vector access: contiguity and alignment of the pointers (AxisInfo), the
  // layout's run per thread, the mask's constancy, at most 128 bits.
  int vector_width(const ir::Op& op, const Dist& d, DType elem) {
    const ir::Value* ptr = op.operand(0);
    if (elem.is_bool())
      return 1;
    int k = d.reg_order[0];
    int64_t run = std::min<int64_t>(d.spt[k], d.regs_per_dim[k]);
    const AxisInfo& pi = axis_info(ptr);
    int64_t eb = mem_bytes(elem);
    int64_t v = std::min<int64_t>(
        {run, pi.contiguity[k], std::max<int64_t>(1, pi.divisibility[k] / eb), 16 / eb});
    const ir::Value* mask = nullptr;
    if (op.kind == OpKind::Load && op.operands.size() > 1)
      mask = op.operand(1);
    if (op.kind == OpKind::Store && op.operands.size() > 2)
      mask = op.operand(2);
    if (mask)
      v = std::min(v, axis_info(mask).constancy[k]);
    v = std::max<int64_t>(1, v);
    while (!is_pow2(v))
      --v;
    return static_cast<int>(v);
  }
  const AxisInfo& axis_info(const ir::Value* v) {
    auto it = axis_.find(v);
    if (it == axis_.end()) {
      AxisInfo u;
      int n = std::max(1, v->type.rank());
      u.contiguity = u.divisibility = u.constancy = std::vector<int64_t>(n, 1);
      it = axis_.emplace(v, u).first;
    }
    return it->second;
  }

  // Runs `body` only where `cond` holds (null: always); returns body's value or `otherwise`.
  template <class F>
  LV* guarded(LV* cond, F body, LV* otherwise) {
    if (!cond)
      return body();
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "g.then", fn_);
    auto* cont = llvm::BasicBlock::Create(ctx_, "g.cont", fn_);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    b_.CreateCondBr(cond, then_bb, cont);
    b_.SetInsertPoint(then_bb);
    LV* v = body();
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
    if (!v)
      return nullptr;
    auto* phi = b_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, then_end);
    phi->addIncoming(otherwise, from);
    return phi;
  }

  void load(const ir::Op& op) {
    const ir::Value* ptr = op.operand(0);
    DType e = op.result()->type.elem;
    const Regs& p = get(ptr);
    const Regs* mask = op.operands.size() > 1 ? &get(op.operand(1)) : nullptr;
    const Regs* other = op.operands.size() > 2 ? &get(op.operand(2)) : nullptr;
    bool vol = op.int_attr("volatile", 0) != 0;
    if (ptr->type.is_scalar()) {
      LV* zero = llvm::Constant::getNullValue(type(e));
      LV* v = guarded(
          mask ? (*mask)[0] : nullptr,
          [&] {
            auto* l = b_.CreateLoad(mem_type(e), p[0], vol);
            return from_mem(l, e);
          },
          other ? (*other)[0] : zero);
      return set(op.result(), {v});
    }
    Dist d = dist(ptr);
    int vec = vector_width(op, d, e);
    int64_t eb = mem_bytes(e);
    Regs out(p.size());
    for (size_t r = 0; r < p.size(); r += vec) {
      llvm::Type* vt = vec == 1 ? mem_type(e) : llvm::FixedVectorType::get(mem_type(e), vec);
      LV* fallback = llvm::Constant::getNullValue(vt);
      if (other) {
        fallback = llvm::PoisonValue::get(vt);
        for (int k = 0; k < vec; ++k) {
          LV* o = to_mem((*other)[r + k], e);
          fallback = vec == 1 ? o : b_.CreateInsertElement(fallback, o, k);
        }
      }
      LV* v = nullptr;
      if (auto it = split_.find(ptr); it != split_.end() && !vol) {
        v = ti_.buffer_load(b_, vt, it->second.base, byte_offset(it->second, r, eb),
                            mask ? (*mask)[r] : nullptr);
        if (v && other && mask)
          v = b_.CreateSelect((*mask)[r], v, fallback);
      }
      if (!v)
        v = guarded(
            mask ? (*mask)[r] : nullptr,
            [&] {
              auto* l = b_.CreateAlignedLoad(vt, p[r], llvm::Align(eb * vec), vol);
              return static_cast<LV*>(l);
            },
            fallback);
      for (int k = 0; k < vec; ++k)
        out[r + k] = from_mem(vec == 1 ? v : b_.CreateExtractElement(v, k), e);
    }
    set(op.result(), std::move(out));
  }

  void store(const ir::Op& op) {
    const ir::Value* ptr = op.operand(0);
    DType e = op.operand(1)->type.elem;
    const Regs &p = get(ptr), &val = get(op.operand(1));
    const Regs* mask = op.operands.size() > 2 ? &get(op.operand(2)) : nullptr;
    int vec = ptr->type.is_scalar() ? 1 : vector_width(op, dist(ptr), e);
    int64_t eb = mem_bytes(e);
    auto split = ptr->type.is_scalar() ? split_.end() : split_.find(ptr);
    for (size_t r = 0; r < p.size(); r += vec) {
      auto value = [&] {
        LV* v = to_mem(val[r], e);
        if (vec > 1) {
          v = llvm::PoisonValue::get(llvm::FixedVectorType::get(mem_type(e), vec));
          for (int k = 0; k < vec; ++k)
            v = b_.CreateInsertElement(v, to_mem(val[r + k], e), k);
        }
        return v;
      };
      if (split != split_.end() &&
          ti_.buffer_store(b_, value(), split->second.base, byte_offset(split->second, r, eb),
                           mask ? (*mask)[r] : nullptr))
        continue;
      guarded(
          mask ? (*mask)[r] : nullptr,
          [&]() -> LV* {
            b_.CreateAlignedStore(value(), p[r], llvm::Align(eb * vec));
            return nullptr;
          },
          nullptr);
    }
  }

  void atomic(const ir::Op& op) {
    const ir::Value* ptr = op.operand(0);
    const ir::Value* res = op.result();
    DType e = res->type.elem;
    const Regs& p = get(ptr);
    bool cas = op.kind == OpKind::AtomicCas;
    const Regs& val = get(op.operand(cas ? 2 : 1));
    const Regs* cmp = cas ? &get(op.operand(1)) : nullptr;
    const Regs* mask = !cas && op.operands.size() > 2 ? &get(op.operand(2)) : nullptr;
    std::string sem = op.has_attr("sem") ? op.str_attr("sem") : "acq_rel";
    std::string scope = op.has_attr("scope") ? op.str_attr("scope") : "gpu";
    auto ordering = sem == "relaxed"   ? llvm::AtomicOrdering::Monotonic
                    : sem == "acquire" ? llvm::AtomicOrdering::Acquire
                    : sem == "release" ? llvm::AtomicOrdering::Release
                                       : llvm::AtomicOrdering::AcquireRelease;
    auto ssid = ti_.sync_scope(ctx_, scope);
    // Each element is updated once: only the thread that owns it (no replica) issues it.
    Dist d;
    LV* owner;
    if (ptr->type.is_scalar()) {
      owner = b_.CreateICmpEQ(tid_, b_.getInt32(0));
    } else {
      d = dist(ptr);
      owner = is_owner(d, ptr->type);
    }
    Regs out;
    for (size_t r = 0; r < p.size(); ++r) {
      LV* cond = mask ? b_.CreateAnd(owner, (*mask)[r]) : owner;
      LV* zero = llvm::Constant::getNullValue(type(e));
      out.push_back(guarded(
          cond,
          [&]() -> LV* {
            if (cas) {
              auto* x = b_.CreateAtomicCmpXchg(p[r], (*cmp)[r], val[r], llvm::MaybeAlign(),
                                               ordering == llvm::AtomicOrdering::Release
                                                   ? llvm::AtomicOrdering::Release
                                                   : ordering,
                                               ordering == llvm::AtomicOrdering::AcquireRelease ||
                                                       ordering == llvm::AtomicOrdering::Release
                                                   ? llvm::AtomicOrdering::Acquire
                                                   : llvm::AtomicOrdering::Monotonic,
                                               ssid);
              if (ordering == llvm::AtomicOrdering::Release)
                x->setFailureOrdering(llvm::AtomicOrdering::Monotonic);
              return b_.CreateExtractValue(x, 0);
            }
            return b_.CreateAtomicRMW(rmw_kind(op, e), p[r], val[r], llvm::MaybeAlign(), ordering,
                                      ssid);
          },
          zero));
    }
    // The old values reach the replicas through shared memory.
    ti_.barrier(b_);
    int64_t eb = mem_bytes(e);
    if (ptr->type.is_scalar()) {
      guarded(
          owner,
          [&]() -> LV* {
            b_.CreateStore(to_mem(out[0], e), smem_ptr(b_.getInt32(0), 0, eb));
            return nullptr;
          },
          nullptr);
      need_shared(16);
      ti_.barrier(b_);
      return set(res, {from_smem(e, b_.getInt32(0), 0)});
    }
    for (int r = 0; r < d.num_regs(); ++r) {
      LV* idx = linear(coords(d, ptr->type, r), ptr->type.shape);
      guarded(
          owner,
          [&]() -> LV* {
            b_.CreateStore(to_mem(out[r], e), smem_ptr(idx, 0, eb));
            return nullptr;
          },
          nullptr);
    }
    need_shared(align16(ptr->type.numel() * eb));
    ti_.barrier(b_);
    Regs fin;
    for (int r = 0; r < d.num_regs(); ++r)
      fin.push_back(from_smem(e, linear(coords(d, ptr->type, r), ptr->type.shape), 0));
    set(res, std::move(fin));
  }

  llvm::AtomicRMWInst::BinOp rmw_kind(const ir::Op& op, DType e) {
    using B = llvm::AtomicRMWInst::BinOp;
    const std::string& k = op.str_attr("op");
    bool f = e.is_float(), u = e.is_unsigned();
    if (k == "add")
      return f ? B::FAdd : B::Add;
    if (k == "max")
      return f ? B::FMax : u ? B::UMax : B::Max;
    if (k == "min")
      return f ? B::FMin : u ? B::UMin : B::Min;
    if (k == "and")
      return B::And;
    if (k == "or")
      return B::Or;
    if (k == "xor")
      return B::Xor;
    if (k == "xchg")
      return B::Xchg;
    fail(op, "unknown atomic op " + k);
  }

  // --- collectives ---------------------------------------------------------------------
  // A shuffle of any scalar type, as 32-bit pieces through `shfl32`.
  template <class F>
  LV* shuffle_any(LV* v, F shfl32) {
    llvm::Type* t = v->getType();
    unsigned bits = static_cast<unsigned>(m_->getDataLayout().getTypeSizeInBits(t));
    LV* x = t->isPointerTy() ? b_.CreatePtrToInt(v, b_.getInt64Ty()) : v;
    if (!x->getType()->isIntegerTy())
      x = b_.CreateBitCast(x, b_.getIntNTy(bits));
    LV* r;
    if (bits == 64) {
      LV* lo = shfl32(b_.CreateTrunc(x, b_.getInt32Ty()));
      LV* hi = shfl32(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
      r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                      b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    } else {
      LV* w = bits < 32 ? b_.CreateZExt(x, b_.getInt32Ty()) : x;
      w = shfl32(w);
      r = bits < 32 ? b_.CreateTrunc(w, b_.getIntNTy(bits)) : w;
    }
    if (t->isPointerTy())
      return b_.CreateIntToPtr(r, t);
    return r->getType() == t ? r : b_.CreateBitCast(r, t);
  }
  LV* shuffle_xor(LV* v, int lane_mask) {
    return shuffle_any(v, [&](LV* w) { return ti_.shuffle_xor(b_, w, lane_mask); });
  }
  LV* shuffle_idx(LV* v, LV* src_lane) {
    return shuffle_any(v, [&](LV* w) { return ti_.shuffle_idx(b_, w, src_lane); });
  }

  // Reduction: within each thread, then across the lanes holding the axis (xor butterfly),
  // then across warps through shared memory. Every thread ends with the results its slice
  // layout gives it.
  void reduce(const ir::Op& op) {
    const size_t n = op.operands.size();
    const ir::Value* x0 = op.operand(0);
    const int axis = static_cast<int>(op.int_attr("axis"));
    Dist d = dist(x0);
    const int64_t len = d.shape[axis];
    // Groups of registers that differ only along the axis -> one result register each.
    std::map<int, std::vector<int>> groups; // key: register index with the axis digit 0
    for (int r = 0; r < d.num_regs(); ++r) {
      auto dig = d.reg_digits(r);
      dig[axis] = 0;
      groups[d.reg_index(dig)].push_back(r);
    }
    std::vector<std::vector<LV*>> acc; // per group, per operand
    std::vector<int> keys;
    for (auto& [key, regs] : groups) {
      std::vector<LV*> a;
      for (size_t k = 0; k < n; ++k)
        a.push_back(get(op.operand(k))[regs[0]]);
      for (size_t j = 1; j < regs.size(); ++j) {
        std::vector<LV*> xj;
        for (size_t k = 0; k < n; ++k)
          xj.push_back(get(op.operand(k))[regs[j]]);
        a = combine(op, a, xj);
      }
      acc.push_back(a);
      keys.push_back(key);
    }
    int64_t lanes = std::clamp<int64_t>(len / d.spt[axis], 1, d.tpw[axis]);
    for (int64_t m = 1; m < lanes; m *= 2)
      for (auto& a : acc) {
        std::vector<LV*> other;
        for (LV* v : a)
          other.push_back(shuffle_xor(v, static_cast<int>(m * d.lane_stride[axis])));
        a = combine(op, a, other);
      }
    int64_t warps = std::clamp<int64_t>(len / (int64_t{d.spt[axis]} * d.tpw[axis]), 1, d.wpc[axis]);
    if (warps > 1) {
      // smem[operand][warp along axis][result element]
      int64_t out_numel = x0->type.numel() / len;
      ti_.barrier(b_);
      // Warps beyond the axis's extent replicate the first ones: they share their slots.
      LV* warp_axis =
          b_.CreateAnd(b_.CreateLShr(warp_, std::countr_zero(unsigned(d.warp_stride[axis]))),
                       static_cast<uint64_t>(warps - 1));
      std::vector<int64_t> base;
      int64_t off = 0;
      for (size_t k = 0; k < n; ++k) {
        base.push_back(off);
        off += align16(warps * out_numel * mem_bytes(op.operand(k)->type.elem));
      }
      need_shared(off);
      std::vector<LV*> out_idx;
      for (size_t g = 0; g < acc.size(); ++g) {
        Regs c = coords(d, x0->type, keys[g]);
        c.erase(c.begin() + axis);
        auto os = x0->type.shape;
        os.erase(os.begin() + axis);
        out_idx.push_back(linear(c, os));
        for (size_t k = 0; k < n; ++k) {
          DType e = op.operand(k)->type.elem;
          LV* slot = b_.CreateAdd(
              b_.CreateMul(warp_axis, b_.getInt32(static_cast<uint32_t>(out_numel))), out_idx[g]);
          b_.CreateStore(to_mem(acc[g][k], e), smem_ptr(slot, base[k], mem_bytes(e)));
        }
      }
      ti_.barrier(b_);
      for (size_t g = 0; g < acc.size(); ++g) {
        std::vector<LV*> a;
        for (int64_t w = 0; w < warps; ++w) {
          std::vector<LV*> xw;
          for (size_t k = 0; k < n; ++k) {
            DType e = op.operand(k)->type.elem;
            LV* slot = b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(w * out_numel)), out_idx[g]);
            xw.push_back(from_smem(e, slot, base[k]));
          }
          a = w == 0 ? xw : combine(op, a, xw);
        }
        acc[g] = a;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      const ir::Value* res = op.results[k];
      Regs out;
      if (res->type.is_scalar()) {
        out.push_back(acc[0][k]);
      } else {
        // The slice layout's registers are the input's with the axis digit 0, in order (with
        // keep_dims, the input's layout over a size-1 axis: the same).
        Dist rd = dist(res);
        const bool keep = res->type.rank() == x0->type.rank();
        out.resize(rd.num_regs());
        for (size_t g = 0; g < acc.size(); ++g) {
          auto dig = d.reg_digits(keys[g]);
          if (keep)
            dig[axis] = 0;
          else
            dig.erase(dig.begin() + axis);
          out[rd.reg_index(dig)] = acc[g][k];
        }
      }
      set(res, std::move(out));
    }
  }

  // An optional tuple of values: `has` is null when statically absent, else an i1.
  struct Partial {
    std::vector<LV*> v;
    LV* has = nullptr;
  };
  // a then b in scan order, either possibly absent.
  Partial then(const ir::Op& op, const Partial& a, const Partial& b) {
    if (!a.has)
      return b;
    if (!b.has)
      return a;
    std::vector<LV*> both = combine(op, a.v, b.v);
    Partial r;
    for (size_t k = 0; k < both.size(); ++k)
      r.v.push_back(b_.CreateSelect(a.has, b_.CreateSelect(b.has, both[k], a.v[k]), b.v[k]));
    r.has = b_.CreateOr(a.has, b.has);
    return r;
  }

  // Inclusive scan (Triton's associative_scan): within each thread's runs along the axis, then
  // across lanes (Hillis-Steele over shuffles), then across warps through shared memory, then
  // carried from one repetition of the layout tile to the next. `reverse` mirrors every step.
  void scan(const ir::Op& op) {
    const size_t n = op.operands.size();
    const ir::Value* x0 = op.operand(0);
    const int axis = static_cast<int>(op.int_attr("axis"));
    const bool rev = op.int_attr("reverse", 0) != 0;
    Dist d = dist(x0);
    const int64_t S = d.shape[axis];
    const int e = d.regs_per_dim[axis];
    const int chunk = std::min(d.spt[axis], e);
    const int reps = e / chunk;
    const int64_t L = std::clamp<int64_t>(S / d.spt[axis], 1, d.tpw[axis]);
    const int64_t W = std::clamp<int64_t>(S / (int64_t{d.spt[axis]} * d.tpw[axis]), 1, d.wpc[axis]);
    const int ls = d.lane_stride[axis];
    LV* lane_r = b_.CreateAnd(b_.CreateLShr(lane_, std::countr_zero(unsigned(ls))),
                              static_cast<uint64_t>(L - 1));
    LV* warp_r = b_.CreateAnd(b_.CreateLShr(warp_, std::countr_zero(unsigned(d.warp_stride[axis]))),
                              static_cast<uint64_t>(W - 1));
    // Positions in scan order.
    LV* p = rev ? b_.CreateSub(b_.getInt32(static_cast<uint32_t>(L - 1)), lane_r) : lane_r;
    LV* q = rev ? b_.CreateSub(b_.getInt32(static_cast<uint32_t>(W - 1)), warp_r) : warp_r;
    // The lane `delta` positions earlier in scan order (meaningful where p >= delta).
    auto earlier_lane = [&](int64_t delta) {
      LV* step = b_.getInt32(static_cast<uint32_t>(delta * ls));
      return rev ? b_.CreateAdd(lane_, step) : b_.CreateSub(lane_, step);
    };

    // Groups: registers that differ only along the axis, indexed by their axis digit.
    std::map<int, std::vector<int>> groups;
    for (int r = 0; r < d.num_regs(); ++r) {
      auto dig = d.reg_digits(r);
      int j = dig[axis];
      dig[axis] = 0;
      auto& g = groups[d.reg_index(dig)];
      g.resize(e);
      g[j] = r;
    }
    const int G = static_cast<int>(groups.size());
    auto in = [&](int r) {
      std::vector<LV*> v;
      for (size_t k = 0; k < n; ++k)
        v.push_back(get(op.operand(k))[r]);
      return v;
    };
    // Chunk k's digits in scan order.
    auto chunk_digits = [&](int k) {
      std::vector<int> js;
      for (int i = 0; i < chunk; ++i)
        js.push_back(k * chunk + (rev ? chunk - 1 - i : i));
      return js;
    };
    std::vector<int> chunk_order;
    for (int i = 0; i < reps; ++i)
      chunk_order.push_back(rev ? reps - 1 - i : i);

    // A: within each chunk. acc[g][j] = inclusive scan up to j inside its chunk.
    std::vector<std::vector<std::vector<LV*>>> acc(G, std::vector<std::vector<LV*>>(e));
    std::vector<std::vector<std::vector<LV*>>> incl(G, std::vector<std::vector<LV*>>(reps));
    int gi = 0;
    for (auto& [key, regs] : groups) {
      for (int k = 0; k < reps; ++k) {
        std::vector<LV*> a;
        for (int j : chunk_digits(k)) {
          a = a.empty() ? in(regs[j]) : combine(op, a, in(regs[j]));
          acc[gi][j] = a;
        }
        incl[gi][k] = a; // the chunk's total in this thread
      }
      ++gi;
    }
    // B: across lanes, inclusive over chunk totals, then the exclusive prefix.
    std::vector<std::vector<Partial>> lane_excl(G, std::vector<Partial>(reps));
    for (int64_t dlt = 1; dlt < L; dlt *= 2) {
      LV* valid = b_.CreateICmpUGE(p, b_.getInt32(static_cast<uint32_t>(dlt)));
      LV* src = b_.CreateSelect(valid, earlier_lane(dlt), lane_);
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < reps; ++k) {
          std::vector<LV*> o;
          for (LV* v : incl[g][k])
            o.push_back(shuffle_idx(v, src));
          std::vector<LV*> c = combine(op, o, incl[g][k]);
          for (size_t t = 0; t < n; ++t)
            incl[g][k][t] = b_.CreateSelect(valid, c[t], incl[g][k][t]);
        }
    }
    if (L > 1) {
      LV* valid = b_.CreateICmpUGE(p, b_.getInt32(1));
      LV* src = b_.CreateSelect(valid, earlier_lane(1), lane_);
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < reps; ++k) {
          lane_excl[g][k].has = valid;
          for (LV* v : incl[g][k])
            lane_excl[g][k].v.push_back(shuffle_idx(v, src));
        }
    }
    // The chunk's total over the whole lane group: held by the last lane in scan order.
    std::vector<std::vector<std::vector<LV*>>> lanes_total(G, std::vector<std::vector<LV*>>(reps));
    {
      LV* last = b_.CreateAdd(
          lane_, b_.CreateMul(b_.CreateSub(b_.getInt32(static_cast<uint32_t>(L - 1)), p),
                              b_.getInt32(static_cast<uint32_t>(rev ? -ls : ls))));
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < reps; ++k)
          for (LV* v : incl[g][k])
            lanes_total[g][k].push_back(L > 1 ? shuffle_idx(v, last) : v);
    }
    // C: across warps through shared memory: slot[operand][chunk][warp][group].
    std::vector<std::vector<Partial>> warp_prefix(G, std::vector<Partial>(reps));
    std::vector<std::vector<std::vector<LV*>>> tile_total = lanes_total;
    if (W > 1) {
      ti_.barrier(b_);
      // Slots are per line (the coordinates off the axis), not per register group: other
      // threads hold other lines in the same group.
      const int64_t lines = x0->type.numel() / S;
      std::vector<int64_t> base;
      int64_t off = 0;
      for (size_t t = 0; t < n; ++t) {
        base.push_back(off);
        off += align16(int64_t{reps} * W * lines * mem_bytes(op.operand(t)->type.elem));
      }
      need_shared(off);
      std::vector<LV*> line_of;
      for (auto& [key, regs] : groups) {
        Regs c = coords(d, x0->type, regs[0]);
        c.erase(c.begin() + axis);
        auto os = x0->type.shape;
        os.erase(os.begin() + axis);
        line_of.push_back(linear(c, os));
      }
      auto slot = [&](int k, LV* w, int g) {
        return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(k * W)), w),
                                         b_.getInt32(static_cast<uint32_t>(lines))),
                            line_of[g]);
      };
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < reps; ++k)
          for (size_t t = 0; t < n; ++t) {
            DType et = op.operand(t)->type.elem;
            b_.CreateStore(to_mem(lanes_total[g][k][t], et),
                           smem_ptr(slot(k, warp_r, g), base[t], mem_bytes(et)));
          }
      ti_.barrier(b_);
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < reps; ++k) {
          Partial pre, all;
          for (int64_t i = 0; i < W; ++i) {
            int64_t w = rev ? W - 1 - i : i;
            Partial x;
            for (size_t t = 0; t < n; ++t)
              x.v.push_back(from_smem(op.operand(t)->type.elem,
                                      slot(k, b_.getInt32(static_cast<uint32_t>(w)), g), base[t]));
            x.has = b_.getTrue();
            all = then(op, all, x);
            // Warps before this one in scan order.
            x.has = b_.CreateICmpULT(b_.getInt32(static_cast<uint32_t>(i)), q);
            pre = then(op, pre, x);
          }
          warp_prefix[g][k] = pre;
          tile_total[g][k] = all.v;
        }
    }
    // D: carried over the repetitions of the tile, then applied to every element.
    std::vector<Regs> out(n, Regs(d.num_regs()));
    gi = 0;
    for (auto& [key, regs] : groups) {
      Partial carry;
      for (int k : chunk_order) {
        Partial prefix = then(op, then(op, carry, warp_prefix[gi][k]), lane_excl[gi][k]);
        for (int j : chunk_digits(k)) {
          Partial self{acc[gi][j], b_.getTrue()};
          Partial r = then(op, prefix, self);
          for (size_t t = 0; t < n; ++t)
            out[t][regs[j]] = r.v[t];
        }
        carry = then(op, carry, Partial{tile_total[gi][k], b_.getTrue()});
      }
      ++gi;
    }
    for (size_t k = 0; k < n; ++k)
      set(op.results[k], std::move(out[k]));
  }

  // tf32 keeps 10 mantissa bits: round-to-nearest-even at bit 13 (the interpreter's rule).
  LV* round_tf32(LV* x) {
    LV* u = b_.CreateBitCast(x, b_.getInt32Ty());
    LV* finite = b_.CreateICmpNE(b_.CreateAnd(u, 0x7f800000u), b_.getInt32(0x7f800000u));
    LV* odd = b_.CreateAnd(b_.CreateLShr(u, 13), 1);
    LV* rounded = b_.CreateAnd(b_.CreateAdd(b_.CreateAdd(u, b_.getInt32(0x0fff)), odd),
                               b_.getInt32(~0x1fffu));
    return b_.CreateBitCast(b_.CreateSelect(finite, rounded, u), b_.getFloatTy());
  }

  // dot on FMA units: a and b to shared memory, each accumulator register sums over k in
  // order with the interpreter's rounding rules.
  void dot(const ir::Op& op) {
    const ir::Value *a = op.operand(0), *bv = op.operand(1), *c = op.operand(2);
    DType in = a->type.elem, acc = c->type.elem;
    const int rank = a->type.rank();
    const int64_t K = a->type.shape[rank - 1];
    const bool tf32 = in.kind == ScalarKind::F32 && op.has_attr("input_precision") &&
                      op.str_attr("input_precision") != "ieee";
    auto prep = [&](const ir::Value* v) {
      Regs r = get(v);
      if (tf32)
        for (auto& x : r)
          x = round_tf32(x);
      return r;
    };
    ti_.barrier(b_);
    int64_t off_a = 0;
    int64_t off_b = to_smem(a, prep(a), off_a);
    need_shared(off_b + to_smem(bv, prep(bv), off_b));
    ti_.barrier(b_);
    Dist d = dist(c);
    const Regs& init = get(c);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "dot.k", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "dot.exit", fn_);
    std::vector<Regs> coord;
    for (int r = 0; r < d.num_regs(); ++r)
      coord.push_back(coords(d, c->type, r));
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* k = b_.CreatePHI(b_.getInt32Ty(), 2);
    k->addIncoming(b_.getInt32(0), pre);
    std::vector<llvm::PHINode*> phis;
    for (LV* v : init) {
      phis.push_back(b_.CreatePHI(v->getType(), 2));
      phis.back()->addIncoming(v, pre);
    }
    const auto& as = a->type.shape;
    const auto& bs = bv->type.shape;
    Regs next;
    for (int r = 0; r < d.num_regs(); ++r) {
      const Regs& cc = coord[r];
      Regs ai = cc, bi = cc;
      ai[rank - 1] = k; // a[..., i, k]
      bi[rank - 2] = k; // b[..., k, j]
      LV* x = from_smem(in, linear(ai, as), off_a);
      LV* y = from_smem(in, linear(bi, bs), off_b);
      next.push_back(fma_acc(x, y, phis[r], in, acc));
    }
    LV* k1 = b_.CreateAdd(k, b_.getInt32(1));
    k->addIncoming(k1, head);
    for (int r = 0; r < d.num_regs(); ++r)
      phis[r]->addIncoming(next[r], head);
    b_.CreateCondBr(b_.CreateICmpEQ(k1, b_.getInt32(static_cast<uint32_t>(K))), exit, head);
    b_.SetInsertPoint(exit);
    set(op.result(), Regs(next.begin(), next.end()));
  }

  LV* fma_acc(LV* x, LV* y, LV* s, DType in, DType acc) {
    if (acc.is_float()) {
      // f32 accumulators: one fmaf per step; narrower ones: an exact double fma rounded once
      // to the accumulator type, as the interpreter.
      llvm::Type* ct = acc.kind == ScalarKind::F32 ? b_.getFloatTy() : b_.getDoubleTy();
      auto conv = [&](LV* v, DType t) -> LV* {
        if (!t.is_float())
          return t.is_unsigned() ? b_.CreateUIToFP(v, ct) : b_.CreateSIToFP(v, ct);
        unsigned vb = v->getType()->getPrimitiveSizeInBits(), cb = ct->getPrimitiveSizeInBits();
        return vb == cb ? v : vb < cb ? b_.CreateFPExt(v, ct) : b_.CreateFPTrunc(v, ct);
      };
      LV* r =
          b_.CreateIntrinsic(llvm::Intrinsic::fma, {ct}, {conv(x, in), conv(y, in), conv(s, acc)});
      return r->getType() == type(acc) ? r : b_.CreateFPTrunc(r, type(acc));
    }
    llvm::Type* at = type(acc);
    LV* xi = in.is_float() ? cast(x, in, acc) : b_.CreateIntCast(x, at, in.is_signed_int());
    LV* yi = in.is_float() ? cast(y, in, acc) : b_.CreateIntCast(y, at, in.is_signed_int());
    return b_.CreateAdd(s, b_.CreateMul(xi, yi));
  }

  // --- control flow --------------------------------------------------------------------
  std::vector<llvm::PHINode*> phis_for(const std::vector<Regs>& init, llvm::BasicBlock* from) {
    std::vector<llvm::PHINode*> phis;
    for (const Regs& r : init)
      for (LV* v : r) {
        phis.push_back(b_.CreatePHI(v->getType(), 2));
        phis.back()->addIncoming(v, from);
      }
    return phis;
  }
  static std::vector<Regs> regroup(const std::vector<llvm::PHINode*>& phis,
                                   const std::vector<Regs>& like, size_t skip = 0) {
    std::vector<Regs> out;
    size_t p = skip;
    for (const Regs& r : like) {
      Regs g;
      for (size_t i = 0; i < r.size(); ++i)
        g.push_back(phis[p++]);
      out.push_back(g);
    }
    return out;
  }
  static void add_incoming(const std::vector<llvm::PHINode*>& phis, const std::vector<Regs>& vals,
                           llvm::BasicBlock* from, size_t skip = 0) {
    size_t p = skip;
    for (const Regs& r : vals)
      for (LV* v : r)
        phis[p++]->addIncoming(v, from);
  }

  void for_loop(const ir::Op& op) {
    LV* lb = get(op.operand(0))[0];
    LV* ub = get(op.operand(1))[0];
    LV* step = get(op.operand(2))[0];
    DType it = op.operand(0)->type.elem;
    std::vector<Regs> init;
    for (size_t i = 3; i < op.operands.size(); ++i)
      init.push_back(get(op.operand(i)));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "for.head", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* iv = b_.CreatePHI(lb->getType(), 2);
    iv->addIncoming(lb, pre);
    auto phis = phis_for(init, pre);
    auto carried = regroup(phis, init);
    bool u = it.is_unsigned();
    LV* up = u ? b_.CreateICmpULT(iv, ub) : b_.CreateICmpSLT(iv, ub);
    LV* down = u ? b_.CreateICmpUGT(iv, ub) : b_.CreateICmpSGT(iv, ub);
    LV* positive = b_.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0));
    b_.CreateCondBr(b_.CreateSelect(positive, up, down), body, exit);
    b_.SetInsertPoint(body);
    std::vector<Regs> args{{iv}};
    args.insert(args.end(), carried.begin(), carried.end());
    auto yielded = region(op.body(), args);
    LV* next = b_.CreateAdd(iv, step);
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(head);
    iv->addIncoming(next, end);
    add_incoming(phis, yielded, end);
    b_.SetInsertPoint(exit);
    for (size_t i = 0; i < op.results.size(); ++i)
      set(op.results[i], carried[i]);
  }

  void if_op(const ir::Op& op) {
    LV* cond = get(op.operand(0))[0];
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
    auto* cont = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
    b_.CreateCondBr(cond, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    auto tv = region(op.body(0), {});
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(cont);
    b_.SetInsertPoint(else_bb);
    auto ev = region(op.body(1), {});
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
    for (size_t i = 0; i < op.results.size(); ++i) {
      Regs out;
      for (size_t r = 0; r < tv[i].size(); ++r) {
        auto* phi = b_.CreatePHI(tv[i][r]->getType(), 2);
        phi->addIncoming(tv[i][r], then_end);
        phi->addIncoming(ev[i][r], else_end);
        out.push_back(phi);
      }
      set(op.results[i], std::move(out));
    }
  }

  void while_loop(const ir::Op& op) {
    std::vector<Regs> init;
    for (const ir::Value* v : op.operands)
      init.push_back(get(v));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "while.before", fn_);
    auto* after = llvm::BasicBlock::Create(ctx_, "while.after", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto phis = phis_for(init, pre);
    auto state = regroup(phis, init);
    auto c = region(op.body(0), state);
    b_.CreateCondBr(c[0][0], after, exit);
    b_.SetInsertPoint(after);
    std::vector<Regs> passed(c.begin() + 1, c.end());
    auto next = region(op.body(1), passed);
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(head);
    add_incoming(phis, next, end);
    b_.SetInsertPoint(exit);
    for (size_t i = 0; i < op.results.size(); ++i)
      set(op.results[i], passed[i]);
  }

  const ir::Function& f_;
  TargetInfo& ti_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  int num_warps_, ws_;
  llvm::Module* m_ = nullptr;
  llvm::Function* fn_ = nullptr;
  LV *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  AxisInfoMap axis_;
  std::unordered_map<const ir::Value*, Regs> vals_;
  std::map<std::string, Regs> bases_;
  std::unordered_map<const ir::Value*, bool> nonneg_;
  std::unordered_map<const ir::Value*, BaseOffset> split_;
  int64_t shared_bytes_ = 0;
};

} // namespace

std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, TargetInfo& ti,
                                            llvm::LLVMContext& ctx, int num_warps,
                                            int* shared_bytes) {
  return Lowering(f, ti, ctx, num_warps).run(shared_bytes);
}

} // namespace tritium::gpu
