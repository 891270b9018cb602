// DLPack interop: tensors from PyTorch, CuPy, JAX or any C++ library that speaks DLPack become
// tritium buffers without a copy, and tritium buffers become DLPack tensors for them.
//
//   DLManagedTensor* t = framework.to_dlpack(tensor);        // a float tensor on cuda:0
//   auto x = tritium::from_dlpack<float>(t);                  // same memory; owns t now
//   kernel[{grid}](x, …);
//   framework.from_dlpack(tritium::to_dlpack(std::move(y))); // y's memory, handed over
//
// Header-only; needs dlpack/dlpack.h (Debian: libdlpack-dev), which tritium.hpp does not include.
// Supported: contiguous (row-major, compact) tensors of one lane, on the CPU (kDLCPU) or a GPU
// (kDLCUDA, kDLCUDAManaged, kDLROCM). Anything else is a tritium::Error saying what.
#pragma once

#include <tritium/lang/dtypes.hpp>
#include <tritium/runtime/device.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tritium {

namespace detail {
// DLPack 0.8 added kDLBool; older producers send bool as an 8-bit unsigned integer.
inline constexpr uint8_t kDLPackBool = 6;
// Each scalar kind's DLPack type code (DLPack 1.1 numbers the fp8 formats; the dlpack.h of
// Debian 12 predates them), from ir/dtypes.def.
inline constexpr int kDLPackCode[] = {
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code) dlpack_code,
#include <tritium/ir/dtypes.def>
};
inline constexpr const char* kDLPackFloat8Names[] = {
    "float8_e3m4",     "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"};

inline std::string dlpack_device_name(DLDevice d) {
  switch (d.device_type) {
  case kDLCPU:
    return "kDLCPU";
  case kDLCUDA:
    return "kDLCUDA";
  case kDLCUDAHost:
    return "kDLCUDAHost";
  case kDLCUDAManaged:
    return "kDLCUDAManaged";
  case kDLROCM:
    return "kDLROCM";
  case kDLROCMHost:
    return "kDLROCMHost";
  default:
    return "device type " + std::to_string(static_cast<int>(d.device_type));
  }
}

inline std::string dlpack_dtype_name(DLDataType t) {
  const char* code = t.code == kDLInt        ? "int"
                     : t.code == kDLUInt     ? "uint"
                     : t.code == kDLFloat    ? "float"
                     : t.code == kDLBfloat   ? "bfloat"
                     : t.code == kDLComplex  ? "complex"
                     : t.code == kDLPackBool ? "bool"
                                             : "code ";
  std::string s = code;
  if (t.code >= 7 && t.code <= 13)
    return kDLPackFloat8Names[t.code - 7] +
           std::string(t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
  if (std::string_view(code) == "code ")
    s += std::to_string(t.code);
  s += std::to_string(t.bits);
  if (t.lanes != 1)
    s += "x" + std::to_string(t.lanes);
  return s;
}
} // namespace detail

// The DLPack data type of element type T (float, half, int32_t, …).
template <class T>
DLDataType dlpack_dtype() {
  DLDataType t{};
  t.lanes = 1;
  t.bits = static_cast<uint8_t>(8 * sizeof(T));
  if constexpr (std::is_same_v<T, bool>)
    t.code = kDLUInt;
  else if constexpr (std::is_same_v<T, half>)
    t.code = kDLFloat;
  else if constexpr (std::is_same_v<T, bfloat16>)
    t.code = kDLBfloat;
  else if constexpr (lang::StorageFloatElement<T>)
    t.code =
        static_cast<uint8_t>(detail::kDLPackCode[static_cast<int>(lang::dtype_traits<T>::kind)]);
  else if constexpr (std::is_floating_point_v<T>)
    t.code = kDLFloat;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    t.code = kDLInt;
  else if constexpr (std::is_integral_v<T>)
    t.code = kDLUInt;
  else
    static_assert(sizeof(T) == 0, "tritium::dlpack_dtype: not an element type");
  return t;
}

// Where a device's memory lives, in DLPack's terms.
inline DLDevice to_dlpack_device(const Device& d) {
  DLDevice out{};
  out.device_id = d.index();
  if (d.backend().host_memory())
    out.device_type = kDLCPU, out.device_id = 0;
  else if (d.name() == "cuda")
    out.device_type = kDLCUDA;
  else if (d.name() == "hip")
    out.device_type = kDLROCM;
  else
    throw Error("tritium::to_dlpack_device: device '" + d.str() + "' has no DLPack equivalent");
  return out;
}

