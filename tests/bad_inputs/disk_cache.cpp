// The on-disk kernel cache facing damaged, truncated, unreadable and concurrently written
// entries, and folders it cannot use: every one is a miss (the kernel is compiled again and
// the entry rewritten), with one warning per process. No GPU needed: the cache is tested on
// its own (the CUDA backend uses it for cubins, see tests/gpu for the whole path).
#include "common.hpp"

#include "../../runtime/core/binary_cache.hpp"

#include <support/child.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace bad_inputs {
namespace {

namespace fs = std::filesystem;
using tritium::gpu::BinaryCache;
using tritium::gpu::CacheKey;

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("tritium-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string payload(int i) {
  return std::string(5000 + i * 7, static_cast<char>('a' + i % 26));
}

// Damages the one entry under dir/test by `how`, then checks it reads as a miss and that a
// store repairs it. Prints the warning the process gave, for the parent.
TEST_CASE("child: damaged cache entries") {
  TRITIUM_CHILD_ONLY();
  fs::path dir = fresh_dir("damaged");
  ::setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
  const char* hows[] = {"corrupt", "truncated", "header-only", "empty", "not-an-entry", "folder"};
  int misses = 0, repaired = 0;
  for (const char* how : hows) {
    BinaryCache cache("test");
    CacheKey key;
    key.add(how);
    cache.store(key, payload(3));
    fs::path entry = dir / "test" / (key.hex() + ".bin");
    std::string how_s = how;
    if (how_s == "corrupt") {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(100);
      f.write("garbage", 7);
    } else if (how_s == "truncated") {
      fs::resize_file(entry, 1000);
    } else if (how_s == "header-only") {
      fs::resize_file(entry, 24);
    } else if (how_s == "empty") {
      fs::resize_file(entry, 0);
    } else if (how_s == "not-an-entry") {
      std::ofstream(entry) << "some other program's file that happens to be here";
    } else {
      fs::remove(entry);
      fs::create_directory(entry); // unreadable as a file (a permission error, as root)
    }
    misses += !cache.load(key).has_value();
    if (how_s == "folder")
      continue; // cannot be replaced: stays a miss, compiled every time
    cache.store(key, payload(3));
    auto again = cache.load(key);
    repaired += again && std::string(again->begin(), again->end()) == payload(3);
  }
  std::printf("MISSES %d REPAIRED %d WARNED %d\n", misses, repaired,
              BinaryCache::warned_for_tests() ? 1 : 0);
  fs::remove_all(dir);
}

TEST_CASE("bad input: damaged, truncated or unreadable disk-cache entries") {
  auto r = tritium::testing::run_child("child: damaged cache entries", {});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("MISSES 6 REPAIRED 5 WARNED 1") != std::string::npos);
  // One warning for the whole process, naming the first damaged entry and what happens.
  size_t first = r.output.find("tritium: warning: the kernel cache entry ");
  CHECK(first != std::string::npos);
  CHECK(r.output.find("compiling instead", first) != std::string::npos);
  CHECK(r.output.find("tritium: warning:", first + 1) == std::string::npos);
}

TEST_CASE("child: unusable cache folder") {
  TRITIUM_CHILD_ONLY();
  fs::path file = fresh_dir("file");
  std::ofstream(file) << "a file where the folder should be";
  ::setenv("TRITIUM_CACHE_DIR", file.c_str(), 1);
  BinaryCache cache("test");
  CacheKey key;
  key.add("k");
  cache.store(key, "x");
  std::printf("ENABLED %d LOADED %d\n", cache.enabled() ? 1 : 0, cache.load(key) ? 1 : 0);
  fs::remove(file);
}

TEST_CASE("bad input: TRITIUM_CACHE_DIR is not a usable folder") {
  auto r = tritium::testing::run_child("child: unusable cache folder", {});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("ENABLED 0 LOADED 0") != std::string::npos);
  CHECK(r.output.find("tritium: warning: the kernel cache folder") != std::string::npos);
  CHECK(r.output.find("set TRITIUM_CACHE_DIR to a writable folder, or to 'off'") !=
        std::string::npos);
}

// Writers and readers of one entry at the same time (threads here; processes behave the same,
// the entry is replaced by rename): a reader sees no entry or a whole one, never a mix.
TEST_CASE("bad input: a disk-cache entry written concurrently") {
  fs::path dir = fresh_dir("concurrent");
  ::setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
  CacheKey key;
  key.add("shared entry");
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, whole{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      BinaryCache cache("test");
      for (int i = 0; i < 100; ++i)
        cache.store(key, payload(w * 100 + i));
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      BinaryCache cache("test");
      while (!stop.load()) {
        if (auto got = cache.load(key)) {
          std::string s(got->begin(), got->end());
          bool ok = false;
          for (int i = 0; i < 400 && !ok; ++i)
            ok = s == payload(i);
          (ok ? whole : torn)++;
        }
      }
    });
  for (int w = 0; w < 4; ++w)
    threads[w].join();
  stop = true;
  for (size_t t = 4; t < threads.size(); ++t)
    threads[t].join();
  MESSAGE(whole.load() << " whole entries read while being rewritten");
  CHECK(torn == 0);
  CHECK(BinaryCache("test").load(key).has_value());
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir / "test"))
    files += e.path().extension() == ".bin" ? 1 : 100;
  CHECK(files == 1);
  ::unsetenv("TRITIUM_CACHE_DIR");
  fs::remove_all(dir);
}

} // namespace
} // namespace bad_inputs
