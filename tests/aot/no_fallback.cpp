// An AOT launcher built without JIT_FALLBACK (and without libtritium): built specializations
// run; any other launch is an error that names what was built. Exits non-zero on a failure.
#include "no_fallback_kernels.hpp"

#include <cstdio>
#include <string>
#include <vector>

int main() {
  namespace aot = tritium::aot;
  std::vector<float> x(512, 2.f), out(512, 0.f);
  int failures = 0;
  auto ran = no_fallback_kernels::scale_kernel({.grid = {2}, .device = "cpu"}, x.data(), out.data(),
                                               3.f, 512, 256);
  if (out[511] != 6.f || ran.find("256") == std::string_view::npos) {
    std::printf("FAIL: the built specialization did not run right\n");
    ++failures;
  }
  try {
    no_fallback_kernels::scale_kernel({.grid = {8}, .device = "cpu"}, x.data(), out.data(), 3.f,
                                      512, 64);
    std::printf("FAIL: BLOCK=64 was not built but launched\n");
    ++failures;
  } catch (const tritium::Error& e) {
    std::printf("expected error: %s\n", e.what());
    if (std::string(e.what()).find("no built specialization matches") == std::string::npos ||
        std::string(e.what()).find("scale_kernel(_, _, _, _, 256)") == std::string::npos) {
      std::printf("FAIL: the error does not say what was built\n");
      ++failures;
    }
  }
  std::printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures;
}
