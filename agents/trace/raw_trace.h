// devtime::trace internals — the parsed, not yet summarized, content of one trace file.
// Only complete ("X") events are kept, in file order, with names, categories and thread
// keys interned so that millions of events stay compact. Times are exact int64 nanoseconds.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace devtime::trace {

// Interns strings into dense uint32 ids. Id 0 is always the empty string.
class StringTable {
 public:
  StringTable();
  // Moves keep the deque's elements in place (the views stay valid); copies would not.
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  uint32_t Intern(std::string_view s);
  // The id of `s` when already interned.
  std::optional<uint32_t> Find(std::string_view s) const {
    auto it = ids_.find(s);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  // A deque never moves its elements, so the index can key on views of them: one copy of
  // each string (a trace with a million distinct names keeps them once).
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;
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
