// tritium::autotune: Triton's @triton.autotune for C++. Each configuration names values for
// the kernel's tuned constexpr parameters and its compile options; on the first call for a key
// (the values of the arguments the best configuration depends on), every configuration is
// compiled, launched and timed on the device, the fastest kept in memory and on disk, and
// every later call with that key launches it directly.
//
//   auto matmul = tritium::autotune(
//       matmul_kernel, "matmul_kernel",
//       {{{{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"BLOCK_K", 64}}, 8, 4},
//        {{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}}, 4, 4}});
//   matmul(fmt::format("{}x{}x{}", M, N, K), [&](auto& kernel, const tritium::Config& c) {
//     kernel[{tritium::cdiv(M, c["BLOCK_M"]) * tritium::cdiv(N, c["BLOCK_N"])}](
//         a, b, out, M, N, K, c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]);
//   });
//
// The launch function receives the kernel with the configuration's options already set.
// Configurations that cannot be compiled or launched (too much shared memory, too many
// registers, a shape the kernel rejects) are pruned, with the reason; if none is left, the call
// throws tritium::Error listing every reason. TRITIUM_AUTOTUNE=print prints each tuning's table
// on stderr; a terminal also gets a progress line while it runs. Results persist under the
// cache directory (TRITIUM_CACHE_DIR, as compiled binaries; "off" disables).
//
// Timing overwrites the launch's outputs several times; kernels that accumulate into their
// outputs (atomics, +=) need a launch function that resets them, as with Triton's
// reset_to_zero.
#pragma once

#include <tritium/error.hpp>
#include <tritium/runtime/device.hpp>
#include <tritium/runtime/jit.hpp>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tritium {

struct Config {
  std::vector<std::pair<std::string, int64_t>> values; // the tuned constexpr parameters
  int num_warps = 4;
  int num_stages = 3;

  // A tuned value by name; throws tritium::Error naming the configuration when absent.
  int64_t operator[](std::string_view name) const;
  std::string str() const; // "BLOCK_M=128 BLOCK_N=256 num_warps=8 num_stages=4"
};

namespace detail {

struct TuneResult {
  std::string config;
  uint64_t ir_hash = 0; // JitFunction::last_ir_hash of its launch
  double us = 0;        // median time per launch; 0 when pruned
  std::string error;    // why it was pruned
};

// Times `launch` (already warmed up) with tritium::bench: device time, median, microseconds.
double time_launches(const Device& dev, const std::function<void()>& launch);
// Tuning state shared by all autotuned kernels: printing, progress, the disk store.
bool autotune_print();
void autotune_progress(std::string_view kernel, std::string_view key, size_t done, size_t total);
void autotune_report(std::string_view kernel, std::string_view key,
                     const std::vector<TuneResult>& results, size_t best);
std::optional<std::string> autotune_load(std::string_view kernel, std::string_view device,
                                         std::string_view key);
void autotune_store(std::string_view kernel, std::string_view device, std::string_view key,
                    std::string_view config);
// One line on stderr: a stored choice dropped, and why.
void autotune_note(std::string_view kernel, std::string_view key, std::string_view config,
                   std::string_view why);
std::string hex(uint64_t v);

// The configuration this thread is launching through an autotuner ("" outside one): the
// specializations of one kernel differ only in it, so dumps and cross-compilers name their
// files by it (config_slug: "BLOCK_M128-BLOCK_N64-w8-s3"). The scope only keeps a pointer, so
// that a cached launch pays nothing for it; the name is made when a compile asks.
std::string current_config();
std::string config_slug(const Config& c);
class ConfigScope {
public:
  explicit ConfigScope(const Config& c);
  ~ConfigScope();
  ConfigScope(const ConfigScope&) = delete;
  ConfigScope& operator=(const ConfigScope&) = delete;

private:
  const Config* saved_;
};

} // namespace detail

template <class... P>
class Autotuner {
public:
  using Kernel = JitFunction<P...>;
  using Launch = std::function<void(Kernel&, const Config&)>;

  Autotuner(void (*fn)(P...), std::string name, std::vector<Config> configs)
      : kernel_(fn, std::move(name)), configs_(std::move(configs)) {
    if (configs_.empty())
      throw Error("tritium::autotune: kernel '" + kernel_.name() + "' has no configurations");
  }

  // Launches with the best configuration for `key` on `device` (the default device when
  // omitted), tuning first if this key is new.
  //
  // A choice read from the disk store is checked by its first launch: where it no longer
  // traces or compiles (the kernel or its configurations changed), or traces to other IR than
  // it was measured on, it is dropped with a one-line note and the key tuned again.
  void operator()(const std::string& key, const Launch& launch, Device device = {}) {
    if (device == Device())
      device = default_device();
    // One lookup under one lock: the choice, and whether it still waits for its check.
    uint64_t stored_hash = 0;
    const Config* c = &choose(key, launch, device, &stored_hash);
    auto run = [&] {
      kernel_.options({.num_warps = c->num_warps, .num_stages = c->num_stages});
      detail::ConfigScope scope(*c);
      launch(kernel_, *c);
    };
    if (stored_hash == 0)
      return run();
    std::string why;
    try {
      run();
      if (kernel_.last_ir_hash() == stored_hash)
        return;
      why = "the kernel traces to other IR than the choice was measured on";
    } catch (const Error& e) {
      why = std::string("it no longer runs: ") + e.what();
    }
    detail::autotune_note(kernel_.name(), key, c->str(), why);
    {
      const std::string full = std::string(device.target()) + "|" + key;
      std::lock_guard<std::mutex> lock(mutex_);
      chosen_.erase(full);
      skip_store_.insert(full);
    }
    c = &best(key, launch, device);
    run();
  }

