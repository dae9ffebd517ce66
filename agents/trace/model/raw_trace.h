// devtime::trace internals — the parsed, not yet summarized, content of one trace file.
// Only complete ("X") events are kept, in file order, with names, categories and thread
// keys interned so that millions of events stay compact (24 bytes an event: RawEvents). Times are
// exact int64 nanoseconds.
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

// One complete ("ph":"X") event, as readers make it and RawEvents gives it back.
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

// The events of a trace, 24 bytes each instead of RawEvent's 56 (issue 23: a 2 GB realistic
// trace keeps 7.9 M events: 443 MB as RawEvents, 253 MB at 32 bytes, 190 MB at 24). Exact for
// every value a RawEvent can hold:
//  - (cat, pid, tid) is one "lane" id, 16 bits in the row: a trace has a handful of categories
//    and threads;
//  - ts_ns is a 32-bit signed offset from the first event of its block of 64 consecutive events
//    (±2.1 s: a block spans microseconds to milliseconds of a real trace);
//  - index is the events the reader skipped since the previous kept event (16 bits), summed
//    back from the block's first event (index() is for error messages: O(64) is cheap);
//  - name is kept whole; dur_ns, correlation + 1 and External id + 1 are 32-bit.
// Real values fit (durations under 4.29 s, ids numbered from 0); an event where one does not
// is "wide": its row marks it and its fields are kept whole in a side table (found by binary
// search), so a 10 s step or a 64-bit id costs 48 more bytes, never a wrong figure.
// The interface is std::vector<RawEvent>'s where readers and tests use it (push_back, [],
// back, iteration by value); hot loops read single fields through the accessors.
class RawEvents {
 public:
  void reserve(size_t n) {
    rows_.reserve(n);
    blocks_.reserve(n / kBlock + 1);
  }
  // The rows' reserved storage, for a reader that advises the kernel on it (huge pages).
  const void* storage() const { return rows_.data(); }
  size_t storage_bytes() const { return rows_.capacity() * sizeof(Row); }
  // Inline: the reader calls it for every kept event.
  void push_back(const RawEvent& e) {
    const bool first = rows_.size() % kBlock == 0;  // of its block
    if (first) blocks_.push_back({e.ts_ns, e.index});
    const uint32_t lane = LaneOf(e.cat, e.pid, e.tid);
    ++lanes_[lane].events;
    // Each field must fit its bits (ids as id + 1), and no narrow dur may read as kWide.
    auto fits = [](int64_t v, int64_t lo) { return v >= lo && v < int64_t{kWide} + lo; };
    int64_t ts_off = 0;
    const bool ts_fits = !__builtin_sub_overflow(e.ts_ns, blocks_.back().ts_base, &ts_off) &&
                         ts_off >= INT32_MIN && ts_off <= INT32_MAX;
    const uint64_t skipped = first ? 0 : e.index - last_index_ - 1;
    if (ts_fits && fits(e.dur_ns, 0) && fits(e.correlation, -1) && fits(e.external_id, -1) &&
        lane < kWideLane && (first || (e.index > last_index_ && skipped <= UINT16_MAX))) {
      rows_.push_back({static_cast<int32_t>(ts_off), e.name, static_cast<uint32_t>(e.dur_ns),
                       static_cast<uint32_t>(e.correlation + 1),
                       static_cast<uint32_t>(e.external_id + 1), static_cast<uint16_t>(lane),
                       static_cast<uint16_t>(skipped)});
    } else {
      PushWide(e, lane);
    }
    last_index_ = e.index;
  }
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  RawEvent operator[](size_t i) const { return At(i, index(i)); }
  RawEvent back() const { return (*this)[rows_.size() - 1]; }
  // Frees every event (and the lanes).
  void Release();

