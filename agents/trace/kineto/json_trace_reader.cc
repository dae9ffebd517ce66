// The Kineto / legacy meaning of the event stream: which fields of an event devtime keeps, the
// top-level object's keys (traceEvents, baseTimeNanoseconds, deviceProperties), category
// filtering and string interning, over the JSON scanner (json_scanner.h) and the byte sources
// (byte_source.h). Built with -O3: ReadEvent is the hot loop of `devtime-agent summarize`.
#include "agents/trace/kineto/json_trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "agents/trace/io/byte_source.h"
#include "agents/trace/io/json_scanner.h"
#include "agents/trace/io/large_array.h"
#include "agents/trace/io/quote.h"
#include "agents/trace/io/timestamp.h"
#include "agents/trace/io/words.h"

namespace devtime::trace {
namespace {

using stream::Input;
using stream::ParseError;

// key == literal, with the literal's length known at compile time (inlined compare).
template <size_t N>
inline bool Is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

// key ends with literal (an inlined compare too: std::string_view::ends_with calls memcmp).
template <size_t N>
inline bool EndsWith(std::string_view key, const char (&literal)[N]) {
  return key.size() >= N - 1 && std::memcmp(key.data() + key.size() - (N - 1), literal, N - 1) == 0;
}

// args.correlation / args["External id"]: an integer or a string of digits (AMD traces);
// anything else (floats, out of int64 range) reads as absent (-1).
int64_t IdFromText(std::string_view s) {
  if (s.empty() || s.size() > 19) return -1;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v);
}

class Parser : private stream::JsonScanner {
 public:
  // `size_hint`: the JSON bytes expected (0: unknown), which size the name cache.
  Parser(Input& in, const TraceReadOptions& options, RawTrace* trace, uint64_t size_hint)
      : JsonScanner(in),
        options_(options),
        trace_(trace),
        name_cache_bits_(NameCacheBits(size_hint)),
        name_cache_(size_t{1} << name_cache_bits_) {}

  void Run() {
    // Leading whitespace is dropped as it is skipped (not a unit: it fetches input itself).
    if (!SkipWsOrEof()) throw ParseError{"empty file (0 bytes of JSON)"};
    const char c = *p_;
    if (c != '[' && c != '{') {
      throw ParseError{c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
                               c == 'n'
                           ? "top-level JSON value is neither an event array nor an object"
                           : "not JSON (unexpected character at offset 0)"};
    }
    if (*p_ == '[') {
      trace_->format = "legacy-array";
      ReadEventArray();
    } else {
      trace_->format = "kineto-json";
      ReadTopObject();
    }
    ExpectOnlyWhitespaceLeft();
    trace_->total_events = index_;
    // baseTimeNanoseconds may come after the events; the latest end on the absolute clock
    // bounds every event's.
    if (trace_->base_time_ns && latest_end_index_ >= 0 &&
        !CheckedAdd(latest_end_ns_, *trace_->base_time_ns)) {
      throw ParseError{"event " + std::to_string(latest_end_index_) +
                       ": fields 'ts' + 'dur' + baseTimeNanoseconds overflow int64 nanoseconds"};
    }
  }

 private:
  int64_t ReadOptionalId() {
    const char c = Peek();
    if (c == '"') return IdFromText(ReadString(&id_scratch_));
    if (c == '-' || (c >= '0' && c <= '9')) return IdFromText(NumberToken());
    SkipValue(1);
    return -1;
  }

