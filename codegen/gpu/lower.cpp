// The GPU lowering's driver: the kernel function and its arguments, values and their
// layouts, shared memory, dispatch over ops, structured control flow, and debugging ops. The
// op families live in lower_*.cpp (see lowering.hpp).
//
// Data that must move between threads goes through shared memory: layout conversions and
// reshapes/transposes/joins/splits/concatenations (write in row-major order, barrier, read
// what this thread needs), the operands of dot, scans, and the cross-warp step of
// reductions (which first combine within a thread, then across lanes with xor shuffles).
#include "gpu/lowering.hpp"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <bit>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;

std::unique_ptr<llvm::Module> Lowering::run(int* shared_bytes, int* global_scratch_bytes) {
  auto m = std::make_unique<llvm::Module>(f_.name, ctx_);
  m->setTargetTriple(ti_.triple());
  m->setDataLayout(ti_.data_layout());
  s_.m = m.get();
  // As Triton (enable_fp_fusion, on by default): a float multiply feeding an add may become one
  // fma, the instruction GPUs have, rounding once instead of twice.
  llvm::FastMathFlags contract;
  contract.setAllowContract(s_.fp_fusion);
  b_.setFastMathFlags(contract);
  s_.axis = analyze_axis_info(f_);
  std::vector<llvm::Type*> params;
  for (const ir::Value* a : f_.args())
    params.push_back(a->type.elem.is_bool() ? b_.getInt8Ty() : type(a->type.elem));
  const int scratch = tma_.tma_scratch_bytes();
  if (scratch > 0) // compile.hpp: the global scratch's pointer, last
    params.push_back(llvm::PointerType::get(ctx_, ti_.global_address_space()));
  if (global_scratch_bytes)
    *global_scratch_bytes = scratch;
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  s_.fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f_.name, s_.m);
  ti_.make_kernel(*s_.fn, num_warps_ * ws_, min_blocks_per_sm());
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", s_.fn);
  b_.SetInsertPoint(entry);
  for (size_t i = 0; i < f_.args().size(); ++i) {
    LV* a = s_.fn->getArg(static_cast<unsigned>(i));
    a->setName(f_.arg_info[i].name.empty() ? fmt::format("arg{}", i) : f_.arg_info[i].name);
    if (f_.args()[i]->type.elem.is_bool())
      a = b_.CreateTrunc(a, b_.getInt1Ty());
    s_.vals[f_.args()[i]] = {a};
  }
  s_.tid = ti_.thread_id(b_);
  s_.lane = b_.CreateURem(s_.tid, b_.getInt32(ws_), "lane");
  s_.warp = b_.CreateUDiv(s_.tid, b_.getInt32(ws_), "warp");
  if (scratch > 0) {
    // Program x + nx (y + ny z)'s part.
    LV* pid = ti_.program_id(b_, 2);
    for (int axis : {1, 0})
      pid = b_.CreateAdd(b_.CreateMul(pid, ti_.num_programs(b_, axis)), ti_.program_id(b_, axis));
    LV* off = b_.CreateMul(b_.CreateZExt(pid, b_.getInt64Ty()), b_.getInt64(scratch));
    s_.program_scratch = b_.CreateGEP(b_.getInt8Ty(), s_.fn->getArg(s_.fn->arg_size() - 1), off);
  }
  shared_.plan_buffers();
  block(f_.entry());
  b_.CreateRetVoid();
  *shared_bytes = static_cast<int>(std::max(s_.buffers_bytes, s_.shared_bytes));
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*s_.m, &os))
    throw Error(
        fmt::format("kernel '{}': internal error, the LLVM IR is invalid: {}", f_.name, os.str()));
  return m;
}

const Regs& Context::get(const ir::Value* v) {
  auto it = s_.vals.find(v);
  if (it == s_.vals.end())
    throw Error(fmt::format(
        "kernel '{}': internal error, a value used before it is lowered (a {} {})", f_.name,
        v->def ? std::string(ir::op_name(v->def->kind)) + " result" : std::string("block argument"),
        ir::to_string(v->type)));
  return it->second;
}

