// pipeline: software pipelining of the loads that feed matrix instructions (Triton's
// pipeliner). In a loop with num_stages = S >= 2 (the loop's own option, else the kernel's),
// each load whose only use is a conversion to a dot-operand layout becomes an asynchronous copy
// into a ring of S shared-memory tiles, issued D = S - 1 iterations ahead:
//
//   prologue:  copies for iterations 0 .. D-1, one commit group each
//   iteration i:
//     async_wait(pending = D - 1); barrier      the copies for iteration i have landed
//     x = local_load(tile[i % S])                (ldmatrix on NVIDIA)
//     async_copy(tile[(i + D) % S], ptrs and mask at iteration i + D, masked past the end)
//     ... the body ...
//     async_commit
//   after the loop: async_wait(pending = 0)
//
// A load qualifies when its pointers and mask can be computed D iterations ahead: from values
// defined before the loop, the induction variable, and loop-carried values advanced by a
// loop-invariant step each iteration (`p = p + inc`, the GEMM idiom), through pure ops.
//
// With TMA (sm_90a), when every load is a tensor descriptor's (a desc_hint describes it) and
// its tile is a wgmma operand, the ring is filled by TMA instead: a tensor map per descriptor
// is made before the loop (the loop nest), each slot has an mbarrier, and thread 0 issues one
// box copy per tile that completes on the slot's barrier:
//
//   iteration i:
//     mbar_wait(bar[i % S], phase); barrier     landed; every thread is past iteration i-1
//     ... the body reads tile[i % S] ...
//     tma_copy(tile[(i + D) % S], map, the offsets at iteration i + D, bar[(i + D) % S])
//
// The barrier keeps the copy into a slot after every warp's last read of it (a wgmma of an
// earlier iteration, waited for by then). The phase flips each time the ring wraps.
//
// Without asynchronous copies (AMD) a copy is a load into registers where it is issued and a
// store into the ring at its commit, so a tile is only written at the end of the iteration that
// loads it, after a barrier that follows every warp's last read of the slot it goes into. The
// load's latency is then hidden by one iteration's body whatever S is, and more slots would
// only hold tiles longer: the ring has one slot, D = 1, at any S >= 2 (S = 3 took twice the
// LDS for the same schedule: attention D128 on gfx1100 65,536 B against Triton's 49,152).
#include "gpu_ir/conversion_plan.hpp"
#include "gpu_ir/layout.hpp"
#include "passes/iteration_ahead.hpp"
#include "passes/passes.hpp"
#include "passes/pipeline_analysis.hpp"
#include "passes/rewrite.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tritium::gpu {
namespace {

using ir::OpKind;

class Pipeliner {
  using Bindings = IterationAhead::Bindings;

public:
  Pipeliner(ir::Function& f, ir::Op& loop, const ir::Op& top, int stages, const GpuFeatures& t,
            int64_t& used)
      : f_(f), t_(t), loop_(loop), top_(top), stages_(stages), max_shared_(t.max_shared_bytes),
        used_(used), k_fast_(operands_k_major(t.matrix)), ahead_(f, loop, t.async_copy) {}

  void run() {
    std::vector<ir::Op*> loads;
    bool in_registers = false; // a dot's load left to prefetch_to_registers (candidate)
    for (auto& op : loop_.body().ops)
      if (candidate(*op, in_registers))
        loads.push_back(op.get());
    if (loads.empty()) {
      if (in_registers)
        prefetch_to_registers(loads);
      return;
    }
    loads_ = loads;
    int64_t tiles = 0;
    if (!fit_stages(loads, tiles))
      return;
    prefetch_to_registers(loads);
    // A wgmma dot that only feeds the next iteration (deferred_wgmma) may stay in flight while
    // the next iteration starts; the copies issued at the top of that iteration then go one slot
    // further back, to the slot the dot before it read, D = S - 2 ahead. Measured on an H200:
    // for attention's dots worth it with three stages already (1965 against 2062 us at
    // HEAD_DIM 128), the softmax between the dots hiding a copy's latency; for the GEMM's chain
    // from four stages on (fused MoE 2019 us at four, against 2285 with the copies after the dot
    // as below). With three stages a chain keeps D = S - 1 and its copies go after the dot,
    // behind its wait for the dot before it and a barrier: every warp group is done with the
    // slot they overwrite (as Triton orders them). Zoo acc_plus_dot_gemm (Triton's tutorial
    // configuration, 128x256x64, 3 stages) 4096^3: 201 us against 258 with the dot waited for
    // in its iteration (Triton 3.6: 200); bmm 64x512^2x128 27 against 30 (Triton 26); one
    // loss, conv2d_implicit_gemm n32 28x28 38 against 36 (Triton 34).
    // Inside a loop marked flatten (a persistent kernel's loop over tiles), the ring runs across
    // its iterations: it is filled once, before the tile loop, and the last iterations of one
    // tile's K loop issue the copies for the next tile's first ones.
    // (Where copies have no asynchronous form, AMD's: each branch of the loop's choice would
    // store its copies at once, not after the body.)
    tiles_ = k_fast_ || !t_.async_copy ? nullptr : flattened_tile_loop(loop_, loads);
    // (Not across tiles: there nothing after the K loop would wait for the dot in flight
    // before the tile's epilogue reads its result.)
    const Deferral def = plan_deferral(loads, tiles);
    Ring ring;
    ring.async_dot = def.dots.empty() ? nullptr : def.dots.back();
    ring.late_copies = ring.async_dot && def.chained && stages_ == 3;
    for (ir::Op* d : def.dots)
      d->attrs[attr::wgmma_pending] = static_cast<int64_t>(def.dots.size());
    ring.D = !t_.async_copy                        ? 1
             : ring.async_dot && !ring.late_copies ? static_cast<int>(stages_) - 2
                                                   : static_cast<int>(stages_) - 1;
    tma_ = t_.tma && !k_fast_ && use_tma(loads, tiles);
    ir::Block& outer = tiles_ ? *tiles_->parent : *loop_.parent;
    size_t at = index_in_block(tiles_ ? *tiles_ : loop_);
    make_rings(outer, at, loads, ring);
    if (!def.turns.empty())
      ring.turn = take_turns(outer, at, def.turns);
    size_t b_at = 0;
    read_slots(b_at, loads, ring);
    issue_ahead(b_at, loads, ring);
    close_loop(outer, ring);
    erase_dead_ops(f_);
  }

private:
  // What the pipelined loop carries: its rings, the read and write slots (and the TMA phase, the
  // dequantized tiles' turn), how far ahead the copies go, and the dot left in flight.
  struct Ring {
    std::vector<ir::Value*> bufs;
    ir::Value *r = nullptr, *w = nullptr, *phase = nullptr, *turn = nullptr;
    int D = 0;
    ir::Op* async_dot = nullptr; // the last of the dots left in flight
    bool late_copies = false;
  };

