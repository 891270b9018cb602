// Shared memory buffers (local_alloc, memdesc_index), asynchronous copies into them
// (async_copy, async_commit, async_wait) and loads from them into registers (local_load: ldmatrix
// for matrix-instruction operands where the target has it). A value with a SharedLayout is
// one register: its address.
#include "gpu/lowering.hpp"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <vector>

namespace tritium::gpu {

using ir::DType;
using ir::OpKind;

namespace {

const SharedLayout& shared_of(const ir::Value* v) {
  auto* s = dynamic_cast<const SharedLayout*>(v->type.layout.get());
  if (!s)
    throw Error("GPU lowering: a shared-memory op on a value that is not in shared memory "
                "(internal: pipeline pass)");
  return *s;
}

int64_t tile_numel(const ir::Type& t) {
  int64_t n = 1;
  for (size_t d = t.shape.size() - 2; d < t.shape.size(); ++d)
    n *= t.shape[d];
  return n;
}

// Whether a local_load is read at its dot (Lowering::operand_regs): its only user anywhere is a
// dot in its own block, and it is a 2-D tile. plan_buffers keeps its buffer alive until then.
bool read_at_its_dot(const ir::Op& load) {
  const ir::Value* r = load.result();
  const ir::Op* user = nullptr;
  int uses = 0;
  std::function<void(const ir::Block&)> count = [&](const ir::Block& b) {
    for (const auto& o : b.ops) {
      for (const ir::Value* v : o->operands)
        if (v == r) {
          user = o.get();
          ++uses;
        }
      for (const auto& reg : o->regions)
        count(*reg->block);
    }
  };
  count(*load.parent);
  return uses == 1 && user->kind == OpKind::Dot && user->parent == load.parent &&
         r->type.rank() == 2;
}

} // namespace

// Buffers get fixed offsets from the start of shared memory, before any scratch use; aligned
// to 1024 bytes (what the 128-byte swizzle of TMA and wgmma needs). Ops are numbered in program
// order, nested ones included; a buffer lives from the op that makes it to its last use, or to
// the end of the loop or branch beside it that holds that use (a loop reads it again), and
// buffers whose spans do not meet share memory (two loops one after the other, also inside a
// branch: causal attention, a prefill's two loops). What makes that safe: a pipeline's ring is
// drained (all copies landed, then a barrier) right after its loop, its prologue starts with a
// barrier (after every earlier reader), and a tile a conversion or local_store writes is written
// after a barrier.
void SharedLowering::plan_buffers() {
  struct Span {
    const ir::Op* op;
    size_t first, last;
    int64_t bytes, offset;
  };
  std::vector<Span> spans;
  std::unordered_map<const ir::Op*, size_t> number, end; // end: the last number inside an op
  std::unordered_map<const ir::Value*, std::vector<const ir::Op*>> users;
  size_t count = 0;
  std::function<void(const ir::Block&)> walk = [&](const ir::Block& blk) {
    for (const auto& up : blk.ops) {
      const ir::Op* op = up.get();
      const size_t n = number[op] = count++;
      for (const ir::Value* v : op->operands)
        users[v].push_back(op);
      if (op->kind == OpKind::LocalAlloc ||
          (op->kind == OpKind::ConvertLayout &&
           dynamic_cast<const SharedLayout*>(op->result()->type.layout.get())))
        spans.push_back({op, n, n, shared_tile_bytes(op->result()->type), 0});
      for (const auto& r : op->regions)
        walk(*r->block);
      end[op] = count - 1;
    }
  };
  walk(f_.entry());
  // The op beside `at` (in its block) that holds `u`.
  auto beside = [&](const ir::Op* u, const ir::Block* at) {
    while (u->parent != at && u->parent != &f_.entry())
      u = u->parent->parent->parent; // block, region, op
    return u;
  };
  for (Span& s : spans) {
    std::vector<const ir::Value*> work{s.op->result()};
    // The buffer, the slots indexed from it, views of those, and what a local_load that only
    // a dot reads: that one is read at the dot (operand_regs), so the buffer lives until then.
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      for (const ir::Op* u : users[v]) {
        s.last = std::max(s.last, end.at(beside(u, s.op->parent)));
        const bool lazy = u->kind == OpKind::LocalLoad && read_at_its_dot(*u);
        if (u->kind == OpKind::MemdescIndex || lazy ||
            (u->kind == OpKind::Trans &&
             dynamic_cast<const SharedLayout*>(u->result()->type.layout.get())))
          work.push_back(u->result());
      }
    }
  }
  // First fit, in program order: the lowest offset clear of every placed buffer it may not
  // share with.
  for (size_t i = 0; i < spans.size(); ++i) {
    Span& s = spans[i];
    int64_t at = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t j = 0; j < i; ++j) {
        const Span& o = spans[j];
        const bool apart = o.last < s.first || s.last < o.first;
        if (!apart && o.offset < at + s.bytes && at < o.offset + o.bytes) {
          at = o.offset + o.bytes;
          moved = true;
        }
      }
    }
    s.offset = at;
    buffer_offset_[s.op] = at;
    s_.buffers_bytes = std::max(s_.buffers_bytes, at + s.bytes);
  }
  // Scratch of the op numbered n goes above every buffer live at n; buffers that ended before
  // are free again (their loop drained its copies and a barrier starts every use of scratch),
  // and those made later are first written after a barrier (a ring's prologue starts with one,
  // a conversion into shared memory writes after one).
  for (const auto& [op, n] : number) {
    int64_t base = 0;
    for (const Span& s : spans)
      if (s.first <= n && s.last >= n)
        base = std::max(base, s.offset + s.bytes);
    s_.scratch_base_at[op] = base;
  }
}

