// The backend registry and device choice: "cuda", "cuda:1", "cpu", TRITIUM_DEVICE.
#include <tritium/runtime/device.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
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

// Host clock events: exact where launches return when their kernel is done.
class HostEvent final : public DeviceEvent {
public:
  void record(void*) override { at_ = std::chrono::steady_clock::now(); }
  void synchronize() override {}
  bool done() override { return true; }
  double ms_since(const DeviceEvent& start) override {
    auto* s = dynamic_cast<const HostEvent*>(&start);
    if (!s)
      throw Error("tritium::Event: a host-clock event can only be timed against another one");
    return std::chrono::duration<double, std::milli>(at_ - s->at_).count();
  }

private:
  std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

struct Instance {
  std::unique_ptr<Backend> backend;
  std::string why_not;
  // Backends whose device was lost to a fault. Kept, never destroyed: the program's buffers
  // and kernels may still point at them (they refuse work with an error saying so).
  std::vector<std::unique_ptr<Backend>> lost;
};

std::mutex mutex;

// The backend of device `index` of `f`, made on first use and made again after its device
// was lost to a fault; null with `why` set when it is not usable here. Read under the lock:
// another thread may be replacing a lost one.
Backend* get(const BackendFactory& f, int index, std::string* why = nullptr) {
  static std::map<std::pair<std::string, int>, Instance> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = made.try_emplace({f.name, index});
  Instance& i = it->second;
  if (!inserted && i.backend && i.backend->lost()) {
    i.lost.push_back(std::move(i.backend));
    inserted = true;
  }
  if (inserted) {
    i.why_not.clear();
    try {
      i.backend = f.make(index, &i.why_not);
    } catch (const std::exception& e) {
      i.why_not = e.what();
    }
    if (!i.backend && i.why_not.empty())
      i.why_not = "not available";
  }
  if (why)
    *why = i.why_not;
  return i.backend.get();
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

// The index a bare name means: TRITIUM_CUDA_DEVICE for "cuda", and so on; else 0.
int default_index(std::string_view name) {
  std::string var = "TRITIUM_";
  for (char c : name)
    var += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  var += "_DEVICE";
  const char* env = std::getenv(var.c_str());
  if (!env || !*env)
    return 0;
  int i = -1;
  auto [end, ec] = std::from_chars(env, env + std::strlen(env), i);
  if (ec != std::errc() || *end || i < 0)
    throw Error(fmt::format("{}={} is not a device index (0, 1, …)", var, env));
  return i;
}

} // namespace

void* Backend::alloc_mapped(size_t bytes, void** device) {
  *device = host_memory() ? alloc(bytes) : nullptr;
  return *device;
}

void Backend::free_mapped(void* host) {
  free(host);
}

std::unique_ptr<DeviceEvent> Backend::new_event() {
  return std::make_unique<HostEvent>();
}

Device device(std::string_view spec) {
  std::string_view name = spec;
  int index = -1;
  if (auto colon = spec.rfind(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    std::string_view digits = spec.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || index < 0)
      throw Error(fmt::format("device '{}': '{}' is not a device index (expected a name such as "
                              "cuda or cuda:1)",
                              spec, digits));
  }
  for (const auto& f : factories())
    if (f.name == name) {
      if (index < 0)
        index = default_index(name);
      std::string why;
      Backend* b = get(f, index, &why);
      if (!b)
        throw Error(fmt::format("device '{}' is not available: {}", spec, why));
      return Device(b);
    }
  throw Error(fmt::format("unknown device '{}' (known: {})", spec, known_names()));
}

Device default_device() {
  if (const char* env = std::getenv("TRITIUM_DEVICE"); env && *env) {
    try {
      return device(env);
    } catch (const Error& e) {
      throw Error(fmt::format("TRITIUM_DEVICE={}: {}", env, e.what()));
    }
  }
  for (const auto& f : by_priority())
    if (Backend* b = get(f, default_index(f.name)))
      return Device(b);
  throw Error("no tritium device is available");
}

std::vector<std::pair<std::string, std::string>> list_devices() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : by_priority()) {
    int index = 0;
    try {
      index = default_index(f.name);
    } catch (const Error& e) {
      out.emplace_back(f.name, e.what());
      continue;
    }
    std::string why;
    Backend* b = get(f, index, &why);
    out.emplace_back(f.name, b ? "available (" + b->target() + ")" : why);
  }
  return out;
}

} // namespace tritium