  // Direct-mapped cache in front of the string table for event names, categories and pid/tid
  // text: a cheap hash of the length and the first and last 8 bytes, then one comparison. Those
  // 16 bytes and the length are the whole string up to 16 bytes long (pid, tid, cat), so only
  // longer ones (op and kernel names) are compared byte by byte.
  struct NameSlot {
    std::string text;
    uint64_t first = 0, last = 0;
    uint32_t id = 0;
  };
  struct Ends {
    uint64_t first = 0, last = 0;
  };
  // The first min(8, n) bytes and, past 8, the last 8, as words (zero-filled above n): loads of
  // fixed size, as a memcpy of min(8, n) bytes was a call to memmove (perf).
  static Ends EndsOf(std::string_view s) {
    const char* p = s.data();
    const size_t n = s.size();
    Ends x;
    if (n >= 8) {
      x.first = LoadWord<uint64_t>(p);
      if (n > 8) x.last = LoadWord<uint64_t>(p + n - 8);
    } else if (n >= 4) {  // two 4-byte loads, overlapping where n < 8
      x.first = uint64_t{LoadWord<uint32_t>(p)} | uint64_t{LoadWord<uint32_t>(p + n - 4)}
                                                      << (8 * (n - 4));
    } else if (n > 0) {  // bytes 0, n / 2 and n - 1 are every byte of 1-3
      x.first = uint64_t{static_cast<uint8_t>(p[0])} |
                uint64_t{static_cast<uint8_t>(p[n / 2])} << (8 * (n / 2)) |
                uint64_t{static_cast<uint8_t>(p[n - 1])} << (8 * (n - 1));
    }
    return x;
  }
  size_t CheapHash(const Ends& x, size_t size) const {
    const uint64_t h = (x.first * 0x9E3779B97F4A7C15ULL) ^ (x.last * 0xC2B2AE3D27D4EB4FULL) ^ size;
    return static_cast<size_t>(h >> (64 - name_cache_bits_));
  }
  // 4,096 slots (56 B each) above 512 KiB of JSON; fewer for a smaller trace, down to 64: the
  // zero-filled cache was ~60 page faults per parse, most of a small trace's time (libFuzzer's
  // executions per second: 390 before, fuzz_kineto_json) and of the collector's tests'.
  static int NameCacheBits(uint64_t size_hint) {
    if (size_hint == 0) return 12;
    int bits = 6;
    while (bits < 12 && (uint64_t{256} << bits) < size_hint) ++bits;
    return bits;
  }
  // a[8, n - 8) == b[8, n - 8) for n > 16, in 8-byte words (the last one overlapping): op and
  // kernel names are 17-100 bytes, for which the call to memcmp cost more than the compare
  // (memcmp was 5 % of a summary, perf).
  static bool SameMiddle(const char* a, const char* b, size_t n) {
    uint64_t diff = 0;
    for (size_t i = 8; i + 16 < n; i += 8)
      diff |= LoadWord<uint64_t>(a + i) ^ LoadWord<uint64_t>(b + i);
    return (diff | (LoadWord<uint64_t>(a + n - 16) ^ LoadWord<uint64_t>(b + n - 16))) == 0;
  }
  // Names longer than this bypass the cache: caching one would copy it (a 100 MB op name once
  // cost a second 100 MB here), and long names are rare enough that the table's hash is cheap.
  static constexpr size_t kMaxCachedBytes = 4096;
  uint32_t InternFast(std::string_view s, const char* field) {
    if (s.size() > kMaxCachedBytes) return InternChecked(s, field);
    const Ends x = EndsOf(s);
    NameSlot& slot = name_cache_[CheapHash(x, s.size())];
    if (slot.text.size() == s.size() && slot.first == x.first && slot.last == x.last &&
        !s.empty() && (s.size() <= 16 || SameMiddle(slot.text.data(), s.data(), s.size()))) {
      return slot.id;
    }
    const uint32_t id = InternChecked(s, field);
    slot.text.assign(s);
    slot.first = x.first;
    slot.last = x.last;
    slot.id = id;
    return id;
  }

  uint32_t InternChecked(std::string_view s, const char* field) {
    if (std::optional<uint32_t> id = trace_->strings.Find(s)) return *id;
    if (!simdjson::validate_utf8(s.data(), s.size())) {
      Fail(std::string("field '") + field + "' is not valid UTF-8");
    }
    return trace_->strings.Intern(s);
  }
  // The event's `cat`, interned once per event (Dropped, IsHostCategory and the commit all ask):
  // the view is the same bytes of the window each time within one ReadEvent.
  uint32_t InternCat(std::string_view cat) {
    if (cat.data() != cat_memo_.data() || cat.size() != cat_memo_.size()) {
      cat_id_ = InternFast(cat, "cat");
      cat_memo_ = cat;
    }
    return cat_id_;
  }
  // pid and tid text repeats from event to event: compared with the previous event's first
  // (whole strings up to 16 bytes) before the cache.
  struct Last {
    Ends ends;
    size_t size = SIZE_MAX;
    uint32_t id = 0;
  };
  uint32_t InternRepeated(std::string_view s, const char* field, Last* last) {
    const Ends x = EndsOf(s);
    if (s.size() == last->size && x.first == last->ends.first && x.last == last->ends.last) {
      return last->id;
    }
    const uint32_t id = InternFast(s, field);
    if (s.size() <= 16) *last = {x, s.size(), id};
    return id;
  }

