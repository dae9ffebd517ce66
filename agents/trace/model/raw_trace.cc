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

namespace devtime::trace {

uint32_t RawEvents::FindLane(uint32_t cat, uint32_t pid, uint32_t tid) {
  auto hash = [](uint32_t c, uint32_t p, uint32_t t) {
    const uint64_t h =
        ((uint64_t{c} << 32 | p) * 0x9e3779b97f4a7c15ULL) ^ (uint64_t{t} * 0xbf58476d1ce4e5b9ULL);
    return h ^ (h >> 29);
  };
  // At most half full: probes stay short.
  if ((lanes_.size() + 1) * 2 > lane_slots_.size()) {
    lane_slots_.assign(std::max<size_t>(16, lane_slots_.size() * 2), 0);
    const size_t mask = lane_slots_.size() - 1;
    for (size_t id = 0; id < lanes_.size(); ++id) {
      const Lane& l = lanes_[id];
      size_t s = hash(l.cat, l.pid, l.tid) & mask;
      while (lane_slots_[s] != 0) s = (s + 1) & mask;
      lane_slots_[s] = static_cast<uint32_t>(id + 1);
    }
  }
  const size_t mask = lane_slots_.size() - 1;
  size_t s = hash(cat, pid, tid) & mask;
  for (; lane_slots_[s] != 0; s = (s + 1) & mask) {
    const uint32_t id = lane_slots_[s] - 1;
    const Lane& l = lanes_[id];
    if (l.cat == cat && l.pid == pid && l.tid == tid) return last_lane_ = id;
  }
  // Fewer lanes than events, and the reader keeps fewer than 2^32 events.
  last_lane_ = static_cast<uint32_t>(lanes_.size());
  lanes_.push_back({cat, pid, tid, 0});
  lane_slots_[s] = last_lane_ + 1;
  return last_lane_;
}

void RawEvents::PushWide(const RawEvent& e, uint32_t lane) {
  wide_at_.push_back(static_cast<uint32_t>(rows_.size()));
  wide_.push_back({e.ts_ns, e.dur_ns, e.correlation, e.external_id, e.index, lane});
  rows_.push_back({0, e.name, kWide, 0, 0, 0, 0});
}

const RawEvents::WideFields& RawEvents::Wide(size_t i) const {
  const auto it = std::lower_bound(wide_at_.begin(), wide_at_.end(), static_cast<uint32_t>(i));
  return wide_[static_cast<size_t>(it - wide_at_.begin())];
}

uint64_t RawEvents::index(size_t i) const {
  // A narrow row's index is the previous row's + 1 + the events skipped between them; the
  // block's first row and a wide row know theirs.
  const size_t first = i - i % kBlock;
  uint64_t add = 0;
  for (size_t j = i;; --j) {
    if (j == first) return blocks_[j / kBlock].first_index + add;
    const Row& r = rows_[j];
    if (r.dur == kWide) return Wide(j).index + add;
    add += uint64_t{r.skipped} + 1;
  }
}

RawEvent RawEvents::At(size_t i, uint64_t index) const {
  const Lane& l = lanes_[lane(i)];
  RawEvent e;
  e.name = rows_[i].name;
  e.cat = l.cat;
  e.pid = l.pid;
  e.tid = l.tid;
  e.ts_ns = ts_ns(i);
  e.index = index;
  e.dur_ns = dur_ns(i);
  e.correlation = correlation(i);
  e.external_id = external_id(i);
  return e;
}

void RawEvents::Release() { *this = RawEvents(); }

}  // namespace devtime::trace
