// The autotuner's shared parts (runtime/include/tritium/runtime/autotune.hpp): timing,
// printing, progress, and the results kept on disk.
#include <tritium/runtime/autotune.hpp>
#include <tritium/runtime/bench.hpp>

#include "runtime/core/binary_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

namespace tritium {

int64_t Config::operator[](std::string_view name) const {
  for (const auto& [k, v] : values)
    if (k == name)
      return v;
  throw Error(
      fmt::format("tritium::autotune: configuration '{}' has no value named '{}'", str(), name));
}

std::string Config::str() const {
  std::string s;
  for (const auto& [k, v] : values)
    s += fmt::format("{}={} ", k, v);
  return s + fmt::format("num_warps={} num_stages={}", num_warps, num_stages);
}

namespace detail {

namespace {
thread_local const Config* current_launch = nullptr;
} // namespace

std::string current_config() {
  return current_launch ? config_slug(*current_launch) : std::string();
}

std::string config_slug(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c.values)
    s += fmt::format("{}{}-", k, v);
  return s + fmt::format("w{}-s{}", c.num_warps, c.num_stages);
}

ConfigScope::ConfigScope(const Config& c) : saved_(current_launch) {
  current_launch = &c;
}
ConfigScope::~ConfigScope() {
  current_launch = saved_;
}

// As Triton's autotuner: do_bench's device time (events, caches cleared before each run),
// median, in microseconds.
double time_launches(const Device& dev, const std::function<void()>& launch) {
  return bench(dev, launch).median_ms * 1e3;
}

bool autotune_print() {
  const char* v = std::getenv("TRITIUM_AUTOTUNE");
  return v && std::string_view(v) == "print";
}

void autotune_progress(std::string_view kernel, std::string_view key, size_t done, size_t total) {
  if (!isatty(2))
    return;
  std::fprintf(stderr, "\rtritium: autotuning %.*s [%.*s] %zu/%zu%s", int(kernel.size()),
               kernel.data(), int(key.size()), key.data(), done, total, done == total ? "\n" : "");
  std::fflush(stderr);
}

void autotune_report(std::string_view kernel, std::string_view key,
                     const std::vector<TuneResult>& results, size_t best) {
  if (!autotune_print())
    return;
  std::string out = fmt::format("tritium: autotune {} [{}]\n", kernel, key);
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.error.empty())
      out += fmt::format("  {} {:10.2f} us  {}\n", i == best ? "*" : " ", r.us, r.config);
    else
      out += fmt::format("    {:>10}     {}  ({})\n", "pruned", r.config, r.error);
  }
  std::fputs(out.c_str(), stderr);
}

// Choices are kept beside compiled binaries, in the binary cache's "autotune" folder (same root,
// same atomic writes and checksums, TRITIUM_CACHE_DIR=off disables both).
namespace {
gpu::CacheKey entry_key(std::string_view kernel, std::string_view device, std::string_view key) {
  return gpu::CacheKey().add("autotune").add(kernel).add(device).add(key);
}
} // namespace

std::optional<std::string> autotune_load(std::string_view kernel, std::string_view device,
                                         std::string_view key) {
  gpu::BinaryCache cache("autotune");
  if (!cache.enabled())
    return std::nullopt;
  auto bytes = cache.load(entry_key(kernel, device, key));
  if (!bytes)
    return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

void autotune_note(std::string_view kernel, std::string_view key, std::string_view config,
                   std::string_view why) {
  std::fputs(fmt::format("tritium::autotune: kernel '{}', key '{}': dropped the stored choice {} "
                         "({}); tuning again\n",
                         kernel, key, config, why)
                 .c_str(),
             stderr);
}

std::string hex(uint64_t v) {
  return fmt::format("{:016x}", v);
}

void autotune_store(std::string_view kernel, std::string_view device, std::string_view key,
                    std::string_view config) {
  gpu::BinaryCache cache("autotune");
  if (cache.enabled())
    cache.store(entry_key(kernel, device, key), config);
}

} // namespace detail
} // namespace tritium
