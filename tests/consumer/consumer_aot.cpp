// Launches the kernel compiled at build time, on the CPU (or TRITIUM_DEVICE's GPU).
#include "consumer_aot_kernels.hpp"

#include <cstdio>
#include <vector>

int main() {
  namespace aot = tritium::aot;
  const std::string dev = aot::default_device();
  const int n = 1000;
  std::vector<float> hx(n), hout(n);
  for (int i = 0; i < n; ++i)
    hx[i] = static_cast<float>(i);
  auto* x = static_cast<float*>(aot::alloc(dev, n * sizeof(float)));
  auto* out = static_cast<float*>(aot::alloc(dev, n * sizeof(float)));
  aot::copy_to_device(dev, x, hx.data(), n * sizeof(float));
  consumer_aot_kernels::triple_kernel({.grid = {2}, .device = dev}, x, out, n, 512);
  aot::copy_to_host(dev, hout.data(), out, n * sizeof(float));
  int bad = 0;
  for (int i = 0; i < n; ++i)
    bad += hout[i] != 3.f * hx[i];
  aot::free(dev, x);
  aot::free(dev, out);
  std::printf("consumer_aot on %s: %s\n", dev.c_str(), bad ? "WRONG" : "ok");
  return bad != 0;
}