// This thread's part of each coordinate: the bits its lane and warp ids select (memoized per
// resolved layout).
const Regs& Context::thread_base(const LinearLayout& d) {
  std::string key = d.str();
  auto it = s_.bases.find(key);
  if (it != s_.bases.end())
    return it->second;
  llvm::IRBuilder<>::InsertPointGuard guard(b_);
  // Right after the thread ids, so that every use is dominated.
  auto* w = llvm::cast<llvm::Instruction>(s_.warp);
  if (llvm::Instruction* next = w->getNextNode())
    b_.SetInsertPoint(next);
  else
    b_.SetInsertPoint(w->getParent());
  Regs base(d.rank(), b_.getInt32(0));
  place_bits(base, s_.lane, d.lane);
  place_bits(base, s_.warp, d.warp);
  return s_.bases.emplace(key, std::move(base)).first->second;
}

// Runs of consecutive id bits that select consecutive bits of one coordinate move together.
// Kernels without a dot are bound by memory: what hides its latency is warps in flight, so the
// assembler is asked to leave room for 16 warps per multiprocessor (at most 128 registers per
// thread). Measured on an H200 (bench_roofline): the one-block-per-row layer norm at 12288
// columns went from 166 registers (one 8-warp block per SM) to 128 and from 2005 to 3160
// GB/s; the layer norm backward at 8192 columns from 157 to 125 us. The runtime honours the
// request only where registers would otherwise leave room for fewer blocks and the bound
// costs no spills (cuda_backend.cpp): ptxas spends registers up to a stated bound, which cost
// small kernels occupancy.
// A loop whose body loads (the looped layer norm's three passes over a row) waits on memory
// once a trip, with little else in flight: there more blocks pay, down to the registers one
// trip needs (streaming_trip_words, plus 16 for addresses, indices and predicates). Measured
// on an H200 with bench/compare/occupancy_sweep.py (every bound, paired with Triton's launch;
// bench/RESULTS.md, twentieth session), that layer norm in 8-warp blocks: over 4096 halves
// 4 blocks (56 registers) 1.03 x Triton, 5 1.10, 6 (39 registers) 1.15, 8 (32) 1.03; over 8192
// halves 3 blocks 1.25, 4 (62 registers) 1.33, 5 (48) 1.11; over 1024 in 4 warps, 10 blocks
// 0.97, 16 (32 registers) 1.04. The rule picks 6, 4 and 16. Bounds past a trip's needs lose;
// kernels that keep a row in registers gain nothing from tighter bounds: most spill under them
// (which the runtime refuses), the rest moved by 1 % or less.
// Every kernel without such a loop, and every dot, asks for two blocks per SM: one block's
// loads then overlap another's math and stores (a kernel without a loop does each once; a
// dot's prologue and epilogue stall its own warps), where one block alone waits for each in
// turn. The runtime clamps the request by the blocks shared memory allows. Measured on an
// H200 (2026-11-29, bench/RESULTS.md): SwiGLU forward in 16-warp blocks, 122 registers and
// one block -> 64 and two; the int8-weight GEMM at 4096^3 in 8 warps, 146 registers and one
// block -> 128 and two. A dot whose accumulators (with 32 registers for operands and
// addresses) do not fit two blocks asks nothing: they need every register (ptxas refuses a
// 128x256 wgmma under 128).
int Lowering::min_blocks_per_sm() {
  int accumulators = 0;
  walk(f_.entry(), [&](const ir::Op& op) {
    if (op.kind == OpKind::Dot)
      accumulators += nregs(op.result());
  });
  if (accumulators > 0)
    return ti_.blocks_per_cu(num_warps_ * ws_, accumulators + 32) >= 2 ? 2 : 1;
  int blocks = std::max(2, 16 / num_warps_);
  if (const int words = streaming_trip_words(); words > 0)
    blocks =
        std::max(std::max(1, 16 / num_warps_), ti_.blocks_per_cu(num_warps_ * ws_, words + 16));
  return blocks;
}

// The 32-bit words per thread that one trip of the most demanding loop with a load in its
// body keeps live: what it carries (accumulators) and what it loads; 0 without such a loop.
int Lowering::streaming_trip_words() {
  auto words = [&](const ir::Value* v) {
    return (nregs(v) * static_cast<int>(std::max<int64_t>(mem_bytes(v->type.elem), 1)) + 3) / 4;
  };
  int most = 0;
  walk(f_.entry(), [&](const ir::Op& loop) {
    if (loop.kind != OpKind::For && loop.kind != OpKind::While)
      return;
    int loaded = 0;
    for (const auto& r : loop.regions)
      walk(*r->block, [&](const ir::Op& op) {
        if (op.kind == OpKind::Load)
          loaded += words(op.result());
      });
    if (loaded == 0)
      return;
    int carried = 0;
    for (const ir::Value* v : loop.results)
      carried += words(v);
    most = std::max(most, loaded + carried);
  });
  return most;
}

