// Random kernels through the interpreter (the oracle) and another device, compared output for
// output: the CPU JIT by default, or the devices TRITIUM_RANDOM_DEVICES names (cpu,
// gpu-emulator, cuda, hip; the GPU emulator's warp size is TRITIUM_EMULATOR_WARP). Devices
// other than the CPU get portable kernels (random_kernel_gen.hpp), whose results do not depend
// on math-library accuracy or the order of additions. TRITIUM_RANDOM_KERNELS sets how many
// (default 2000), TRITIUM_RANDOM_SEED the first seed, TRITIUM_RANDOM_THREADS how many host
// threads share the work (default 1). A mismatch prints the seed, the kernel's IR, and the
// command that reproduces it.
#include "compare.hpp"
#include "random_kernel_gen.hpp"

#include <support/devices.hpp>

#include <tritium/ir/printer.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace {

using namespace tritium;
using testing::RandomKernel;

struct Outcome {
  std::vector<std::vector<uint8_t>> outs; // out0..out2, then the atomic words
  std::string error;                      // a launch that threw
};

Outcome run_on(Device dev, const RandomKernel& k, std::shared_ptr<const ir::Function> f,
               uint64_t seed) {
  int64_t numel = 1;
  for (auto d : k.shape)
    numel *= d;
  int64_t total = numel * k.grid;
  std::mt19937_64 rng(seed * 7 + 1);
  std::vector<float> in_f(total);
  std::vector<int32_t> in_i(total);
  static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 65504.0f, 1e-8f, 3.0e38f};
  for (auto& x : in_f)
    x = rng() % 8 == 0 ? specials[rng() % 8] : std::normal_distribution<float>(0.0f, 4.0f)(rng);
  for (auto& x : in_i)
    x = rng() % 4 == 0 ? static_cast<int32_t>(rng()) : static_cast<int32_t>(rng() % 201) - 100;
  Outcome o;
  auto bf = dev.from_host(in_f);
  auto bi = dev.from_host(in_i);
  auto atom = dev.from_host(std::vector<int32_t>{1, 2, 3, 4});
  std::vector<Buffer<uint8_t>> outs;
  for (auto t : k.out_types)
    outs.push_back(dev.from_host(std::vector<uint8_t>(total * testing::storage_bytes(t), 0xab)));
  std::vector<ArgSlot> args = {reinterpret_cast<uintptr_t>(bf.data()),
                               reinterpret_cast<uintptr_t>(bi.data()),
                               reinterpret_cast<uintptr_t>(atom.data())};
  for (auto& b : outs)
    args.push_back(reinterpret_cast<uintptr_t>(b.data()));
  args.push_back(static_cast<uint64_t>(k.n));
  try {
    // Without fp fusion every op rounds as the interpreter's does (on GPUs, mul + add would
    // otherwise become one fma, rounded once, as in Triton by default).
    auto compiled = dev.backend().compile(f, CompileOptions{.enable_fp_fusion = false});
    compiled->launch(LaunchGrid{k.grid, 1, 1}, args);
    dev.synchronize();
  } catch (const Error& e) {
    o.error = e.what();
  }
  for (auto& b : outs)
    o.outs.push_back(b.to_host());
  auto a = atom.to_host();
  o.outs.emplace_back(reinterpret_cast<uint8_t*>(a.data()),
                      reinterpret_cast<uint8_t*>(a.data()) + a.size() * 4);
  return o;
}

// Compares one kernel on `dev` with the interpreter; returns the first difference, or "".
std::string differ(const RandomKernel& k, Device dev, std::shared_ptr<const ir::Function> for_dev,
                   uint64_t seed) {
  Outcome want = run_on(device("interpreter"), k, k.f, seed);
  Outcome got = run_on(dev, k, for_dev, seed);
  if (!want.error.empty() || !got.error.empty()) {
    if (want.error.empty() != got.error.empty())
      return fmt::format("interpreter error: '{}'; {} error: '{}'", want.error, dev.name(),
                         got.error);
    return {};
  }
  for (size_t i = 0; i < want.outs.size(); ++i) {
    ir::DType t = i < k.out_types.size() ? k.out_types[i] : ir::DType(ir::ScalarKind::I32);
    if (auto m = testing::first_mismatch(want.outs[i], got.outs[i], t, dev.name()))
      return fmt::format("output {}: {}", i, *m);
  }
  return {};
}

