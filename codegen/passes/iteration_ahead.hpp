// The values of a loop's body at a later iteration, computed where the pipeline issues its
// copies: from the induction variable, values from before the loop, and carried values advanced
// by a loop-invariant step each iteration (`p = p + inc`, the GEMM idiom), through pure ops and
// through loads of small integer vectors (a paged KV cache's page numbers, an expert id) where
// the loop writes no memory: those are loaded again for the later iteration.
#pragma once

#include <tritium/ir/ir.hpp>

#include <unordered_map>
#include <utility>
#include <vector>

namespace tritium::gpu {

using ValueMap = std::unordered_map<const ir::Value*, ir::Value*>;

// Whether `v` is a block argument of `body` or the result of an op nested anywhere in it.
bool defined_in(const ir::Value* v, const ir::Block& body);
// Whether `v` is the same in every iteration of the loop whose body is `scope`: defined outside
// it, or by pure ops on such values.
bool invariant_in(const ir::Value* v, const ir::Block& scope, int depth = 0);
// A copy of `def` at `at` on `operands`; `memo` maps def's results to the copy's.
void copy_op(ir::Function& f, ir::Block& b, size_t& at, const ir::Op& def,
             const std::vector<ir::Value*>& operands, ValueMap& memo);
// The scalar constant `v` of `t`'s element type, at `at`.
ir::Value* constant_of(ir::Function& f, ir::Block& b, size_t& at, const ir::Type& t, int64_t v,
                       const ir::SourceLoc& loc);

class IterationAhead {
public:
  // The values an iteration starts from: the induction variable and the carried values.
  struct Bindings {
    ir::Value* iv;
    ValueMap args;
  };

  // `index_loads`: through index loads too (see index_load).
  IterationAhead(ir::Function& f, ir::Op& loop, bool index_loads);

  bool invariant(const ir::Value* v) const { return invariant_in(v, loop_.body()); }
  // Whether `v` can be computed for another iteration.
  bool predictable(const ir::Value* v, int depth = 0) const;
  // The value of `v` `d` iterations after the iteration `bind` describes, computed at `at`.
  ir::Value* value(ir::Block& b, size_t& at, ir::Value* v, const Bindings& bind, int d,
                   ValueMap& memo);
  // Whether iteration +d exists: step > 0 ? iv' < ub : iv' > ub.
  ir::Value* exists(ir::Block& b, size_t& at, const Bindings& bind, int d, ValueMap& memo);
  // The pointers and mask of `load` at iteration +d. Where that iteration does not exist they
  // are masked off, or, with `reuse` (in the body, where the iteration `bind` describes runs),
  // are that iteration's own: an address the body reads anyway instead of a mask on every
  // access (the mask is then the load's own, or null).
  // `shared`: values computed for loads issued before this one at the same place, iteration
  // and bindings (two tiles addressed through one index load load it once); not with `reuse`.
  std::pair<ir::Value*, ir::Value*> address(ir::Block& b, size_t& at, const ir::Op& load,
                                            const Bindings& bind, int d, bool reuse,
                                            ValueMap* shared = nullptr);

private:
  // A load whose value is an index for other loads' addresses, that can be repeated ahead.
  bool index_load(const ir::Op& load) const;
  // Adds iteration +d's existence to the mask of a load copied for it (ops: its operands).
  void guard_load(ir::Block& b, size_t& at, std::vector<ir::Value*>& ops, const Bindings& bind,
                  int d, ValueMap& memo);
  // d, or with `reuse` under way, d where iteration +d exists and 0 where it does not.
  ir::Value* distance(ir::Block& b, size_t& at, const ir::Type& t, int d);

  ir::Function& f_;
  ir::Op& loop_;
  // Carried values advanced by a loop-invariant step: yield = addptr(arg, inc) / add(arg, inc).
  std::unordered_map<const ir::Value*, ir::Op*> steps_;
  bool index_loads_;
  bool writes_ = false;         // the body writes memory (a load there may see its own stores)
  ir::Value* exists_ = nullptr; // while `address` reuses
};

} // namespace tritium::gpu