// The address of the element at `coords` (the tile's two dimensions) in a tile at `base`, its
// swizzle chunk XORed with `chunk_xor` too.
LV* SharedLowering::shared_addr(LV* base, const ir::Type& tile, const Regs& coords,
                                int64_t chunk_xor) {
  auto* s = dynamic_cast<const SharedLayout*>(tile.layout.get());
  const int rank = tile.rank();
  const int fast = s->order[0], slow = s->order[1];
  LV* row = coords[rank - 2 + slow];
  LV* col = coords[rank - 2 + fast];
  int64_t cols = tile.shape[rank - 2 + fast];
  const int64_t rows = tile.shape[rank - 2 + slow];
  LV* block = nullptr;
  if (s->block_cols && s->block_cols < cols) {
    block = b_.CreateLShr(col, log2_exact(s->block_cols));
    col = b_.CreateAnd(col, static_cast<uint64_t>(s->block_cols - 1));
    cols = s->block_cols;
  }
  LV* phase = b_.CreateAnd(b_.CreateLShr(row, log2_exact(s->per_phase)),
                           static_cast<uint64_t>(s->max_phase - 1));
  LV* chunk = b_.CreateXor(b_.CreateLShr(col, log2_exact(s->vec)), phase);
  if (chunk_xor)
    chunk = b_.CreateXor(chunk, static_cast<uint64_t>(chunk_xor));
  LV* idx = b_.CreateOr(b_.CreateShl(chunk, log2_exact(s->vec)),
                        b_.CreateAnd(col, static_cast<uint64_t>(s->vec - 1)));
  idx = b_.CreateAdd(b_.CreateShl(row, log2_exact(cols)), idx);
  if (block)
    idx = b_.CreateAdd(idx, b_.CreateShl(block, log2_exact(cols * rows)));
  LV* bytes = b_.CreateMul(idx, b_.getInt32(static_cast<uint32_t>(mem_bytes(tile.elem))));
  return b_.CreateGEP(b_.getInt8Ty(), base, bytes);
}

