#include "runtime/core/binary_cache.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>

#include <unistd.h>

namespace tritium::gpu {

namespace {

// FNV-1a, 64-bit: tiny, stable across compilers and runs (std::hash is neither promised).
uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr char kMagic[8] = {'t', 'r', 'i', 'b', 'i', 'n', '0', '1'};

struct EntryHeader {
  char magic[8];
  uint64_t size;
  uint64_t checksum;
};

// A damaged or unusable cache costs a recompile, not an error; it is reported once per process
// so that a broken cache does not go unnoticed, nor flood the output.
std::atomic<bool> warned{false};

void warn_once(const std::string& what) {
  if (warned.exchange(true))
    return;
  std::fprintf(stderr,
               "tritium: warning: %s; compiling instead (further cache problems are not "
               "reported)\n",
               what.c_str());
}

std::filesystem::path cache_root() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string dir = env("TRITIUM_CACHE_DIR"); !dir.empty())
    return dir == "off" ? std::filesystem::path() : std::filesystem::path(dir);
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return std::filesystem::path(xdg) / "tritium";
  if (std::string home = env("HOME"); !home.empty())
    return std::filesystem::path(home) / ".cache" / "tritium";
  return {};
}

} // namespace

void CacheKey::mix(const void* data, size_t n) {
  a_ = fnv1a(a_, data, n);
  // The second lane sees the bytes after the first lane's state, so the two 64-bit halves are
  // not the same function of the input.
  b_ = fnv1a(b_ ^ (a_ >> 17), data, n);
}

CacheKey& CacheKey::add(std::string_view part) {
  uint64_t len = part.size();
  mix(&len, sizeof len);
  mix(part.data(), part.size());
  return *this;
}

std::string CacheKey::hex() const {
  return fmt::format("{:016x}{:016x}", a_, b_);
}

BinaryCache::BinaryCache(std::string_view backend) {
  std::filesystem::path root = cache_root();
  if (root.empty())
    return;
  std::error_code ec;
  std::filesystem::create_directories(root / backend, ec);
  if (ec || !std::filesystem::is_directory(root / backend)) {
    warn_once(fmt::format("the kernel cache folder {} cannot be created ({}); set "
                          "TRITIUM_CACHE_DIR to a writable folder, or to 'off'",
                          (root / backend).string(),
                          ec ? ec.message() : "a file of that name exists"));
    return;
  }
  dir_ = root / backend;
}

std::optional<std::vector<char>> BinaryCache::load(const CacheKey& key) const {
  if (!enabled())
    return std::nullopt;
  std::filesystem::path path = dir_ / (key.hex() + ".bin");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return std::nullopt; // the common miss
  auto damaged = [&](const std::string& why) -> std::optional<std::vector<char>> {
    warn_once(fmt::format("the kernel cache entry {} {}", path.string(), why));
    return std::nullopt;
  };
  if (!std::filesystem::is_regular_file(path, ec))
    return damaged("is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return damaged(fmt::format("cannot be read ({})", std::strerror(errno)));
  EntryHeader h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h))
    return damaged("is truncated");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.size > (1ull << 31))
    return damaged("is not a tritium cache entry");
  std::vector<char> data(h.size);
  if (!in.read(data.data(), static_cast<std::streamsize>(h.size)))
    return damaged("is truncated");
  if (fnv1a(0xcbf29ce484222325ull, data.data(), data.size()) != h.checksum)
    return damaged("is damaged (checksum mismatch)");
  return data;
}

void BinaryCache::store(const CacheKey& key, std::string_view binary) const {
  if (!enabled())
    return;
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.size = binary.size();
  h.checksum = fnv1a(0xcbf29ce484222325ull, binary.data(), binary.size());
  std::filesystem::path final_path = dir_ / (key.hex() + ".bin");
  // Unique per writer (process and thread), so concurrent writers never share a temporary.
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path tmp = dir_ / fmt::format("{}.{}.{}.{}.tmp", key.hex(), ::getpid(),
                                                 counter.fetch_add(1), std::random_device{}());
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      warn_once(fmt::format("the kernel cache folder {} cannot be written", dir_.string()));
      return;
    }
  }
  std::filesystem::rename(tmp, final_path, ec); // atomic on POSIX: readers see all or nothing
  if (ec) {
    std::filesystem::remove(tmp, ec);
    warn_once(fmt::format("the kernel cache entry {} cannot be replaced", final_path.string()));
  }
}

bool BinaryCache::warned_for_tests() {
  return warned.load();
}

} // namespace tritium::gpu
