#include "agents/trace/model/raw_trace.h"

#include <algorithm>
#include <cstring>

namespace devtime::trace {

StringTable::StringTable() { views_.emplace_back(); }

uint64_t StringTable::Hash(std::string_view s) {
  // FNV-1a over 8-byte words, then a 64-bit finalizer (splitmix64): cheap and well mixed in
  // both halves (the low bits pick the slot, the high 32 are the tag).
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ULL;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

size_t StringTable::Probe(std::string_view s, uint64_t h) const {
  if (slots_.empty()) Grow();
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = h >> 32;
  for (size_t i = static_cast<size_t>(h) & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return i;
    if (slot >> 32 == tag && views_[static_cast<uint32_t>(slot) - 1] == s) return i;
  }
}

std::optional<uint32_t> StringTable::Find(std::string_view s) const {
  const uint64_t slot = slots_[Probe(s, Hash(s))];
  if (slot == 0) return std::nullopt;
  return static_cast<uint32_t>(slot) - 1;
}

void StringTable::Grow() const {
  size_t size = std::max<size_t>(64, slots_.size() * 2);
  while ((views_.size() + 1) * 4 > size * 3) size *= 2;
  slots_.assign(size, 0);
  const size_t mask = size - 1;
  for (size_t id = 0; id < views_.size(); ++id) {
    const uint64_t h = Hash(views_[id]);
    size_t i = static_cast<size_t>(h) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = (h >> 32 << 32) | (uint64_t{id} + 1);
  }
}

std::string_view StringTable::Store(std::string_view s) {
  if (s.empty()) return {};
  if (s.size() > free_bytes_) {
    // Strings over a quarter block get their own block, so a block wastes at most a quarter.
    // Blocks grow from 4 KiB to kBlockBytes, so that a small trace allocates little.
    const size_t grown = std::min(kBlockBytes, size_t{4096} << std::min<size_t>(blocks_.size(), 8));
    const size_t bytes = s.size() > kBlockBytes / 4 ? s.size() : std::max(grown, s.size());
    blocks_.emplace_back(new char[bytes]);
    if (bytes == s.size()) {
      std::memcpy(blocks_.back().get(), s.data(), s.size());
      return {blocks_.back().get(), s.size()};
    }
    free_ = blocks_.back().get();
    free_bytes_ = bytes;
  }
  std::memcpy(free_, s.data(), s.size());
  const std::string_view stored(free_, s.size());
  free_ += s.size();
  free_bytes_ -= s.size();
  return stored;
}

uint32_t StringTable::Intern(std::string_view s) {
  const uint64_t h = Hash(s);
  size_t i = Probe(s, h);
  if (slots_[i] != 0) return static_cast<uint32_t>(slots_[i]) - 1;
  const auto id = static_cast<uint32_t>(views_.size());
  views_.push_back(Store(s));
  // At most 3/4 full: probes stay short.
  if ((views_.size() + 1) * 4 > slots_.size() * 3) {
    Grow();
    i = Probe(s, h);
  }
  slots_[i] = (h >> 32 << 32) | (uint64_t{id} + 1);
  return id;
}

}  // namespace devtime::trace
