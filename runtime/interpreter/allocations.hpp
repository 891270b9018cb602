// The interpreter's record of the memory it handed out (and adopted), to check every access
// against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>

namespace tritium::interp {

class Allocations {
public:
  void add(const void* p, size_t n) {
    std::lock_guard<std::mutex> l(m_);
    map_[reinterpret_cast<uintptr_t>(p)] = n;
  }
  void remove(const void* p) {
    std::lock_guard<std::mutex> l(m_);
    map_.erase(reinterpret_cast<uintptr_t>(p));
  }
  void add_adopted(const void* p, size_t n) {
    std::lock_guard<std::mutex> l(m_);
    adopted_.insert(reinterpret_cast<uintptr_t>(p));
    map_[reinterpret_cast<uintptr_t>(p)] = n;
  }
  void remove_adopted(const void* p) {
    std::lock_guard<std::mutex> l(m_);
    if (adopted_.erase(reinterpret_cast<uintptr_t>(p)))
      map_.erase(reinterpret_cast<uintptr_t>(p));
  }
  bool contains(uintptr_t addr, size_t n) const {
    std::lock_guard<std::mutex> l(m_);
    auto it = map_.upper_bound(addr);
    if (it == map_.begin())
      return false;
    --it;
    return addr >= it->first && addr + n <= it->first + it->second;
  }

private:
  mutable std::mutex m_;
  std::map<uintptr_t, size_t> map_;
  std::set<uintptr_t> adopted_;
};

} // namespace tritium::interp
