// The build-time half of ahead-of-time kernels (see tritium/aot/generator.hpp): specs ->
// traced kernels -> binaries for each target -> launcher sources.
#include "codegen/gpu/compile.hpp"
#include "codegen/targets/cpu/cpu_codegen.hpp"

#include <tritium/aot/generator.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace tritium::aot {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

// One parsed spec.
struct Spec {
  std::string text; // as written, for errors
  const Generator::Kernel* kernel = nullptr;
  std::vector<Assume> assume;
  std::vector<ArgSlot> values;
  std::vector<lang::ArgSpec> trace_specs;
  CompileOptions options;
  std::string label;
  int assumptions = 0;
};

template <class T>
bool parse_number(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

Spec parse_spec(const std::string& text, const std::vector<Generator::Kernel>& kernels) {
  Spec spec;
  spec.text = text;
  auto fail = [&](const std::string& why) -> Error {
    return Error(fmt::format("tritium_add_kernels: SPECIALIZATIONS '{}': {}", text, why));
  };
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    throw fail("expected kernel(arg, …) [num_warps=N] [num_stages=N]");
  std::string name = trim(std::string_view(text).substr(0, open));
  for (const auto& k : kernels)
    if (k.name == name)
      spec.kernel = &k;
  if (!spec.kernel)
    throw fail(fmt::format("no kernel '{}' was registered", name));
  const auto& params = spec.kernel->params;
  std::string inner = text.substr(open + 1, close - open - 1);
  std::vector<std::string> tokens =
      trim(inner).empty() ? std::vector<std::string>{} : split(inner, ',');
  if (tokens.size() != params.size()) {
    std::string kinds;
    for (const auto& p : params)
      kinds += (kinds.empty() ? "" : ", ") + p.dtype;
    throw fail(fmt::format("{} values for the {} parameters of {}({})", tokens.size(),
                           params.size(), name, kinds));
  }
  spec.assume.assign(params.size(), Assume::None);
  spec.values.assign(params.size(), 0);
  spec.trace_specs.resize(params.size());
  std::string label = name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    const GeneratorParam& p = params[i];
    const std::string& tok = tokens[i];
    lang::ArgSpec& ts = spec.trace_specs[i];
    auto bad = [&](const char* takes) {
      return fail(fmt::format("parameter {} ({}) takes {}, not '{}'", i, p.dtype, takes, tok));
    };
    if (p.param == Param::Constexpr) {
      if (p.float_value) {
        double d = 0;
        if (!parse_number(tok, d))
          throw bad("a number (its constexpr value)");
        spec.values[i] = std::bit_cast<ArgSlot>(d);
        ts.value = d;
      } else {
        int64_t v = 0;
        if (tok == "true" || tok == "false")
          v = tok == "true";
        else if (!parse_number(tok, v))
          throw bad("an integer (its constexpr value)");
        spec.values[i] = static_cast<ArgSlot>(v);
        ts.value = v;
      }
    } else if (tok == "_") {
    } else if (tok == "%16" && (p.param == Param::Pointer || p.param <= Param::U64)) {
      spec.assume[i] = Assume::Div16;
      ts.info.divisibility = 16;
      ++spec.assumptions;
    } else if (tok == "==1" && p.param != Param::Pointer && p.param <= Param::U64) {
      spec.assume[i] = Assume::One;
      ts.info.is_constant = true;
      ts.info.constant = 1;
      ++spec.assumptions;
    } else {
      throw bad(p.param == Param::Pointer ? "_ or %16"
                : p.param <= Param::U64   ? "_, %16 or ==1"
                                          : "_");
    }
    label += (i ? ", " : "") + tok;
  }
  label += ")";
  std::string rest = trim(std::string_view(text).substr(close + 1));
  std::replace(rest.begin(), rest.end(), ',', ' ');
  std::istringstream options(rest);
  for (std::string opt; options >> opt;) {
    auto eq = opt.find('=');
    int v = 0;
    if (eq == std::string::npos || !parse_number(std::string_view(opt).substr(eq + 1), v) || v < 1)
      throw fail(fmt::format("option '{}': expected num_warps=N or num_stages=N", opt));
    std::string key = opt.substr(0, eq);
    if (key == "num_warps")
      spec.options.num_warps = v;
    else if (key == "num_stages")
      spec.options.num_stages = v;
    else
      throw fail(fmt::format("unknown option '{}' (num_warps, num_stages)", key));
  }
  spec.label = fmt::format("{} num_warps={} num_stages={}", label, spec.options.num_warps,
                           spec.options.num_stages);
  return spec;
}

