// What the pipeliner asks of a loop before it rewrites it: which loads reach a dot and how,
// the shared memory the loop needs beside its rings, and which wgmma dot may stay in flight
// across iterations. Queries only: nothing here changes the IR.
#pragma once

#include "passes/iteration_ahead.hpp"

#include <tritium/ir/ir.hpp>

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

namespace tritium::gpu {

// The op that is the only reader of `v` among the ops nested in `scope`, or null.
ir::Op* only_user(const ir::Value* v, const ir::Block& scope);
// Whether `v` is a constant (maybe splat or converted) equal to zero / a positive integer.
bool zero_constant(const ir::Value* v);
bool positive_constant(const ir::Value* v);

// The conversion into a dot operand's layout (registers or shared memory) that `load` feeds:
// its only user, or the end of a chain of elementwise ops each used once, in the load's
// block (a weight dequantized on its way: cast, shifts and masks, scale), or null. `scope`:
// where its users are looked for (the function's entry block). through_broadcast: broadcasts
// may be in the chain too (a scale's row widened over the weight's tile, expand_loads.cpp),
// where copies are asynchronous (pipeline.cpp).
ir::Op* operand_conversion(const ir::Op& load, const ir::Block& scope,
                           bool through_broadcast = false);
// The transposition when `load` reaches its dot operand through that alone (attention's
// dot(q, trans(k))): then the ring holds the tile as loaded and the operand is read through
// a transposed view of it, as the hardware reads any other operand. Null otherwise.
ir::Op* direct_trans(const ir::Op& load, const ir::Block& scope);

// Whether `v` is a pure function of the induction variables of `loop` and of the tile loop
// `tiles` around it and of values fixed for the nest.
bool tiled(const ir::Value* v, const ir::Op& tiles, const ir::Op& loop, int depth = 0);
// The tile loop a ring of `loads` can run across: the loop around `loop`, marked flatten
// (Triton's flatten: the nest as one loop), when the loads' addresses are pure functions of
// the two induction variables and of values fixed for the nest, both steps positive
// constants, and this loop's bounds the same for every tile (pure functions of values from
// before the tile loop). Else null.
ir::Op* flattened_tile_loop(const ir::Op& loop, const std::vector<ir::Op*>& loads);

// Shared memory, as the lowering places it.
// The scratch a conversion between two distributed layouts takes (one round of it, as the
// lowering moves it); 0 for any other op, or one that stays in registers.
int64_t conversion_scratch(const ir::Op& op, int64_t max_shared);
// Bytes of the shared-memory tiles (conversions into shared memory) the loop makes or reads,
// other than those of `loads` (becoming rings), 1 KiB aligned each.
int64_t tile_bytes(const ir::Op& loop, const std::vector<ir::Op*>& loads);
// The scratch of the conversions in the loop that go through shared memory (attention's P into
// the second dot's operand), which the lowering places above the rings; the operand
// conversions of `loads` (becoming rings) excepted.
int64_t loop_scratch_bytes(const ir::Op& loop, const std::vector<ir::Op*>& loads,
                           const ir::Block& scope, int64_t max_shared);
// Scratch that conversions outside `loop` but inside the same top-level op `top` take while
// the rings are live (a persistent kernel's epilogue between its K loops): the lowering
// places it above them.
int64_t outer_scratch_bytes(const ir::Op& top, const ir::Op& loop, int64_t max_shared);

// The wgmma dots left in flight across iterations (deferred_wgmma), in the body's order,
// whether they chain on their accumulators, and the tiles that take turns for them.
struct Deferral {
  std::vector<ir::Op*> dots;
  bool chained = false;
  std::vector<ir::Op*> turns;
};

// The wgmma dots `loads` feed (b maybe through its transpose) whose results only the next
// iteration reads (through the values the loop carries), and only where the wait of another
// dot has already completed them:
//   * acc = dot(a, b, acc), the GEMM (chained): the next dot takes the running accumulator.
//     Every such dot of the body (a gated MLP's gate and up products share a): with n in
//     flight, each waits until n groups are left, which completes its own of the iteration
//     before;
//   * else one, attention's acc = dot(p, v, acc * alpha): every read of the carried acc comes
//     after the next iteration's first dot (q k^T), whose wait (for every group) completes it.
// Operands in shared memory must be ring slots, tiles made before the loop, or tiles the body
// converts for that dot alone (turns: they take turns between two buffers).
Deferral deferred_wgmma(const ir::Op& loop, const std::vector<ir::Op*>& loads,
                        const ir::Block& scope);

// The ops of `body` the operands of `loads` are computed by, transitively (their addresses,
// masks and what those read: an index load among them).
std::unordered_set<const ir::Op*> address_ops(const ir::Block& body,
                                              const std::vector<ir::Op*>& loads);

// TMA for the ring of `loads` (of `loop`, or across `tiles` when not null): where every load is
// a tensor descriptor's (a desc_hint describes it) whose tile TMA can copy into the shared
// layout its conversion asks for, the hint of each and the dimension its rows run along
// (stride 1). Null where one cannot be.
struct TmaPlan {
  std::vector<ir::Op*> hints;
  std::vector<int> fast;
};
std::optional<TmaPlan> plan_tma(ir::Function& f, const ir::Op& loop, const ir::Op* tiles,
                                const std::vector<ir::Op*>& loads, const IterationAhead& ahead);

} // namespace tritium::gpu
