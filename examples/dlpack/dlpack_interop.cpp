// DLPack: tensors cross between tritium and another library without a copy.
//
// `Matrix` below stands in for the library a C++ program already uses for its tensors (ATen's
// at::toDLPack / at::fromDLPack, CuPy, JAX, or your own): all tritium needs is that it speaks
// DLPack. The program hands the library's matrix to tritium (from_dlpack: same memory, tritium
// owns the tensor until the buffer goes), runs a kernel on it, and hands tritium's result back
// (to_dlpack: the library owns the buffer until it calls the deleter).
//
//   dlpack_interop [--device cpu|interpreter|gpu-emulator]   (host memory: a host device)
#include <tritium/dlpack.hpp>
#include <tritium/tritium.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tl = tritium::tl;

// ---- The other library: a row-major float matrix that exports and imports DLPack. ----
class Matrix {
public:
  Matrix(int64_t rows, int64_t cols) : shape_{rows, cols}, data_(rows * cols) {}
  float& at(int64_t r, int64_t c) { return data_[r * shape_[1] + c]; }
  int64_t rows() const { return shape_[0]; }
  int64_t cols() const { return shape_[1]; }

  // The matrix's memory as a DLPack tensor; the matrix must outlive it.
  DLManagedTensor* to_dlpack() {
    auto* m = new DLManagedTensor{};
    m->dl_tensor.data = data_.data();
    m->dl_tensor.device = {kDLCPU, 0};
    m->dl_tensor.ndim = 2;
    m->dl_tensor.dtype = {kDLFloat, 32, 1};
    m->dl_tensor.shape = shape_;
    m->deleter = [](DLManagedTensor* self) { delete self; };
    return m;
  }
  // A matrix over a DLPack tensor's memory (copied here for brevity; a real library keeps it).
  static Matrix from_dlpack(DLManagedTensor* t) {
    const DLTensor& d = t->dl_tensor;
    Matrix m(d.shape[0], d.shape[1]);
    const float* src = static_cast<const float*>(d.data);
    m.data_.assign(src, src + m.data_.size());
    t->deleter(t);
    return m;
  }

private:
  int64_t shape_[2];
  std::vector<float> data_;
};

// ---- tritium: a row-wise softmax, one program per row. ----
void softmax_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n_cols,
                    tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto x = tl::load(in + row * n_cols + cols, mask, -INFINITY);
  auto e = tl::exp(x - tl::max(x, 0));
  tl::store(out + row * n_cols + cols, e / tl::sum(e, 0), mask);
}

int main(int argc, char** argv) {
  try {
    std::string device = "cpu";
    if (argc == 3 && std::string(argv[1]) == "--device")
      device = argv[2];
    else if (argc != 1) {
      std::fprintf(stderr, "usage: %s [--device cpu|interpreter|gpu-emulator]\n", argv[0]);
      return 2;
    }
    auto dev = tritium::device(device);

    Matrix logits(64, 100);
    for (int64_t r = 0; r < logits.rows(); ++r)
      for (int64_t c = 0; c < logits.cols(); ++c)
        logits.at(r, c) = std::sin(0.1f * static_cast<float>(r * 7 + c));

    // In: the library's memory becomes a tritium buffer, no copy.
    tritium::Buffer<float> in = tritium::from_dlpack<float>(logits.to_dlpack(), dev);
    auto out = dev.alloc<float>(in.size());
    auto softmax = tritium::jit(softmax_kernel, "softmax_kernel");
    softmax[{logits.rows()}](out, in, static_cast<int>(logits.cols()), 128);
    dev.synchronize();

    // Out: tritium's buffer becomes the library's matrix.
    Matrix probs = Matrix::from_dlpack(tritium::to_dlpack(std::move(out), {64, 100}));

    int bad = 0;
    for (int64_t r = 0; r < probs.rows(); ++r) {
      double sum = 0, m = -1e30;
      for (int64_t c = 0; c < logits.cols(); ++c)
        m = std::max<double>(m, logits.at(r, c));
      for (int64_t c = 0; c < logits.cols(); ++c)
        sum += std::exp(logits.at(r, c) - m);
      for (int64_t c = 0; c < probs.cols(); ++c)
        bad += std::fabs(probs.at(r, c) - std::exp(logits.at(r, c) - m) / sum) > 1e-6;
    }
    std::printf("softmax of a %lldx%lld matrix from DLPack on %s: %s\n",
                static_cast<long long>(probs.rows()), static_cast<long long>(probs.cols()),
                dev.str().c_str(), bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
  } catch (const tritium::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
