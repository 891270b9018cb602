// Kernel parameters for the GPU driver APIs (cuLaunchKernel, hipModuleLaunchKernel), which take
// an array of pointers, one to each parameter's value. Launch arguments arrive as 64-bit slots
// (see tritium::ArgSlot); integers and pointers are read in place (on a little-endian host the
// low bytes of a slot are the narrower integer), floating-point values are converted from the
// slot's double into scratch words. Everything lives on the caller's stack: a cached launch
// allocates nothing and two threads launching one kernel share no buffer.
//
// Internal header shared by runtime/cuda and runtime/hip; needs no vendor header.
#pragma once

#include <tritium/error.hpp>
#include <tritium/float_format.hpp>
#include <tritium/ir/types.hpp>
#include <tritium/runtime/backend.hpp>

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tritium::gpu {

static_assert(std::endian::native == std::endian::little,
              "integer kernel arguments are passed from the low bytes of their 64-bit slots");

// How one launch slot becomes a kernel parameter.
struct ParamKind {
  enum How : uint8_t {
    InPlace, // integers of any width and pointers: the slot's own low bytes
    F32,
    F64,
    Narrow, // f16, bf16, fp8: the code of the slot's double in `kind`'s format
  } how = InPlace;
  ir::ScalarKind kind = ir::ScalarKind::I64;
};

inline ParamKind param_kind(ir::DType t) {
  if (t.kind == ir::ScalarKind::F32)
    return {ParamKind::F32, t.kind};
  if (t.kind == ir::ScalarKind::F64)
    return {ParamKind::F64, t.kind};
  if (t.is_float())
    return {ParamKind::Narrow, t.kind};
  return {ParamKind::InPlace, t.kind};
}

// The most parameters a kernel may take (Triton's kernels rarely pass 30).
inline constexpr size_t kMaxParams = 128;

// Pointers to each parameter's value, built on the stack for one launch.
class PackedParams {
public:
  // `kernel` names the kernel in the error raised on an argument-count mismatch.
  PackedParams(std::span<const ParamKind> kinds, std::span<const ArgSlot> args,
               const std::string& kernel) {
    if (args.size() != kinds.size()) [[unlikely]]
      throw Error("kernel '" + kernel + "': launched with " + std::to_string(args.size()) +
                  " arguments for " + std::to_string(kinds.size()) + " parameters");
    for (size_t i = 0; i < kinds.size(); ++i) {
      switch (kinds[i].how) {
      case ParamKind::InPlace:
      case ParamKind::F64: // the slot already holds the double's bits
        ptrs_[i] = const_cast<ArgSlot*>(&args[i]);
        break;
      case ParamKind::F32:
        scratch_[i] = std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(args[i])));
        ptrs_[i] = &scratch_[i];
        break;
      case ParamKind::Narrow:
        scratch_[i] = encode_float(std::bit_cast<double>(args[i]), *float_format(kinds[i].kind));
        ptrs_[i] = &scratch_[i];
        break;
      }
    }
    size_ = kinds.size();
  }
  void** pointers() { return ptrs_; }
  // The pointers with one more parameter after the packed ones (the global-scratch address of
  // codegen/gpu/compile.hpp's kernel ABI), whose value `extra` points to; it must outlive the
  // launch. The slot is reserved, so the no-scratch path pays nothing for it.
  void** pointers_with(void* extra) {
    ptrs_[size_] = extra;
    return ptrs_;
  }

private:
  // Left uninitialized on purpose: only the first size_ (+ 1) entries are written and read.
  void* ptrs_[kMaxParams + 1];
  uint32_t scratch_[kMaxParams];
  size_t size_ = 0;
};

// The parameter kinds of a kernel, checked against the launch path's limit.
inline std::vector<ParamKind> param_kinds(std::span<const ir::DType> types,
                                          const std::string& kernel) {
  if (types.size() > kMaxParams)
    throw Error("kernel '" + kernel + "' has " + std::to_string(types.size()) +
                " parameters; at most " + std::to_string(kMaxParams) + " are supported");
  std::vector<ParamKind> kinds;
  kinds.reserve(types.size());
  for (ir::DType t : types)
    kinds.push_back(param_kind(t));
  return kinds;
}

} // namespace tritium::gpu
