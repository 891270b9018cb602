// A program of another project: JIT-compiled kernel, input handed over through DLPack.
#include <tritium/dlpack.hpp>
#include <tritium/tritium.hpp>

#include <cstdio>
#include <vector>

namespace tl = tritium::tl;

void add_one(tl::ptr<float> x, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(x + offs, tl::load(x + offs, offs < n) + 1.f, offs < n);
}

int main() {
  // "Another library's" tensor: host memory exported as DLPack.
  static std::vector<float> storage(777, 41.f);
  static int64_t shape[] = {7, 111};
  static bool deleted = false;
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = storage.data();
  managed->dl_tensor.device = {kDLCPU, 0};
  managed->dl_tensor.ndim = 2;
  managed->dl_tensor.dtype = tritium::dlpack_dtype<float>();
  managed->dl_tensor.shape = shape;
  managed->deleter = [](DLManagedTensor* self) {
    deleted = true;
    delete self;
  };
  {
    auto x = tritium::from_dlpack<float>(managed); // no copy: storage itself
    auto kernel = tritium::jit(add_one, "add_one");
    kernel[{tritium::cdiv(777, 256)}](x, 777, 256);
    x.device().synchronize();
  }
  bool ok = deleted && storage.front() == 42.f && storage.back() == 42.f;
  std::printf("consumer (tritium %s device): %s\n", tritium::default_device().str().c_str(),
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
