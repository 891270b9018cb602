// TRITIUM_CHECK: compiling a kernel with its accesses checked (ir::insert_bounds_checks) and
// launching it with the extents and the record the checks report into.
#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/jit.hpp>

#include <fmt/format.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace tritium::detail {

bool checks_bounds(const CompileOptions& o) {
  static const bool from_env = [] {
    const char* v = std::getenv("TRITIUM_CHECK");
    return v && *v && std::string_view(v) != "0";
  }();
  return o.check_bounds || from_env;
}

namespace {

void clear_record(BoundsCheck& check) {
  const ir::CheckRecord zero{};
  if (check.mapped)
    std::memcpy(check.mapped, zero.data(), sizeof zero);
  else
    check.device.backend().copy_to_device(check.record, zero.data(), sizeof zero);
}

} // namespace

// A kernel kept in a static outlives the device registry (and a backend a program made
// itself) at exit: then the record went with its backend.
BoundsCheck::~BoundsCheck() {
  if (!record || backend_alive.expired())
    return;
  if (mapped)
    device.backend().free_mapped(mapped);
  else
    device.backend().free(record);
}

std::unique_ptr<BoundsCheck> bounds_check(const ir::Function& f, Device dev,
                                          std::string_view kernel) {
  ir::BoundsChecked checked = ir::insert_bounds_checks(f);
  ir::verify(*checked.fn);
  if (checked.unchecked > 0)
    fmt::print(stderr,
               "tritium: TRITIUM_CHECK: kernel '{}': {} access{} through pointers that derive "
               "from no single argument (loaded from memory, made from an integer, or chosen "
               "between two arguments) {} not checked\n",
               kernel, checked.unchecked, checked.unchecked == 1 ? "" : "es",
               checked.unchecked == 1 ? "is" : "are");
  auto check = std::make_unique<BoundsCheck>();
  check->function = std::move(checked.fn);
  check->sites = std::move(checked.sites);
  check->device = dev;
  // In host memory the device writes in place where the backend has it: a checked launch then
  // costs one wait and a read, where a copy back (a second wait, ~5 us on a GPU) would double
  // the fixed cost of a small launch.
  Backend& backend = dev.backend();
  check->mapped = backend.alloc_mapped(sizeof(ir::CheckRecord), &check->record);
  if (!check->mapped)
    check->record = backend.alloc(sizeof(ir::CheckRecord));
  check->backend_alive = backend.lifetime();
  // Zeroed once here and again after each failure it reports: a launch that fails nothing
  // leaves it zero.
  clear_record(*check);
  return check;
}

bool retrace_due(BoundsCheck& check) {
  const uint64_t n = check.launches.fetch_add(1, std::memory_order_relaxed) + 1;
  return n >= 2 && std::has_single_bit(n);
}

void check_same_trace(uint64_t traced_hash, uint64_t compiled_hash, std::string_view kernel) {
  if (traced_hash != compiled_hash)
    throw Error(fmt::format(
        "kernel '{}': traced again by TRITIUM_CHECK, it gives different IR than the kernel "
        "compiled for these arguments: it reads host state besides its arguments (a global or "
        "static variable, a reference captured by a function it calls), and tracing froze that "
        "state at the first launch. Pass the value as a kernel argument, or make it constexpr",
        kernel));
}

void checked_launch(BoundsCheck& check, CompiledKernel& k, const LaunchGrid& grid,
                    std::span<ArgSlot> slots, void* stream, std::string_view kernel) {
  std::lock_guard<std::mutex> lock(check.mutex);
  Backend& backend = check.device.backend();
  slots.back() = reinterpret_cast<uintptr_t>(check.record);
  k.launch(grid, slots, stream);
  backend.synchronize_stream(stream ? stream : backend.default_stream());
  ir::CheckRecord record{};
  if (check.mapped) // the kernel has finished: its writes to host memory are there
    std::memcpy(record.data(), check.mapped, sizeof record);
  else
    backend.copy_to_host(record.data(), check.record, sizeof record);
  if (record[0] != 0) {
    clear_record(check);
    throw Error(ir::bounds_failure_message(kernel, check.sites, record));
  }
}

} // namespace tritium::detail