// The launcher's name for a kernel: its unqualified name.
std::string short_name(const std::string& name) {
  auto c = name.rfind("::");
  return c == std::string::npos ? name : name.substr(c + 2);
}

std::string identifier(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

void write_bytes(std::ostream& os, const std::string& name, const void* data, size_t n,
                 bool terminate) {
  const auto* p = static_cast<const unsigned char*>(data);
  os << "alignas(16) const unsigned char " << name << "[] = {";
  for (size_t i = 0; i < n; ++i)
    os << (i % 24 == 0 ? "\n    " : "") << static_cast<int>(p[i]) << ",";
  if (terminate)
    os << "0";
  os << "};\n";
}

const char* param_name(Param p) {
  static const char* names[] = {
      "Pointer",
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code) #Kind,
#include <tritium/ir/dtypes.def>
  };
  // Ptr, the table's last row, has no Param of its own: its place is Constexpr's.
  return p == Param::Constexpr ? "Constexpr" : names[static_cast<int>(p)];
}
const char* assume_name(Assume a) {
  return a == Assume::Div16 ? "Div16" : a == Assume::One ? "One" : "None";
}

// Writes `text` to `path` unless it already holds it (so that builds do not redo work).
void write_file(const fs::path& path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream old;
    old << in.rdbuf();
    if (in && old.str() == text)
      return;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    throw Error("tritium_add_kernels: cannot write " + path.string());
}

struct Built {
  const Spec* spec;
  std::vector<std::pair<std::string, gpu::GpuKernelBinary>> gpu; // target -> binary
  std::string cpu_symbol;
  int64_t cpu_scratch = 0;
};

// The generator's command line.
struct Options {
  fs::path out_dir;
  std::string base, ns = "tritium_kernels";
  std::vector<std::string> targets, spec_texts, sources;
  bool fallback = false;
  std::vector<std::string> gpu_targets; // every GPU architecture named
  std::string cpu_target;               // "" none, "host" or an LLVM CPU name
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw Error("tritium AOT generator: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--out")
      o.out_dir = next();
    else if (a == "--base")
      o.base = next();
    else if (a == "--namespace")
      o.ns = next();
    else if (a == "--targets") {
      for (const auto& t : split(next(), ','))
        if (!t.empty())
          o.targets.push_back(t);
    } else if (a == "--spec")
      o.spec_texts.push_back(next());
    else if (a == "--source")
      o.sources.push_back(next());
    else if (a == "--jit-fallback")
      o.fallback = true;
    else
      throw Error("tritium AOT generator: unknown argument '" + a + "'");
  }
  if (o.out_dir.empty() || o.base.empty() || o.targets.empty() || o.spec_texts.empty())
    throw Error("tritium AOT generator: usage: --out DIR --base NAME --targets T,… --spec SPEC…");

  // Targets: every GPU architecture the compiler knows, and the host.
  auto archs = gpu::supported_gpu_archs();
  for (const auto& t : o.targets) {
    if (t == "cpu")
      o.cpu_target = "host";
    else if (t.rfind("cpu:", 0) == 0)
      o.cpu_target = t.substr(4);
    else if (std::find(archs.begin(), archs.end(), t) != archs.end())
      o.gpu_targets.push_back(t);
    else
      throw Error(fmt::format("tritium_add_kernels: unknown target '{}' (known: {}, cpu, "
                              "cpu:<LLVM CPU name>)",
                              t, fmt::join(archs, ", ")));
  }
  return o;
}