  // The number of stages, as many as shared memory holds (at least two): false (with a remark)
  // where even two do not fit. `tiles`: the bytes beside the rings the loop needs.
  bool fit_stages(const std::vector<ir::Op*>& loads, int64_t& tiles) {
    // Beside what is already allocated and the tiles the loop reads or writes besides its rings
    // (attention's Q and P).
    int64_t per_stage = 0;
    for (ir::Op* l : loads)
      per_stage += l->result()->type.numel() * elem_bytes(l->result()->type.elem);
    tiles = tile_bytes(loop_, loads) +
            std::max(outer_scratch_bytes(top_, loop_, max_shared_),
                     loop_scratch_bytes(loop_, loads, f_.entry(), max_shared_));
    auto slots = [&](int64_t stages) { return t_.async_copy ? stages : int64_t{1}; };
    auto need = [&](int64_t stages) { return used_ + tiles + slots(stages) * per_stage; };
    const int64_t asked = stages_;
    while (stages_ > 2 && need(stages_) > max_shared_)
      --stages_;
    if (need(stages_) > max_shared_) {
      remark(fmt::format("{}: loop not pipelined: even {} stages need {} bytes of shared memory "
                         "({} a stage, {} beside the rings), more than the {} a block has",
                         loop_.loc.str(), stages_, need(stages_), per_stage, used_ + tiles,
                         max_shared_));
      return false;
    }
    if (stages_ < asked)
      remark(fmt::format("{}: num_stages {} -> {}: {} stages would need {} bytes of shared "
                         "memory ({} a stage, {} beside the rings), more than the {} a block has",
                         loop_.loc.str(), asked, stages_, asked, need(asked), per_stage,
                         used_ + tiles, max_shared_));
    slots_ = slots(stages_);
    used_ += slots_ * per_stage;
    return true;
  }

  // The wgmma dot left in flight across iterations, if any (deferred_wgmma), and the tiles that
  // take turns for it where shared memory holds their second buffers.
  Deferral plan_deferral(const std::vector<ir::Op*>& loads, int64_t tiles) {
    Deferral def = stages_ >= 3 && !tiles_ ? deferred_wgmma(loop_, loads, f_.entry()) : Deferral{};
    // A tile the body writes for the dot (a dequantized weight) takes turns between two buffers,
    // where shared memory holds the second: the dot in flight reads one while the next
    // iteration writes the other.
    int64_t second = 0;
    for (const ir::Op* c : def.turns)
      second += shared_tile_bytes(c->result()->type);
    if (second > 0 && used_ + tiles + second > max_shared_) {
      remark(fmt::format("{}: the dot is waited for in its iteration: a second buffer for the "
                         "tile it reads from shared memory needs {} bytes more than the {} a "
                         "block has",
                         loop_.loc.str(), used_ + tiles + second - max_shared_, max_shared_));
      def = {};
    }
    used_ += second;
    return def;
  }

