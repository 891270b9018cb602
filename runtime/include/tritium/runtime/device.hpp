// Devices, their streams and events, and their memory. A Device is a cheap handle to a backend
// that lives for the whole program; Buffer<T> holds device memory; Stream and Event order and
// time work on a device.
#pragma once

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/runtime/backend.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tritium {

template <class T>
class Buffer;
class Stream;
class Event;

class Device {
public:
  Device() = default;
  explicit Device(Backend* b) : backend_(b) {}

  std::string_view name() const { return backend().name(); } // "cuda", "cpu", …
  int index() const { return backend().index(); }            // 1 for cuda:1
  // "cuda:1"; the bare name for index 0 ("cuda", "cpu"), as device() accepts either.
  std::string str() const {
    return index() == 0 ? std::string(name()) : std::string(name()) + ":" + std::to_string(index());
  }
  std::string target() const { return backend().target(); }
  Backend& backend() const {
    if (!backend_)
      throw Error("tritium::Device: this device handle is empty");
    return *backend_;
  }
  // Waits for everything queued on the device's own stream.
  void synchronize() const { backend().synchronize(); }
  // SMs (NVIDIA), compute units (AMD) or hardware threads (CPU): the grid of a persistent
  // kernel, as Triton's tutorials take NUM_SMS from the device properties.
  int num_compute_units() const { return backend().num_compute_units(); }

  // The device's own stream: where launches and copies go unless told otherwise.
  Stream stream() const;
  // A new stream of this device, destroyed with its last handle.
  Stream create_stream() const;
  // A stream someone else created and owns (a CUstream / cudaStream_t on cuda, a hipStream_t
  // on hip): PyTorch's current stream, the one cuBLAS or NCCL work is queued on. It must
  // belong to this device and outlive the handle.
  Stream wrap_stream(void* native) const;
  Event create_event() const;

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

// The device kernels run on by default: TRITIUM_DEVICE if set (cpu, interpreter, cuda, cuda:1,
// hip, gpu-emulator), else the first available GPU, else the CPU.
Device default_device();
// A device by name, with an optional index: "cuda", "cuda:1", "hip:0", "cpu". Index 0 is the
// bare name's device unless TRITIUM_CUDA_DEVICE / TRITIUM_HIP_DEVICE say otherwise. Throws
// tritium::Error saying why when the device is unknown or unavailable here.
Device device(std::string_view name);
// The names of the backends built in, and whether each is usable here (with the reason).
std::vector<std::pair<std::string, std::string>> list_devices();

// A queue of work on one device. Work on one stream runs in order; work on different streams
// may overlap unless an Event orders it. Copyable handle; a stream from create_stream() is
// destroyed with its last handle.
class Stream {
public:
  Stream() = default;
  Device device() const { return dev_; }
  // The CUstream / hipStream_t, for handing to cuBLAS, NCCL or PyTorch (null on host devices).
  void* native_handle() const { return handle_ ? handle_ : dev_.backend().default_stream(); }
  // What launches pass to the backend: null for the device's own stream.
  void* launch_handle() const { return handle_; }
  void synchronize() const { dev_.backend().synchronize_stream(handle_); }
  // Work queued on this stream after this call waits until `e` is reached.
  void wait(const Event& e) const;

private:
  friend class Device;
  Stream(Device d, void* handle, std::shared_ptr<void> owner)
      : dev_(d), handle_(handle), owner_(std::move(owner)) {}
  Device dev_;
  void* handle_ = nullptr;
  std::shared_ptr<void> owner_;
};

// A point in a stream: record it after some work, then wait for it, make another stream wait
// for it, or time the work between two events (device time on GPUs, without the host's
// launch overhead).
class Event {
public:
  Event() = default;
  Device device() const { return dev_; }
  // Marks the point after everything queued on `s` so far (default: the device's own stream).
  void record(const Stream& s) {
    check_device(s.device(), "record");
    ev().record(s.launch_handle());
  }
  void record() { ev().record(nullptr); }
  void synchronize() const { ev().synchronize(); }
  bool done() const { return ev().done(); }
  // Waits for this event; milliseconds from `start` (recorded earlier) to this event.
  double elapsed_ms_since(const Event& start) const {
    check_device(start.dev_, "time");
    return ev().ms_since(start.ev());
  }

private:
  friend class Device;
  friend class Stream;
  Event(Device d, std::shared_ptr<DeviceEvent> e) : dev_(d), ev_(std::move(e)) {}
  DeviceEvent& ev() const {
    if (!ev_)
      throw Error("tritium::Event: this event handle is empty (use Device::create_event)");
    return *ev_;
  }
  void check_device(const Device& other, const char* what) const {
    if (!(other == dev_))
      throw Error("tritium::Event: cannot " + std::string(what) + " an event of device '" +
                  dev_.str() + "' against device '" + other.str() + "'");
  }
  Device dev_;
  std::shared_ptr<DeviceEvent> ev_;
};

inline Stream Device::stream() const {
  (void)backend();
  return Stream(*this, nullptr, nullptr);
}
inline Stream Device::create_stream() const {
  Backend* b = &backend();
  void* s = b->create_stream();
  if (!s)
    return Stream(*this, nullptr, nullptr); // host devices: everything is in order already
  return Stream(*this, s, std::shared_ptr<void>(s, [b](void* p) { b->destroy_stream(p); }));
}
inline Stream Device::wrap_stream(void* native) const {
  if (native && !backend().default_stream())
    throw Error("tritium::Device::wrap_stream: device '" + str() +
                "' runs every launch at once and has no native streams");
  return Stream(*this, native, nullptr);
}
inline Event Device::create_event() const {
  return Event(*this, std::shared_ptr<DeviceEvent>(backend().new_event()));
}
inline void Stream::wait(const Event& e) const {
  e.check_device(dev_, "wait for");
  dev_.backend().stream_wait(handle_, e.ev());
}

// Typed device memory. Movable, not copyable. Memory from Device::alloc is freed with the
// buffer; a buffer made by Buffer::adopt uses memory someone else owns (a DLPack tensor, a
// framework's allocation) and calls their release function, if any, when it goes.
template <class T>
class Buffer {
public:
  using value_type = T;
  using ReleaseFn = void (*)(void* context);

  Buffer() = default;
  Buffer(Device d, size_t n) : dev_(d), n_(n) {
    if (n > max_elements())
      throw Error("tritium::Buffer: " + std::to_string(n) + " elements of " +
                  std::to_string(sizeof(T)) + " bytes do not fit in memory (more than 2^63 bytes)");
    if (n)
      ptr_ = static_cast<T*>(d.backend().alloc(n * sizeof(T)));
  }
  // n elements at `ptr`, memory of device `d` that tritium did not allocate. It must stay valid
  // until the buffer goes; then release(context) is called, if given.
  static Buffer adopt(Device d, T* ptr, size_t n, ReleaseFn release = nullptr,
                      void* context = nullptr) {
    if (!ptr && n)
      throw Error("Buffer::adopt: a null pointer for " + std::to_string(n) + " elements");
    Buffer b;
    b.dev_ = d;
    b.ptr_ = ptr;
    b.n_ = n;
    b.adopted_ = true;
    b.release_ = release;
    b.context_ = context;
    if (ptr)
      d.backend().adopt(ptr, n * sizeof(T));
    return b;
  }
  // A moved-from buffer is empty, like a default-constructed one: no device, no memory.
  Buffer(Buffer&& o) noexcept { take(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~Buffer() { release(); }

  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  T* data() const { return ptr_; } // a device address: dereference only on host devices
  Device device() const { return dev_; }
  bool adopted() const { return adopted_; } // memory tritium did not allocate

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
  static constexpr size_t max_elements() { return (size_t{1} << 63) / sizeof(T); }
  void take(Buffer& o) noexcept {
    dev_ = std::exchange(o.dev_, Device());
    ptr_ = std::exchange(o.ptr_, nullptr);
    n_ = std::exchange(o.n_, 0);
    adopted_ = std::exchange(o.adopted_, false);
    release_ = std::exchange(o.release_, nullptr);
    context_ = std::exchange(o.context_, nullptr);
  }
  void release() noexcept {
    if (adopted_) {
      if (ptr_)
        dev_.backend().release_adopted(ptr_);
      if (release_)
        release_(context_);
    } else if (ptr_) {
      dev_.backend().free(ptr_);
    }
    ptr_ = nullptr;
    release_ = nullptr;
    adopted_ = false;
  }
  Device dev_;
  T* ptr_ = nullptr;
  size_t n_ = 0;
  bool adopted_ = false;
  ReleaseFn release_ = nullptr;
  void* context_ = nullptr;
};

} // namespace tritium
