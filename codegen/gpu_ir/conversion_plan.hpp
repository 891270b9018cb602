// Where a layout conversion through shared memory puts each element: a linear map (over GF(2))
// from the tile's coordinate bits to the bits of the element's offset in the scratch tile.
//
// One side (the one whose vectors save more instructions) gets its first register bases as the
// offset's lowest bits, so its threads write (or read) 16-byte vectors; its lanes follow, so a
// phase of its accesses covers consecutive chunks and no two share a bank. The other side's
// lanes land wherever that puts them; those that would meet in one bank (their bits above the
// bank bits) are XORed into free bank bits: the swizzle, chosen per conversion from the two
// layouts rather than fixed. No padding: the scratch is the tile's size.
//
// The plan is data, so that tests can count bank conflicts without a GPU.
#pragma once

#include "layout.hpp" // (beside this file: tests include it by path)

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tritium::gpu {

struct ConversionPlan {
  // The offset (in elements) each basis of each side selects; a thread's register r is at the
  // XOR of its register bases' offsets and its lane and warp bases' offsets.
  struct Side {
    std::vector<int64_t> reg, lane, warp;
    int vec = 1; // consecutive registers accessed as one vector
    // Accessed by 8x8 matrix instructions of 16-bit elements, four matrices each (stmatrix /
    // ldmatrix x4). Such a side's layout holds, in each thread, pairs of a row's elements
    // (register bit 0), its lanes 0-1 the row's other bits and lanes 2-4 the rows: a matrix
    // fragment. The bases above are then the instruction's view of it: `reg` is [reg 0, lane
    // 0, lane 1, reg 3, ...] (a row of 8 elements is the vector), `lane` is [lane 2, lane 3,
    // lane 4, reg 1, reg 2] (lane l gives the address of row l % 8 of matrix l / 8, which is
    // the thread's register pair 2 * (l / 8)). vec is 8.
    bool matrix = false;
  };
  Side write, read; // from `from` (written) and `to` (read)
  int64_t elements = 0;
};

// Which side may use 8x8 matrix instructions: the target's stmatrix (write) and ldmatrix (read).
struct MatrixAccess {
  bool write = false, read = false;
};

// `bank_bytes` * `banks` is one row of banks (4 * 32 on NVIDIA and AMD).
ConversionPlan plan_conversion(const LinearLayout& from, const LinearLayout& to, int elem_bytes,
                               MatrixAccess matrix = {}, int banks = 32, int bank_bytes = 4);

// The largest number of distinct bank words one bank serves in one access of one warp (1: no
// conflict), over every access the side makes; 32-lane phases for accesses up to 4 bytes, 16
// for 8, 8 for 16, as the hardware splits them.
int bank_conflicts(const ConversionPlan::Side& side, int elem_bytes, int warp_size);

// A conversion that only exchanges lane bits with register bits within each warp: the (lane
// bit, register bit) swaps, applied in order, that turn `from` into `to` (up to the order of
// registers), each one XOR shuffle per register pair; nullopt where warps differ or a lane bit
// of `to` is in no register of `from`. A lane bit that `to` broadcasts is gathered instead
// (register bit kGatherLane): every register is shuffled once and both lanes keep both values,
// the lane's basis becoming a new last register basis (an RDNA3 transposed WMMA accumulator,
// which holds every other column of a row in each half of the wave, as the next WMMA's a).
inline constexpr size_t kGatherLane = ~size_t{0};
std::optional<std::vector<std::pair<size_t, size_t>>> lane_swaps(const LinearLayout& from,
                                                                 const LinearLayout& to);
// One step of lane_swaps applied to a layout.
void apply_lane_step(LinearLayout& l, size_t lane_bit, size_t reg_bit);

// A conversion whose tile would take more than `max_bytes` of scratch goes through it in rounds
// (as Triton repeats a conversion over its tiles, but finer): a round fixes some coordinate bits,
// so it moves 1/2^peeled of the tile and the scratch holds one round. A peeled bit is a register
// or a warp bit on each side: where it is a register bit, each thread moves the registers of the
// round; where it is a warp bit, the warps of the round move all of theirs and the others wait.
// Register bits on both sides are peeled first (every thread busy in every round), then bits
// that are a register on one side and a warp on the other, then warp bits on both; within a
// kind, the bases late in the register lists (repetitions, never a vector's). Lane bits are
// never peeled (a warp would diverge). A tile with too few such bits takes what it must.
struct ConversionRounds {
  // Where a peeled coordinate bit sits on one side: a register basis or a warp basis.
  struct Place {
    int reg = -1, warp = -1; // its index in reg or warp (the other -1)
  };
  struct Peel {
    Place from, to;
  };
  std::vector<Peel> peeled; // round t's bit i fixes peeled[i]
  LinearLayout from, to;    // one round's layouts: peeled bases gone, coordinates compacted
  int rounds() const { return 1 << peeled.size(); }
  // The register index in the whole layout of `side` (from: false) of register r of round t.
  int full_reg(bool to_side, int round, int r) const;
  // The warp id bits a thread's warp must have (mask, value) to take part in round t on a side.
  std::pair<unsigned, unsigned> warps_of_round(bool to_side, int round) const;
};
ConversionRounds split_conversion(const LinearLayout& from, const LinearLayout& to,
                                  int64_t elem_bytes, int64_t max_bytes);

// The most scratch one round of a conversion takes on a target whose blocks have
// `max_shared_bytes` (the lowering and the pipeliner's budget): a third of it, from 16 to
// 64 KiB, so that rings and other scratch keep the rest. (H200, descriptor-persistent GEMM 8192^2 x
// 512: its 64 KiB epilogue tile in one round, 137 us, against four of 16 KiB, 145 us.)
// TRITIUM_CONVERSION_ROUND_BYTES overrides it (a tuning knob, read once; 0: whole tiles).
int64_t conversion_round_bytes(int64_t max_shared_bytes);

// The scratch bytes the lowering takes to convert `from` to `to` through shared memory.
int64_t conversion_round_scratch(const LinearLayout& from, const LinearLayout& to,
                                 int64_t elem_bytes, int64_t max_shared_bytes);

// Whether converting `from` to `to` needs no shared memory: the same layout, a renaming of
// registers, or lane swaps (what the lowering tries before a round trip through scratch).
bool converts_in_registers(const LinearLayout& from, const LinearLayout& to);

} // namespace tritium::gpu