// Traces and compiles every spec for every target; the host's kernels go into one object
// file in the output folder.
std::vector<Built> build_all(const Options& o, const std::vector<Spec>& specs) {
  std::vector<Built> built;
  std::vector<std::shared_ptr<ir::Function>> traced; // alive until the object is compiled
  std::vector<cpu::ObjectKernel> cpu_kernels;
  std::map<std::string, int> counter;
  for (const Spec& s : specs) {
    Built b;
    b.spec = &s;
    std::shared_ptr<ir::Function> f;
    try {
      f = s.kernel->trace(s.trace_specs);
      for (const auto& t : o.gpu_targets) {
        gpu::GpuTarget target;
        target.arch = t;
        target.keep_stages = false;
        gpu::GpuKernelBinary bin = gpu::compile_for_gpu(*f, target, s.options);
        // The AOT launcher has no per-stream buffer to pass as the extra scratch parameter.
        if (bin.global_scratch_bytes > 0)
          throw Error(fmt::format(
              "kernel '{}' for {}: uses TMA descriptors ({} bytes of global scratch per "
              "program), which AOT export does not support yet: list sm_90 instead of sm_90a "
              "in TARGETS (no TMA), or launch it through the JIT",
              s.kernel->name, t, bin.global_scratch_bytes));
        b.gpu.emplace_back(t, std::move(bin));
      }
    } catch (const Error& e) {
      throw Error(fmt::format("tritium_add_kernels: SPECIALIZATIONS '{}': {}", s.text, e.what()));
    }
    if (!o.cpu_target.empty()) {
      b.cpu_symbol = fmt::format("tritium_aot_{}_{}_{}", identifier(o.ns),
                                 identifier(s.kernel->name), counter[s.kernel->name]++);
      cpu_kernels.push_back({f.get(), b.cpu_symbol, s.options.enable_fp_fusion});
    }
    traced.push_back(f);
    built.push_back(std::move(b));
  }
  fs::create_directories(o.out_dir);
  if (!o.cpu_target.empty()) {
    cpu::CpuObject obj =
        cpu::compile_kernels_to_object(cpu_kernels, o.cpu_target == "host" ? "" : o.cpu_target);
    size_t j = 0;
    for (auto& b : built)
      b.cpu_scratch = obj.scratch_bytes[j++];
    write_file(o.out_dir / (o.base + "_cpu.o"), obj.object);
  }
  return built;
}

std::string signature(const Generator::Kernel& k) {
  std::string sig =
      fmt::format("std::string_view {}(const tritium::aot::Launch& launch", short_name(k.name));
  for (size_t i = 0; i < k.params.size(); ++i)
    sig += fmt::format(", {} arg{}", k.params[i].cpp_type, i);
  return sig + ")";
}

// The header: one typed launcher per kernel.
void write_header(const Options& o, const std::vector<Spec>& specs,
                  const std::vector<const Generator::Kernel*>& used) {
  std::ostringstream h;
  h << "// Generated by tritium_add_kernels from " << fmt::format("{}", fmt::join(o.sources, ", "))
    << ": do not edit.\n// Targets: " << fmt::format("{}", fmt::join(o.targets, ", "))
    << ".\n// Each function launches the first built specialization whose assumptions the "
       "arguments\n"
       "// meet and returns its label (\"jit\" when the JIT ran it instead).\n"
       "#pragma once\n\n#include <tritium/aot.hpp>\n\n#include <cstdint>\n#include "
       "<string_view>\n\nnamespace "
    << o.ns << " {\n";
  for (const auto* k : used) {
    h << "\n// " << k->name << "(";
    for (size_t i = 0; i < k->params.size(); ++i)
      h << (i ? ", " : "") << k->params[i].dtype;
    h << "); built:\n";
    for (const auto& s : specs)
      if (s.kernel == k)
        h << "//   " << s.label << "\n";
    h << signature(*k) << ";\n";
  }
  h << "\n} // namespace " << o.ns << "\n";
  write_file(o.out_dir / (o.base + ".hpp"), h.str());
}

