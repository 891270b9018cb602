#include "gpu/subprocess.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace tritium::gpu {

std::string run_tool(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 2, 1);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0)
    return fmt::format("cannot run it ({})", std::strerror(rc));
  int status = 0;
  if (waitpid(pid, &status, 0) < 0)
    return fmt::format("cannot wait for it ({})", std::strerror(errno));
  if (!WIFEXITED(status))
    return fmt::format("killed by signal {}", WTERMSIG(status));
  if (WEXITSTATUS(status) == 0)
    return "";
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  return text.str().empty() ? fmt::format("exit status {}", WEXITSTATUS(status)) : text.str();
}

} // namespace tritium::gpu