// The address of register r of `d` in the tile at `base`. Coordinates are sums of the thread's
// part and the register's (their bits are disjoint), so everything but the swizzle's XOR adds,
// and of the chunk the register XORs in, only the bits the thread's own chunk can have stay an
// XOR: the rest adds too. One address register then serves every register with the same XORed
// bits, the others at an instruction's offset from it (a B tile written transposed on gfx1100:
// two address registers for 32 stores, not 30 that the loop kept in scratch).
LV* SharedLowering::shared_addr(LV* base, const ir::Type& tile, const LinearLayout& d, int r) {
  auto* s = dynamic_cast<const SharedLayout*>(tile.layout.get());
  const int rank = tile.rank();
  const size_t fast = static_cast<size_t>(rank - 2 + s->order[0]);
  const size_t slow = static_cast<size_t>(rank - 2 + s->order[1]);
  const int64_t cols = tile.shape[fast], rows = tile.shape[slow];
  const int64_t in_block = s->block_cols && s->block_cols < cols ? s->block_cols : cols;
  const int lv = log2_exact(s->vec), lp = log2_exact(s->per_phase);
  const int64_t phases = s->max_phase - 1;
  auto chunk_of = [&](int64_t row, int64_t col) {
    return ((col & (in_block - 1)) >> lv) ^ ((row >> lp) & phases);
  };
  int64_t thread_rows = 0, thread_cols = 0;
  for (const auto* bases : {&d.lane, &d.warp})
    for (const LinearLayout::Coord& c : *bases) {
      thread_rows |= c[slow];
      thread_cols |= c[fast];
    }
  const int64_t support = ((thread_cols & (in_block - 1)) >> lv) | ((thread_rows >> lp) & phases);
  const LinearLayout::Coord off = d.reg_offset(r);
  const int64_t chunk = chunk_of(off[slow], off[fast]);
  const int64_t added_chunk = chunk & ~support;
  const int64_t row = off[slow], col = off[fast];
  const int64_t free = row * in_block + (added_chunk << lv) + (col & (s->vec - 1)) +
                       (col / in_block) * in_block * rows;
  LV* a = shared_addr(base, tile, thread_base(d), chunk & support);
  if (free == 0)
    return a;
  return b_.CreateGEP(b_.getInt8Ty(), a,
                      b_.getInt32(static_cast<uint32_t>(free * mem_bytes(tile.elem))));
}

// Registers into a tile of their own (write_tile).
void SharedLowering::store_to_shared(const ir::Op& op) {
  LV* base = b_.CreateGEP(b_.getInt8Ty(), ti_.shared_memory_base(b_),
                          b_.getInt32(static_cast<uint32_t>(buffer_offset_.at(&op))));
  write_tile(op.operand(0), base, op.result()->type);
  set(op.result(), {base});
}

namespace {

// The register bases of `d` whose steps are 1, 2, 4, ... elements along the tile's fast
// dimension, in that order, wherever they sit among the registers (a layout that loads rows k
// and k + 1 holds runs of the transposed tile): as many as a swizzle chunk (`vec`) and a block
// of columns allow, and none where another basis would break a run's alignment.
std::vector<int> store_run(const LinearLayout& d, const ir::Type& tile) {
  auto* s = dynamic_cast<const SharedLayout*>(tile.layout.get());
  const int rank = tile.rank();
  if (!s || rank < 2)
    return {};
  const size_t fast = static_cast<size_t>(rank - 2 + s->order[0]);
  int64_t limit = s->vec;
  if (s->block_cols)
    limit = std::min<int64_t>(limit, s->block_cols);
  auto unit = [&](const LinearLayout::Coord& c, int64_t step) {
    for (size_t k = 0; k < c.size(); ++k)
      if (c[k] != (k == fast ? step : 0))
        return false;
    return true;
  };
  std::vector<int> run;
  for (int64_t step = 1; step * 2 <= limit; step *= 2) {
    int found = -1;
    for (size_t i = 0; i < d.reg.size() && found < 0; ++i)
      if (unit(d.reg[i], step))
        found = static_cast<int>(i);
    if (found < 0)
      break;
    run.push_back(found);
  }
  const int64_t n = int64_t{1} << run.size();
  for (const auto* bases : {&d.reg, &d.lane, &d.warp})
    for (size_t i = 0; i < bases->size(); ++i) {
      if (bases == &d.reg && std::find(run.begin(), run.end(), static_cast<int>(i)) != run.end())
        continue;
      if ((*bases)[i].size() > fast && (*bases)[i][fast] % n != 0)
        return {};
    }
  return run;
}

} // namespace

// Registers into a tile, after every earlier reader of it is done, and published to the
// asynchronous readers (wgmma) before the barrier. A thread's registers that run along the tile's
// fast dimension inside one swizzle chunk go as one vector store (a dequantized weight's 16
// halves per thread: 2 16-byte stores, where LLVM's vectorizer left 10 of 2 to 16 bytes).
void SharedLowering::write_tile(const ir::Value* x, LV* base, const ir::Type& tile) {
  ti_.barrier(b_);
  const Regs& regs = get(x);
  Regs mem(regs.size());
  for (size_t r = 0; r < regs.size(); ++r)
    mem[r] = to_mem(regs[r], x->type.elem);
  store_runs(dist(x), mem, base, tile, [&](LV* p, LV* v) { b_.CreateStore(v, p); });
  ti_.async().fence_shared_for_async(b_);
  ti_.barrier(b_);
}

