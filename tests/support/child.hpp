// Running one test case of this program in a child process, with extra environment variables:
// for what a process decides once (the device registry reads TRITIUM_* variables when a
// device is first made) and for what a process may not survive in a usable state (GPU faults).
//
//   TEST_CASE("child: ...") { TRITIUM_CHILD_ONLY(); ... print what the parent checks ... }
//   auto r = tritium::testing::run_child("child: ...", {"TRITIUM_DEVICE=cpu"});
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace tritium::testing {

struct ChildResult {
  int exit_code = -1; // -1 when the child did not exit normally (a signal)
  std::string output; // stdout and stderr together
};

// Runs test case `name` of this program in a child with `env` ("NAME=value") added.
inline ChildResult run_child(const std::string& name, const std::vector<std::string>& env) {
  std::string cmd = "env TRITIUM_TEST_CHILD=1";
  for (const auto& e : env)
    cmd += " '" + e + "'";
  cmd += " /proc/" + std::to_string(::getpid()) + "/exe '--test-case=" + name + "' 2>&1";
  ChildResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p)
    return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p))
    r.output += buf;
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline bool is_child() {
  const char* v = std::getenv("TRITIUM_TEST_CHILD");
  return v && *v;
}

} // namespace tritium::testing

// A child-only test case returns at once in the ordinary run.
#define TRITIUM_CHILD_ONLY()                                                                       \
  if (!::tritium::testing::is_child())                                                             \
  return
