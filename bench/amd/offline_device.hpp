// A device that compiles for a GPU this machine does not have: every kernel a program launches
// on it is traced, specialized and compiled for `arch` exactly as on that GPU (the same
// autotuner configurations, since the device answers to the GPU's runtime name), its stages
// written to a folder, and nothing runs. Launches return at once and events report a fixed
// time, so that an autotuner walks every configuration quickly.
#pragma once

#include <tritium/runtime/device.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tritium::xcompile {

// One compilation: the kernel, the autotuner's configuration ("" for a plain jit launch), and
// what came of it.
struct Compiled {
  std::string kernel, config, file; // file: the stages' common prefix under the folder
  int num_warps = 0, num_stages = 0;
  int shared_bytes = 0;
  double seconds = 0;               // compile time
  std::string error;                // why it did not compile ("" when it did)
  std::vector<std::string> remarks; // what the passes chose not to do (a pipeline cut short)
};

// Names the compilations made while it lives (`<label>.<kernel>...`): the example, then what a
// run function distinguishes (head size, decode or prefill), joined by dots.
class Label {
public:
  explicit Label(std::string part);
  ~Label();
  Label(const Label&) = delete;
  Label& operator=(const Label&) = delete;
  static const std::string& current();

private:
  std::string saved_;
};

class OfflineGpu {
public:
  // `runtime_name`: the name programs test for ("hip" for AMD targets, "cuda" for NVIDIA).
  OfflineGpu(std::string arch, std::string dump_dir);
  ~OfflineGpu();
  Device device();
  // Every compilation so far, in order.
  const std::vector<Compiled>& compiled() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tritium::xcompile