void Context::place_bits(Regs& coords, LV* id, const std::vector<LinearLayout::Coord>& bases) {
  for (size_t j = 0; j < bases.size();) {
    int dim = LinearLayout::dim_of(bases[j]);
    if (dim < 0) {
      ++j;
      continue;
    }
    int bit = LinearLayout::bit_of(bases[j]);
    size_t n = 1;
    while (j + n < bases.size() && LinearLayout::dim_of(bases[j + n]) == dim &&
           LinearLayout::bit_of(bases[j + n]) == bit + static_cast<int>(n))
      ++n;
    LV* field = b_.CreateAnd(b_.CreateLShr(id, static_cast<uint64_t>(j)), (1u << n) - 1);
    coords[dim] = b_.CreateOr(coords[dim], b_.CreateShl(field, static_cast<uint64_t>(bit)));
    j += n;
  }
}

Regs Context::coords(const LinearLayout& d, int r) {
  const Regs& base = thread_base(d);
  auto off = d.reg_offset(r);
  Regs c;
  for (int k = 0; k < d.rank(); ++k)
    c.push_back(b_.CreateOr(base[k], b_.getInt32(static_cast<uint32_t>(off[k]))));
  return c;
}

LV* Context::linear(const Regs& c, const std::vector<int64_t>& shape) {
  LV* idx = b_.getInt32(0);
  for (size_t k = 0; k < c.size(); ++k)
    idx = b_.CreateAdd(b_.CreateMul(idx, b_.getInt32(static_cast<uint32_t>(shape[k]))), c[k]);
  return idx;
}

// Whether this thread is the first holder of its elements: the id bits that only replicate
// are zero.
LV* Context::is_owner(const LinearLayout& d) {
  LV* ok = b_.CreateICmpEQ(b_.CreateAnd(s_.lane, d.replica_lane_mask()), b_.getInt32(0));
  return b_.CreateAnd(
      ok, b_.CreateICmpEQ(b_.CreateAnd(s_.warp, d.replica_warp_mask()), b_.getInt32(0)));
}

// Scratch shared memory: above the buffers live at or after this point.
LV* Context::smem_ptr(LV* index, int64_t byte_offset, int64_t elem_bytes) {
  LV* base = ti_.shared_memory_base(b_);
  LV* off = b_.CreateAdd(b_.getInt32(static_cast<uint32_t>(s_.scratch_base + byte_offset)),
                         b_.CreateMul(index, b_.getInt32(static_cast<uint32_t>(elem_bytes))));
  return b_.CreateGEP(b_.getInt8Ty(), base, off);
}

// Writes tensor `v` (registers `regs`) row-major at byte_offset; returns the bytes used.
int64_t Context::to_smem(const ir::Value* v, const Regs& regs, int64_t byte_offset) {
  DType e = v->type.elem;
  int64_t eb = mem_bytes(e);
  if (v->type.is_scalar()) {
    b_.CreateStore(to_mem(regs[0], e), smem_ptr(b_.getInt32(0), byte_offset, eb));
    return align16(eb);
  }
  LinearLayout d = dist(v);
  for (int r = 0; r < d.num_regs(); ++r)
    b_.CreateStore(to_mem(regs[r], e),
                   smem_ptr(linear(coords(d, r), v->type.shape), byte_offset, eb));
  return align16(v->type.numel() * eb);
}

LV* Context::from_smem(DType e, LV* index, int64_t byte_offset) {
  return from_mem(b_.CreateLoad(mem_type(e), smem_ptr(index, byte_offset, mem_bytes(e))), e);
}

