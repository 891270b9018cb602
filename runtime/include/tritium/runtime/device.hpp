// Devices and their memory. A Device is a cheap handle to a backend that lives for the
// whole program; Buffer<T> owns device memory.
#pragma once

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/runtime/backend.hpp>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tritium {

template <class T>
class Buffer;

class Device {
public:
  Device() = default;
  explicit Device(Backend* b) : backend_(b) {}

  std::string_view name() const { return backend().name(); }
  std::string target() const { return backend().target(); }
  Backend& backend() const {
    if (!backend_)
      throw Error("tritium::Device: this device handle is empty");
    return *backend_;
  }
  void synchronize() const { backend().synchronize(); }

  // Uninitialized device memory for n elements.
  template <class T>
  Buffer<T> alloc(size_t n) const {
    return Buffer<T>(*this, n);
  }
  // Device memory holding a copy of `host`.
  template <class T>
  Buffer<T> from_host(std::span<const T> host) const {
    Buffer<T> b(*this, host.size());
    b.copy_from_host(host);
    return b;
  }
  template <class T>
  Buffer<T> from_host(const std::vector<T>& host) const {
    return from_host(std::span<const T>(host));
  }

  friend bool operator==(const Device& a, const Device& b) { return a.backend_ == b.backend_; }

private:
  Backend* backend_ = nullptr;
};

// The device kernels run on by default: TRITIUM_DEVICE if set (cpu, interpreter, cuda, hip),
// else the first available GPU, else the CPU.
Device default_device();
// A device by name; throws tritium::Error saying why when it is unavailable here.
Device device(std::string_view name);
// The names of the backends built in, and whether each is usable here (with the reason).
std::vector<std::pair<std::string, std::string>> list_devices();

// Typed device memory, owned. Movable, not copyable.
template <class T>
class Buffer {
public:
  using value_type = T;
  Buffer() = default;
  Buffer(Device d, size_t n) : dev_(d), n_(n) {
    if (n)
      ptr_ = static_cast<T*>(d.backend().alloc(n * sizeof(T)));
  }
  Buffer(Buffer&& o) noexcept
      : dev_(o.dev_), ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      dev_ = o.dev_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~Buffer() { release(); }

  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  T* data() const { return ptr_; } // a device address: dereference only on host devices
  Device device() const { return dev_; }

  void copy_from_host(std::span<const T> host) {
    if (host.size() != n_)
      throw Error("Buffer::copy_from_host: " + std::to_string(host.size()) +
                  " elements into a buffer of " + std::to_string(n_));
    if (n_)
      dev_.backend().copy_to_device(ptr_, host.data(), bytes());
  }
  void copy_from_host(const std::vector<T>& host) { copy_from_host(std::span<const T>(host)); }
  std::vector<T> to_host() const {
    std::vector<T> out(n_);
    if (n_)
      dev_.backend().copy_to_host(out.data(), ptr_, bytes());
    return out;
  }

private:
  void release() {
    if (ptr_)
      dev_.backend().free(ptr_);
    ptr_ = nullptr;
  }
  Device dev_;
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

} // namespace tritium