  // True when events of category `cat` are not kept (TraceReadOptions::keep_categories).
  bool Dropped(std::string_view cat) {
    if (!options_.keep_categories || cat.empty()) return false;
    return !KeepCategory(InternCat(cat));
  }

  bool IsHostCategory(std::string_view cat) {
    if (!options_.host_categories || cat.empty()) return false;
    const uint32_t id = InternCat(cat);
    if (id >= host_cat_.size()) host_cat_.resize(id + 1, -1);
    if (host_cat_[id] < 0) {
      host_cat_[id] =
          options_.host_categories->contains(std::string(trace_->strings.Get(id))) ? 1 : 0;
    }
    return host_cat_[id] == 1;
  }

  bool KeepCategory(uint32_t cat) {
    if (!options_.keep_categories || cat == 0) return true;
    if (cat >= keep_cat_.size()) keep_cat_.resize(cat + 1, -1);
    if (keep_cat_[cat] < 0) {
      keep_cat_[cat] =
          options_.keep_categories->contains(std::string(trace_->strings.Get(cat))) ? 1 : 0;
    }
    return keep_cat_[cat] == 1;
  }

  // ts or dur: its number token and, when the layout path parsed it on the way
  // (ScanMicrosToNanos), its value; Commit parses the others.
  struct Time {
    std::string_view text;
    int64_t ns = 0;
    bool parsed = false;
  };
  // The fields of one event devtime keeps, as read (views of the window or of scratch).
  struct Fields {
    std::string_view ph, name, cat, pid, tid;
    Time ts, dur;
    bool has_ph = false, has_name = false, has_cat = false;
    bool skipped = false;  // a category the caller does not keep: the rest is skipped unread
    int64_t correlation = -1, external_id = -1, exec_id = -1, sequence_id = -1;
  };

  // What `args` of an event of category `f.cat` (read so far) asks for: host ops use External
  // id, device events correlation and External id (summarizer.cc). Runtime/driver events are
  // read whole: they may also carry the exec_id / nrt_sequence_id that join a Neuron execution
  // (neuron_join.h). Unknown category (cat after args): read all.
  struct ArgsWant {
    bool runtime = false;
    bool corr = true;
    bool ext = true;
    bool join_ids = false;  // exec_id / nrt_sequence_id are read
    bool More() const { return runtime || corr || ext; }
  };
  ArgsWant WantArgs(const Fields& f) {
    ArgsWant w;
    w.runtime = f.has_cat && (EndsWith(f.cat, "_runtime") || EndsWith(f.cat, "_driver"));
    const bool host = f.has_cat && !w.runtime && IsHostCategory(f.cat);
    w.corr = !host;
    w.join_ids = w.runtime || !f.has_cat;
    return w;
  }

  // `args` at p_ ('{'): once the ids this category can use are read, the rest is skipped
  // structurally (WantArgs).
  void ReadArgs(Fields* f) {
    ArgsWant want = WantArgs(*f);
    auto on_arg = [&](std::string_view arg) {
      int64_t* id = IdField(arg, f, &want);
      if (id == nullptr) {
        SkipValue(3);
        return true;
      }
      *id = ReadOptionalId();
      return want.More();
    };
    if (!ReadLeadingExternalId(f)) {
      ReadObject(on_arg);
      return;
    }
    want.ext = false;
    if (!want.More()) {
      SkipFlatObjectRest();  // SkipNested(1), as ReadObject does when on_arg returns false
      return;
    }
    if (!ReadKinetoMembers(f, &want)) ReadMembersAfterValue(on_arg);
  }

