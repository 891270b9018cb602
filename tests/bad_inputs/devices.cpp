// Bad device choices: unknown names, devices this machine lacks, missing driver libraries,
// bad TRITIUM_* values. Variables read when a device is first made are tested in a child
// process, whose device registry starts empty.
#include "common.hpp"

#include <support/child.hpp>

#include <cstdlib>

namespace bad_inputs {
namespace {

// Prints each device's state, for the parent to check.
TEST_CASE("child: list devices") {
  TRITIUM_CHILD_ONLY();
  for (const auto& [name, state] : tritium::list_devices())
    std::printf("DEVICE %s: %s\n", name.c_str(), state.c_str());
  try {
    std::printf("DEFAULT %s\n", std::string(tritium::default_device().name()).c_str());
  } catch (const Error& e) {
    std::printf("DEFAULT-ERROR %s\n", e.what());
  }
}

TEST_CASE("bad input: TRITIUM_DEVICE names no device") {
  auto r = tritium::testing::run_child("child: list devices", {"TRITIUM_DEVICE=tpu"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("DEFAULT-ERROR TRITIUM_DEVICE=tpu: unknown device 'tpu' (known: ") !=
        std::string::npos);
}

TEST_CASE("bad input: tritium::device names no device") {
  CHECK_ERROR(tritium::device("tpu"), "unknown device 'tpu'", "interpreter", "cpu");
  CHECK_ERROR(tritium::device(""), "unknown device ''");
}

// On a machine without the GPU, asking for it says what is missing; with it, it works.
TEST_CASE("bad input: a GPU device this machine lacks") {
  for (std::string name : {"cuda", "hip"}) {
    CAPTURE(name);
    try {
      Device d = tritium::device(name);
      CHECK(d.name() == name);
    } catch (const Error& e) {
      std::string m = e.what();
      CHECK(m.find("device '" + name + "' is not available: ") == 0);
      CHECK((m.find("CUDA") != std::string::npos || m.find("NVIDIA") != std::string::npos ||
             m.find("HIP") != std::string::npos || m.find("AMD") != std::string::npos ||
             m.find("unknown device") != std::string::npos));
    }
  }
}

TEST_CASE("bad input: TRITIUM_DEVICE names a GPU this machine lacks") {
  for (std::string name : {"cuda", "hip"}) {
    CAPTURE(name);
    auto r = tritium::testing::run_child("child: list devices", {"TRITIUM_DEVICE=" + name});
    INFO(r.output);
    CHECK(r.exit_code == 0);
    bool available = r.output.find("DEVICE " + name + ": available") != std::string::npos;
    if (available)
      CHECK(r.output.find("DEFAULT " + name) != std::string::npos);
    else
      CHECK(r.output.find("DEFAULT-ERROR TRITIUM_DEVICE=" + name + ": ") != std::string::npos);
  }
}

TEST_CASE("bad input: the CUDA driver library is missing") {
  auto r = tritium::testing::run_child("child: list devices",
                                       {"TRITIUM_CUDA_LIBRARY=/nonexistent/libcuda.so.1"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  if (r.output.find("DEVICE cuda:") == std::string::npos) {
    MESSAGE("skipped: this build has no CUDA backend");
    return;
  }
  CHECK(r.output.find("DEVICE cuda: TRITIUM_CUDA_LIBRARY=/nonexistent/libcuda.so.1: the CUDA "
                      "driver cannot be opened") != std::string::npos);
  // Without the GPU, the default device is still usable: the CPU.
  CHECK(r.output.find("DEFAULT ") != std::string::npos);
}

TEST_CASE("bad input: the HIP runtime library is missing") {
  auto r = tritium::testing::run_child("child: list devices",
                                       {"TRITIUM_HIP_LIBRARY=/nonexistent/libamdhip64.so"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  if (r.output.find("DEVICE hip:") == std::string::npos) {
    MESSAGE("skipped: this build has no HIP backend");
    return;
  }
  CHECK(r.output.find("DEVICE hip: TRITIUM_HIP_LIBRARY=/nonexistent/libamdhip64.so: the HIP "
                      "runtime cannot be opened") != std::string::npos);
}

TEST_CASE("bad input: TRITIUM_CUDA_DEVICE is not a device index") {
  // Read before any driver is opened, so this holds on machines without the GPU too.
  auto r = tritium::testing::run_child("child: list devices",
                                       {"TRITIUM_CUDA_DEVICE=abc", "TRITIUM_HIP_DEVICE=-1"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("DEVICE cuda: TRITIUM_CUDA_DEVICE=abc is not a device index") !=
        std::string::npos);
  CHECK(r.output.find("DEVICE hip: TRITIUM_HIP_DEVICE=-1 is not a device index") !=
        std::string::npos);
  // The default device would be one of them: choosing it fails, naming the variable.
  CHECK(r.output.find("DEFAULT-ERROR TRITIUM_CUDA_DEVICE=abc is not a device index") !=
        std::string::npos);
}

TEST_CASE("bad input: a device index that is not a number") {
  CHECK_ERROR(tritium::device("cpu:x"), "device 'cpu:x': 'x' is not a device index");
  CHECK_ERROR(tritium::device("interpreter:"), "device 'interpreter:': '' is not a device index");
  CHECK_ERROR(tritium::device("cpu:1"), "there is one");
}

TEST_CASE("bad input: an empty Device handle") {
  Device none;
  CHECK_ERROR(none.alloc<float>(4), "this device handle is empty");
  CHECK_ERROR(none.name(), "this device handle is empty");
}

TEST_CASE("bad input: TRITIUM_EMULATOR_WARP is neither 32 nor 64") {
  auto e = tritium::device("gpu-emulator");
  auto x = e.alloc<float>(16), out = e.alloc<float>(16);
  auto k = tritium::jit(add_one, "add_one");
  ::setenv("TRITIUM_EMULATOR_WARP", "48", 1);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "TRITIUM_EMULATOR_WARP=48", "32 or 64");
  ::unsetenv("TRITIUM_EMULATOR_WARP");
  k[{1}](x, out, 16, 16); // the failed compile was not cached: this one works
}

TEST_CASE("bad input: TRITIUM_EMULATOR_ARCH unknown, or in conflict with WARP or MATRIX") {
  auto e = tritium::device("gpu-emulator");
  auto x = e.alloc<float>(16), out = e.alloc<float>(16);
  auto k = tritium::jit(add_one, "add_one");
  ::setenv("TRITIUM_EMULATOR_ARCH", "gfx999", 1);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "TRITIUM_EMULATOR_ARCH=gfx999", "gfx1200", "sm_90a");
  ::setenv("TRITIUM_EMULATOR_ARCH", "gfx942", 1);
  ::setenv("TRITIUM_EMULATOR_WARP", "32", 1);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "TRITIUM_EMULATOR_WARP=32 conflicts",
              "TRITIUM_EMULATOR_ARCH=gfx942", "64");
  ::unsetenv("TRITIUM_EMULATOR_WARP");
  ::setenv("TRITIUM_EMULATOR_ARCH", "gfx1200", 1);
  ::setenv("TRITIUM_EMULATOR_MATRIX", "wmma", 1);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "TRITIUM_EMULATOR_MATRIX=wmma conflicts", "wmma v2");
  ::setenv("TRITIUM_EMULATOR_MATRIX", "wmma_v2", 1); // agrees
  k[{1}](x, out, 16, 16);
  ::unsetenv("TRITIUM_EMULATOR_MATRIX");
  ::unsetenv("TRITIUM_EMULATOR_ARCH");
  k[{1}](x, out, 16, 16);
}

TEST_CASE("bad input: TRITIUM_EMULATOR_TARGETS names an unknown GPU target") {
  auto e = tritium::device("gpu-emulator");
  auto x = e.alloc<float>(16), out = e.alloc<float>(16);
  auto k = tritium::jit(add_one, "add_one");
  ::setenv("TRITIUM_EMULATOR_TARGETS", "gfx942,gfx999", 1);
  CHECK_ERROR((k[{1}](x, out, 16, 16)), "TRITIUM_EMULATOR_TARGETS=gfx942,gfx999",
              "unknown GPU architecture 'gfx999'", "sm_90");
  ::unsetenv("TRITIUM_EMULATOR_TARGETS");
  k[{1}](x, out, 16, 16);
}

} // namespace
} // namespace bad_inputs
