// The build-time half of ahead-of-time kernels. tritium_add_kernels() (cmake/TritiumKernels.cmake)
// compiles the user's kernel sources into a small program whose main registers each kernel
// named in SPECIALIZATIONS and calls run(); the program traces every specialization, compiles
// it for every target, and writes the launcher sources the user's target is built with:
//
//   <base>.hpp       typed launch functions, one per kernel (needs only tritium/aot.hpp)
//   <base>.cpp       the binaries (PTX, HSACO) as arrays and the specialization tables
//   <base>_cpu.o     the kernels compiled for the host, when a cpu target is named
//   <base>_jit.cpp   the JIT fallback, with --jit-fallback (links libtritium)
//
// Command line (what tritium_add_kernels passes):
//   --out DIR --base NAME --namespace NS --targets sm_90,gfx942,cpu
//   [--jit-fallback --source FILE...] --spec "kernel(arg, …) [num_warps=N] [num_stages=N]"...
//
// A spec lists one token per kernel parameter:
//   pointers      _ (no assumption) or %16 (16-byte aligned)
//   integers      _, %16 (divisible by 16) or ==1 (equal to 1)
//   floats        _
//   constexpr_<T> the value: 1024, 0.5, true
// Every mistake in a spec is a tritium::Error naming the spec and the parameter.
#pragma once

#include <tritium/aot.hpp>
#include <tritium/tritium.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tritium::aot {

namespace detail {

template <class T>
constexpr const char* cpp_name_builtin() {
  if constexpr (std::is_same_v<T, half>)
    return "tritium::half";
  else if constexpr (std::is_same_v<T, bfloat16>)
    return "tritium::bfloat16";
  else if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, char>)
    return "char";
  else if constexpr (std::is_same_v<T, signed char>)
    return "signed char";
  else if constexpr (std::is_same_v<T, unsigned char>)
    return "unsigned char";
  else if constexpr (std::is_same_v<T, short>)
    return "short";
  else if constexpr (std::is_same_v<T, unsigned short>)
    return "unsigned short";
  else if constexpr (std::is_same_v<T, int>)
    return "int";
  else if constexpr (std::is_same_v<T, unsigned>)
    return "unsigned";
  else if constexpr (std::is_same_v<T, long>)
    return "long";
  else if constexpr (std::is_same_v<T, unsigned long>)
    return "unsigned long";
  else if constexpr (std::is_same_v<T, long long>)
    return "long long";
  else if constexpr (std::is_same_v<T, unsigned long long>)
    return "unsigned long long";
  else
    return nullptr; // pointers to pointers and the like: void*
}

// Each scalar kind's element type as ir/dtypes.def spells it.
inline constexpr const char* kElementSpelling[] = {
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code) #cpp_type,
#include <tritium/ir/dtypes.def>
};

// The C++ spelling of a parameter's type in the generated launcher.
template <class T>
constexpr const char* cpp_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (lang::StorageFloatElement<T>)
    return kElementSpelling[static_cast<int>(lang::dtype_traits<T>::kind)];
  else
    return cpp_name_builtin<T>();
}

template <class E>
constexpr Param param_of() {
  constexpr ir::ScalarKind k = lang::dtype_traits<E>::kind;
  return k == ir::ScalarKind::Ptr ? Param::Pointer : scalar_param(k);
}

} // namespace detail

// One parameter of a registered kernel.
struct GeneratorParam {
  Param param;
  std::string cpp_type;     // of the launcher's argument
  std::string dtype;        // "ptr<f32>", "i32", "constexpr"
  bool float_value = false; // constexpr_<float/double>: the spec gives a floating-point value
};

class Generator {
public:
  // Registers a kernel under the name its specs use ("add_kernel", "ns::add_kernel").
  template <class... P>
  void add(void (*fn)(P...), std::string name) {
    Kernel k;
    k.name = name;
    (k.params.push_back(describe<P>()), ...);
    // The IR and the binaries name the kernel without its namespace.
    std::string symbol =
        name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
    k.trace = [fn, symbol](std::span<const lang::ArgSpec> specs) {
      return std::shared_ptr<ir::Function>(lang::trace(fn, symbol, specs));
    };
    kernels_.push_back(std::move(k));
  }
  // Parses the command line, traces and compiles every spec, writes the files. Returns the
  // exit status (errors are printed, naming the spec).
  int run(int argc, char** argv);

  struct Kernel {
    std::string name;
    std::vector<GeneratorParam> params;
    std::function<std::shared_ptr<ir::Function>(std::span<const lang::ArgSpec>)> trace;
  };

private:
  template <class P>
  static GeneratorParam describe() {
    using Traits = lang::param_traits<P>;
    GeneratorParam g;
    if constexpr (Traits::is_constexpr) {
      using T = typename Traits::value_type;
      static_assert(std::is_arithmetic_v<T>,
                    "tritium_add_kernels: constexpr_ parameters must hold numbers or bools");
      g.param = Param::Constexpr;
      g.cpp_type = detail::cpp_name<T>();
      g.dtype = std::string("constexpr ") + detail::cpp_name<T>();
      g.float_value = std::is_floating_point_v<T>;
    } else {
      using E = typename Traits::element;
      g.dtype = ir::to_string(lang::dtype_of<E>());
      if constexpr (lang::PointerElement<E>) {
        using Pointee = typename E::element_type;
        const char* n = detail::cpp_name<Pointee>();
        g.param = Param::Pointer;
        g.cpp_type = n ? std::string(n) + "*" : std::string("void*");
      } else {
        g.param = detail::param_of<E>();
        // f16, bf16 and fp8 scalars are passed as float, as tritium::jit takes them.
        g.cpp_type = lang::dtype_traits<E>::is_float && lang::dtype_traits<E>::bits < 32
                         ? "float"
                         : detail::cpp_name<E>();
      }
    }
    return g;
  }

  std::vector<Kernel> kernels_;
};

} // namespace tritium::aot