void Lowering::block(const ir::Block& blk) {
  for (size_t i = 0; i < blk.ops.size(); ++i) {
    const auto& op = blk.ops[i];
    if (op_category(op->kind) == ir::OpCategory::Terminator)
      return;
    s_.scratch_base = s_.scratch_base_at.at(op.get());
    // Only a wgmma dot may take an accumulator a group may still be writing (it chains on it).
    if (op->kind != OpKind::Dot)
      for (const ir::Value* v : op->operands)
        if (std::find(s_.wgmma_live.begin(), s_.wgmma_live.end(), v) != s_.wgmma_live.end())
          fail(*op, "reads an accumulator before the wgmma wait that completes it (internal: "
                    "pipeline pass)");
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

std::vector<Regs> Lowering::region(const ir::Block& blk, const std::vector<Regs>& args) {
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
std::vector<LV*> Lowering::combine(const ir::Op& op, const std::vector<LV*>& a,
                                   const std::vector<LV*>& x) {
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

// A failed device assertion traps: the runtime reports the fault naming the kernel.
static void trap_unless(llvm::IRBuilder<>& b, llvm::Function* fn, const Regs& conditions) {
  LV* all = b.getTrue();
  for (LV* c : conditions)
    all = b.CreateAnd(all, c);
  auto* fail_bb = llvm::BasicBlock::Create(b.getContext(), "assert.fail", fn);
  auto* cont = llvm::BasicBlock::Create(b.getContext(), "assert.ok", fn);
  b.CreateCondBr(all, cont, fail_bb);
  b.SetInsertPoint(fail_bb);
  b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
  b.CreateUnreachable();
  b.SetInsertPoint(cont);
}

// Every op kind is handled here: each category's enum is switched over without a default, so
// an op added to ops.def that the GPU lowering misses does not compile.
void Lowering::lower(const ir::Op& op) {
  switch (op_category(op.kind)) {
  case ir::OpCategory::Binary:
  case ir::OpCategory::Compare:
  case ir::OpCategory::Unary:
  case ir::OpCategory::Math:
  case ir::OpCategory::Extern:
  case ir::OpCategory::Ternary:
  case ir::OpCategory::Select:
  case ir::OpCategory::Convert:
    return elementwise_.elementwise(op);
  case ir::OpCategory::Hint:
    switch (ir::as<ir::HintOp>(op.kind)) {
    case ir::HintOp::Hint:
      return elementwise_.elementwise(op);
    case ir::HintOp::DescHint:
      return; // not taken by the pipeliner: the load computes the block itself
    }
    return;
  case ir::OpCategory::Source:
    switch (ir::as<ir::SourceOp>(op.kind)) {
    case ir::SourceOp::ProgramId:
      return set(op.result(), {ti_.program_id(b_, static_cast<int>(op.int_attr(attr::axis)))});
    case ir::SourceOp::NumPrograms:
      return set(op.result(), {ti_.num_programs(b_, int(op.int_attr(attr::axis)))});
    case ir::SourceOp::Constant:
      return set(op.result(),
                 Regs(nregs(op.result()), scalar_.constant(op, op.result()->type.elem)));
    case ir::SourceOp::Arange: {
      LinearLayout d = dist(op.result());
      int64_t start = op.int_attr(attr::start);
      Regs r;
      for (int i = 0; i < d.num_regs(); ++i)
        r.push_back(b_.CreateAdd(coords(d, i)[0], b_.getInt32(static_cast<uint32_t>(start))));
      return set(op.result(), std::move(r));
    }
    }
    return;
  case ir::OpCategory::Shape:
    switch (ir::as<ir::ShapeOp>(op.kind)) {
    case ir::ShapeOp::Splat:
      return set(op.result(), Regs(nregs(op.result()), get(op.operand(0))[0]));
    case ir::ShapeOp::Broadcast:
      return shapes_.broadcast(op);
    case ir::ShapeOp::ExpandDims:
      return shapes_.shape_op(op);
    case ir::ShapeOp::ConvertLayout:
      return shapes_.convert_layout(op);
    case ir::ShapeOp::Trans:
      // Of a tile in shared memory: a view of the same bytes (its layout's order is swapped).
      if (dynamic_cast<const SharedLayout*>(op.result()->type.layout.get()))
        return set(op.result(), get(op.operand(0)));
      return shapes_.shape_op(op);
    case ir::ShapeOp::Reshape:
    case ir::ShapeOp::Join:
    case ir::ShapeOp::Split:
      return shapes_.shape_op(op);
    case ir::ShapeOp::Cat:
      return shapes_.cat(op);
    }
    return;
  case ir::OpCategory::Memory:
    switch (ir::as<ir::MemoryOp>(op.kind)) {
    case ir::MemoryOp::AddPtr:
      memory_.track_base_offset(op);
      return elementwise_.elementwise(op);
    case ir::MemoryOp::Load:
      return memory_.load(op);
    case ir::MemoryOp::Store:
      return memory_.store(op);
    case ir::MemoryOp::AtomicRmw:
    case ir::MemoryOp::AtomicCas:
      return memory_.atomic(op);
    }
    return;
  case ir::OpCategory::Shared:
    switch (ir::as<ir::SharedOp>(op.kind)) {
    case ir::SharedOp::LocalAlloc:
      return shared_.local_alloc(op);
    case ir::SharedOp::MemdescIndex:
      return shared_.memdesc_index(op);
    case ir::SharedOp::AsyncCopy:
      return shared_.async_copy(op);
    case ir::SharedOp::AsyncCommit:
      return shared_.async_commit(op);
    case ir::SharedOp::AsyncWait:
      return shared_.async_wait(op);
    case ir::SharedOp::LocalLoad:
      return shared_.local_load(op);
    case ir::SharedOp::LocalStore:
      return shared_.local_store(op);
    case ir::SharedOp::TmaCreate:
      return tma_.tma_create(op);
    case ir::SharedOp::TmaCopy:
      return tma_.tma_copy(op);
    case ir::SharedOp::MbarInit:
      return tma_.mbar_init(op);
    case ir::SharedOp::MbarWait:
      return tma_.mbar_wait(op);
    case ir::SharedOp::MbarInval:
      return tma_.mbar_inval(op);
    }
    return;
  case ir::OpCategory::Collective:
    switch (ir::as<ir::CollectiveOp>(op.kind)) {
    case ir::CollectiveOp::Reduce:
      return collectives_.reduce(op);
    case ir::CollectiveOp::Scan:
      return collectives_.scan(op);
    case ir::CollectiveOp::Dot:
      return dots_.dot(op);
    case ir::CollectiveOp::Histogram:
      return collectives_.histogram(op);
    }
    return;
  case ir::OpCategory::Control:
    switch (ir::as<ir::ControlOp>(op.kind)) {
    case ir::ControlOp::For:
      return for_loop(op);
    case ir::ControlOp::If:
      return if_op(op);
    case ir::ControlOp::While:
      return while_loop(op);
    }
    return;
  case ir::OpCategory::Terminator:
    fail(op, "internal error: a terminator is lowered by its block");
  case ir::OpCategory::Debug:
    switch (ir::as<ir::DebugOp>(op.kind)) {
    case ir::DebugOp::Barrier:
      return ordering_barrier(ti_, b_);
    case ir::DebugOp::Assume:
      for (LV* c : get(op.operand(0)))
        b_.CreateAssumption(c);
      return;
    case ir::DebugOp::Assert:
      return trap_unless(b_, s_.fn, get(op.operand(0)));
    case ir::DebugOp::Print:
      return print(op);
    }
    return;
  }
}

// device_print: one line per element, from the thread that owns it: the program id, the
// element's index, the prefix and the value (Triton's format).
void Lowering::print(const ir::Op& op) {
  const std::string& prefix = op.str_attr(attr::prefix);
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
    const char* conv = t.is_float() ? "%f" : t.is_ptr() ? "%p" : t.is_unsigned() ? "%llu" : "%lld";
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
      emit(b_.CreateICmpEQ(s_.tid, b_.getInt32(0)), nullptr, regs[0]);
      continue;
    }
    LinearLayout d = dist(v);
    LV* owner = is_owner(d);
    for (int r = 0; r < d.num_regs(); ++r)
      emit(owner, linear(coords(d, r), v->type.shape), regs[r]);
  }
}

std::vector<llvm::PHINode*> Lowering::phis_for(const std::vector<Regs>& init,
                                               llvm::BasicBlock* from) {
  std::vector<llvm::PHINode*> phis;
  for (const Regs& r : init)
    for (LV* v : r) {
      phis.push_back(b_.CreatePHI(v->getType(), 2));
      phis.back()->addIncoming(v, from);
    }
  return phis;
}

std::vector<Regs> Lowering::regroup(const std::vector<llvm::PHINode*>& phis,
                                    const std::vector<Regs>& like, size_t skip) {
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

void Lowering::add_incoming(const std::vector<llvm::PHINode*>& phis, const std::vector<Regs>& vals,
                            llvm::BasicBlock* from, size_t skip) {
  size_t p = skip;
  for (const Regs& r : vals)
    for (LV* v : r)
      phis[p++]->addIncoming(v, from);
}

// The loop is emitted rotated: a guard, a preheader, and a body that tests at its end, with a
// dedicated exit. That is the form LLVM's loop passes canonicalize to; emitted as a header that
// tests first, LoopRotate rewrote every loop, and each of its dominator-tree updates costs time
// in proportion to the code after the loop: a kernel of many loops compiled in quadratic time
// (bench/compile_time: 20k IR ops of small loops took 4.5 s for sm_90a).
void Lowering::for_loop(const ir::Op& op) {
  LV* lb = get(op.operand(0))[0];
  LV* ub = get(op.operand(1))[0];
  LV* step = get(op.operand(2))[0];
  DType it = op.operand(0)->type.elem;
  std::vector<Regs> init;
  for (size_t i = 3; i < op.operands.size(); ++i)
    init.push_back(get(op.operand(i)));
  const bool u = it.is_unsigned();
  LV* positive = b_.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0));
  auto in_range = [&](LV* i) {
    LV* up = u ? b_.CreateICmpULT(i, ub) : b_.CreateICmpSLT(i, ub);
    LV* down = u ? b_.CreateICmpUGT(i, ub) : b_.CreateICmpSGT(i, ub);
    return b_.CreateSelect(positive, up, down);
  };
  llvm::BasicBlock* guard = b_.GetInsertBlock();
  auto* pre = llvm::BasicBlock::Create(ctx_, "for.pre", s_.fn);
  auto* body = llvm::BasicBlock::Create(ctx_, "for.body", s_.fn);
  auto* done = llvm::BasicBlock::Create(ctx_, "for.done", s_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", s_.fn);
  b_.CreateCondBr(in_range(lb), pre, exit);
  b_.SetInsertPoint(pre);
  b_.CreateBr(body);
  b_.SetInsertPoint(body);
  auto* iv = b_.CreatePHI(lb->getType(), 2);
  iv->addIncoming(lb, pre);
  auto phis = phis_for(init, pre);
  auto carried = regroup(phis, init);
  std::vector<Regs> args{{iv}};
  args.insert(args.end(), carried.begin(), carried.end());
  // A dot left in flight (wgmma_pending) yields the accumulator the next iteration starts with
  // and the loop ends with: both are live until a full wait.
  std::vector<size_t> in_flight;
  const ir::Op* yield = op.body().terminator();
  for (const auto& o : op.body().ops)
    if (o->kind == OpKind::Dot && o->int_attr(attr::wgmma_pending, 0) > 0)
      for (size_t k = 0; k < yield->operands.size(); ++k)
        if (yield->operands[k] == o->result())
          in_flight.push_back(k);
  for (size_t k : in_flight)
    s_.wgmma_live.push_back(op.body().args[k + 1]);
  auto yielded = region(op.body(), args);
  std::erase_if(s_.wgmma_live, [&](const ir::Value* v) { return v->block == &op.body(); });
  LV* next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* end = b_.GetInsertBlock();
  b_.CreateCondBr(in_range(next), body, done);
  iv->addIncoming(next, end);
  add_incoming(phis, yielded, end);
  b_.SetInsertPoint(done);
  b_.CreateBr(exit);
  b_.SetInsertPoint(exit);
  // A result is the initial value when the loop ran no iteration, else the last one yielded.
  for (size_t i = 0; i < op.results.size(); ++i) {
    Regs out;
    for (size_t r = 0; r < init[i].size(); ++r) {
      auto* phi = b_.CreatePHI(init[i][r]->getType(), 2);
      phi->addIncoming(init[i][r], guard);
      phi->addIncoming(yielded[i][r], done);
      out.push_back(phi);
    }
    set(op.results[i], std::move(out));
  }
  for (size_t k : in_flight)
    s_.wgmma_live.push_back(op.results[k]);
}

void Lowering::if_op(const ir::Op& op) {
  LV* cond = get(op.operand(0))[0];
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", s_.fn);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", s_.fn);
  auto* cont = llvm::BasicBlock::Create(ctx_, "if.end", s_.fn);
  llvm::MDNode* weights = nullptr;
  if (op.has_attr(attr::likely)) {
    const bool second = op.int_attr(attr::likely) != 0;
    weights =
        llvm::MDBuilder(ctx_).createBranchWeights(second ? 1 : 1u << 20, second ? 1u << 20 : 1);
  }
  b_.CreateCondBr(cond, then_bb, else_bb, weights);
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

void Lowering::while_loop(const ir::Op& op) {
  std::vector<Regs> init;
  for (const ir::Value* v : op.operands)
    init.push_back(get(v));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "while.before", s_.fn);
  auto* after = llvm::BasicBlock::Create(ctx_, "while.after", s_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", s_.fn);
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

std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, TargetInfo& ti,
                                            llvm::LLVMContext& ctx, int num_warps, bool fp_fusion,
                                            int* shared_bytes, int* global_scratch_bytes) {
  KernelState state(f, ti, ctx, num_warps, fp_fusion);
  return Lowering(state).run(shared_bytes, global_scratch_bytes);
}

} // namespace tritium::gpu
