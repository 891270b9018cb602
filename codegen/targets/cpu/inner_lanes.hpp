// Where the masks of a loop nest's innermost loop hold, in closed form (inner_lanes.cpp).
#pragma once

#include "lowering.hpp"

#include <optional>

namespace tritium::cpu {

// For one iteration of a group's outer loops: the lanes of its innermost loop where a mask
// holds, when the mask is a conjunction of comparisons `i + a < b` (and `<=`, `>`, `>=`) of the
// innermost index i against values the innermost loop does not change, seen through
// broadcasts, expand_dims and transpositions, and of masks the innermost loop does not change
// (a row's `rm < M`). Such a mask holds exactly on a prefix [0, count) of the lanes: Triton's
// 2-D tiles are masked so, and the lanes before `count` load and store without masks.
class InnerLanes {
public:
  // outer: the outer loops' indices (rank - 1 of them); n: the innermost loop's trip count.
  InnerLanes(KernelLowering& k, std::vector<llvm::Value*> outer, int64_t n);

  struct Prefix {
    llvm::Value* count; // i64: every lane before it holds
    llvm::Value* end;   // i64: no lane from it on holds (n where unknown)
  };
  // nullopt where the mask has another form (emits dead code then, which LLVM removes).
  std::optional<Prefix> prefix(const ir::Value* mask);

private:
  // A signed integer value along the innermost loop: unit ? i + offset : offset.
  struct Affine {
    bool unit;
    llvm::Value* offset; // i64
  };
  std::optional<Prefix> mask_prefix(const ir::Value* m, std::vector<llvm::Value*> idx, int inner);
  std::optional<Affine> affine(const ir::Value* v, std::vector<llvm::Value*> idx, int inner);
  std::optional<Prefix> compare(const ir::Op& cmp, const std::vector<llvm::Value*>& idx, int inner);
  // The indices of an operand of a broadcast, expand_dims or trans, and where the innermost
  // index went (-1: the operand does not vary along it). false for another op.
  bool operand_index(const ir::Op& op, std::vector<llvm::Value*>& idx, int& inner);
  llvm::Value* invariant(const ir::Value* v, std::vector<llvm::Value*> idx, int inner);
  llvm::Value* clamp(llvm::Value* c);

  KernelLowering& k_;
  std::vector<llvm::Value*> outer_;
  int64_t n_;
};

} // namespace tritium::cpu
