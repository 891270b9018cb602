// Running a toolchain program (ld.lld for HSACOs, a CUDA toolkit's ptxas) as a child process.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tritium::gpu {

// Runs args[0] with `args`, its standard output and error written to `log`, and waits for it.
// Returns "" when it exited with status 0, else why not: "cannot run it (reason)", "killed by
// signal N", the log's text, or "exit status N" when the log is empty.
std::string run_tool(const std::vector<std::string>& args, const std::filesystem::path& log);

} // namespace tritium::gpu
