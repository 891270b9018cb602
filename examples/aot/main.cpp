// Ahead-of-time kernels: this program launches a tritium kernel without libtritium, LLVM, or a
// compiler at run time. tritium_add_kernels (CMakeLists.txt) traced axpy_kernel (kernels.cpp)
// at build time for NVIDIA (PTX), AMD (HSACO) and this CPU, and generated the typed launcher
// in aot_axpy_kernels.hpp; the program links only tritium::aot, which opens the GPU driver
// when there is one.
//
//   aot_axpy [N] [--device cuda:0|hip|cpu]      (default: TRITIUM_DEVICE, else a GPU, else cpu)
//
// Two specializations were built: one for 16-byte aligned pointers and n % 16 == 0, one with no
// assumptions. Each launch takes the first whose assumptions its arguments meet.
#include "aot_axpy_kernels.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace aot = tritium::aot;

int main(int argc, char** argv) {
  try {
    int n = 1 << 20;
    std::string device = aot::default_device();
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      char* end = nullptr;
      if (a == "--device" && i + 1 < argc)
        device = argv[++i];
      else if (long v = std::strtol(a.c_str(), &end, 10); *end == 0 && v > 0 && v < (1L << 31))
        n = static_cast<int>(v);
      else {
        std::fprintf(stderr, "usage: %s [N] [--device NAME]\n", argv[0]);
        return 2;
      }
    }
    std::vector<float> hx(n), hy(n), hout(n, -1.f);
    for (int i = 0; i < n; ++i) {
      hx[i] = 0.25f * static_cast<float>(i % 1000);
      hy[i] = 1.0f / static_cast<float>(1 + i % 7);
    }
    // Device memory from the AOT runtime (a program with an allocator of its own, such as the
    // CUDA runtime or PyTorch, passes its own pointers instead).
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    auto* x = static_cast<float*>(aot::alloc(device, bytes));
    auto* y = static_cast<float*>(aot::alloc(device, bytes));
    auto* out = static_cast<float*>(aot::alloc(device, bytes));
    aot::copy_to_device(device, x, hx.data(), bytes);
    aot::copy_to_device(device, y, hy.data(), bytes);

    const float alpha = 2.0f;
    const int block = 1024;
    aot::Launch launch{.grid = {(n + block - 1) / block}, .device = device};
    std::string_view ran = aot_axpy_kernels::axpy_kernel(launch, x, y, out, alpha, n, block);
    aot::synchronize(device);
    aot::copy_to_host(device, hout.data(), out, bytes);

    int bad = 0;
    for (int i = 0; i < n; ++i)
      bad += std::fabs(hout[i] - (alpha * hx[i] + hy[i])) > 1e-6f * (1 + std::fabs(hout[i]));
    std::printf("axpy of %d elements on %s: %s (specialization %.*s)\n", n, device.c_str(),
                bad ? "WRONG" : "ok", static_cast<int>(ran.size()), ran.data());
    for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(out)})
      aot::free(device, p);
    return bad ? 1 : 0;
  } catch (const tritium::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