  // The rings before the loop (the tile loop), the prologue's copies into them, and the ring
  // positions the loop carries.
  void make_rings(ir::Block& outer, size_t& at, const std::vector<ir::Op*>& loads, Ring& ring) {
    ir::Block& body = loop_.body();
    const ir::SourceLoc loc = loop_.loc;
    for (ir::Op* l : loads) {
      const ir::Type& t = l->result()->type;
      ir::Type bt(t.elem, {slots_, t.shape[0], t.shape[1]});
      // An operand read from shared memory (wgmma) keeps the layout it was given (not so a
      // tile converted on its way: its ring holds the loaded type).
      const ir::Op* u = only_user(l->result(), f_.entry());
      const bool shared = u == operand_conversion(*l, f_.entry(), t_.async_copy) &&
                          dynamic_cast<const SharedLayout*>(u->result()->type.layout.get());
      bt.layout = shared ? u->result()->type.layout : shared_for(*l, k_fast_);
      ring.bufs.push_back(insert_op(f_, outer, at++, OpKind::LocalAlloc, {}, {bt}, loc).result());
    }
    // Every read of shared memory before the loop (a conversion's scratch, another loop's ring)
    // is done before the prologue's first copy writes the ring: the lowering may then place
    // the ring over them.
    insert_op(f_, outer, at++, OpKind::Barrier, {}, {}, loc);
    if (tma_)
      make_maps(outer, at, loads, ring.bufs);
    if (tiles_)
      count_iterations(outer, at);
    for (int j = 0; j < ring.D && tiles_; ++j) {
      ir::Value* slot = constant_i32(outer, at, j);
      issue_global(outer, at, loads, ring.bufs, slot,
                   constant_of(outer, at, loop_.operands[0]->type, j));
      commit(outer, at);
    }
    for (int j = 0; j < ring.D && !tiles_; ++j) {
      Bindings pro{loop_.operands[0], {}};
      for (size_t k = 0; k < body.args.size() - 1; ++k)
        pro.args[body.args[k + 1]] = loop_.operands[3 + k];
      ir::Value* slot = constant_i32(outer, at, j);
      ValueMap memo;
      for (size_t n = 0; n < loads.size(); ++n)
        issue_copy(outer, at, n, ring.bufs[n], slot, pro, j, memo);
      commit(outer, at);
    }

    // Ring positions carried by the loop: read slot r (init 0), write slot w (init D).
    ir::Value* r_init = constant_i32(outer, at, 0);
    ir::Value* w_init = constant_i32(outer, at, static_cast<int>(ring.D % slots_));
    if (tiles_) { // the tile loop carries them from one K loop to the next
      r_init = carry(f_, *tiles_, r_init);
      w_init = carry(f_, *tiles_, w_init);
    }
    ring.r = carry(f_, loop_, r_init);
    ring.w = carry(f_, loop_, w_init);
    // TMA: the parity of the phase slot r waits for (flips as r wraps).
    if (tma_) {
      ir::Value* p_init = constant_i32(outer, at, 0);
      if (tiles_)
        p_init = carry(f_, *tiles_, p_init);
      ring.phase = carry(f_, loop_, p_init);
    }
  }

  // The body's start: wait for this iteration's tiles and read them.
  void read_slots(size_t& b_at, const std::vector<ir::Op*>& loads, const Ring& ring) {
    ir::Block& body = loop_.body();
    const ir::SourceLoc loc = loop_.loc;
    if (tma_) {
      ir::Value* bar = index_buffer(body, b_at, bars_, ring.r);
      insert_op(f_, body, b_at++, OpKind::MbarWait, {bar, ring.phase}, {}, loc);
      insert_op(f_, body, b_at++, OpKind::Barrier, {}, {}, loc);
    } else {
      ir::Op& wait = insert_op(f_, body, b_at++, OpKind::AsyncWait, {}, {}, loc);
      wait.attrs[attr::pending] = int64_t{ring.D - 1};
    }
    for (size_t n = 0; n < loads.size(); ++n) {
      ir::Op* cvt = only_user(loads[n]->result(), f_.entry());
      ir::Value* slot = index_buffer(body, b_at, ring.bufs[n], ring.r);
      if (ir::Op* tr = direct_trans(*loads[n], f_.entry())) {
        ir::Op* to = operand_conversion(*loads[n], f_.entry(), t_.async_copy);
        ir::Value* view = shared_view(body, b_at, slot, *tr);
        ir::Op& ll =
            insert_op(f_, body, b_at++, OpKind::LocalLoad, {view}, {to->result()->type}, tr->loc);
        f_.replace_all_uses(to->result(), ll.result());
        continue;
      }
      if (cvt != operand_conversion(*loads[n], f_.entry(), t_.async_copy)) {
        // Converted on its way (a dequantized weight): read in the load's own layout, and the
        // conversion runs on the registers as before.
        ir::Type t = loads[n]->result()->type;
        ir::Op& ll = insert_op(f_, body, b_at++, OpKind::LocalLoad, {slot}, {t}, loads[n]->loc);
        f_.replace_all_uses(loads[n]->result(), ll.result());
        continue;
      }
      if (dynamic_cast<const SharedLayout*>(cvt->result()->type.layout.get())) {
        f_.replace_all_uses(cvt->result(), slot); // read in place
        continue;
      }
      ir::Type t = cvt->result()->type;
      ir::Op& ll = insert_op(f_, body, b_at++, OpKind::LocalLoad, {slot}, {t}, loads[n]->loc);
      f_.replace_all_uses(cvt->result(), ll.result());
    }
  }

