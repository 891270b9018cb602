// The rule that keeps one of the driver's two assemblies of a PTX kernel (jit_choice.hpp).
#include "../../runtime/cuda/jit_choice.hpp"

#include <doctest/doctest.h>

using tritium::cuda::Assembly;
using tritium::cuda::prefer_whole_program;

TEST_CASE("cuda jit choice: no spills first, then blocks an SM, then registers, then the cubin") {
  // SwiGLU forward on an H200: 122 registers and one 512-thread block through the linker, 40
  // and three as a whole program.
  CHECK(prefer_whole_program({1, 122, 0}, {3, 40, 0}));
  // The M-16 int8-weight GEMM: shared memory allows four blocks either way; the whole-program
  // assembly trimmed registers (64 against 105) for blocks that cannot come.
  CHECK_FALSE(prefer_whole_program({4, 105, 0}, {4, 64, 0}));
  CHECK(prefer_whole_program({4, 64, 0}, {4, 105, 0}));
  // Equal: the linker's, whose cubin is cached.
  CHECK_FALSE(prefer_whole_program({2, 96, 0}, {2, 96, 0}));
  // Spills lose to any occupancy.
  CHECK(prefer_whole_program({4, 64, 32}, {1, 255, 0}));
  CHECK_FALSE(prefer_whole_program({1, 255, 0}, {4, 64, 32}));
  // Both spill: occupancy, then registers, as without.
  CHECK(prefer_whole_program({1, 255, 64}, {2, 128, 256}));
}
