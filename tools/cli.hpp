// What the `tritium` command's subcommands share: argument checks and reading a file.
#pragma once

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace tritium::cli {

inline constexpr const char* kUsage =
    "usage: tritium compile [--target ARCH] [--num-warps N] [--num-stages N] [--code-object 4|5]\n"
    "                       [--dump DIR]\n"
    "                       (--sample NAME | FILE.tir)\n"
    "       tritium opt --pass NAME [--pass NAME ...] [--num-warps N] [--target ARCH]\n"
    "                   [--warp-size N] [--matrix-unit UNIT] [--num-stages N] FILE.tir\n"
    "       tritium targets | samples | passes | help\n"
    "compile: lower a kernel for ARCH (`tritium targets`; host: the CPU backend) and print its\n"
    "  assembly, or write every stage to DIR. opt: run the target's passes (`tritium passes`)\n"
    "  on IR text (FILE \"-\": stdin) and print it. A file's `module {target = ARCH,\n"
    "  num_warps = N, ...}` line stands for the options it names; options given win.\n";

// A mistake on the command line: the usage on stderr, status 2.
inline int usage() {
  std::cerr << kUsage;
  return 2;
}

// --help: the usage on stdout, status 0.
inline int help() {
  std::cout << kUsage;
  return 0;
}

inline bool is_help(const std::string& a) {
  return a == "--help" || a == "-h" || a == "help";
}

// A numeric option's value: a whole number from `lo` to `hi`, or an error naming the option.
inline int whole_number(const std::string& option, const std::string& text, int lo, int hi) {
  int n = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || n < lo || n > hi)
    throw Error(
        fmt::format("{} takes a whole number from {} to {}, got '{}'", option, lo, hi, text));
  return n;
}

// The value of the option at argv[i] (the next argument, which `i` moves to), or an error
// naming the option.
inline std::string option_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc)
    throw Error(std::string(argv[i]) + " needs a value");
  return argv[++i];
}

// A file's text; "-" is stdin.
inline std::string read_text(const std::string& file) {
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(file);
  if (!in)
    throw Error("cannot read " + file);
  ss << in.rdbuf();
  return ss.str();
}

// `tritium opt ARGS` (opt.cpp): its exit status.
int opt(int argc, char** argv);
// `tritium passes`: every pass `opt` takes, GPU then CPU, then the analysis printers.
void list_passes(std::ostream& out);

} // namespace tritium::cli
