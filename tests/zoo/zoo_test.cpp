// Every zoo entry (bench/zoo) on its small shapes, on each test device (tests/support/
// devices.hpp) and the gpu-emulator: one doctest case per entry, named after it. The entries
// register from static initializers in other files, so the cases are registered here, in main,
// once all of them are known.
#define DOCTEST_CONFIG_IMPLEMENT
#include "zoo.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace {

// A kernel that shows a tritium bug on one device is skipped there (not dropped), with the
// reason printed; bench/zoo/KNOWN_ISSUES.md holds each one's repro. device: a label().
struct KnownIssue {
  std::string kernel, device, why;
};
const std::vector<KnownIssue> known_issues = {};

std::vector<tritium::Device> devices() {
  auto out = tritium::testing::test_devices();
  bool have = false;
  for (auto& d : out)
    have |= d.name() == "gpu-emulator";
  if (!have && !std::getenv("TRITIUM_TEST_DEVICES"))
    out.push_back(tritium::device("gpu-emulator"));
  return out;
}

// The emulator's label carries its warp size (TRITIUM_EMULATOR_WARP): gpu-emulator-wave64.
std::string label(const tritium::Device& d) {
  return d.name() == "gpu-emulator" ? d.target() : std::string(d.name());
}

void run_entry(const zoo::Entry& e) {
  for (const tritium::Device& dev : devices()) {
    const std::string where = label(dev);
    bool skipped = false;
    for (const KnownIssue& k : known_issues)
      if (k.kernel == e.name && k.device == where) {
        MESSAGE(e.name << " skipped on " << where << ": " << k.why
                       << " (bench/zoo/KNOWN_ISSUES.md)");
        skipped = true;
      }
    if (skipped)
      continue;
    auto start = std::chrono::steady_clock::now();
    zoo::Context ctx{dev, false, [](const std::function<void()>& launch) { launch(); }};
    for (const std::string& shape : e.shapes(false)) {
      zoo::Outcome o;
      try {
        o = e.run(ctx, shape);
      } catch (const std::exception& ex) {
        o.note = std::string("error: ") + ex.what();
      }
      std::string what = e.name + " " + shape + " on " + where + ": worst " +
                         std::to_string(o.worst) + (o.note.empty() ? "" : ": " + o.note);
      CHECK_MESSAGE(o.ok, what);
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("%-24s %-20s %6.2f s\n", e.name.c_str(), where.c_str(), took.count());
  }
}

template <size_t I>
void test_entry() {
  run_entry(zoo::entries()[I]);
}

constexpr size_t max_entries = 256;

template <size_t... I>
void register_entries(std::index_sequence<I...>) {
  static constexpr doctest::detail::funcType tests[] = {&test_entry<I>...};
  static std::deque<std::string> names; // doctest keeps the pointer
  const auto& all = zoo::entries();
  if (all.size() > max_entries) {
    std::fprintf(stderr, "test_zoo: %zu entries, raise max_entries (%zu)\n", all.size(),
                 max_entries);
    std::exit(1);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    names.push_back(all[i].name);
    doctest::detail::regTest(doctest::detail::TestCase(tests[i], __FILE__, unsigned(i + 1),
                                                       doctest::detail::TestSuite() * "zoo") *
                             names.back().c_str());
  }
}

} // namespace

int main(int argc, char** argv) {
  register_entries(std::make_index_sequence<max_entries>());
  doctest::Context context(argc, argv);
  return context.run();
}
