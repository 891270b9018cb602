// The backend registry and device choice.
#include <tritium/runtime/device.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace tritium {

// Defined in builtin_backends.cpp: the backends this build contains.
std::vector<BackendFactory> builtin_backends();

std::vector<BackendFactory>& factories() {
  static std::vector<BackendFactory> f = builtin_backends();
  return f;
}

void register_backend(BackendFactory f) {
  factories().push_back(std::move(f));
}

namespace {

struct Instance {
  std::unique_ptr<Backend> backend;
  std::string why_not;
};

std::mutex mutex;

Instance& instance(const BackendFactory& f) {
  static std::map<std::string, Instance> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = made.try_emplace(f.name);
  if (inserted) {
    try {
      it->second.backend = f.make(&it->second.why_not);
    } catch (const std::exception& e) {
      it->second.why_not = e.what();
    }
    if (!it->second.backend && it->second.why_not.empty())
      it->second.why_not = "not available";
  }
  return it->second;
}

std::vector<BackendFactory> by_priority() {
  auto f = factories();
  std::stable_sort(f.begin(), f.end(), [](auto& a, auto& b) { return a.priority > b.priority; });
  return f;
}

std::string known_names() {
  std::string s;
  for (const auto& f : by_priority())
    s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

} // namespace

Device device(std::string_view name) {
  for (const auto& f : factories())
    if (f.name == name) {
      Instance& i = instance(f);
      if (!i.backend)
        throw Error(fmt::format("device '{}' is not available: {}", name, i.why_not));
      return Device(i.backend.get());
    }
  throw Error(fmt::format("unknown device '{}' (known: {})", name, known_names()));
}

Device default_device() {
  if (const char* env = std::getenv("TRITIUM_DEVICE"); env && *env) {
    try {
      return device(env);
    } catch (const Error& e) {
      throw Error(fmt::format("TRITIUM_DEVICE={}: {}", env, e.what()));
    }
  }
  for (const auto& f : by_priority()) {
    Instance& i = instance(f);
    if (i.backend)
      return Device(i.backend.get());
  }
  throw Error("no tritium device is available");
}

std::vector<std::pair<std::string, std::string>> list_devices() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : by_priority()) {
    Instance& i = instance(f);
    out.emplace_back(f.name, i.backend ? std::string("available (") + i.backend->target() + ")"
                                       : i.why_not);
  }
  return out;
}

} // namespace tritium
