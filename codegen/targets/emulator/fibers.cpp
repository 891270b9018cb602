#include "targets/emulator/fibers.hpp"

#include <tritium/error.hpp>

#include <boost/context/detail/fcontext.hpp>

#include <mutex>
#include <pthread.h>
#include <sys/mman.h>
#include <utility>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRITIUM_FIBERS_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define TRITIUM_FIBERS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TRITIUM_FIBERS_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TRITIUM_FIBERS_TSAN 1
#endif
#ifdef TRITIUM_FIBERS_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef TRITIUM_FIBERS_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tritium::gpu {
namespace {

// A kernel's frames are what LLVM makes of one GPU thread's code (spills, the matrix
// instructions' fragment arrays): tens of KiB. The stacks are reserved, not committed, and a
// guard page below each turns an overflow into a fault instead of a neighbour's corruption.
constexpr size_t kStackBytes = size_t{2} << 20;
constexpr size_t kGuardBytes = 4096;

// Stacks outlive runs: a launch of many programs reuses them, and so does the next launch.
class StackPool {
public:
  void* take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      void* s = free_.back();
      free_.pop_back();
      return s;
    }
    void* p = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
      throw Error("GPU emulation: no memory for a thread's stack");
    mprotect(p, kGuardBytes, PROT_NONE);
    return static_cast<char*>(p) + kGuardBytes;
  }
  void give_back(void* s) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s);
  }

private:
  std::mutex mutex_;
  std::vector<void*> free_;
};
StackPool& stacks() {
  static StackPool* pool = new StackPool; // never destroyed: fibers may be abandoned with one
  return *pool;
}

namespace ctx = boost::context::detail;

} // namespace

struct Fibers::Fiber {
  ctx::fcontext_t context = nullptr; // where it resumes
  void* stack = nullptr;             // lowest usable address; kStackBytes of it
  size_t stack_bytes = kStackBytes;
  bool done = false;
  void* asan_fake_stack = nullptr;
  void* tsan_fiber = nullptr;
};

void Fibers::run(int n, const std::function<void(int)>& body) {
  Fiber main;
  {
    pthread_attr_t attr;
    pthread_getattr_np(pthread_self(), &attr);
    pthread_attr_getstack(&attr, &main.stack, &main.stack_bytes);
    pthread_attr_destroy(&attr);
  }
#ifdef TRITIUM_FIBERS_TSAN
  main.tsan_fiber = __tsan_get_current_fiber();
#endif
  std::vector<Fiber> fibers(static_cast<size_t>(n));
  fibers_.clear();
  for (Fiber& f : fibers) {
    f.stack = stacks().take();
    f.context = ctx::make_fcontext(static_cast<char*>(f.stack) + f.stack_bytes, f.stack_bytes,
                                   [](ctx::transfer_t t) { Fibers::start(&t); });
#ifdef TRITIUM_FIBERS_TSAN
    f.tsan_fiber = __tsan_create_fiber(0);
#endif
    fibers_.push_back(&f);
  }
  fibers_.push_back(&main); // index n: the calling thread
  body_ = &body;
  live_ = n;
  error_ = nullptr;
  current_ = n;
  if (n > 0)
    switch_to(0);
  current_ = -1;
  for (int i = 0; i < n; ++i) {
    stacks().give_back(fibers[static_cast<size_t>(i)].stack);
#ifdef TRITIUM_FIBERS_TSAN
    __tsan_destroy_fiber(fibers[static_cast<size_t>(i)].tsan_fiber);
#endif
  }
  fibers_.clear();
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

void Fibers::start(void* from) {
  auto t = *static_cast<ctx::transfer_t*>(from);
  Fibers& self = *static_cast<Fibers*>(t.data);
  self.fibers_[static_cast<size_t>(self.from_)]->context = t.fctx;
#ifdef TRITIUM_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  const int me = self.current_;
  try {
    (*self.body_)(me);
  } catch (...) {
    if (!self.error_)
      self.error_ = std::current_exception();
  }
  self.fibers_[static_cast<size_t>(me)]->done = true;
  --self.live_;
  const int main = static_cast<int>(self.fibers_.size()) - 1;
  if (self.error_ || self.live_ == 0) {
    self.switch_to(main);
  } else {
    self.yield();
  }
  __builtin_unreachable(); // a finished fiber is never switched back to
}

void Fibers::yield() {
  const int n = static_cast<int>(fibers_.size()) - 1;
  int next = current_;
  do
    next = (next + 1) % n;
  while (fibers_[static_cast<size_t>(next)]->done && next != current_);
  if (next != current_)
    switch_to(next);
}

void Fibers::switch_to(int next) {
  Fiber& from = *fibers_[static_cast<size_t>(current_)];
  Fiber& to = *fibers_[static_cast<size_t>(next)];
  from_ = current_;
  current_ = next;
#ifdef TRITIUM_FIBERS_ASAN
  // A finished fiber's fake stack can go: it is never resumed.
  __sanitizer_start_switch_fiber(from.done ? nullptr : &from.asan_fake_stack, to.stack,
                                 to.stack_bytes);
#endif
#ifdef TRITIUM_FIBERS_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  const ctx::transfer_t t = ctx::jump_fcontext(to.context, this);
  fibers_[static_cast<size_t>(from_)]->context = t.fctx; // whoever switched here, suspended
#ifdef TRITIUM_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(from.asan_fake_stack, nullptr, nullptr);
#endif
}

} // namespace tritium::gpu