// Stores `elems` (one per register of `d`, in memory form) into the tile: each run of the tile's
// fast dimension that registers of one thread hold (store_run) as one vector.
void SharedLowering::store_runs(const LinearLayout& d, const Regs& elems, LV* base,
                                const ir::Type& tile, const std::function<void(LV*, LV*)>& store) {
  const std::vector<int> run = store_run(d, tile);
  int mask = 0;
  for (int k : run)
    mask |= 1 << k;
  const int n = 1 << run.size();
  for (int r = 0; r < d.num_regs(); ++r) {
    if (r & mask)
      continue;
    LV* p = shared_addr(base, tile, d, r);
    if (n == 1) {
      store(p, elems[r]);
      continue;
    }
    LV* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(elems[r]->getType(), n));
    for (int i = 0; i < n; ++i) {
      int reg = r;
      for (size_t j = 0; j < run.size(); ++j)
        if ((i >> j) & 1)
          reg |= 1 << run[j];
      v = b_.CreateInsertElement(v, elems[reg], b_.getInt32(i));
    }
    store(p, v);
  }
}

// Into a slot of a buffer the pipeline made (a tile written in a loop, in turns).
void SharedLowering::local_store(const ir::Op& op) {
  write_tile(op.operand(1), get(op.operand(0))[0], op.operand(0)->type);
}

void SharedLowering::local_alloc(const ir::Op& op) {
  LV* base = ti_.shared_memory_base(b_);
  set(op.result(), {b_.CreateGEP(b_.getInt8Ty(), base,
                                 b_.getInt32(static_cast<uint32_t>(buffer_offset_.at(&op))))});
}

void SharedLowering::memdesc_index(const ir::Op& op) {
  const ir::Type& t = op.operand(0)->type;
  const int64_t tile_bytes = tile_numel(t) * mem_bytes(t.elem);
  LV* off = b_.CreateMul(get(op.operand(1))[0], b_.getInt32(static_cast<uint32_t>(tile_bytes)));
  set(op.result(), {b_.CreateGEP(b_.getInt8Ty(), get(op.operand(0))[0], off)});
}

// Each thread copies the vectors its layout of the pointers gives it, into the swizzled tile.
void SharedLowering::async_copy(const ir::Op& op) {
  const ir::Value* buf = op.operand(0);
  const ir::Value* ptr = op.operand(1);
  const ir::Value* mask = op.operands.size() > 2 ? op.operand(2) : nullptr;
  shared_of(buf);
  const DType e = buf->type.elem;
  const int64_t eb = mem_bytes(e);
  LinearLayout d = dist(ptr);
  int vec = s_.memory->vector_width(ptr, mask, d, e);
  // A vector stays inside one swizzled chunk.
  vec = std::min(vec, shared_of(buf).vec);
  const Regs& p = get(ptr);
  const Regs* m = mask ? &get(mask) : nullptr;
  LV* base = get(buf)[0];
  // Whether a vector of the pointers' layout is also contiguous in the tile.
  const int fast = buf->type.rank() - 2 + shared_of(buf).order[0];
  const bool same_run = d.reg.empty() || LinearLayout::dim_of(d.reg[0]) == fast;
  // A tile stored across the pointers' runs: where the layout holds runs of the tile's fast
  // dimension (rows k and k + 1 in one thread), elements are gathered for store_runs;
  // otherwise each is stored alone, its address made beside its load.
  const bool runs = !same_run && !store_run(d, buf->type).empty();
  Regs transposed(runs ? d.num_regs() : 0);
  for (int r = 0; r < d.num_regs(); r += vec) {
    LV* dst = shared_addr(base, buf->type, d, r);
    LV* pred = m ? (*m)[r] : nullptr;
    if (ti_.async().has_async_copy() && vec * eb >= 4 && same_run) {
      ti_.async().async_copy(b_, dst, p[r], static_cast<int>(vec * eb), pred);
      continue;
    }
    // Through registers (targets without async copies, copies narrower than cp.async's 4
    // bytes, tiles stored transposed): load now, zeros where masked; store at the commit.
    llvm::Type* vt = vec == 1 ? mem_type(e) : llvm::FixedVectorType::get(mem_type(e), vec);
    LV* zero = llvm::Constant::getNullValue(vt);
    LV* v = s_.memory->load_vector(ptr, r, vt, pred, zero, false);
    if (same_run || (vec == 1 && !runs)) {
      deferred_.push_back({dst, v});
      continue;
    }
    for (int k = 0; k < vec; ++k) {
      LV* e = vec == 1 ? v : b_.CreateExtractElement(v, k);
      if (runs)
        transposed[r + k] = e;
      else
        deferred_.push_back({shared_addr(base, buf->type, d, r + k), e});
    }
  }
  // Stored at the commit, as runs of the tile's fast dimension where the layout holds them.
  if (!transposed.empty())
    store_runs(d, transposed, base, buf->type, [&](LV* dst, LV* v) {
      deferred_.push_back({dst, v});
    });
}