  // The copies D iterations ahead: after the reads, or after the dot left in flight.
  void issue_ahead(size_t b_at, const std::vector<ir::Op*>& loads, const Ring& ring) {
    ir::Block& body = loop_.body();
    const ir::SourceLoc loc = loop_.loc;
    Bindings ahead{body.args[0], {}};
    for (size_t k = 1; k + 2 < body.args.size(); ++k)
      ahead.args[body.args[k]] = body.args[k];
    if (tiles_) {
      // The iteration D ahead is in this tile's K loop, or (the last D) in a later tile's.
      ir::Type i1(ir::ScalarKind::I1);
      ir::Value* iv = body.args[0];
      ir::Value* dv = constant_of(body, b_at, iv->type, ring.D);
      ir::Value* delta =
          insert_op(f_, body, b_at++, OpKind::Mul, {dv, bound_[2]}, {iv->type}, loc).result();
      ir::Value* next =
          insert_op(f_, body, b_at++, OpKind::Add, {iv, delta}, {iv->type}, loc).result();
      ir::Op& here = insert_op(f_, body, b_at++, OpKind::Cmp, {next, bound_[1]}, {i1}, loc);
      here.attrs[attr::pred] = ir::CmpPred::Lt;
      ir::Op& branch = insert_if(f_, body, b_at++, here.result(), loop_.loc);
      size_t t_at = 0, e_at = 0;
      ValueMap memo;
      for (size_t n = 0; n < loads.size(); ++n)
        issue_copy(branch.body(0), t_at, n, ring.bufs[n], ring.w, ahead, ring.D, memo);
      // Global iteration g + D, with g = tile * n_in + k: the tile's and K's indices from the
      // induction variables.
      ir::Block& eb = branch.body(1);
      const ir::Type& t = iv->type;
      auto index = [&](ir::Value* v, ir::Value* lb, ir::Value* step) {
        ir::Value* off = insert_op(f_, eb, e_at++, OpKind::Sub, {v, lb}, {t}, loc).result();
        return insert_op(f_, eb, e_at++, OpKind::Div, {off, step}, {t}, loc).result();
      };
      ir::Value* tile = index(tiles_->body().args[0], tiles_->operands[0], tiles_->operands[2]);
      ir::Value* k = index(iv, bound_[0], bound_[2]);
      ir::Value* g = insert_op(f_, eb, e_at++, OpKind::Mul, {tile, n_safe_}, {t}, loc).result();
      g = insert_op(f_, eb, e_at++, OpKind::Add, {g, k}, {t}, loc).result();
      g = insert_op(f_, eb, e_at++, OpKind::Add, {g, constant_of(eb, e_at, t, ring.D)}, {t}, loc)
              .result();
      issue_global(eb, e_at, loads, ring.bufs, ring.w, g);
      // Each branch commits its copies (a copy through registers stores at its commit, which
      // must see the branch's values).
      commit(branch.body(0), t_at);
      commit(eb, e_at);
    } else {
      size_t c_at = b_at;
      if (ring.late_copies) { // after the dot in flight, see above
        c_at = index_in_block(*ring.async_dot) + 1;
        insert_op(f_, body, c_at++, OpKind::Barrier, {}, {}, loc);
      }
      ValueMap memo;
      for (size_t n = 0; n < loads.size(); ++n)
        issue_copy(body, c_at, n, ring.bufs[n], ring.w, ahead, ring.D, memo);
    }
  }

  // The body's end (commit, the ring positions advanced), and the drain after the loop.
  void close_loop(ir::Block& outer, const Ring& ring) {
    ir::Block& body = loop_.body();
    const ir::SourceLoc loc = loop_.loc;
    // Commit at the end of the body; advance the ring positions.
    ir::Op& yield = *body.terminator();
    size_t y_at = body.ops.size() - 1;
    if (!tiles_) {
      if (!t_.async_copy) // every warp's reads of the slot the stores overwrite are done
        insert_op(f_, body, y_at++, OpKind::Barrier, {}, {}, loc);
      commit(body, y_at);
    }
    ir::Value* r_next = next_slot(body, y_at, ring.r);
    yield.operands.push_back(r_next);
    yield.operands.push_back(next_slot(body, y_at, ring.w));
    if (tma_) { // phase ^ (r_next == 0)
      ir::Value* zero = constant_i32(body, y_at, 0);
      ir::Op& wrapped = insert_op(f_, body, y_at++, OpKind::Cmp, {r_next, zero},
                                  {ir::Type(ir::ScalarKind::I1)}, loc);
      wrapped.attrs[attr::pred] = ir::CmpPred::Eq;
      ir::Value* flip =
          insert_op(f_, body, y_at++, OpKind::Cast, {wrapped.result()}, {ring.phase->type}, loc)
              .result();
      yield.operands.push_back(
          insert_op(f_, body, y_at++, OpKind::Xor, {ring.phase, flip}, {ring.phase->type}, loc)
              .result());
    }
    if (ring.turn) {
      ir::Value* one = constant_i32(body, y_at, 1);
      yield.operands.push_back(
          insert_op(f_, body, y_at++, OpKind::Xor, {ring.turn, one}, {ring.turn->type}, loc)
              .result());
    }
    if (tiles_) {
      ir::Op& tile_yield = *tiles_->body().terminator();
      const size_t carried = tma_ ? 3 : 2;
      for (size_t k = loop_.results.size() - carried; k < loop_.results.size(); ++k)
        tile_yield.operands.push_back(loop_.results[k]);
    }
    // Drain before anything after the loop (the tile loop) touches shared memory.
    size_t after = index_in_block(tiles_ ? *tiles_ : loop_) + 1;
    ir::Op& drain = insert_op(f_, outer, after, OpKind::AsyncWait, {}, {}, loc);
    drain.attrs[attr::pending] = int64_t{0};
    if (tma_) // the barriers' memory may hold another loop's next
      insert_op(f_, outer, after + 1, OpKind::MbarInval, {bars_}, {}, loc);
  }

