// Ahead-of-time kernels: what the launchers tritium_add_kernels() generates include, and the
// runtime they link (tritium::aot, libtritium_aot.a). The runtime needs only the vendor driver
// (libcuda.so.1 or libamdhip64.so, opened at run time) or nothing at all on the CPU: no LLVM,
// no tracing, no disk cache. A launch whose specialization was not built goes to the JIT when
// the target was built with JIT_FALLBACK (and links libtritium), and is an error otherwise.
//
//   #include "my_kernels.hpp"                 // generated
//   my_kernels::add_kernel({.grid = {cdiv(n, 1024)}, .stream = s}, x, y, out, n, 1024);
//
// See docs/using.md.
#pragma once

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/launch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace tritium::aot {

// Where a launch runs.
struct Launch {
  LaunchGrid grid;
  // A stream of the device (CUstream / cudaStream_t, hipStream_t); null: the stream the
  // runtime keeps for the device. Host devices run the launch before returning.
  void* stream = nullptr;
  // "cuda", "cuda:1", "hip", "cpu"; empty: default_device().
  std::string_view device = {};
};

// What an empty Launch::device means: TRITIUM_DEVICE if set, else the first NVIDIA GPU, else
// the first AMD GPU, else "cpu" (always "cuda:0"-style, with the index).
std::string default_device();

// Device memory for programs that have no other allocator (the examples); a program that has
// one (the CUDA runtime, PyTorch) passes its own pointers. Host memory on "cpu".
void* alloc(std::string_view device, size_t bytes);
void free(std::string_view device, void* p);
void copy_to_device(std::string_view device, void* dst, const void* src, size_t bytes);
void copy_to_host(std::string_view device, void* dst, const void* src, size_t bytes);
// Waits for `stream` (null: the runtime's own stream of the device).
void synchronize(std::string_view device, void* stream = nullptr);

// ---- What generated launchers are made of (not for hand-written code). ----

// A kernel parameter as the launch passes it: its slot holds an address, an integer
// (sign- or zero-extended), or a floating-point value as the bits of a double.
enum class Param : uint8_t {
  Pointer,
// Then one per scalar kind of ir/dtypes.def, in its order (integers first), Ptr excepted.
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code)                          \
  TRITIUM_PARAM_##family(Kind)
#define TRITIUM_PARAM_Bool(K) K,
#define TRITIUM_PARAM_Signed(K) K,
#define TRITIUM_PARAM_Unsigned(K) K,
#define TRITIUM_PARAM_Float(K) K,
#define TRITIUM_PARAM_Storage(K) K,
#define TRITIUM_PARAM_Pointer(K)
#include <tritium/ir/dtypes.def>
#undef TRITIUM_PARAM_Bool
#undef TRITIUM_PARAM_Signed
#undef TRITIUM_PARAM_Unsigned
#undef TRITIUM_PARAM_Float
#undef TRITIUM_PARAM_Storage
#undef TRITIUM_PARAM_Pointer
  Constexpr
};
// The scalar kind of a parameter that is neither Pointer nor Constexpr, and back.
constexpr ir::ScalarKind param_scalar_kind(Param p) {
  return static_cast<ir::ScalarKind>(static_cast<int>(p) - 1);
}
constexpr Param scalar_param(ir::ScalarKind k) {
  return static_cast<Param>(static_cast<int>(k) + 1);
}
static_assert(param_scalar_kind(Param::I1) == ir::ScalarKind::I1 &&
              param_scalar_kind(static_cast<Param>(static_cast<int>(Param::Constexpr) - 1)) ==
                  static_cast<ir::ScalarKind>(static_cast<int>(ir::ScalarKind::Ptr) - 1));
// What a built specialization assumes of a runtime parameter (Triton's specialization).
enum class Assume : uint8_t {
  None,
  Div16, // an integer divisible by 16, a pointer 16-byte aligned
  One,   // an integer equal to 1
};
enum class Format : uint8_t { Ptx, Hsaco, Host };

// One kernel binary for one target.
struct Image {
  const char* target; // "sm_90", "gfx942", "cpu"
  Format format;
  const void* data; // PTX text (NUL-terminated), HSACO bytes, or the host entry point
  size_t size;
  int num_threads;       // threads per program (GPU)
  int shared_bytes;      // dynamic shared memory per program (GPU)
  int64_t scratch_bytes; // per-thread scratch (cpu)
};

// One specialization: the values of the constexpr parameters, what it assumes of the others,
// and its binaries.
struct Variant {
  const char* label;     // "BLOCK=1024 x%16 n%16 num_warps=4"
  const Assume* assume;  // one per parameter (None for constexpr ones)
  const ArgSlot* values; // one per parameter: the constexpr values (others unused)
  const Image* images;
  size_t num_images;
};

// Runs a specialization the build did not make: the JIT, in the generated *_jit.cpp.
// `params` holds every parameter, constexpr ones included, in order.
using JitFallback = void (*)(const Launch& launch, std::string_view device,
                             std::span<const ArgSlot> params);

struct Kernel {
  const char* name;
  const Param* params;
  size_t num_params;
  const Variant* variants; // most specialized first
  size_t num_variants;
  JitFallback fallback; // null: a specialization not built is an error
};

// A launch argument in its slot (see tritium::ArgSlot).
template <class T>
ArgSlot slot(T v) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<uintptr_t>(v);
  else if constexpr (std::is_floating_point_v<T>)
    return std::bit_cast<ArgSlot>(static_cast<double>(v));
  else if constexpr (std::is_signed_v<T>)
    return static_cast<ArgSlot>(static_cast<int64_t>(v));
  else
    return static_cast<ArgSlot>(v);
}

// Picks the first variant whose constexpr values match and whose assumptions hold, and launches
// its binary for the launch's device; else the fallback. Returns the variant's label, or "jit".
std::string_view launch(const Kernel& kernel, const Launch& launch,
                        std::span<const ArgSlot> params);

} // namespace tritium::aot
