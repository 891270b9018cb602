// The zoo's registry. Entries register from static initializers in other translation units,
// in an unspecified order, so the list is a function-local static: it exists before the first
// add() whichever file runs first.
#include "zoo.hpp"

#include <algorithm>

namespace zoo {
namespace {
std::vector<Entry>& registry() {
  static std::vector<Entry> all;
  return all;
}
} // namespace

int add(Entry e) {
  registry().push_back(std::move(e));
  return static_cast<int>(registry().size()) - 1;
}

// By name, so that every program lists them in one order whatever the link order was (sorted
// once: later calls move nothing, so references into the list stay valid).
const std::vector<Entry>& entries() {
  auto& all = registry();
  auto by_name = [](const Entry& a, const Entry& b) { return a.name < b.name; };
  if (!std::is_sorted(all.begin(), all.end(), by_name))
    std::stable_sort(all.begin(), all.end(), by_name);
  return all;
}

} // namespace zoo