  // The field of `f` the args member `arg` holds when it is an id this event wants (marked read
  // in `want`), else nullptr: the member is skipped.
  static int64_t* IdField(std::string_view arg, Fields* f, ArgsWant* want) {
    if (Is(arg, "correlation")) {
      want->corr = false;
      return &f->correlation;
    }
    if (Is(arg, "External id")) {
      want->ext = false;
      return &f->external_id;
    }
    if (want->join_ids && Is(arg, "exec_id")) return &f->exec_id;
    if (want->join_ids && Is(arg, "nrt_sequence_id")) return &f->sequence_id;
    return nullptr;
  }

  // After args' leading External id, the members Kineto writes as `, "key": <number>`
  // ("device": 0, "stream": 7, "correlation": 101, "cbid": 211) read by comparing the
  // separators, as ReadArgs's on_arg reads them (ids by IdFromText, others skipped): the key
  // loop with its whitespace and type dispatch was 7 % of the reader (perf). True once the
  // object is done (closed, or its rest skipped when no id is wanted any more); false at the
  // first member of any other form, p_ after the last value read, for ReadMembersAfterValue.
  bool ReadKinetoMembers(Fields* f, ArgsWant* want) {
    while (true) {
      const char* const q = p_;
      if (q != e_ && *q == '}') {
        p_ = q + 1;
        return true;
      }
      if (!At(q, ", \"")) return false;
      const char* const key = q + 3;
      const char* const key_end = PlainStringEnd(key);
      if (key_end == nullptr || !At(key_end, "\": ")) return false;
      const char* const value = key_end + 3;
      const char* const end = NumberEnd(value);
      if (end == nullptr) return false;
      p_ = end;
      int64_t* id = IdField(std::string_view(key, static_cast<size_t>(key_end - key)), f, want);
      if (id == nullptr) continue;
      *id = IdFromText(std::string_view(value, static_cast<size_t>(end - value)));
      if (!want->More()) {
        SkipFlatObjectRest();
        return true;
      }
    }
  }

  // Kineto writes "External id" first in the args of every op, launch and kernel
  // (`{"External id": 7, ...`): with p_ at args' '{', reads that member by comparing the
  // literal and its digits in place, leaving p_ after the value, as ReadObject and
  // ReadOptionalId would. False (p_ unmoved) for anything else — other spacing, a sign, a
  // fraction, 19 digits or more, the window's end —, which ReadObject then reads.
  bool ReadLeadingExternalId(Fields* f) {
    constexpr char kLead[] = "{\"External id\": ";
    constexpr ptrdiff_t kLeadBytes = sizeof(kLead) - 1;
    if (!At(p_, kLead)) return false;
    const char* const digits = p_ + kLeadBytes;
    const char* q = digits;
    uint64_t v = 0;  // wraps harmlessly past 19 digits, which are refused below
    for (; q < e_ && *q >= '0' && *q <= '9'; ++q) v = v * 10 + static_cast<uint64_t>(*q - '0');
    if (q == digits || q - digits > 18 || q == e_ || stream::IsNumberChar(*q)) return false;
    f->external_id = static_cast<int64_t>(v);
    p_ = q;
    return true;
  }

  // ---- Kineto's own layout -------------------------------------------------------------------
  //
  // Kineto writes every event with the same keys in the same order and the same spacing:
  //   {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1102, "tid": 1102,
  //    "ts": 1212075549008.000, "dur": 1.000, "args": {...}}
  //   {"ph": "s", "id": 100, ...}  (flows, instants, metadata: counted, not read)
  // ReadKinetoEvent reads an event of that layout by comparing its keys and separators with
  // these literals (a few 8-16-byte compares) instead of reading and dispatching each key (the
  // key dispatch was the largest part of the reader's time: 14 % of a summary, perf). It accepts
  // only what ReadEvent's key loop reads the same way, in the same order (so a bad value further on
  // fails alike): strings without escapes, number tokens, `args` read by ReadArgs itself. On
  // anything else — other spacing or order, an escape, a duplicate key after `args`, the window's
  // end — it returns false before committing anything, and ReadEvent reads the event key by key.

