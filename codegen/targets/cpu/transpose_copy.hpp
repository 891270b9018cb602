// Transposed tiles copied through registers (transpose_copy.cpp).
#pragma once

#include "lowering.hpp"

namespace tritium::cpu {

// Whether reading `v` row-major strides through memory along its innermost dimension while
// another dimension is contiguous (a `trans` of a buffered tile), in whole blocks of `lanes` x
// `lanes` 32-bit elements: a loop over its innermost dimension then gathers one element per
// load.
bool transposed_view(const View& v, int64_t lanes);

// `src` (a transposed_view) copied into `dst` (row-major, the same shape): blocks of lanes x
// lanes elements loaded as vectors along the contiguous dimension and transposed in registers
// by log2(lanes) rounds of interleaves, then stored as vectors along the innermost one.
void transposed_copy(KernelLowering& k, const View& src, const View& dst, int64_t lanes);

} // namespace tritium::cpu