  // Before the tile loop: this loop's bounds there, its trip count n_in (at least 1, for the
  // divisions; the copies of a nest without K iterations are masked off) and the nest's.
  void count_iterations(ir::Block& b, size_t& at) {
    const ir::Type t = loop_.operands[0]->type;
    std::unordered_map<const ir::Value*, ir::Value*> memo;
    for (int i = 0; i < 3; ++i) // the same for every tile: computed here
      bound_[i] = rebind(b, at, loop_.operands[i], memo);
    auto trips = [&](ir::Value* lb, ir::Value* ub, ir::Value* step) {
      ir::Value* span = insert_op(f_, b, at++, OpKind::Sub, {ub, lb}, {t}, loop_.loc).result();
      ir::Value* one = constant_of(b, at, t, 1);
      ir::Value* up = insert_op(f_, b, at++, OpKind::Sub, {step, one}, {t}, loop_.loc).result();
      up = insert_op(f_, b, at++, OpKind::Add, {span, up}, {t}, loop_.loc).result();
      ir::Value* n = insert_op(f_, b, at++, OpKind::Div, {up, step}, {t}, loop_.loc).result();
      ir::Value* zero = constant_of(b, at, t, 0);
      ir::Op& pos = insert_op(f_, b, at++, OpKind::Cmp, {span, zero},
                              {ir::Type(ir::ScalarKind::I1)}, loop_.loc);
      pos.attrs[attr::pred] = ir::CmpPred::Gt;
      return insert_op(f_, b, at++, OpKind::Select, {pos.result(), n, zero}, {t}, loop_.loc)
          .result();
    };
    ir::Value* n_in = trips(bound_[0], bound_[1], bound_[2]);
    ir::Value* n_out = trips(tiles_->operands[0], tiles_->operands[1], tiles_->operands[2]);
    total_ = insert_op(f_, b, at++, OpKind::Mul, {n_out, n_in}, {t}, loop_.loc).result();
    ir::Value* one = constant_of(b, at, t, 1);
    n_safe_ = insert_op(f_, b, at++, OpKind::Max, {n_in, one}, {t}, loop_.loc).result();
  }

  // The copies of global iteration g of the nest (tile g / n_in, K step g % n_in) into ring
  // slot `slot`, masked off past the nest's last iteration.
  void issue_global(ir::Block& b, size_t& at, const std::vector<ir::Op*>& loads,
                    const std::vector<ir::Value*>& bufs, ir::Value* slot, ir::Value* g) {
    const ir::Type t = g->type;
    const ir::SourceLoc& loc = loop_.loc;
    ir::Value* o = insert_op(f_, b, at++, OpKind::Div, {g, n_safe_}, {t}, loc).result();
    ir::Value* ko = insert_op(f_, b, at++, OpKind::Mul, {o, n_safe_}, {t}, loc).result();
    ir::Value* k = insert_op(f_, b, at++, OpKind::Sub, {g, ko}, {t}, loc).result();
    std::unordered_map<const ir::Value*, ir::Value*> memo;
    ir::Value* step_o =
        insert_op(f_, b, at++, OpKind::Mul, {o, tiles_->operands[2]}, {t}, loc).result();
    memo[tiles_->body().args[0]] =
        insert_op(f_, b, at++, OpKind::Add, {tiles_->operands[0], step_o}, {t}, loc).result();
    ir::Value* step_k = insert_op(f_, b, at++, OpKind::Mul, {k, bound_[2]}, {t}, loc).result();
    memo[loop_.body().args[0]] =
        insert_op(f_, b, at++, OpKind::Add, {bound_[0], step_k}, {t}, loc).result();
    ir::Op& exists =
        insert_op(f_, b, at++, OpKind::Cmp, {g, total_}, {ir::Type(ir::ScalarKind::I1)}, loc);
    exists.attrs[attr::pred] = ir::CmpPred::Lt;
    for (size_t n = 0; n < loads.size() && tma_; ++n) {
      const ir::Op& h = *hints_[n];
      ir::Value* inner = rebind(b, at, h.operands[5 + fast_[n]], memo);
      ir::Value* outer = rebind(b, at, h.operands[6 - fast_[n]], memo);
      tma_copy(b, at, n, bufs[n], slot, inner, outer, exists.result());
    }
    for (size_t n = 0; n < loads.size() && !tma_; ++n) {
      const ir::Op& load = *loads[n];
      ir::Value* ptrs = rebind(b, at, load.operands[0], memo);
      ir::Type mt(ir::ScalarKind::I1, ptrs->type.shape);
      mt.layout = ptrs->type.layout;
      ir::Value* mask =
          insert_op(f_, b, at++, OpKind::Splat, {exists.result()}, {mt}, load.loc).result();
      if (load.operands.size() > 1)
        mask = insert_op(f_, b, at++, OpKind::And, {rebind(b, at, load.operands[1], memo), mask},
                         {mt}, load.loc)
                   .result();
      ir::Value* dst = index_buffer(b, at, bufs[n], slot);
      std::vector<ir::Value*> operands{dst, ptrs};
      if (mask)
        operands.push_back(mask);
      insert_op(f_, b, at++, OpKind::AsyncCopy, operands, {}, load.loc);
    }
  }

  // `v` recomputed at `at` from the induction variables `memo` binds (values of the nest are
  // copied; values from before it are themselves).
  ir::Value* rebind(ir::Block& b, size_t& at, ir::Value* v,
                    std::unordered_map<const ir::Value*, ir::Value*>& memo) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    if (!defined_in(v, tiles_->body()))
      return v;
    std::vector<ir::Value*> ops;
    for (ir::Value* x : v->def->operands)
      ops.push_back(rebind(b, at, x, memo));
    copy_op(f_, b, at, *v->def, ops, memo);
    return memo.at(v);
  }

  void remark(std::string text) {
    if (t_.remarks)
      t_.remarks->push_back(std::move(text));
  }