  // The literal `lit` at q (within the window). The layout's literals are 8-16 bytes: two
  // overlapping 8-byte compares (GCC called memcmp for some of these lengths: 4 % of a summary).
  template <size_t N>
  bool At(const char* q, const char (&lit)[N]) const {
    constexpr size_t n = N - 1;
    if (e_ - q < static_cast<ptrdiff_t>(n)) return false;
    if constexpr (n >= 8 && n <= 16) {
      return LoadWord<uint64_t>(q) == LoadWord<uint64_t>(lit) &&
             LoadWord<uint64_t>(q + n - 8) == LoadWord<uint64_t>(lit + n - 8);
    } else if constexpr (n < 8) {
      for (size_t i = 0; i < n; ++i) {
        if (q[i] != lit[i]) return false;
      }
      return true;
    } else {
      return std::memcmp(q, lit, n) == 0;
    }
  }
  // A string without escapes whose content starts at q: its end quote, or nullptr.
  const char* PlainStringEnd(const char* q) const {
    const char* end = stream::FindQuoteOrBackslash(q, e_);
    return end != e_ && *end == '"' ? end : nullptr;
  }
  // A number token at q (as NumberField reads one): its end, or nullptr when q holds none or it
  // runs to the window's end.
  const char* NumberEnd(const char* q) const {
    if (q == e_ || !(*q == '-' || (*q >= '0' && *q <= '9'))) return nullptr;
    const char* end = stream::NumberTokenEnd(q, e_);
    return end != e_ ? end : nullptr;
  }
  // pid/tid at q: a plain string or a number token; the byte after it, or nullptr.
  const char* PidOrTid(const char* q, std::string_view* out) const {
    if (q != e_ && *q == '"') {
      const char* end = PlainStringEnd(q + 1);
      if (end == nullptr) return nullptr;
      *out = std::string_view(q + 1, static_cast<size_t>(end - q - 1));
      return end + 1;
    }
    const char* end = NumberEnd(q);
    if (end != nullptr) *out = std::string_view(q, static_cast<size_t>(end - q));
    return end;
  }

  // ts or dur at q: a plain time parsed in the same pass (ScanMicrosToNanos), else a number
  // token for Commit to parse; the byte after it, or nullptr.
  const char* TimeAt(const char* q, Time* out) const {
    int64_t ns = 0;
    if (const char* end = ScanMicrosToNanos(q, e_, &ns)) {
      *out = {std::string_view(q, static_cast<size_t>(end - q)), ns, true};
      return end;
    }
    const char* end = NumberEnd(q);
    if (end != nullptr) out->text = std::string_view(q, static_cast<size_t>(end - q));
    return end;
  }

  // The event at p_ ('{') in Kineto's layout, committed; false (nothing committed, p_ where it
  // was) when it is not in that layout.
  bool ReadKinetoEvent() {
    const char* q = p_;
    if (!At(q, "{\"ph\": \"") || e_ - q < 10 || q[9] != '"' || q[8] == '\\' || q[8] == '"') {
      return false;
    }
    q += 10;
    if (q[-2] != 'X') {  // ReadEvent skips the rest after "ph" alike
      p_ = q;
      SkipFlatObjectRest();
      CommitUnread(false);
      return true;
    }
    if (!At(q, ", \"cat\": \"")) return false;
    q += 10;
    const char* end = PlainStringEnd(q);
    if (end == nullptr) return false;
    const std::string_view cat(q, static_cast<size_t>(end - q));
    q = end + 1;
    if (Dropped(cat)) {
      p_ = q;
      SkipNested(1);
      CommitUnread(true);
      return true;
    }
    if (!At(q, ", \"name\": \"")) return false;
    q += 11;
    if ((end = PlainStringEnd(q)) == nullptr) return false;
    const std::string_view name(q, static_cast<size_t>(end - q));
    q = end + 1;
    std::string_view pid, tid;
    Time ts, dur;
    if (!At(q, ", \"pid\": ") || (q = PidOrTid(q + 9, &pid)) == nullptr) return false;
    if (!At(q, ", \"tid\": ") || (q = PidOrTid(q + 9, &tid)) == nullptr) return false;
    if (!At(q, ", \"ts\": ") || (q = TimeAt(q + 8, &ts)) == nullptr) return false;
    if (!At(q, ", \"dur\": ") || (q = TimeAt(q + 9, &dur)) == nullptr) return false;
    // Every member given: a Fields zero-filled first cost a `rep stos` of its ~190 bytes per
    // event (4 % of a summary, perf annotate).
    Fields f{.ph = "X",
             .name = name,
             .cat = cat,
             .pid = pid,
             .tid = tid,
             .ts = ts,
             .dur = dur,
             .has_ph = true,
             .has_name = true,
             .has_cat = true,
             .skipped = false,
             .correlation = -1,
             .external_id = -1,
             .exec_id = -1,
             .sequence_id = -1};
    if (q != e_ && *q == '}') {
      p_ = q + 1;
      Commit(f);
      return true;
    }
    if (!At(q, ", \"args\": {")) return false;
    const char* const start = p_;
    p_ = q + 10;
    ReadArgs(&f);
    if (p_ == e_ || *p_ != '}') {
      p_ = start;
      return false;
    }
    ++p_;
    Commit(f);
    return true;
  }

