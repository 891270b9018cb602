// TRITIUM_PERF_MAP: the CPU backend lists the functions it JITs in /tmp/perf-<pid>.map, where
// Linux perf looks up samples in anonymous executable memory. The JIT reads the variable once,
// when it is created, so each check runs in a child process of its own.
#include <support/child.hpp>
#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace tl = tritium::tl;

namespace {

void perf_map_probe(tl::ptr<float> x, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(x + offs, tl::load(x + offs) * 2.f);
}

std::string map_path() {
  return "/tmp/perf-" + std::to_string(::getpid()) + ".map";
}

// Compiles and runs the probe on the CPU, then prints the map's line for it, if any.
void run_probe() {
  auto dev = tritium::device("cpu");
  auto x = dev.from_host(std::vector<float>(64, 1.f));
  tritium::jit(perf_map_probe, "perf_map_probe")[{1}](x, 64);
  CHECK(x.to_host()[63] == 2.f);
  std::ifstream map(map_path());
  std::string line;
  while (std::getline(map, line))
    if (line.find("tritium_perf_map_probe_") != std::string::npos)
      std::printf("map line: %s\n", line.c_str());
  std::filesystem::remove(map_path());
}

} // namespace

TEST_CASE("child: a kernel compiled for the CPU and its perf map line") {
  TRITIUM_CHILD_ONLY();
  run_probe();
}

TEST_CASE("cpu: TRITIUM_PERF_MAP=1 names JIT'd kernels in /tmp/perf-<pid>.map; unset, no map") {
  auto on =
      tritium::testing::run_child("child: a kernel compiled for the CPU and its perf map line",
                                  {"TRITIUM_PERF_MAP=1", "TRITIUM_CACHE_DIR=off"});
  INFO(on.output);
  CHECK(on.exit_code == 0);
  // perf's format: start and size in hexadecimal, then the name.
  std::regex line(R"(map line: ([0-9a-f]+) ([0-9a-f]+) tritium_perf_map_probe_[0-9]+\n)");
  std::smatch m;
  REQUIRE(std::regex_search(on.output, m, line));
  CHECK(std::stoull(m[1], nullptr, 16) > 0);
  CHECK(std::stoull(m[2], nullptr, 16) > 0);

  auto off =
      tritium::testing::run_child("child: a kernel compiled for the CPU and its perf map line",
                                  {"TRITIUM_PERF_MAP=0", "TRITIUM_CACHE_DIR=off"});
  INFO(off.output);
  CHECK(off.exit_code == 0);
  CHECK(off.output.find("map line:") == std::string::npos);
}