void SharedLowering::async_commit(const ir::Op&) {
  for (const DeferredStore& s : deferred_)
    b_.CreateStore(s.value, s.dst);
  deferred_.clear();
  if (ti_.async().has_async_copy())
    ti_.async().async_commit(b_);
}

void SharedLowering::async_wait(const ir::Op& op) {
  if (!deferred_.empty())
    fail(op, "async copies without a commit before the wait (internal: pipeline pass)");
  ti_.async().async_wait(b_, static_cast<int>(op.int_attr(attr::pending)));
  if (op.int_attr(attr::pending) == 0 && s_.wgmma_in_flight)
    s_.dots->wgmma_wait({});
  ti_.barrier(b_);
}

void SharedLowering::local_load(const ir::Op& op) {
  const ir::Value* r = op.result();
  const int n = dist(r).num_regs();
  // Read by one dot in this block only: load its fragments where the dot needs them.
  if (read_at_its_dot(op)) {
    lazy_[r] = Lazy{&op, Regs(n, nullptr)};
    return set(r, Regs(n, nullptr));
  }
  if (local_load_ldmatrix(op))
    return;
  Regs out;
  for (int r0 = 0; r0 < n;) {
    Regs e = shared_run(op, r0);
    out.insert(out.end(), e.begin(), e.end());
    r0 += static_cast<int>(e.size());
  }
  set(r, std::move(out));
}

// Registers from r0 on that sit next to each other in one swizzled chunk, by one vector load
// (at most 16 bytes).
Regs SharedLowering::shared_run(const ir::Op& op, int r0) {
  const ir::Value* buf = op.operand(0);
  const ir::Value* res = op.result();
  const SharedLayout& s = shared_of(buf);
  LinearLayout d = dist(res);
  const DType e = res->type.elem;
  const int fast = res->type.rank() - 2 + s.order[0];
  int vec = std::min<int>({d.contiguous_regs(fast), s.vec, static_cast<int>(16 / mem_bytes(e))});
  vec = std::max(1, vec);
  r0 = r0 / vec * vec;
  llvm::Type* t = vec == 1 ? mem_type(e) : llvm::FixedVectorType::get(mem_type(e), vec);
  LV* v = b_.CreateAlignedLoad(t, shared_addr(get(buf)[0], buf->type, d, r0),
                               llvm::Align(mem_bytes(e) * vec));
  Regs out;
  for (int k = 0; k < vec; ++k)
    out.push_back(from_mem(vec == 1 ? v : b_.CreateExtractElement(v, k), e));
  return out;
}

// Operands of mma.sync with 16-bit elements: ldmatrix reads four (or two) 8x8 matrices per
// instruction, each lane receiving exactly its fragment words. A word's two elements are
// consecutive along K; where K is the tile's contiguous dimension the matrices are read as
// stored, else transposed.
bool SharedLowering::ldmatrix_ok(const ir::Op& op) {
  const ir::Value* res = op.result();
  auto* dot_op = dynamic_cast<const DotOperandLayout*>(res->type.layout.get());
  auto* mma = dot_op ? dynamic_cast<const MmaLayout*>(dot_op->parent.get()) : nullptr;
  if (!ti_.matrix().has_ldmatrix() || !mma || mma->unit != MatrixUnit::MmaSync ||
      mem_bytes(res->type.elem) != 2 || shared_of(op.operand(0)).vec < 8 || res->type.rank() != 2)
    return false;
  LinearLayout d = dist(res);
  return d.num_regs() % 4 == 0 && d.reg.size() >= 2;
}