  void ReadEvent() {
    cat_memo_ = {};  // a view of an earlier event (or window) is never this event's
    cat_id_ = 0;
    if (Peek() != '{') {
      // Consume the value to say precisely what it is not.
      Fail("not a JSON object");
    }
    if (ReadKinetoEvent()) return;
    cat_memo_ = {};
    cat_id_ = 0;
    Fields f;
    // ph or cat into `out`. Once both are read, the rest of an event whose category the caller
    // does not keep is skipped unread (false).
    auto ph_or_cat = [&](const char* field, std::string_view* out, bool* has,
                         std::string* scratch) {
      *out = StringField(field, scratch);
      *has = true;
      return !(f.has_ph && f.has_cat && (f.skipped = Dropped(f.cat)));
    };
    ReadObject([&](std::string_view key) {
      switch (key.size()) {
        case 2:
          if (Is(key, "ph")) {
            // Flow ("s"/"f"), instant, metadata and counter events are counted and never read:
            // a quarter of a real trace's events, skipped structurally after their first key.
            if (!ph_or_cat("ph", &f.ph, &f.has_ph, &scratch_[0])) return false;
            return Is(f.ph, "X");
          }
          if (Is(key, "ts")) {
            f.ts = {NumberField("ts")};
            return true;
          }
          break;
        case 3:
          if (Is(key, "cat")) return ph_or_cat("cat", &f.cat, &f.has_cat, &scratch_[1]);
          if (Is(key, "dur")) {
            f.dur = {NumberField("dur")};
            return true;
          }
          if (Is(key, "pid") || Is(key, "tid")) {
            std::string_view& out = Is(key, "pid") ? f.pid : f.tid;
            const char c = Peek();
            if (c == '"') {
              out = ReadString(&scratch_[Is(key, "pid") ? 2 : 3]);
            } else if (c == '-' || (c >= '0' && c <= '9')) {
              out = NumberToken();
            } else {
              Fail("field '" + std::string(key) + "' is not a string or number");
            }
            return true;
          }
          break;
        case 4:
          if (Is(key, "name")) {
            f.name = StringField("name", &scratch_[4]);
            f.has_name = true;
            return true;
          }
          if (Is(key, "args") && Peek() == '{') {
            ReadArgs(&f);
            return true;
          }
          break;
        default:
          break;
      }
      SkipValue(2);
      return true;
    });
    Commit(f);
  }

