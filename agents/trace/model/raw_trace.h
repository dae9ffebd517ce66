// devtime::trace internals — the parsed, not yet summarized, content of one trace file.
// Only complete ("X") events are kept, in file order, with names, categories and thread
// keys interned so that millions of events stay compact. Times are exact int64 nanoseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace devtime::trace {

// Interns strings into dense uint32 ids. Id 0 is always the empty string.
//
// Built for traces with millions of distinct names (issue 12: 1,000,000 op names in 1 GB): each
// string is copied once into an arena of large blocks (no per-string allocation or header) and
// found again through an open-addressing index of 8-byte slots (32-bit hash tag, 32-bit id), so
// a string costs its bytes plus about 28 bytes. The copy is deliberate: a view into the input
// would not survive gzip chunks, and the mapped reader drops pages it has read.
class StringTable {
 public:
  StringTable();
  // Moves keep the arena's blocks in place (the views stay valid); copies would not.
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  uint32_t Intern(std::string_view s);
  // The id of `s` when already interned.
  std::optional<uint32_t> Find(std::string_view s) const;
  // Valid as long as the table lives.
  std::string_view Get(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  // Frees the index (8 to 21 bytes a string) while only Get() is needed; the next Find() or
  // Intern() rebuilds it.
  void ReleaseIndex() { std::vector<uint64_t>().swap(slots_); }

 private:
  static uint64_t Hash(std::string_view s);
  // The slot holding `s` (hash `h`), or the empty slot where it would go.
  size_t Probe(std::string_view s, uint64_t h) const;
  // Rebuilds the index at twice its size (at least 64 slots).
  void Grow() const;
  std::string_view Store(std::string_view s);

  static constexpr size_t kBlockBytes = size_t{1} << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;  // the unused tail of the last block
  size_t free_bytes_ = 0;
  std::vector<std::string_view> views_;  // by id
  // Power-of-two open-addressing index, linear probing: (hash >> 32) << 32 | (id + 1); 0 empty.
  mutable std::vector<uint64_t> slots_;
};

// One complete ("ph":"X") event.
struct RawEvent {
  uint64_t index = 0;  // position of the event in the file's event array (0-based)
  uint32_t name = 0;   // StringTable ids
  uint32_t cat = 0;
  uint32_t pid = 0;  // pid/tid as text ("1102", "Spans", "CPU functions")
  uint32_t tid = 0;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // args.correlation, -1 when absent
  int64_t external_id = -1;  // args["External id"], -1 when absent
};

// Ids a runtime/driver event carries that can join it to a device execution recorded elsewhere
// (a Neuron system trace): args.exec_id, args.nrt_sequence_id. Listed only when one is present.
struct LaunchIds {
  size_t event = 0;  // position in RawTrace::events
  int64_t exec_id = -1;
  int64_t sequence_id = -1;
};

struct RawTrace {
  std::string format;  // "legacy-array" or "kineto-json"
  StringTable strings;
  std::vector<RawEvent> events;
  uint64_t total_events = 0;     // all events in the array, any phase
  uint64_t complete_events = 0;  // "X" events, kept or not (TraceReadOptions::keep_categories)
  std::optional<int64_t> base_time_ns;              // baseTimeNanoseconds
  std::optional<uint64_t> device_properties_count;  // size of deviceProperties, when present
  std::vector<LaunchIds> launch_ids;                // runtime/driver events with join ids
};

}  // namespace devtime::trace
