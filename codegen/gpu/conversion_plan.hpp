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
  };
  Side write, read; // from `from` (written) and `to` (read)
  int64_t elements = 0;
};

// `bank_bytes` * `banks` is one row of banks (4 * 32 on NVIDIA and AMD).
ConversionPlan plan_conversion(const LinearLayout& from, const LinearLayout& to, int elem_bytes,
                               int banks = 32, int bank_bytes = 4);

// The largest number of distinct bank words one bank serves in one access of one warp (1: no
// conflict), over every access the side makes; 32-lane phases for accesses up to 4 bytes, 16
// for 8, 8 for 16, as the hardware splits them.
int bank_conflicts(const ConversionPlan::Side& side, int elem_bytes, int warp_size);

// A conversion that only exchanges lane bits with register bits within each warp: the (lane
// bit, register bit) swaps, applied in order, that turn `from` into `to` (up to the order of
// registers), each one XOR shuffle per register pair; nullopt where warps differ or a lane bit
// of `to` is in no register of `from`.
std::optional<std::vector<std::pair<size_t, size_t>>> lane_swaps(const LinearLayout& from,
                                                                 const LinearLayout& to);

// Whether converting `from` to `to` needs no shared memory: the same layout, a renaming of
// registers, or lane swaps (what the lowering tries before a round trip through scratch).
bool converts_in_registers(const LinearLayout& from, const LinearLayout& to);

} // namespace tritium::gpu