  // Keeps the event read into `f`: the whole event is in the window, nothing here reads input.
  void Commit(const Fields& f) {
    if (!f.has_ph) {
      CheckUnitSize();
      Fail("missing field 'ph'");
    }
    // M, i, s, f, C, ...: not timed; X of a category not kept: counted.
    if (f.skipped || !Is(f.ph, "X")) return CommitUnread(f.skipped && Is(f.ph, "X"));
    CheckUnitSize();
    CheckEventCount();
    if (!f.has_name) Fail("missing field 'name'");
    if (f.ts.text.empty()) Fail("missing field 'ts'");
    if (f.dur.text.empty()) Fail("missing field 'dur'");
    std::optional<int64_t> t = f.ts.parsed ? f.ts.ns : ParseMicrosToNanos(f.ts.text);
    if (!t) Fail("field 'ts' is not a valid time: " + Quote(f.ts.text));
    std::optional<int64_t> d = f.dur.parsed ? f.dur.ns : ParseMicrosToNanos(f.dur.text);
    if (!d) Fail("field 'dur' is not a valid time: " + Quote(f.dur.text));
    // The summary adds ts + dur (and baseTimeNanoseconds, checked in Run()): all must fit.
    std::optional<int64_t> end = CheckedAdd(*t, std::max<int64_t>(*d, 0));
    if (!end || !CheckedAdd(*t, *d)) {
      Fail("fields 'ts' + 'dur' overflow int64 nanoseconds (" + Quote(f.ts.text) + " + " +
           Quote(f.dur.text) + " us)");
    }
    if (*end > latest_end_ns_) {
      latest_end_ns_ = *end;
      latest_end_index_ = index_;
    }
    ++trace_->complete_events;
    RawEvent ev;
    ev.cat = f.has_cat ? InternCat(f.cat) : 0;
    if (KeepCategory(ev.cat)) {
      ev.name = InternFast(f.name, "name");
      ev.pid = f.pid.data() ? InternRepeated(f.pid, "pid", &last_pid_) : 0;
      ev.tid = f.tid.data() ? InternRepeated(f.tid, "tid", &last_tid_) : 0;
      ev.index = index_;
      ev.ts_ns = *t;
      ev.dur_ns = *d;
      ev.correlation = f.correlation;
      ev.external_id = f.external_id;
      if (f.exec_id >= 0 || f.sequence_id >= 0) {
        trace_->launch_ids.push_back({trace_->events.size(), f.exec_id, f.sequence_id});
      }
      trace_->events.push_back(ev);
    }
    ++index_;
  }

  // Counts an event read no further than its "ph" (not X) or its "cat" (not kept);
  // `complete`: its ph is X.
  void CommitUnread(bool complete) {
    CheckUnitSize();
    CheckEventCount();
    if (complete) ++trace_->complete_events;
    ++index_;
  }
  void CheckEventCount() const {
    if (index_ >= kMaxEvents) Fail("more than " + std::to_string(kMaxEvents) + " events (limit)");
  }

  void ReadEventArray() {
    Unit([&] {
      Expect('[');
      Ws();
    });
    bool done = false;
    Unit([&] {
      Ws();
      if (Peek() == ']') {
        ++p_;
        done = true;
      }
    });
    while (!done) {
      in_event_ = true;
      Unit([&] { ReadEvent(); });
      in_.Consumed(p_);
      // The usual separator (",\n  ") inline; the window's end or anything else: CloseOrComma.
      const char* q = p_;
      while (q < e_ && IsWs(*q)) ++q;
      if (q < e_ && *q == ',') {
        ++q;
        while (q < e_ && IsWs(*q)) ++q;
        if (q < e_) {
          p_ = q;
          continue;
        }
      }
      Unit([&] { done = CloseOrComma(']'); });
      in_event_ = false;
    }
  }