  // The configuration chosen for `key` (tuning it first if needed). A choice read from the disk
  // store is returned before any launch has checked it: the first launch through operator()
  // may drop it and tune again (launch once before reporting the choice).
  const Config& best(const std::string& key, const Launch& launch, Device device = {}) {
    if (device == Device())
      device = default_device();
    return choose(key, launch, device, nullptr);
  }

  Kernel& kernel() { return kernel_; }
  const std::vector<Config>& configs() const { return configs_; }

private:
  // best(); and where `unchecked` is given, the IR hash of a choice read from disk that no
  // launch has checked yet (0 when none), taken so that only the first launch checks it.
  const Config& choose(const std::string& key, const Launch& launch, Device device,
                       uint64_t* unchecked) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string full = std::string(device.target()) + "|" + key;
    if (auto it = chosen_.find(full); it != chosen_.end()) {
      if (unchecked && !unchecked_.empty())
        if (auto u = unchecked_.find(full); u != unchecked_.end()) {
          *unchecked = u->second;
          unchecked_.erase(u);
        }
      return configs_[it->second];
    }
    if (configs_.size() == 1) // nothing to choose: no timing runs
      return configs_[chosen_[full] = 0];
    // Stored as "<config>\n<IR hash>"; an entry of another form is from an older tritium.
    if (auto stored = skip_store_.count(full)
                          ? std::nullopt
                          : detail::autotune_load(kernel_.name(), device.target(), key)) {
      const size_t nl = stored->find('\n');
      const uint64_t hash =
          nl == std::string::npos ? 0 : std::strtoull(stored->c_str() + nl + 1, nullptr, 16);
      for (size_t i = 0; hash != 0 && i < configs_.size(); ++i)
        if (configs_[i].str() == stored->substr(0, nl)) {
          chosen_[full] = i;
          if (unchecked)
            *unchecked = hash;
          else
            unchecked_[full] = hash;
          return configs_[i];
        }
    }
    std::vector<detail::TuneResult> results;
    size_t winner = configs_.size();
    for (size_t i = 0; i < configs_.size(); ++i) {
      detail::autotune_progress(kernel_.name(), key, i, configs_.size());
      detail::TuneResult r{configs_[i].str()};
      try {
        kernel_.options({.num_warps = configs_[i].num_warps, .num_stages = configs_[i].num_stages});
        detail::ConfigScope scope(configs_[i]);
        launch(kernel_, configs_[i]); // compiles, and warms up
        device.synchronize();
        r.ir_hash = kernel_.last_ir_hash();
        r.us = detail::time_launches(device, [&] { launch(kernel_, configs_[i]); });
        if (winner == configs_.size() || r.us < results[winner].us)
          winner = i;
      } catch (const Error& e) {
        r.error = e.what();
      }
      results.push_back(std::move(r));
    }
    detail::autotune_progress(kernel_.name(), key, configs_.size(), configs_.size());
    detail::autotune_report(kernel_.name(), key, results, winner);
    if (winner == configs_.size()) {
      std::string why;
      for (const auto& r : results)
        why += "\n  " + r.config + ": " + r.error;
      throw Error("tritium::autotune: kernel '" + kernel_.name() + "', key '" + key +
                  "': no configuration could run:" + why);
    }
    detail::autotune_store(kernel_.name(), device.target(), key,
                           configs_[winner].str() + "\n" + detail::hex(results[winner].ir_hash));
    skip_store_.erase(full);
    chosen_[full] = winner;
    return configs_[winner];
  }

  Kernel kernel_;
  std::vector<Config> configs_;
  std::mutex mutex_;
  std::map<std::string, size_t> chosen_;
  std::map<std::string, uint64_t> unchecked_; // disk choices not yet launched: their IR hash
  std::set<std::string> skip_store_;          // keys whose disk choice was found stale
};

// Makes an autotuned kernel (the name as for tritium::jit).
template <class... P>
requires detail::all_kernel_params<P...> Autotuner<P...>
autotune(void (*fn)(P...), std::string name, std::vector<Config> configs,
         std::source_location where = std::source_location::current()) {
  if (name.empty())
    name = detail::default_kernel_name(reinterpret_cast<const void*>(fn), where);
  return Autotuner<P...>(fn, std::move(name), std::move(configs));
}
template <class... P>
requires(!detail::all_kernel_params<P...>) detail::RejectedKernel<P...> autotune(
    void (*)(P...), std::string, std::vector<Config>,
    std::source_location = std::source_location::current()) {
  return {};
}
template <class F>
requires(!std::is_pointer_v<std::decay_t<F>> && !std::is_function_v<F>) auto autotune(
    F f, std::string name, std::vector<Config> configs,
    std::source_location where = std::source_location::current()) {
  if constexpr (detail::CapturelessLambda<F>)
    return autotune(+f, std::move(name), std::move(configs), where);
  else
    return detail::RejectedCallable<F>{};
}

} // namespace tritium
