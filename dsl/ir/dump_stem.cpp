#include <tritium/ir/dump_stem.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace tritium::ir {

std::string dump_stem(std::string_view dir, std::string_view kernel, std::string_view ir_text,
                      int num_warps, int num_stages) {
  const uint64_t spec =
      std::hash<std::string>{}(fmt::format("{}\n{}\n{}", ir_text, num_warps, num_stages));
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::vector<uint64_t>> seen;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<uint64_t>& specs = seen[{std::string(dir), std::string(kernel)}];
  if (specs.empty() || specs.front() == spec) {
    if (specs.empty())
      specs.push_back(spec);
    return std::string(kernel);
  }
  if (std::find(specs.begin(), specs.end(), spec) == specs.end())
    specs.push_back(spec);
  return fmt::format("{}.{:08x}", kernel, static_cast<uint32_t>(spec));
}

} // namespace tritium::ir