// Variant v's images (one per target) and its assumptions and specialized values.
void write_variant_tables(std::ostringstream& c, size_t v, const Built& b) {
  for (const auto& [t, bin] : b.gpu) {
    std::string var = fmt::format("image_{}_{}", v, t);
    if (bin.binary.empty())
      write_bytes(c, var, bin.assembly.data(), bin.assembly.size(), true);
    else
      write_bytes(c, var, bin.binary.data(), bin.binary.size(), false);
  }
  c << "const tritium::aot::Image images_" << v << "[] = {\n";
  for (const auto& [t, bin] : b.gpu)
    c << fmt::format("    {{\"{}\", tritium::aot::Format::{}, image_{}_{}, sizeof image_{}_{}, {}, "
                     "{}, 0}},\n",
                     t, bin.binary.empty() ? "Ptx" : "Hsaco", v, t, v, t, bin.num_threads,
                     bin.shared_bytes);
  if (!b.cpu_symbol.empty())
    c << fmt::format("    {{\"cpu\", tritium::aot::Format::Host, reinterpret_cast<const "
                     "void*>(&{}), 0, 0, 0, {}}},\n",
                     b.cpu_symbol, b.cpu_scratch);
  c << "};\n";
  const auto& params = b.spec->kernel->params;
  if (!params.empty()) {
    c << "constexpr tritium::aot::Assume assume_" << v << "[] = {";
    for (size_t i = 0; i < params.size(); ++i)
      c << (i ? ", " : "") << "tritium::aot::Assume::" << assume_name(b.spec->assume[i]);
    c << "};\nconstexpr tritium::ArgSlot values_" << v << "[] = {";
    for (size_t i = 0; i < params.size(); ++i)
      c << (i ? ", " : "") << b.spec->values[i] << "ull";
    c << "};\n";
  }
}

// Kernel k's variants, most specialized first (a launch takes the first variant whose
// assumptions hold), its parameter kinds and its table.
void write_kernel_table(std::ostringstream& c, const Options& o, const Generator::Kernel& k,
                        const std::vector<Built>& built) {
  std::string n = short_name(k.name);
  std::vector<size_t> order;
  for (size_t v = 0; v < built.size(); ++v)
    if (built[v].spec->kernel == &k)
      order.push_back(v);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return built[a].spec->assumptions > built[b].spec->assumptions;
  });
  c << "const tritium::aot::Variant " << n << "_variants[] = {\n";
  for (size_t v : order) {
    const bool none = k.params.empty();
    c << fmt::format("    {{\"{}\", {}, {}, images_{}, std::size(images_{})}},\n",
                     built[v].spec->label, none ? "nullptr" : fmt::format("assume_{}", v),
                     none ? "nullptr" : fmt::format("values_{}", v), v, v);
  }
  c << "};\n";
  if (!k.params.empty()) {
    c << "constexpr tritium::aot::Param " << n << "_params[] = {";
    for (size_t i = 0; i < k.params.size(); ++i)
      c << (i ? ", " : "") << "tritium::aot::Param::" << param_name(k.params[i].param);
    c << "};\n";
  }
  c << fmt::format("const tritium::aot::Kernel {}_kernel{{\"{}\", {}, {}, {}_variants, "
                   "std::size({}_variants), {}}};\n",
                   n, k.name, k.params.empty() ? "nullptr" : n + "_params", k.params.size(), n, n,
                   o.fallback ? "&detail::" + n + "_jit" : "nullptr");
}

