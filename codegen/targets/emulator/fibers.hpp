// Cooperative threads for the GPU emulation. An emulated program's GPU threads meet at every
// barrier, shuffle and matrix instruction; as OS threads (one per GPU thread, 128 or more a
// program, created per program) a 2-core machine spent most of its time in the kernel
// creating them and in futex waits and sched_yield at those meetings. Here one OS thread runs
// all of a launch's GPU threads as fibers (Boost.Context), switching only where a thread must wait.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

namespace tritium::gpu {

class Fibers {
public:
  // Runs body(i) for every i in [0, n), each on a fiber of its own, on the calling thread, and
  // returns when every one has returned. The first exception a body throws ends the run and is
  // rethrown here; the other fibers are abandoned where they stand (no destructor of theirs runs).
  void run(int n, const std::function<void(int)>& body);
  // From a fiber: let the next fiber that has not finished run; returns when this one's turn
  // comes again.
  void yield();
  // The index of the fiber running now.
  int current() const { return current_; }

private:
  struct Fiber;
  static void start(void* transfer); // a fiber's first frame
  void switch_to(int next);

  std::vector<Fiber*> fibers_;
  const std::function<void(int)>* body_ = nullptr;
  int current_ = -1; // fibers_.size() - 1: the calling thread's own context
  int from_ = -1;    // the fiber that switched to the current one
  int live_ = 0;
  std::exception_ptr error_;
};

// A barrier of n fibers: each arrival waits for the n-th.
class FiberBarrier {
public:
  explicit FiberBarrier(int n) : n_(n) {}
  void arrive_and_wait(Fibers& fibers) {
    const uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      return;
    }
    while (generation_ == generation)
      fibers.yield();
  }

private:
  int n_, arrived_ = 0;
  uint64_t generation_ = 0;
};

} // namespace tritium::gpu