  // Two buffers for each conversion into shared memory in `convs`, before the loop; in the body,
  // the conversion writes the one the carried turn (0, 1, 0, ...) names. Returns the turn.
  ir::Value* take_turns(ir::Block& outer, size_t& at, const std::vector<ir::Op*>& convs) {
    ir::Value* turn = carry(f_, loop_, constant_i32(outer, at, 0));
    for (ir::Op* c : convs) {
      const ir::Type& t = c->result()->type;
      ir::Type bt(t.elem, {2, t.shape[0], t.shape[1]});
      bt.layout = t.layout;
      ir::Value* buf = insert_op(f_, outer, at++, OpKind::LocalAlloc, {}, {bt}, loop_.loc).result();
      ir::Block& body = loop_.body();
      size_t c_at = index_in_block(*c);
      ir::Value* slot = index_buffer(body, c_at, buf, turn);
      insert_op(f_, body, c_at, OpKind::LocalStore, {slot, c->operands[0]}, {}, c->loc);
      f_.replace_all_uses(c->result(), slot);
    }
    return turn;
  }

  // A transposed view of the shared tile `v` as `trans` transposes (the same bytes, the shape
  // permuted and the layout's order with it).
  ir::Value* shared_view(ir::Block& b, size_t& at, ir::Value* v, const ir::Op& trans) {
    ir::Type t = trans.result()->type;
    t.layout = transposed_shared(v->type.layout, trans.ints_attr(attr::order));
    ir::Op& tr = insert_op(f_, b, at++, OpKind::Trans, {v}, {t}, trans.loc);
    tr.attrs = trans.attrs;
    return tr.result();
  }

  bool candidate(const ir::Op& op, bool& in_registers) {
    if (op.kind != OpKind::Load || op.int_attr(attr::volatile_, 0) || op.result()->type.rank() != 2)
      return false;
    const ir::Op* cvt = operand_conversion(op, f_.entry(), t_.async_copy);
    if (!cvt)
      return false;
    // Without asynchronous copies a ring slot is written from registers and read back into
    // them: for a tile the body computes on before its dot (a weight dequantized on its way)
    // that is a second trip through shared memory beside the conversion's, and the ring's
    // shared memory beside its scratch. Such a load goes one iteration ahead in registers
    // instead (prefetch_to_registers), as Triton's AMD pipeliner keeps it. w4a16 on gfx942:
    // 53,248 B of LDS -> 28,672 (Triton's).
    if (!t_.async_copy && only_user(op.result(), f_.entry()) != cvt &&
        !direct_trans(op, f_.entry())) {
      in_registers = true;
      return false;
    }
    if (op.operands.size() > 2 && !zero_constant(op.operands[2]))
      return false; // copies fill masked elements with zeros only
    for (size_t k = 0; k < std::min<size_t>(2, op.operands.size()); ++k)
      if (!ahead_.predictable(op.operands[k]))
        return false;
    return true;
  }

  // A swizzled tile in the load's order, or K fastest (a lane's run of K is one vector read) for
  // operands read as loaded without ldmatrix (`k_fast`): not weights math dequantizes first.
  ir::LayoutPtr shared_for(const ir::Op& load, bool k_fast) {
    const ir::Type& t = load.result()->type;
    std::vector<int> order{1, 0};
    if (auto* b = dynamic_cast<const BlockedLayout*>(t.layout.get()))
      order = {b->order[0], b->order[1]};
    const ir::Op* cvt = operand_conversion(load, f_.entry(), t_.async_copy);
    for (const ir::Op* at = only_user(load.result(), f_.entry()); k_fast && at && at != cvt;
         at = only_user(at->result(), f_.entry()))
      k_fast = !ir::is_elementwise(at->kind);
    if (k_fast) {
      auto* op = dynamic_cast<const DotOperandLayout*>(cvt->result()->type.layout.get());
      int k_dim = op && op->op_idx == 1 ? 0 : 1;
      if (const ir::Op* tr = direct_trans(load, f_.entry())) // K's dimension in the tile as loaded
        k_dim = static_cast<int>(tr->ints_attr(attr::order)[k_dim]);
      order = {k_dim, 1 - k_dim};
    }
    return shared_layout(t.shape[order[0]], static_cast<int>(elem_bytes(t.elem)), order);
  }

  ir::Value* constant_i32(ir::Block& b, size_t& at, int64_t v) {
    return constant_of(b, at, ir::Type(ir::ScalarKind::I32), v);
  }

  ir::Value* index_buffer(ir::Block& b, size_t& at, ir::Value* buf, ir::Value* slot) {
    ir::Type t = buf->type;
    t.shape.erase(t.shape.begin());
    return insert_op(f_, b, at++, OpKind::MemdescIndex, {buf, slot}, {t}, loop_.loc).result();
  }

  ir::Value* next_slot(ir::Block& b, size_t& at, ir::Value* s) {
    ir::Value* one = constant_i32(b, at, 1);
    ir::Value* n = constant_i32(b, at, static_cast<int>(slots_));
    ir::Value* inc = insert_op(f_, b, at++, OpKind::Add, {s, one}, {s->type}, loop_.loc).result();
    ir::Op& wrap =
        insert_op(f_, b, at++, OpKind::Cmp, {inc, n}, {ir::Type(ir::ScalarKind::I1)}, loop_.loc);
    wrap.attrs[attr::pred] = ir::CmpPred::Eq;
    ir::Value* zero = constant_i32(b, at, 0);
    return insert_op(f_, b, at++, OpKind::Select, {wrap.result(), zero, inc}, {s->type}, loop_.loc)
        .result();
  }

  ir::Value* constant_of(ir::Block& b, size_t& at, const ir::Type& t, int64_t v) {
    return gpu::constant_of(f_, b, at, t, v, loop_.loc);
  }