  void ReadTopObject() {
    bool done = false;
    bool saw_events = false;
    Unit([&] {
      Expect('{');
      Ws();
      if (Peek() == '}') {
        ++p_;
        done = true;
      }
    });
    while (!done) {
      std::string key;
      Unit([&] {
        if (Peek() != '"') Malformed();
        key.assign(ReadString(&key_scratch_));
        Ws();
        Expect(':');
        Ws();
      });
      if (key == "traceEvents") {
        bool is_array = true;
        Unit([&] { is_array = Peek() == '['; });
        if (!is_array) throw ParseError{"'traceEvents' is not an array"};
        ReadEventArray();
        saw_events = true;
      } else if (key == "baseTimeNanoseconds") {
        Unit([&] {
          const std::string_view tok =
              Peek() == '-' || (*p_ >= '0' && *p_ <= '9') ? NumberToken() : std::string_view();
          const int64_t v = IdFromText(tok);
          if (v < 0) throw ParseError{"'baseTimeNanoseconds' is not an integer"};
          trace_->base_time_ns = v;
        });
      } else if (key == "deviceProperties") {
        Unit([&] {
          if (Peek() != '[') {
            SkipValue(1);
            return;
          }
          uint64_t n = 0;
          ++p_;
          Ws();
          if (Peek() != ']') {
            while (true) {
              SkipValue(2);
              ++n;
              Ws();
              const char c = Peek();
              if (c == ']') break;
              if (c != ',') Malformed();
              ++p_;
              Ws();
            }
          }
          ++p_;
          trace_->device_properties_count = n;
        });
      } else {
        Unit([&] { SkipValue(1); });
      }
      Unit([&] { done = CloseOrComma('}'); });
    }
    if (!saw_events) throw ParseError{"JSON object has no 'traceEvents' array"};
  }

  const TraceReadOptions& options_;
  RawTrace* trace_;
  // The latest ts + max(dur, 0) of a complete event, and its index (-1: none yet).
  int64_t latest_end_ns_ = INT64_MIN;
  int64_t latest_end_index_ = -1;
  std::string id_scratch_;
  std::string scratch_[5];
  std::vector<int8_t> keep_cat_;
  std::vector<int8_t> host_cat_;
  const int name_cache_bits_;
  std::vector<NameSlot> name_cache_;
  std::string_view cat_memo_;
  uint32_t cat_id_ = 0;
  Last last_pid_, last_tid_;
};

// `size_hint`: JSON bytes expected (0: unknown). Reserving room for the events up front avoids
// the vector's grow-and-copy peak; untouched reserved pages cost address space, not memory.
absl::StatusOr<RawTrace> Parse(Input& in, const std::string& origin,
                               const TraceReadOptions& options, uint64_t size_hint) {
  RawTrace trace;
  constexpr uint64_t kMinEventBytes = 100;  // smaller than any real Kineto event
  trace.events.reserve(
      static_cast<size_t>(std::min<uint64_t>(size_hint / kMinEventBytes, 64u << 20)));
  // The events array is written once, front to back (~130 MB for a 1 GB trace).
  AdviseHugePages(trace.events.storage(), trace.events.storage_bytes());
  try {
    Parser parser(in, options, &trace, size_hint);
    parser.Run();
  } catch (const ParseError& e) {
    return absl::InvalidArgumentError(origin + ": " + e.message);
  }
  return trace;
}

// Parses `size` bytes at `bytes`: inflated in chunks when gzip, else through `plain`.
absl::StatusOr<RawTrace> ParseBytes(const unsigned char* bytes, size_t size, Input& plain,
                                    const std::string& origin, const TraceReadOptions& options) {
  if (stream::IsGzip(bytes, size)) {
    try {
      stream::GzipInput in(bytes, size);
      return Parse(in, origin, options, uint64_t{size} * 20);  // typical ratio 13-29x (§5)
    } catch (const ParseError& e) {                            // zlib initialisation
      return absl::InvalidArgumentError(origin + ": " + e.message);
    }
  }
  return Parse(plain, origin, options, size);
}

}  // namespace

absl::StatusOr<RawTrace> ParseTraceJson(const char* data, size_t size, const std::string& origin,
                                        const TraceReadOptions& options) {
  stream::MemoryInput in(data, size);
  return ParseBytes(reinterpret_cast<const unsigned char*>(data), size, in, origin, options);
}

absl::StatusOr<RawTrace> ReadTraceFile(const std::filesystem::path& path,
                                       const TraceReadOptions& options) {
  absl::StatusOr<std::unique_ptr<stream::MappedFile>> file = stream::MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const stream::MappedFile& map = **file;
  stream::FileInput in(
      map, options.file_chunk_bytes > 0 ? options.file_chunk_bytes : stream::FileInput::kChunk);
  return ParseBytes(map.bytes(), map.size(), in, path.string(), options);
}

}  // namespace devtime::trace