// Registers [r0, r0 + 2 * count) of a local_load's result, by one ldmatrix of `count` matrices.
Regs SharedLowering::ldmatrix_group(const ir::Op& op, int r0, int count) {
  const ir::Value* buf = op.operand(0);
  const ir::Value* res = op.result();
  auto* dot_op = dynamic_cast<const DotOperandLayout*>(res->type.layout.get());
  LinearLayout d = dist(res);
  const int k_dim = dot_op->op_idx == 0 ? 1 : 0;
  const bool trans = shared_of(buf).order[0] != k_dim;
  // Coordinates from the warp's bits, the group's first register, and the lane bits of the
  // lane (and the register within the group) holding row `row` of matrix j.
  Regs c(2, b_.getInt32(0));
  place_bits(c, s_.warp, d.warp);
  auto off = d.reg_offset(r0);
  for (int k = 0; k < 2; ++k)
    c[k] = b_.CreateOr(c[k], b_.getInt32(static_cast<uint32_t>(off[k])));
  LV* row = b_.CreateAnd(s_.lane, 7);
  LV* j = b_.CreateAnd(b_.CreateLShr(s_.lane, 3), static_cast<uint64_t>(count - 1));
  // Stored: element 0 of word j, held by the lane with row `row` (lane 4 * row). Transposed:
  // element row % 2 of word j, held by the lane with K pair row / 2.
  LV* lane_id = trans ? b_.CreateLShr(row, 1) : b_.CreateShl(row, 2);
  LV* elem = b_.CreateShl(j, 1);
  if (trans)
    elem = b_.CreateOr(elem, b_.CreateAnd(row, 1));
  place_bits(c, lane_id, d.lane);
  std::vector<LinearLayout::Coord> low(d.reg.begin(),
                                       d.reg.begin() + std::min<size_t>(3, d.reg.size()));
  place_bits(c, elem, low);
  auto words = ti_.matrix().load_matrix(b_, shared_addr(get(buf)[0], buf->type, c), count, trans);
  return unpack_words(b_, words, mem_type(res->type.elem));
}

bool SharedLowering::local_load_ldmatrix(const ir::Op& op) {
  if (!ldmatrix_ok(op))
    return false;
  LinearLayout d = dist(op.result());
  Regs out(d.num_regs());
  for (int r0 = 0; r0 < d.num_regs();) {
    const int count = d.num_regs() - r0 >= 8 ? 4 : 2;
    Regs e = ldmatrix_group(op, r0, count);
    std::copy(e.begin(), e.end(), out.begin() + r0);
    r0 += 2 * count;
  }
  set(op.result(), std::move(out));
  return true;
}

// The registers [r, r + n) of `v`, emitting their ldmatrix now if `v` is a lazy local_load
// (one whose only user is a dot: its fragments are read right before the instructions that
// need them, so that only one K step's fragments are live at a time).
Regs SharedLowering::operand_regs(const ir::Value* v, int r, int n) {
  auto it = lazy_.find(v);
  if (it == lazy_.end()) {
    const Regs& all = get(v);
    return Regs(all.begin() + r, all.begin() + r + n);
  }
  Lazy& l = it->second;
  LinearLayout d = dist(v);
  const bool ldm = ldmatrix_ok(*l.op);
  Regs out;
  for (int i = r; i < r + n; ++i) {
    if (!l.regs[i]) {
      if (ldm) {
        const int group = d.num_regs() - (i & ~7) >= 8 ? 8 : 4;
        const int g0 = i / group * group;
        Regs e = ldmatrix_group(*l.op, g0, group / 2);
        for (int k = 0; k < group; ++k)
          l.regs[g0 + k] = e[k];
      } else {
        Regs e = shared_run(*l.op, i);
        const int g0 = i / static_cast<int>(e.size()) * static_cast<int>(e.size());
        for (size_t k = 0; k < e.size(); ++k)
          l.regs[g0 + k] = e[k];
      }
    }
    out.push_back(l.regs[i]);
  }
  return out;
}

} // namespace tritium::gpu