  // Pointers and mask of `load` at iteration +d. In the body, where a copy goes through
  // registers and the load has no mask of its own that would make it a branch anyway, a copy
  // past the loop's end rereads this iteration's addresses instead of being masked into one
  // (a buffer load's mask is a select of its offset: kept).
  std::pair<ir::Value*, ir::Value*> address_ahead(ir::Block& b, size_t& at, const ir::Op& load,
                                                  const Bindings& bind, int d,
                                                  ValueMap* shared = nullptr) {
    const bool branch = !t_.buffer_ops || !buffer_addressable(f_, load.operands[0]);
    return ahead_.address(b, at, load, bind, d,
                          branch && load.operands.size() == 1 && !t_.async_copy &&
                              bind.iv == loop_.body().args[0],
                          shared);
  }

  // Load n's copy at iteration +d into ring slot `slot` of `buf`, only while that iteration
  // exists: async_copy of its pointers and mask, or the TMA copy of its box (`memo`: the slot's).
  void issue_copy(ir::Block& b, size_t& at, size_t n, ir::Value* buf, ir::Value* slot,
                  const Bindings& bind, int d, ValueMap& memo) {
    const ir::Op& load = *loads_[n];
    if (!tma_) {
      auto [ptrs, mask] = address_ahead(b, at, load, bind, d, &memo);
      ir::Value* dst = index_buffer(b, at, buf, slot);
      std::vector<ir::Value*> operands{dst, ptrs};
      if (mask)
        operands.push_back(mask);
      insert_op(f_, b, at++, OpKind::AsyncCopy, operands, {}, load.loc);
      return;
    }
    ir::Value* exists = ahead_.exists(b, at, bind, d, memo);
    const ir::Op& h = *hints_[n];
    ir::Value* inner = ahead_.value(b, at, h.operands[5 + fast_[n]], bind, d, memo);
    ir::Value* outer = ahead_.value(b, at, h.operands[6 - fast_[n]], bind, d, memo);
    tma_copy(b, at, n, buf, slot, inner, outer, exists);
  }

  void tma_copy(ir::Block& b, size_t& at, size_t n, ir::Value* buf, ir::Value* slot,
                ir::Value* inner, ir::Value* outer, ir::Value* pred) {
    ir::Value* dst = index_buffer(b, at, buf, slot);
    ir::Value* bar = index_buffer(b, at, bars_, slot);
    insert_op(f_, b, at++, OpKind::TmaCopy, {dst, maps_[n], inner, outer, bar, pred}, {},
              loads_[n]->loc);
  }

  // Closes the copies of one ring slot: a commit group for async copies (TMA copies complete
  // on the slot's mbarrier instead).
  void commit(ir::Block& b, size_t& at) {
    if (!tma_)
      insert_op(f_, b, at++, OpKind::AsyncCommit, {}, {}, loop_.loc);
  }

  // TMA for the ring when every load is a descriptor's that TMA can copy (plan_tma); fills
  // hints_ and fast_. `bytes`: what the loop takes besides its rings (in used_) and barriers.
  bool use_tma(const std::vector<ir::Op*>& loads, int64_t bytes) {
    if (used_ + bytes + 1024 > max_shared_)
      return false;
    std::optional<TmaPlan> plan = plan_tma(f_, loop_, tiles_, loads, ahead_);
    if (!plan)
      return false;
    hints_ = std::move(plan->hints);
    fast_ = std::move(plan->fast);
    return true;
  }

  // Before the nest: a tensor map per load, the slots' mbarriers (one arrival per load).
  void make_maps(ir::Block& b, size_t& at, const std::vector<ir::Op*>& loads,
                 const std::vector<ir::Value*>& bufs) {
    int64_t slot = 0;
    ir::walk(f_.entry(), [&](ir::Op& op) { slot += op.kind == OpKind::TmaCreate; });
    for (size_t n = 0; n < loads.size(); ++n) {
      const ir::Op& h = *hints_[n];
      const ir::Type& t = bufs[n]->type;
      const int fast = fast_[n];
      auto* s = dynamic_cast<const SharedLayout*>(t.layout.get());
      const int64_t cols = t.shape[1 + fast], rows = t.shape[2 - fast];
      const int64_t block = s->block_cols ? std::min<int64_t>(s->block_cols, cols) : cols;
      ir::Op& m = insert_op(
          f_, b, at++, OpKind::TmaCreate,
          {h.operands[0], h.operands[1 + fast], h.operands[2 - fast], h.operands[4 - fast]},
          {h.operands[0]->type}, loads[n]->loc);
      m.attrs[attr::box] = std::vector<int64_t>{block, rows};
      m.attrs[attr::swizzle] = block * elem_bytes(t.elem);
      m.attrs[attr::slot] = slot++;
      maps_.push_back(m.result());
    }
    ir::Type bt(ir::ScalarKind::I64, {stages_, 1, 1});
    bt.layout = shared_layout(1, 8, {1, 0});
    bars_ = insert_op(f_, b, at++, OpKind::LocalAlloc, {}, {bt}, loop_.loc).result();
    ir::Op& init = insert_op(f_, b, at++, OpKind::MbarInit, {bars_}, {}, loop_.loc);
    init.attrs[attr::count] = static_cast<int64_t>(loads.size());
  }

  // `load` at iteration +d, into registers.
  ir::Value* issue_load(ir::Block& b, size_t& at, const ir::Op& load, const Bindings& bind, int d) {
    auto [ptrs, mask] = address_ahead(b, at, load, bind, d);
    std::vector<ir::Value*> operands{ptrs};
    if (mask)
      operands.push_back(mask);
    if (mask && load.operands.size() > 2) { // loop-invariant, but maybe computed in the body
      std::unordered_map<const ir::Value*, ir::Value*> memo;
      operands.push_back(ahead_.value(b, at, load.operands[2], bind, d, memo));
    }
    ir::Op& l = insert_op(f_, b, at++, OpKind::Load, operands, {load.result()->type}, load.loc);
    l.attrs = load.attrs;
    return l.result();
  }