  // The accessors below are forced inline: GCC stopped inlining them into the summarizer's
  // large loops (calls in the hot walks, 5-10 % of a summary), and each is a load and a test.
  [[gnu::always_inline]] int64_t ts_ns(size_t i) const {
    const Row& r = rows_[i];
    return r.dur != kWide ? blocks_[i / kBlock].ts_base + r.ts_off : Wide(i).ts_ns;
  }
  [[gnu::always_inline]] uint32_t name(size_t i) const { return rows_[i].name; }
  [[gnu::always_inline]] uint32_t cat(size_t i) const { return lanes_[lane(i)].cat; }
  // (pid << 32) | tid: equal for the events of one thread.
  [[gnu::always_inline]] uint64_t thread_key(size_t i) const { return lane_thread_key(lane(i)); }
  // The event's (cat, pid, tid) as one dense id < lane_count(): a trace has a handful, so a
  // summarizer classifies lanes, not events.
  [[gnu::always_inline]] uint32_t lane(size_t i) const {
    const Row& r = rows_[i];
    return r.dur != kWide ? r.lane : Wide(i).lane;
  }
  size_t lane_count() const { return lanes_.size(); }
  uint32_t lane_cat(uint32_t lane) const { return lanes_[lane].cat; }
  // How many events the lane holds: a summarizer sizes its per-thread arrays from these
  // instead of counting the events in a pass of its own.
  uint64_t lane_events(uint32_t lane) const { return lanes_[lane].events; }
  [[gnu::always_inline]] uint64_t lane_thread_key(uint32_t lane) const {
    const Lane& l = lanes_[lane];
    return (uint64_t{l.pid} << 32) | l.tid;
  }
  [[gnu::always_inline]] int64_t dur_ns(size_t i) const {
    const Row& r = rows_[i];
    return r.dur != kWide ? int64_t{r.dur} : Wide(i).dur_ns;
  }
  [[gnu::always_inline]] int64_t correlation(size_t i) const {
    const Row& r = rows_[i];
    return r.dur != kWide ? int64_t{r.correlation} - 1 : Wide(i).correlation;
  }
  [[gnu::always_inline]] int64_t external_id(size_t i) const {
    const Row& r = rows_[i];
    return r.dur != kWide ? int64_t{r.external_id} - 1 : Wide(i).external_id;
  }
  uint64_t index(size_t i) const;

  // Carries the index from event to event: index() alone sums back through the block.
  class Iterator {
   public:
    Iterator(const RawEvents* events, size_t i)
        : events_(events), i_(i), index_(i < events->size() ? events->index(i) : 0) {}
    RawEvent operator*() const { return events_->At(i_, index_); }
    Iterator& operator++() {
      ++i_;
      if (i_ < events_->size()) index_ = events_->NextIndex(i_, index_);
      return *this;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }

   private:
    const RawEvents* events_;
    size_t i_;
    uint64_t index_;  // index(i_)
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, rows_.size()}; }

 private:
  static constexpr uint32_t kWide = UINT32_MAX;      // in Row::dur
  static constexpr uint32_t kWideLane = UINT16_MAX;  // lanes from here on are wide
  static constexpr size_t kBlock = 64;               // rows per Block
  struct Row {
    int32_t ts_off;  // ts_ns − the block's ts_base
    uint32_t name;
    uint32_t dur;          // dur_ns, or kWide: the fields are in wide_
    uint32_t correlation;  // correlation + 1 (0: absent)
    uint32_t external_id;  // External id + 1 (0: absent)
    uint16_t lane;
    uint16_t skipped;  // events skipped since the previous kept one (0 for a block's first)
  };
  static_assert(sizeof(Row) == 24);
  // What the rows of a block of kBlock are relative to: its first event's ts and index.
  struct Block {
    int64_t ts_base;
    uint64_t first_index;
  };
  struct Lane {
    uint32_t cat, pid, tid;
    uint64_t events = 0;
  };
  struct WideFields {
    int64_t ts_ns, dur_ns, correlation, external_id;
    uint64_t index;
    uint32_t lane;
  };
  uint32_t LaneOf(uint32_t cat, uint32_t pid, uint32_t tid) {
    if (last_lane_ != kNoLane) {
      const Lane& l = lanes_[last_lane_];
      if (l.cat == cat && l.pid == pid && l.tid == tid) return last_lane_;
    }
    return FindLane(cat, pid, tid);
  }
  uint32_t FindLane(uint32_t cat, uint32_t pid, uint32_t tid);
  void PushWide(const RawEvent& e, uint32_t lane);
  // The event at `i`, whose index is `index`.
  RawEvent At(size_t i, uint64_t index) const;
  // index(i), given index(i - 1).
  uint64_t NextIndex(size_t i, uint64_t previous) const {
    const Row& r = rows_[i];
    if (i % kBlock == 0 || r.dur == kWide) return index(i);
    return previous + r.skipped + 1;
  }
  const WideFields& Wide(size_t i) const;

  std::vector<Row> rows_;
  std::vector<Block> blocks_;  // one per kBlock rows
  std::vector<Lane> lanes_;
  // Open-addressing index of lanes_ (lane id + 1; 0 empty), power-of-two sized.
  std::vector<uint32_t> lane_slots_;
  static constexpr uint32_t kNoLane = UINT32_MAX;
  uint32_t last_lane_ = kNoLane;   // the previous event's lane: most events share it
  uint64_t last_index_ = 0;        // the previous event's index
  std::vector<uint32_t> wide_at_;  // positions of the wide events, ascending
  std::vector<WideFields> wide_;   // their fields
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
  RawEvents events;
  uint64_t total_events = 0;     // all events in the array, any phase
  uint64_t complete_events = 0;  // "X" events, kept or not (TraceReadOptions::keep_categories)
  std::optional<int64_t> base_time_ns;              // baseTimeNanoseconds
  std::optional<uint64_t> device_properties_count;  // size of deviceProperties, when present
  std::vector<LaunchIds> launch_ids;                // runtime/driver events with join ids
};

}  // namespace devtime::trace
