// bench_roofline's "cpp_kernel" for the layer norms: tutorial 05's layer norm written by hand
// in C++ (cpp_layer_norm.cpp), so that tritium's kernel is compared with the same algorithm as
// well as with the plain loop of the same traffic.
#pragma once

#include <cstdint>

namespace roofline {

// Whether this build has the hand-written kernel (x86 with F16C, AVX2 and FMA).
bool cpp_layer_norm_available();

// Rows lo .. hi-1 of an n-column f16 layer norm: y = (x - mean) * rstd * w + b, with the rows'
// mean and rstd stored as tutorial 05's kernel stores them.
void cpp_layer_norm_rows(const uint16_t* x, const uint16_t* w, const uint16_t* b, uint16_t* y,
                         float* mean, float* rstd, int64_t n, float eps, int64_t lo, int64_t hi);

} // namespace roofline