// The binaries, the tables and the launchers.
void write_source(const Options& o, const std::vector<Built>& built,
                  const std::vector<const Generator::Kernel*>& used) {
  std::ostringstream c;
  c << "// Generated by tritium_add_kernels: do not edit.\n#include \"" << o.base
    << ".hpp\"\n\n#include <cstdint>\n#include <iterator>\n#include <span>\n\n";
  for (const auto& b : built)
    if (!b.cpu_symbol.empty())
      c << "extern \"C\" void " << b.cpu_symbol
        << "(const std::uint64_t*, const std::int64_t*, char*, void*);\n";
  c << "\nnamespace " << o.ns << " {\n";
  if (o.fallback) {
    c << "namespace detail {\n";
    for (const auto* k : used)
      c << "void " << short_name(k->name)
        << "_jit(const tritium::aot::Launch&, std::string_view, std::span<const "
           "tritium::ArgSlot>);\n";
    c << "} // namespace detail\n";
  }
  c << "namespace {\n";
  for (size_t v = 0; v < built.size(); ++v)
    write_variant_tables(c, v, built[v]);
  for (const auto* k : used)
    write_kernel_table(c, o, *k, built);
  c << "} // namespace\n";
  for (const auto* k : used) {
    std::string n = short_name(k->name);
    c << "\n" << signature(*k) << " {\n";
    if (k->params.empty()) {
      c << "  return tritium::aot::launch(" << n << "_kernel, launch, {});\n}\n";
      continue;
    }
    c << "  const tritium::ArgSlot params[] = {";
    for (size_t i = 0; i < k->params.size(); ++i)
      c << (i ? ", " : "") << "tritium::aot::slot(arg" << i << ")";
    c << "};\n  return tritium::aot::launch(" << n << "_kernel, launch, params);\n}\n";
  }
  c << "\n} // namespace " << o.ns << "\n";
  write_file(o.out_dir / (o.base + ".cpp"), c.str());
}

// The JIT fallback: the kernel sources themselves, launched through tritium::jit.
void write_jit_fallback(const Options& o, const std::vector<const Generator::Kernel*>& used) {
  std::ostringstream j;
  j << "// Generated by tritium_add_kernels: the JIT fallback of " << o.base
    << ".cpp (links libtritium). The kernel sources are compiled here, once.\n";
  for (const auto& s : o.sources)
    j << "#include \"" << fs::absolute(s).string() << "\"\n";
  j << "\n#include <tritium/aot/jit_fallback.hpp>\n\nnamespace " << o.ns << "::detail {\n";
  for (const auto* k : used) {
    std::string n = short_name(k->name);
    j << "\nvoid " << n
      << "_jit(const tritium::aot::Launch& launch, std::string_view device,\n"
         "         std::span<const tritium::ArgSlot> params) {\n"
         "  static auto kernel = tritium::jit(&::"
      << k->name << ", \"" << n
      << "\");\n  tritium::aot::jit_launch(kernel, launch, device, params);\n}\n";
  }
  j << "\n} // namespace " << o.ns << "::detail\n";
  write_file(o.out_dir / (o.base + "_jit.cpp"), j.str());
}

int generate(const std::vector<Generator::Kernel>& kernels, int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::vector<Spec> specs;
  for (const auto& t : o.spec_texts)
    specs.push_back(parse_spec(t, kernels));
  const std::vector<Built> built = build_all(o, specs);
  std::vector<const Generator::Kernel*> used;
  for (const auto& s : specs)
    if (std::find(used.begin(), used.end(), s.kernel) == used.end())
      used.push_back(s.kernel);
  write_header(o, specs, used);
  write_source(o, built, used);
  if (o.fallback)
    write_jit_fallback(o, used);
  return 0;
}

} // namespace

int Generator::run(int argc, char** argv) {
  try {
    return generate(kernels_, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

} // namespace tritium::aot