// The tritium device for a DLPack device: kDLCPU -> cpu, kDLCUDA(Managed) n -> cuda:n,
// kDLROCM n -> hip:n.
inline Device from_dlpack_device(DLDevice d) {
  switch (d.device_type) {
  case kDLCPU:
    return device("cpu");
  case kDLCUDA:
  case kDLCUDAManaged:
    return device("cuda:" + std::to_string(d.device_id));
  case kDLROCM:
    return device("hip:" + std::to_string(d.device_id));
  default:
    throw Error("tritium::from_dlpack: tensors on " + detail::dlpack_device_name(d) +
                " are not supported (kDLCPU, kDLCUDA, kDLCUDAManaged and kDLROCM are)");
  }
}

// A buffer over the memory of `tensor`, which it now owns: the tensor's deleter runs when the
// buffer goes (or here, if this throws). `on` picks the device for host memory that is not the
// cpu device's (the interpreter, the gpu-emulator); it must hold the tensor's memory.
template <class T>
Buffer<T> from_dlpack(DLManagedTensor* tensor, Device on = Device()) {
  if (!tensor)
    throw Error("tritium::from_dlpack: a null DLManagedTensor");
  struct Guard { // the tensor is ours from here on: release it if we give up
    DLManagedTensor* t;
    ~Guard() {
      if (t && t->deleter)
        t->deleter(t);
    }
  } guard{tensor};
  const DLTensor& t = tensor->dl_tensor;
  const DLDataType want = dlpack_dtype<T>();
  const bool bool_ok = std::is_same_v<T, bool> && t.dtype.bits == 8 && t.dtype.lanes == 1 &&
                       (t.dtype.code == kDLUInt || t.dtype.code == detail::kDLPackBool);
  if (!bool_ok &&
      (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes))
    throw Error("tritium::from_dlpack: the tensor holds " + detail::dlpack_dtype_name(t.dtype) +
                ", not the buffer's " + detail::dlpack_dtype_name(want));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    throw Error("tritium::from_dlpack: the tensor has no shape");
  size_t n = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      throw Error("tritium::from_dlpack: dimension " + std::to_string(i) + " has negative size " +
                  std::to_string(t.shape[i]));
    n *= static_cast<size_t>(t.shape[i]);
  }
  if (t.strides && n > 1) {
    int64_t expect = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expect)
        throw Error("tritium::from_dlpack: the tensor is not contiguous (dimension " +
                    std::to_string(i) + " has stride " + std::to_string(t.strides[i]) +
                    ", a compact row-major tensor has " + std::to_string(expect) +
                    "): make it contiguous first");
      expect *= t.shape[i];
    }
  }
  auto* data = reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
  if (!data && n)
    throw Error("tritium::from_dlpack: the tensor's data pointer is null");
  if (reinterpret_cast<uintptr_t>(data) % alignof(T))
    throw Error("tritium::from_dlpack: the tensor's data is not aligned for its element type");
  Device dev = from_dlpack_device(t.device);
  if (on != Device()) {
    const bool same = on == dev || (t.device.device_type == kDLCPU && on.backend().host_memory());
    if (!same)
      throw Error("tritium::from_dlpack: the tensor is on " + detail::dlpack_device_name(t.device) +
                  " " + std::to_string(t.device.device_id) + ", not on device '" + on.str() + "'");
    dev = on;
  }
  Buffer<T> b = Buffer<T>::adopt(
      dev, data, n,
      [](void* m) {
        auto* managed = static_cast<DLManagedTensor*>(m);
        if (managed->deleter)
          managed->deleter(managed);
      },
      tensor);
  guard.t = nullptr;
  return b;
}

// A DLPack tensor over the buffer's memory, which it now owns until its consumer calls the
// deleter. `shape` (default: one dimension) must hold the buffer's element count.
template <class T>
DLManagedTensor* to_dlpack(Buffer<T>&& buffer, std::vector<int64_t> shape = {}) {
  if (shape.empty())
    shape = {static_cast<int64_t>(buffer.size())};
  size_t n = 1;
  for (int64_t s : shape) {
    if (s < 0)
      throw Error("tritium::to_dlpack: a negative dimension in the shape");
    n *= static_cast<size_t>(s);
  }
  if (n != buffer.size())
    throw Error("tritium::to_dlpack: a shape of " + std::to_string(n) +
                " elements for a buffer of " + std::to_string(buffer.size()));
  struct Holder {
    DLManagedTensor managed{};
    Buffer<T> buffer;
    std::vector<int64_t> shape;
  };
  DLDevice dev = to_dlpack_device(buffer.device());
  auto* h = new Holder{{}, std::move(buffer), std::move(shape)};
  DLTensor& t = h->managed.dl_tensor;
  t.data = h->buffer.data();
  t.device = dev;
  t.ndim = static_cast<int32_t>(h->shape.size());
  t.dtype = dlpack_dtype<T>();
  t.shape = h->shape.data();
  t.strides = nullptr; // compact row-major
  t.byte_offset = 0;
  h->managed.manager_ctx = h;
  h->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Holder*>(self->manager_ctx);
  };
  return &h->managed;
}

} // namespace tritium