  // Loads in a pipelined loop that do not feed a matrix instruction (Xn = X * rstd * w before a
  // dot, say) go one iteration ahead in registers, as Triton does: the value for iteration i+1
  // is loaded in iteration i and carried by the loop, so its latency hides behind
  // the iteration's matrix work instead of stalling the next one. Only in loops that store
  // nothing: a store in the body could be what a later iteration loads.
  void prefetch_to_registers(const std::vector<ir::Op*>& rings) {
    ir::Block& body = loop_.body();
    bool stores = false;
    ir::walk(body,
             [&](ir::Op& op) { stores |= ir::has_trait(op.kind, ir::OpTrait::WritesMemory); });
    if (stores)
      return;
    // Index loads the rings' addresses go through stay: the copies load them again ahead.
    const std::unordered_set<const ir::Op*> indices = address_ops(body, rings);
    std::vector<ir::Op*> loads;
    for (auto& op : body.ops) {
      if (op->kind != OpKind::Load || op->int_attr(attr::volatile_, 0) ||
          std::find(rings.begin(), rings.end(), op.get()) != rings.end() || indices.count(op.get()))
        continue;
      bool ok = true;
      for (size_t k = 0; k < std::min<size_t>(2, op->operands.size()); ++k)
        ok = ok && ahead_.predictable(op->operands[k]);
      if (op->operands.size() > 2)
        ok = ok && ahead_.invariant(op->operands[2]);
      if (ok)
        loads.push_back(op.get());
    }
    if (loads.empty())
      return;
    ir::Block& outer = *loop_.parent;
    size_t at = index_in_block(loop_);
    Bindings pro{loop_.operands[0], {}};
    for (size_t k = 0; k + 1 < body.args.size(); ++k)
      pro.args[body.args[k + 1]] = loop_.operands[3 + k];
    Bindings next{body.args[0], {}};
    for (size_t k = 1; k < body.args.size(); ++k)
      next.args[body.args[k]] = body.args[k];
    ir::Op& yield = *body.terminator();
    // Where copies are asynchronous the next iteration's loads go at the top of the body (after
    // the rings' wait, inserted before them later), so that the whole iteration hides their
    // latency: issued at its end they stalled the next iteration's first use (w4a16 M16 on
    // the H200 1.36 -> 1.31 x Triton). There the big tiles are in rings and what is held
    // across the iteration is small (scales, zero points). Without asynchronous copies the
    // dequantized tiles themselves come here (candidate), and holding them across the
    // iteration cost 12-36 VGPRs (w8a16 4096^3 gfx942 99 -> 114): they go at the end.
    size_t top = 0;
    for (ir::Op* l : loads) {
      ir::Value* arg = carry(f_, loop_, issue_load(outer, at, *l, pro, 0));
      f_.replace_all_uses(l->result(), arg);
      size_t end = body.ops.size() - 1;
      yield.operands.push_back(issue_load(body, t_.async_copy ? top : end, *l, next, 1));
    }
    erase_dead_ops(f_);
  }

  ir::Function& f_;
  const GpuFeatures& t_;
  ir::Op& loop_;
  const ir::Op& top_; // the top-level op the loop is in (or the loop)
  int64_t stages_;
  int64_t slots_ = 0; // of each ring: stages_, or one without asynchronous copies
  int64_t max_shared_;
  int64_t& used_; // shared memory the loops pipelined so far take
  bool k_fast_;
  IterationAhead ahead_;
  // Across tiles: the tile loop, this loop's bounds before it, the nest's iteration count and
  // max(n_in, 1).
  ir::Op* tiles_ = nullptr;
  ir::Value* bound_[3] = {};
  ir::Value* total_ = nullptr;
  ir::Value* n_safe_ = nullptr;
  // TMA: whether the ring is filled by it; per load its desc_hint, the tile dimension its
  // rows run along (stride 1) and its tensor map; the mbarriers, one per slot.
  std::vector<ir::Op*> loads_; // the loads becoming rings
  bool tma_ = false;
  std::vector<ir::Op*> hints_;
  std::vector<int> fast_;
  std::vector<ir::Value*> maps_;
  ir::Value* bars_ = nullptr;
};

void collect(ir::Block& b, std::vector<ir::Op*>& loops) {
  for (auto& op : b.ops) {
    for (auto& r : op->regions)
      collect(*r->block, loops);
    if (op->kind == OpKind::For)
      loops.push_back(op.get());
  }
}

} // namespace

void pipeline(ir::Function& f, const GpuFeatures& t) {
  std::vector<ir::Op*> loops;
  collect(f.entry(), loops);
  // The rings of loops under different top-level ops are never live together (each loop drains
  // its copies and waits at a barrier after it), and the lowering places them in the same
  // shared memory: each top-level op has the whole budget.
  std::map<const ir::Op*, int64_t> used;
  for (ir::Op* loop : loops) {
    const ir::Op* top = loop;
    while (top->parent && top->parent != &f.entry())
      top = top->parent->parent->parent; // op -> block -> region -> op
    int stages = static_cast<int>(loop->int_attr(attr::num_stages, t.num_stages));
    if (stages >= 2)
      Pipeliner(f, *loop, *top, stages, t, used[top]).run();
  }
}

} // namespace tritium::gpu