std::string differ(const RandomKernel& k, std::shared_ptr<const ir::Function> for_cpu,
                   uint64_t seed) {
  return differ(k, device("cpu"), std::move(for_cpu), seed);
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

bool have_cpu() {
  try {
    (void)device("cpu");
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The command that runs exactly this comparison again.
std::string reproducer(std::string_view dev, uint64_t seed) {
  std::string env = fmt::format("TRITIUM_RANDOM_DEVICES={} ", dev);
  if (const char* w = std::getenv("TRITIUM_EMULATOR_WARP"); w && *w && dev == "gpu-emulator")
    env += fmt::format("TRITIUM_EMULATOR_WARP={} ", w);
  if (const char* s = std::getenv("TRITIUM_CPU_STREAMING_STORES"); s && *s)
    env += fmt::format("TRITIUM_CPU_STREAMING_STORES={} ", s);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return fmt::format("{}TRITIUM_RANDOM_SEED={} TRITIUM_RANDOM_KERNELS=1 {} "
                     "-tc='random kernels: every device*'",
                     env, seed, ec ? "test_cpu" : exe.string());
}

} // namespace

TEST_CASE("random kernels: every device agrees with the interpreter") {
  std::vector<std::string> names;
  {
    const char* env = std::getenv("TRITIUM_RANDOM_DEVICES");
    std::stringstream ss(env && *env ? env : "cpu");
    for (std::string n; std::getline(ss, n, ',');)
      names.push_back(n);
  }
  uint64_t count = env_or("TRITIUM_RANDOM_KERNELS", 2000);
  uint64_t first = env_or("TRITIUM_RANDOM_SEED", 1);
  int threads = static_cast<int>(std::max<uint64_t>(1, env_or("TRITIUM_RANDOM_THREADS", 1)));
  for (const std::string& name : names) {
    Device dev;
    try {
      dev = device(name);
    } catch (const Error& e) {
      FAIL_CHECK("TRITIUM_RANDOM_DEVICES names '" << name << "': " << std::string(e.what()));
      continue;
    }
    const bool portable = name != "cpu";
    std::atomic<uint64_t> next{first};
    std::atomic<int> failures{0};
    std::mutex report;
    auto t0 = std::chrono::steady_clock::now();
    auto work = [&] {
      for (uint64_t seed; failures < 10 && (seed = next++) < first + count;) {
        RandomKernel k = testing::random_kernel(seed, portable);
        std::string problem;
        try {
          ir::verify(*k.f);
          problem = differ(k, dev, k.f, seed);
        } catch (const Error& e) {
          problem = std::string("the generator built invalid IR: ") + e.what();
        }
        if (problem.empty())
          continue;
        ++failures;
        std::lock_guard<std::mutex> lock(report);
        FAIL_CHECK(name << ", seed " << seed << ": " << problem
                        << "\nreproduce: " << reproducer(name, seed) << "\n"
                        << ir::print(*k.f));
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back(work);
    work();
    for (auto& t : pool)
      t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE(name << std::string(portable ? " (portable kernels)" : "") << ": " << count
                 << " random kernels compared with the interpreter in " << s << " s");
    CHECK(failures == 0);
  }
}

// The differential test must be able to fail. Plant a semantic bug in the CPU backend's input
// only — every floating-point add becomes a subtract, as a miscompiled fadd would — and check
// that the comparison catches it. (Many adds feed values that are dead or rounded away by a
// cast to i1, so not every kernel can show it.)
TEST_CASE("random kernels: a planted miscompilation is caught") {
  REQUIRE(have_cpu());
  int with_add = 0, caught = 0;
  for (uint64_t seed = 100000; seed < 100200; ++seed) {
    RandomKernel k = testing::random_kernel(seed);
    std::shared_ptr<ir::Function> buggy = ir::parse(ir::print(*k.f));
    bool planted = false;
    ir::walk(buggy->entry(), [&](ir::Op& op) {
      if (op.kind == ir::OpKind::Add && op.result()->type.elem.is_float()) {
        op.kind = ir::OpKind::Sub;
        planted = true;
      }
    });
    if (!planted)
      continue;
    ++with_add;
    if (!differ(k, buggy, seed).empty())
      ++caught;
  }
  MESSAGE("planted fadd->fsub: caught in " << caught << " of " << with_add << " kernels");
  CHECK(with_add > 10);
  CHECK(caught * 4 > with_add);
}

// atomic_cas with a mask (the IR allows one; the DSL does not build it yet): masked-off lanes
// must neither write nor read memory, on both devices.
TEST_CASE("masked atomic_cas agrees with the interpreter") {
  REQUIRE(have_cpu());
  using ir::OpKind;
  using ir::ScalarKind;
  using ir::Type;
  auto f = std::make_shared<ir::Function>();
  f->name = "masked_cas";
  ir::Builder b(*f, f->entry());
  f->arg_info.resize(2);
  ir::Value* p = b.add_block_arg(f->entry(), Type(ir::DType::pointer_to(ScalarKind::I32)));
  ir::Value* n = b.add_block_arg(f->entry(), Type(ScalarKind::I32));
  Type ti(ScalarKind::I32, {16});
  Type tp(ir::DType::pointer_to(ScalarKind::I32), {16});
  ir::Value* offs =
      b.create1(OpKind::Arange, {}, ti, {{"start", int64_t{0}}, {"end", int64_t{16}}});
  ir::Value* mask = b.create1(OpKind::Cmp, {offs, b.create1(OpKind::Splat, {n}, ti)},
                              Type(ScalarKind::I1, {16}), {{"pred", tritium::ir::CmpPred::Lt}});
  ir::Value* ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {p}, tp), offs}, tp);
  ir::Value* val = b.create1(OpKind::Mul, {offs, b.constant_int(10, ti)}, ti);
  ir::Value* old =
      b.create(OpKind::AtomicCas, {ptrs, offs, val, mask}, {ti},
               {{"sem", tritium::ir::MemSem::AcqRel}, {"scope", tritium::ir::MemScope::Gpu}})
          .result();
  ir::Value* out = b.create1(OpKind::AddPtr, {ptrs, b.constant_int(16, ti)}, tp);
  b.create(OpKind::Store, {out, old}, {});
  b.create(OpKind::Return, {}, {});
  ir::verify(*f);
  std::vector<std::vector<int32_t>> results;
  for (const char* name : {"interpreter", "cpu"}) {
    Device d = device(name);
    std::vector<int32_t> init(32, -7);
    for (int i = 0; i < 16; ++i)
      init[i] = i % 2 == 0 ? i : -1;
    auto buf = d.from_host(init);
    std::vector<ArgSlot> args{reinterpret_cast<uintptr_t>(buf.data()), 11};
    d.backend().compile(f, CompileOptions{})->launch(LaunchGrid{}, args);
    results.push_back(buf.to_host());
  }
  CHECK(results[0] == results[1]);
  CHECK(results[1][4] == 40);  // swapped
  CHECK(results[1][5] == -1);  // compare failed
  CHECK(results[1][12] == 12); // masked off: untouched
  CHECK(results[1][16 + 12] == 0);
}
