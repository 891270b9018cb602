// An on-disk cache of compiled GPU binaries (cubins), so that a second process skips the
// driver's PTX JIT (about 10 ms a kernel, 91 ms for the first in a process).
//
// Entries live under $TRITIUM_CACHE_DIR, else $XDG_CACHE_HOME/tritium, else ~/.cache/tritium,
// in one subfolder per backend; TRITIUM_CACHE_DIR=off disables the cache. The key hashes
// everything that shapes the binary (the caller passes it: source text, target, driver
// version, options). Writes go to a temporary file renamed into place, so concurrent processes
// never see half an entry; each entry carries a checksum, and a damaged, truncated or
// unreadable one reads as a miss (the kernel is compiled again and the entry rewritten), with
// one warning on stderr per process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::gpu {

// A 128-bit digest of the key parts, fed in order (each part is length-prefixed, so
// ("ab","c") and ("a","bc") differ).
class CacheKey {
public:
  CacheKey& add(std::string_view part);
  CacheKey& add(int64_t v) { return add(std::to_string(v)); }
  std::string hex() const;

private:
  void mix(const void* data, size_t n);
  uint64_t a_ = 0xcbf29ce484222325ull;
  uint64_t b_ = 0x84222325cbf29ce4ull;
};

class BinaryCache {
public:
  explicit BinaryCache(std::string_view backend); // folder name: "cuda", "hip"
  bool enabled() const { return !dir_.empty(); }
  const std::filesystem::path& dir() const { return dir_; }
  std::optional<std::vector<char>> load(const CacheKey& key) const;
  // Best effort: a cache that cannot be written (read-only home, full disk) is skipped.
  void store(const CacheKey& key, std::string_view binary) const;
  // Whether this process has warned about a damaged or unusable cache (it warns once).
  static bool warned_for_tests();

private:
  std::filesystem::path dir_;
};

} // namespace tritium::gpu
