#include "agents/trace/summary/summarizer.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "agents/trace/io/large_array.h"
#include "agents/trace/io/timestamp.h"

namespace devtime::trace {
namespace {

// kAnnotation: a user_annotation range (record_function, ProfilerStep#N, nccl:all_reduce). It is
// a host op for nesting and CPU time, but never the owner of device time (torch links a
// kernel to the op whose External id its launch carries; Kineto gives launches the cpu_op's).
enum class EventKind : uint8_t { kUnknown, kIgnored, kHostOp, kAnnotation, kRuntime, kDevice };

constexpr std::string_view kAnnotationCategory = "user_annotation";

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

bool IsRuntimeCategory(std::string_view cat) {
  return cat.ends_with("_runtime") || cat.ends_with("_driver");
}

// key_averages()'s one row for all ProfilerStep#N.
constexpr char kStepRowName[] = "ProfilerStep*";

}  // namespace

std::optional<uint32_t> ProfilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep";
  // Called for every host event: reject the other names before starts_with's memcmp call.
  if (name.size() <= kPrefix.size() || name[0] != 'P' || !name.starts_with(kPrefix)) {
    return std::nullopt;
  }
  name.remove_prefix(kPrefix.size());
  auto skip_space = [&name] {
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  };
  skip_space();
  if (name.empty() || name.front() != '#') return std::nullopt;
  name.remove_prefix(1);
  skip_space();
  if (name.empty()) return std::nullopt;
  uint64_t n = 0;
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') {
    n = n * 10 + static_cast<uint64_t>(name[digits] - '0');
    if (n > UINT32_MAX) return std::nullopt;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return static_cast<uint32_t>(n);
}

std::vector<StepWindow> StepWindows(const RawTrace& trace, const SummarizeOptions& options) {
  std::vector<StepWindow> out;
  // Whether each category is a host-op category: -1 not yet looked up (once per category, not
  // per event).
  std::vector<int8_t> host_cat(trace.strings.size(), -1);
  // Whether each name is a ProfilerStep#N: -1 not yet looked up (once per name).
  std::vector<int8_t> step_name(trace.strings.size(), -1);
  const RawEvents& events = trace.events;
  for (size_t i = 0; i < events.size(); ++i) {
    if (const uint32_t cat = events.cat(i); cat != 0) {
      int8_t& host = host_cat[cat];
      if (host < 0)
        host = options.host_op_categories.contains(std::string(trace.strings.Get(cat))) ? 1 : 0;
      if (host == 0) continue;
    }
    int8_t& step = step_name[events.name(i)];
    if (step < 0) step = ProfilerStepNumber(trace.strings.Get(events.name(i))).has_value();
    if (step == 0) continue;
    if (auto num = ProfilerStepNumber(trace.strings.Get(events.name(i)))) {
      out.push_back(
          {events.ts_ns(i), events.ts_ns(i) + std::max<int64_t>(events.dur_ns(i), 0), *num});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const StepWindow& a, const StepWindow& b) {
    return a.start_ns < b.start_ns;
  });
  return out;
}

std::string KeyAveragesName(std::string_view name) {
  if (name.starts_with("ProfilerStep#")) return kStepRowName;
  return std::string(name);
}

namespace {

// Positions in RawTrace::events. 32 bits: the reader keeps fewer than kMaxEvents (2^32) events,
// and half-size indices are most of what the per-event arrays below cost.
using Idx = uint32_t;
constexpr Idx kNone = UINT32_MAX;

// One step sample on its way to an op row (rows are built once the events are released), in
// exact nanoseconds until then.
struct Sample {
  uint32_t row;
  uint32_t step;
  int64_t ns;
};

// An op row's figures while the events are read, in exact integer nanoseconds.
struct RowSums {
  uint64_t calls = 0;
  int64_t self_cpu = 0, total_cpu = 0, self_dev = 0, total_dev = 0;
};

// Merges `late` (sorted, last - kept of them) into [first, last), whose [first, kept) is sorted,
// from the back: no buffer is needed (std::inplace_merge took one of its own, a fresh allocation
// faulted in each time). With a strict total order, equal elements never meet.
template <typename T, typename Before>
void MergeBack(T* first, T* kept, T* last, const T* late, Before before) {
  const T* j = late + (last - kept);  // past the last late element not yet placed
  T* i = kept;                        // past the last kept one not yet placed
  for (T* out = last; j != late;) {
    if (i != first && before(j[-1], i[-1])) {
      *--out = *--i;
    } else {
      *--out = *--j;
    }
  }
}

// Sorts [first, last) by `before`, a strict total order, where most elements already are in
// order: the longest in-order run kept greedily stays put, only the rest is sorted and merged
// back in place. Host events come that way (a thread's ops in start order; the ranges written
// after their children, such as ProfilerStep#N, are the exceptions), and sorting them all was a
// tenth of the run time. The extra memory is the out-of-order part, not a copy of the whole.
template <typename T, typename Before>
void SortMostlySorted(T* first, T* last, Before before) {
  LargeVector<T> late;
  // Room up front for a large array's worth (huge pages, untouched until used): growing by
  // doubling from small heap blocks faulted every 4 KiB page in on the way.
  late.reserve(std::min<size_t>(static_cast<size_t>(last - first), kLargeArrayBytes / sizeof(T)));
  T* kept = first;
  for (T* p = first; p != last; ++p) {
    if (kept == first || before(kept[-1], *p)) {
      *kept++ = *p;
    } else {
      late.push_back(*p);
    }
  }
  if (late.empty()) return;
  std::sort(late.begin(), late.end(), before);
  MergeBack(first, kept, last, late.data(), before);
}

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// The union of `v` as disjoint intervals in time order, in `v`'s own storage (one interval per
// device event: no second array).
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  size_t out = 0;
  for (const Interval& x : v) {
    if (out > 0 && x.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, x.second);
    } else {
      v[out++] = x;
    }
  }
  v.resize(out);
  return v;
}

// Idle time (run.proto LAYER_IDLE: "gaps inside the captured steps where the device did
// nothing"): the gaps between the device's busy intervals, counted only where they lie inside
// a step window — the host's time between two steps is no step's idle time. Without windows,
// every gap. Fed the device's intervals in start order, it merges them into busy intervals as
// they come (no array of them); `steps` are disjoint and in time order.
class IdleInsideSteps {
 public:
  explicit IdleInsideSteps(std::vector<Interval> steps) : steps_(std::move(steps)) {}
  void Add(const Interval& x) {
    if (any_ && x.first <= busy_.second) {
      busy_.second = std::max(busy_.second, x.second);
      return;
    }
    if (any_) Gap(busy_.second, x.first);
    busy_ = x;
    any_ = true;
  }
  int64_t idle_ns() const { return idle_; }

 private:
  void Gap(int64_t from, int64_t to) {
    if (steps_.empty()) {
      idle_ += to - from;
      return;
    }
    while (w_ < steps_.size() && steps_[w_].second <= from) ++w_;
    for (size_t k = w_; k < steps_.size() && steps_[k].first < to; ++k) {
      idle_ += std::min(to, steps_[k].second) - std::max(from, steps_[k].first);
    }
  }

  std::vector<Interval> steps_;
  bool any_ = false;
  Interval busy_{0, 0};  // the busy interval growing now (when any_)
  size_t w_ = 0;         // the first step window that may hold the next gap
  int64_t idle_ = 0;
};

// Kineto's absolute clock: baseTimeNanoseconds + ts, or ts itself in traces written before it
// existed (epoch µs, §1.6). Relative ts without a base (Kineto between PR #910 and #928, legacy
// traces) are far below this: 1e17 ns is 1973.
constexpr int64_t kEpochNsFloor = 100'000'000'000'000'000LL;

// The capture's wall-clock span from the host events' span [first, last) in the trace's time
// base, when that is on the epoch clock.
void SetCaptureTime(int64_t first, int64_t last, std::optional<int64_t> base, CaptureInfo* out) {
  if (first > last) return;  // no host event
  const std::optional<int64_t> start = CheckedAdd(first, base.value_or(0));
  const std::optional<int64_t> end = CheckedAdd(last, base.value_or(0));
  if (!start || !end || *start < kEpochNsFloor) return;
  out->started_unix_ns = *start;
  out->finished_unix_ns = *end;
  out->time_source = "trace";
}

// Walks the host ops in `host` order (by thread, then start, the longer first) with the stack of
// the ranges enclosing each, exactly as torch's EventList._populate_cpu_children nests them: an
// op is the child of the top of the stack when it starts before the top's end and does not end
// after it (partial overlaps, common in legacy traces whose integer µs durations are truncated
// per event, are not nested — torch does the same). `enter(k, stack)` returns the frame pushed
// for position k (`stack`: the frames enclosing it, innermost last); `leave(frame, parent)` runs
// when a range closes, after all its children (`parent`: the enclosing frame or nullptr). Only a
// stack lives, never an array per event (issue 23: the summarizer's memory per event).
template <typename Frame, typename EndOf, typename Enter, typename Leave>
void WalkNesting(const RawEvents& events, const LargeVector<Idx>& host, EndOf end_of, Enter enter,
                 Leave leave) {
  std::vector<Frame> stack;
  std::vector<int64_t> ends;  // end_of() of each frame's op
  auto pop = [&] {
    const Frame f = stack.back();
    stack.pop_back();
    ends.pop_back();
    leave(f, stack.empty() ? nullptr : &stack.back());
  };
  uint64_t thread = 0;
  for (Idx k = 0; k < host.size(); ++k) {
    const Idx i = host[k];
    if (const uint64_t t = events.thread_key(i); stack.empty() || t != thread) {
      while (!stack.empty()) pop();
      thread = t;
    }
    const int64_t ts = events.ts_ns(i);
    const int64_t end = end_of(i);
    while (!stack.empty() && (ts >= ends.back() || end > ends.back())) pop();
    stack.push_back(enter(k, stack));
    ends.push_back(end);
  }
  while (!stack.empty()) pop();
}

// A walk that needs only the ranges enclosing each op as it opens: `visit(k, stack)`, `stack`
// holding the positions of the enclosing ranges, innermost last.
struct Opened {
  Idx k;
};
template <typename EndOf, typename Visit>
void WalkOpenings(const RawEvents& events, const LargeVector<Idx>& host, EndOf end_of,
                  Visit visit) {
  WalkNesting<Opened>(
      events, host, end_of,
      [&](Idx k, const std::vector<Opened>& stack) {
        visit(k, stack);
        return Opened{k};
      },
      [](const Opened&, Opened*) {});
}

// A launch (runtime event) with a correlation id and the op rules 1-2 give it (below).
struct Launch {
  int64_t correlation;
  Idx k;      // position in `host`
  Idx owner;  // position in `host`, or LaunchIndex::kOutside
};

// An op carrying an External id that some attribution looks up, with its enclosing range.
struct IdOp {
  int64_t external_id;
  Idx k;       // position in `host`
  Idx parent;  // position in `host` of the innermost range enclosing it, kNone at the top
};

// The entries of `v` (sorted by (key, k)) whose key is `id`.
template <typename T, int64_t T::*Key>
std::pair<const T*, const T*> EqualRange(const std::vector<T>& v, int64_t id) {
  const T* lo =
      std::partition_point(v.data(), v.data() + v.size(), [id](const T& x) { return x.*Key < id; });
  const T* hi =
      std::partition_point(lo, v.data() + v.size(), [id](const T& x) { return x.*Key == id; });
  return {lo, hi};
}

// A launch outside every op (rules 1-2 give it no owner), kept for rule 3.
struct OutsideLaunch {
  int64_t correlation;
  Idx k;       // position in `host`
  Idx parent;  // position in `host` of the innermost range enclosing it, kNone at the top
};

// The first launch (in `host` order) of each correlation id and the owner rules 1-2 give it, for
// the device events to look up: a table of 4-byte owners indexed by correlation when the ids
// are dense (Kineto numbers them 1, 2, 3, ...), else the launches (16 bytes each) sorted by
// correlation. Launches outside every op are kept apart, with their range, for rule 3.
class LaunchIndex {
 public:
  static constexpr Idx kNoLaunch = kNone;     // Owner(): no launch has the correlation
  static constexpr Idx kOutside = kNone - 1;  // Owner(): the launch is outside every op
  // `lo`..`hi`: the range of the `count` launches' correlations (lo > hi: none).
  LaunchIndex(int64_t lo, int64_t hi, size_t count) : lo_(lo) {
    const bool dense = count > 0 && hi - lo < static_cast<int64_t>(2 * count + 4096);
    if (dense) {
      table_.assign(static_cast<size_t>(hi - lo + 1), kNoLaunch);
    } else {
      sorted_.reserve(count);
    }
  }
  // Called in `host` order: the first launch of a correlation is the one that counts.
  void Add(int64_t correlation, Idx k, Idx owner, Idx parent) {
    if (owner == kNone) {
      outside_.push_back({correlation, k, parent});
      owner = kOutside;
    }
    if (table_.empty()) {
      sorted_.push_back({correlation, k, owner});
    } else if (Idx& slot = table_[static_cast<size_t>(correlation - lo_)]; slot == kNoLaunch) {
      slot = owner;
    }
  }
  // After the last Add(). `bucket_start`: where each thread's positions in `host` begin.
  void Finish(const std::vector<size_t>& bucket_start) {
    auto before = [](const auto& a, const auto& b) {
      return a.correlation != b.correlation ? a.correlation < b.correlation : a.k < b.k;
    };
    SortMostlySorted(outside_.data(), outside_.data() + outside_.size(), before);
    // Each thread's launches come in its order, which is mostly correlation order (ids grow as
    // launches are made): sorted alone, then merged into the threads before them, the extra
    // memory is the smaller of two runs, not the out-of-order half of all launches.
    Launch* const first = sorted_.data();
    Launch* begin = first;
    for (size_t t = 1; t < bucket_start.size(); ++t) {
      Launch* end = std::partition_point(begin, first + sorted_.size(),
                                         [&](const Launch& x) { return x.k < bucket_start[t]; });
      SortMostlySorted(begin, end, before);
      std::inplace_merge(first, begin, end, before);
      begin = end;
    }
  }
  // The owner of the first launch with `correlation`: a position in `host`, kOutside or
  // kNoLaunch.
  Idx Owner(int64_t correlation) const {
    if (correlation < 0) return kNoLaunch;
    if (table_.empty()) {
      auto [lo, hi] = EqualRange<Launch, &Launch::correlation>(sorted_, correlation);
      return lo == hi ? kNoLaunch : lo->owner;
    }
    const int64_t at = correlation - lo_;
    if (correlation < lo_ || at >= static_cast<int64_t>(table_.size())) return kNoLaunch;
    return table_[static_cast<size_t>(at)];
  }
  // The first launch with `correlation` when Owner() says kOutside.
  const OutsideLaunch& Outside(int64_t correlation) const {
    return *EqualRange<OutsideLaunch, &OutsideLaunch::correlation>(outside_, correlation).first;
  }

 private:
  int64_t lo_;
  std::vector<Idx> table_;              // owner by correlation − lo_, when dense
  std::vector<Launch> sorted_;          // else, sorted by (correlation, k)
  std::vector<OutsideLaunch> outside_;  // sorted by (correlation, k)
};

// A ProfilerStep#N window of the host ops.
struct Window {
  int64_t start, end;
  uint32_t number;
};

// The window containing a time: the last one starting at or before it, if it has not ended
// (`ts == start` counts, for a zero-length step). The walks ask in time order within a thread,
// so the answer moves forward from the previous one; a time before it (the next thread) falls
// back to a binary search. `windows` are sorted by start.
class StepCursor {
 public:
  explicit StepCursor(const std::vector<Window>& windows) : w_(windows) {}
  Idx At(int64_t ts) {
    if (w_.empty()) return kNone;
    if (ts < w_[at_].start) {
      auto it = std::upper_bound(w_.begin(), w_.end(), ts,
                                 [](int64_t t, const Window& w) { return t < w.start; });
      if (it == w_.begin()) return kNone;
      at_ = static_cast<size_t>(it - w_.begin()) - 1;
    }
    while (at_ + 1 < w_.size() && w_[at_ + 1].start <= ts) ++at_;
    const Window& w = w_[at_];
    return ts < w.end || ts == w.start ? static_cast<Idx>(at_) : kNone;
  }

 private:
  const std::vector<Window>& w_;
  size_t at_ = 0;  // the last answer's window (or 0)
};

// What the events of category `cat_id` are to the summary.
EventKind KindOfCategory(uint32_t cat_id, const StringTable& strings,
                         const SummarizeOptions& options) {
  if (cat_id == 0) return EventKind::kHostOp;  // legacy traces carry no `cat`
  const std::string cat(strings.Get(cat_id));
  if (options.device_categories.contains(cat)) return EventKind::kDevice;
  if (!options.host_op_categories.contains(cat)) return EventKind::kIgnored;
  if (IsRuntimeCategory(cat)) return EventKind::kRuntime;
  return cat == kAnnotationCategory ? EventKind::kAnnotation : EventKind::kHostOp;
}

// Per-kernel totals: device events grouped by name, most device time first (ties by name).
std::vector<KernelStats> KernelTotals(const RawEvents& events, const LargeVector<Idx>& device,
                                      const StringTable& strings) {
  std::vector<KernelStats> kernels;
  std::vector<Idx> row_of_kernel(strings.size(), kNone);
  std::vector<int64_t> kernel_ns;
  for (Idx d : device) {
    Idx& row = row_of_kernel[events.name(d)];
    if (row == kNone) {
      row = static_cast<Idx>(kernels.size());
      kernels.push_back({std::string(strings.Get(events.name(d))), 0, 0});
      kernel_ns.push_back(0);
    }
    kernels[row].calls += 1;
    kernel_ns[row] += std::max<int64_t>(events.dur_ns(d), 0);
  }
  for (size_t k = 0; k < kernels.size(); ++k) kernels[k].device_us = Us(kernel_ns[k]);
  std::sort(kernels.begin(), kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    if (a.device_us != b.device_us) return a.device_us > b.device_us;
    return a.name < b.name;
  });
  return kernels;
}

// A row's slot when it is summed into the kOtherOperatorsName row (RowSlots).
constexpr Idx kFolded = kNone;

// Where each row goes when there are more than options.max_op_rows: the max_op_rows - 1 rows
// with the most time keep a row each (numbered in row order), the rest are kFolded. Ranked as
// the RunSummary ranks its operators (contract/run_summary_builder.cc MoreTime: self device,
// then self CPU, each below 0 as 0) over the order of TraceSummary::ops (raw self device, self
// CPU, then name), so that folding here leaves the RunSummary what it was. Empty: every row
// is kept.
std::vector<Idx> RowSlots(const std::vector<RowSums>& sums, const std::vector<Idx>& name_of_row,
                          const StringTable& strings, const SummarizeOptions& options) {
  if (options.max_op_rows == 0 || sums.size() <= options.max_op_rows) return {};
  const size_t keep = options.max_op_rows - 1;
  auto name = [&](Idx r) -> std::string_view {
    const std::string_view n = strings.Get(name_of_row[r]);
    return n.starts_with("ProfilerStep#") ? std::string_view(kStepRowName) : n;
  };
  auto more = [&](Idx a, Idx b) __attribute__((always_inline)) {
    const RowSums& x = sums[a];
    const RowSums& y = sums[b];
    const int64_t xd = std::max<int64_t>(x.self_dev, 0), yd = std::max<int64_t>(y.self_dev, 0);
    if (xd != yd) return xd > yd;
    const int64_t xc = std::max<int64_t>(x.self_cpu, 0), yc = std::max<int64_t>(y.self_cpu, 0);
    if (xc != yc) return xc > yc;
    if (x.self_dev != y.self_dev) return x.self_dev > y.self_dev;
    if (x.self_cpu != y.self_cpu) return x.self_cpu > y.self_cpu;
    return name(a) < name(b);
  };
  std::vector<Idx> order(sums.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<Idx>(r);
  if (keep > 0) {
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep - 1),
                     order.end(), more);
  }
  std::vector<Idx> slot(sums.size(), kFolded);
  for (size_t k = 0; k < keep; ++k) slot[order[k]] = 0;
  std::vector<Idx>().swap(order);
  Idx next = 0;
  for (Idx& s : slot) {
    if (s != kFolded) s = next++;
  }
  return slot;
}

// `release`, when given, is `trace` itself: its events are freed as soon as they are no longer
// needed, before the op rows are built, so that a trace with a million distinct op names never
// holds its events and its rows at once (issue 12 item 6).
//
// Memory (issue 23): besides the events, the summarizer holds one 4-byte position per host op
// (`host`), a few bytes per launch and per device event, and a stack: nesting, self CPU and
// total device time come from walks over `host` with the stack of enclosing ranges, not from
// arrays per event.
TraceSummary Summarize(const RawTrace& trace, const SummarizeOptions& options, RawTrace* release) {
  TraceSummary summary;
  summary.source_format = trace.format;
  summary.event_count = trace.complete_events;
  const RawEvents& events = trace.events;
  const size_t n = events.size();
  const bool legacy = trace.format == "legacy-array";
  if (n >= kNone) {
    summary.invalid_reason = absl::StrFormat("more than %d complete events (limit)", kNone - 1);
    return summary;
  }

  // Classify once per lane ((cat, pid, tid): a handful per trace), not per event.
  const uint32_t lanes = static_cast<uint32_t>(events.lane_count());
  std::vector<EventKind> kind_of_lane(lanes);
  bool saw_privateuse1 = false;
  bool saw_cuda_runtime = false;
  for (uint32_t l = 0; l < lanes; ++l) {
    kind_of_lane[l] = KindOfCategory(events.lane_cat(l), trace.strings, options);
  }
  // The per-event lambdas and comparators are forced inline: in a function this large GCC
  // otherwise calls them (5-8 % of a summary in calls to one-line lambdas).
  auto kind_of = [&](Idx i) __attribute__((always_inline)) { return kind_of_lane[events.lane(i)]; };
  auto is_host = [](EventKind k) __attribute__((always_inline)) {
    return k == EventKind::kHostOp || k == EventKind::kAnnotation || k == EventKind::kRuntime;
  };
  // Negative durations count as 0 (and make the capture INVALID below).
  auto dur = [&](Idx i) __attribute__((always_inline)) {
    return std::max<int64_t>(events.dur_ns(i), 0);
  };
  auto end_of = [&](Idx i) __attribute__((always_inline)) { return events.ts_ns(i) + dur(i); };
  auto can_own = [&](Idx i) __attribute__((always_inline)) {
    return kind_of(i) == EventKind::kHostOp;
  };

  // Host events grouped by thread (threads in thread-key order, each in file order) with their
  // exact count, so that sorting them below moves only the few out of order within a thread.
  std::vector<uint32_t> bucket_of_lane(lanes, 0);
  std::vector<size_t> bucket_start;
  {
    std::vector<uint64_t> threads;
    for (uint32_t l = 0; l < lanes; ++l) {
      if (is_host(kind_of_lane[l])) threads.push_back(events.lane_thread_key(l));
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (uint32_t l = 0; l < lanes; ++l) {
      const auto it = std::lower_bound(threads.begin(), threads.end(), events.lane_thread_key(l));
      bucket_of_lane[l] = static_cast<uint32_t>(it - threads.begin());
    }
    bucket_start.assign(threads.size() + 1, 0);
  }
  // Each thread's exact count of host events, from the lanes' counts (no pass over the events).
  size_t device_count = 0;
  for (uint32_t l = 0; l < lanes; ++l) {
    if (is_host(kind_of_lane[l])) {
      bucket_start[bucket_of_lane[l] + 1] += events.lane_events(l);
      const std::string_view cat = trace.strings.Get(events.lane_cat(l));
      if (cat.starts_with("privateuse1_")) saw_privateuse1 = true;
      if (cat.starts_with("cuda_")) saw_cuda_runtime = true;
    } else if (kind_of_lane[l] == EventKind::kDevice) {
      device_count += events.lane_events(l);
    }
  }
  for (size_t b = 1; b < bucket_start.size(); ++b) bucket_start[b] += bucket_start[b - 1];
  // Per-event arrays: LargeVector (huge pages: io/large_array.h).
  LargeVector<Idx> host(bucket_start.back());  // host ops and runtime events
  LargeVector<Idx> device;                     // device events
  device.reserve(device_count);
  // The host events' span: when the capture ran (device events may sit on another clock).
  int64_t first_host_start = INT64_MAX;
  int64_t last_host_end = INT64_MIN;
  // Runtime events with a correlation (launches): how many, and their ids' range.
  size_t launch_count = 0;
  int64_t launch_lo = INT64_MAX, launch_hi = INT64_MIN;
  {
    std::vector<size_t> next(bucket_start.begin(), bucket_start.end() - 1);
    // torch nests by (start, -end), ties in file order, per thread. Kineto writes a thread's
    // events mostly in that order: each one in order after the last one kept in place on its
    // thread stays, the others (ProfilerStep#N, written after its children) are set aside in
    // `late`, sorted and merged back below. SortMostlySorted's split, done in this pass
    // instead of another one over `host`.
    struct LastKept {
      int64_t ts = 0, end = 0;
      bool any = false;
    };
    std::vector<LastKept> last_kept(bucket_start.size() - 1);
    std::vector<std::vector<Idx>> late(bucket_start.size() - 1);
    for (Idx i = 0; i < n; ++i) {
      const int64_t ts = events.ts_ns(i);
      if (events.dur_ns(i) < 0 && !summary.invalid_reason) {
        summary.invalid_reason = absl::StrFormat("negative duration at event %d", events.index(i));
      }
      if (legacy && i > 0 && ts < events.ts_ns(i - 1) && !summary.invalid_reason) {
        // torch 1.13 writes legacy traces sorted by start time.
        summary.invalid_reason =
            absl::StrFormat("timestamps go backwards at event %d", events.index(i));
      }
      const uint32_t l = events.lane(i);
      if (is_host(kind_of_lane[l])) {
        const uint32_t b = bucket_of_lane[l];
        const int64_t end = end_of(i);
        if (LastKept& last = last_kept[b];
            !last.any || last.ts < ts || (last.ts == ts && last.end >= end)) {
          host[next[b]++] = i;
          last = {ts, end, true};
        } else {
          late[b].push_back(i);
        }
        if (const int64_t c = events.correlation(i);
            c >= 0 && kind_of_lane[l] == EventKind::kRuntime) {
          ++launch_count;
          launch_lo = std::min(launch_lo, c);
          launch_hi = std::max(launch_hi, c);
        }
        first_host_start = std::min(first_host_start, ts);
        last_host_end = std::max(last_host_end, end);
      } else if (kind_of_lane[l] == EventKind::kDevice) {
        device.push_back(i);
      }
    }
    auto before = [&](Idx a, Idx b) {
      if (events.ts_ns(a) != events.ts_ns(b)) return events.ts_ns(a) < events.ts_ns(b);
      if (end_of(a) != end_of(b)) return end_of(a) > end_of(b);
      return a < b;  // file order
    };
    for (size_t t = 0; t < late.size(); ++t) {
      if (late[t].empty()) continue;
      std::sort(late[t].begin(), late[t].end(), before);
      MergeBack(host.data() + bucket_start[t], host.data() + next[t],
                host.data() + bucket_start[t + 1], late[t].data(), before);
      std::vector<Idx>().swap(late[t]);
    }
  }
  if (release) release->strings.ReleaseIndex();  // only Get() from here on

  // From here on positions in `host` (k) name the host events.

  // Rows by key_averages() name. Distinct strings are distinct names except for the
  // ProfilerStep#N rewrite, so every name that becomes "ProfilerStep*" shares one row and no
  // name-keyed merge (a second copy of every name) is needed. Rows are numbered in order of
  // first occurrence in `host`; `name_of_row` keeps one string id per row. Whether a name
  // opens a step window (ProfilerStepNumber) is decided once per name, not per event. Called
  // for each host op in `host` order by the launches' walk below (one pass fewer).
  std::vector<Idx> row_of_name(trace.strings.size(), kNone);
  std::vector<Idx> name_of_row;
  std::vector<uint8_t> window_name(trace.strings.size(), 0);
  std::vector<Window> windows;  // ProfilerStep#N windows, sorted by start after the walk
  Idx step_row = kNone;         // the "ProfilerStep*" row
  auto add_row_and_window = [&](Idx i) __attribute__((always_inline)) {
    const uint32_t name = events.name(i);
    if (row_of_name[name] == kNone) {
      window_name[name] = ProfilerStepNumber(trace.strings.Get(name)).has_value();
      const bool step = trace.strings.Get(name).starts_with("ProfilerStep#");
      if (step && step_row != kNone) {
        row_of_name[name] = step_row;
      } else {
        row_of_name[name] = static_cast<Idx>(name_of_row.size());
        if (step) step_row = row_of_name[name];
        name_of_row.push_back(name);
      }
    }
    if (window_name[name]) {
      windows.push_back({events.ts_ns(i), end_of(i), *ProfilerStepNumber(trace.strings.Get(name))});
    }
  };

  // Attribute device events to the op that launched them, the way torch does (§1.8, §7.1):
  // device event → the runtime event with the same correlation (its launch) → the op. The
  // launch's External id is evidence of that op only where it can be checked, because 2023
  // traces give a launch its own correlation as External id, colliding with other ops' ids:
  //  1. the innermost op enclosing the launch on its thread that carries the id;
  //  2. else the innermost op enclosing the launch (annotations never own device time);
  //  3. else, for a launch outside every op, the op the id names when it ran on the launch's
  //     thread, inside the same range, ended before the launch, and the id is not the launch's
  //     own correlation: an NCCL kernel launched inside `nccl:all_reduce` after
  //     `record_param_comms` goes to record_param_comms.
  // A device event without a launch goes to the op of its own External id (unless the id is
  // its own correlation: the 2023 form names no op). Anything else is unattributed.
  // Rules 1-2 are read off the nesting stack as the launches are walked; ops are looked up by
  // External id only for the ids rule 3 and launchless device events ask for (usually none).
  LaunchIndex launches(launch_lo, launch_hi, launch_count);
  {
    // The ranges enclosing a launch are looked at up to kMaxEnclosing deep: torch's own stacks
    // are tens deep, and the bound keeps a hostile trace (a launch inside a million nested
    // ops, a million times) linear.
    constexpr size_t kMaxEnclosing = 256;
    WalkOpenings(events, host, end_of, [&](Idx k, const std::vector<Opened>& stack) {
      const Idx i = host[k];
      add_row_and_window(i);
      if (kind_of(i) != EventKind::kRuntime || events.correlation(i) < 0) return;
      const int64_t id = events.external_id(i);
      Idx owner = kNone;
      Idx innermost = kNone;
      for (size_t j = stack.size(), depth = 0; j > 0 && depth < kMaxEnclosing; ++depth) {
        const Idx p = stack[--j].k;
        if (!can_own(host[p])) continue;
        if (id >= 0 && events.external_id(host[p]) == id) {
          owner = p;
          break;
        }
        if (innermost == kNone) innermost = p;
      }
      if (owner == kNone) owner = innermost;
      launches.Add(events.correlation(i), k, owner, stack.empty() ? kNone : stack.back().k);
    });
  }
  launches.Finish(bucket_start);
  std::stable_sort(windows.begin(), windows.end(),
                   [](const Window& a, const Window& b) { return a.start < b.start; });
  for (const Window& w : windows) summary.steps.push_back(StepStats{w.number, 0, 0});
  // The ops (can own device time) carrying an External id asked for, sorted by (id, k).
  std::vector<IdOp> id_ops;
  {
    std::vector<int64_t> wanted;
    for (Idx d : device) {
      const Idx owner = launches.Owner(events.correlation(d));
      if (owner == LaunchIndex::kOutside) {
        const int64_t id = events.external_id(host[launches.Outside(events.correlation(d)).k]);
        if (id >= 0 && id != events.correlation(d)) wanted.push_back(id);
      } else if (owner == LaunchIndex::kNoLaunch && events.external_id(d) >= 0 &&
                 events.external_id(d) != events.correlation(d)) {
        wanted.push_back(events.external_id(d));
      }
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    if (!wanted.empty()) {
      WalkOpenings(events, host, end_of, [&](Idx k, const std::vector<Opened>& stack) {
        const Idx i = host[k];
        const int64_t id = events.external_id(i);
        if (id >= 0 && can_own(i) && std::binary_search(wanted.begin(), wanted.end(), id)) {
          id_ops.push_back({id, k, stack.empty() ? kNone : stack.back().k});
        }
      });
      SortMostlySorted(
          id_ops.data(), id_ops.data() + id_ops.size(), [](const IdOp& a, const IdOp& b) {
            return a.external_id != b.external_id ? a.external_id < b.external_id : a.k < b.k;
          });
    }
  }
  // Rule 3 for `launch`: the last op before it in `host` order that carries its External id,
  // when that op ran on its thread in the same range and ended before it.
  auto sibling_owner = [&](const OutsideLaunch& launch) -> Idx {
    const Idx i = host[launch.k];
    const int64_t id = events.external_id(i);
    if (id < 0 || id == launch.correlation) return kNone;
    auto [lo, hi] = EqualRange<IdOp, &IdOp::external_id>(id_ops, id);
    const IdOp* after = std::partition_point(lo, hi, [&](const IdOp& x) { return x.k < launch.k; });
    if (after == lo) return kNone;
    const IdOp& op = after[-1];
    const bool before_in_same_range = events.thread_key(host[op.k]) == events.thread_key(i) &&
                                      op.parent == launch.parent &&
                                      end_of(host[op.k]) <= events.ts_ns(i);
    return before_in_same_range ? op.k : kNone;
  };
  // (owner, device event) of every attributed device event.
  LargeVector<std::pair<Idx, Idx>> owned;
  owned.reserve(device.size());
  int64_t device_total_ns = 0;
  int64_t unattributed_ns = 0;
  uint64_t unattributed_events = 0;
  for (Idx d : device) {
    device_total_ns += dur(d);
    Idx owner = kNone;
    const Idx launch_owner = launches.Owner(events.correlation(d));
    if (launch_owner == LaunchIndex::kOutside) {
      owner = sibling_owner(launches.Outside(events.correlation(d)));
    } else if (launch_owner != LaunchIndex::kNoLaunch) {
      owner = launch_owner;
    } else if (events.external_id(d) != events.correlation(d)) {
      auto [lo, hi] = EqualRange<IdOp, &IdOp::external_id>(id_ops, events.external_id(d));
      if (events.external_id(d) >= 0 && lo != hi) owner = lo->k;
    }
    if (owner == kNone) {
      unattributed_ns += dur(d);
      ++unattributed_events;
    } else {
      owned.emplace_back(owner, d);
    }
  }
  launches = LaunchIndex(0, -1, 0);
  std::vector<IdOp>().swap(id_ops);
  summary.kernels = KernelTotals(events, device, trace.strings);
  summary.has_device_time = device_total_ns > 0;
  summary.device_total_us = Us(device_total_ns);
  summary.unattributed_device_us = Us(unattributed_ns);
  if (unattributed_events > 0) {
    summary.warnings.push_back(absl::StrFormat(
        "%d device events (%.3f us) have no launching op in the trace (no launch inside an "
        "op or carrying an op's External id, no External id match); counted in the device "
        "total only",
        unattributed_events, Us(unattributed_ns)));
  }
  // Idle: the device's busy intervals against the step windows.
  const bool any_device = !device.empty();
  int64_t idle_ns = 0;
  if (any_device) {
    std::vector<Interval> step_spans;
    for (const Window& w : windows) step_spans.emplace_back(w.start, w.end);
    IdleInsideSteps idle(Union(std::move(step_spans)));
    // The device events in start order (they mostly come that way, per stream), sorted in place.
    SortMostlySorted(
        device.data(),
        device.data() + device.size(), [&](Idx a, Idx b) __attribute__((always_inline)) {
          if (events.ts_ns(a) != events.ts_ns(b)) return events.ts_ns(a) < events.ts_ns(b);
          if (end_of(a) != end_of(b)) return end_of(a) < end_of(b);
          return a < b;
        });
    for (Idx d : device) idle.Add({events.ts_ns(d), end_of(d)});
    idle_ns = idle.idle_ns();
  }
  LargeVector<Idx>().swap(device);

  // Figures per row and per step. Own device time per owner first (in `host` order), then one
  // walk closes every range after its children: self CPU = duration − the children's durations,
  // total device = own + the children's totals.
  SortMostlySorted(owned.data(), owned.data() + owned.size(), std::less<>());
  std::vector<RowSums> sums(name_of_row.size());
  std::vector<int64_t> step_cpu_ns(windows.size(), 0), step_dev_ns(windows.size(), 0);
  std::vector<Sample> samples;  // one per (row, step) run, merged while the row stays in a step
  std::vector<Idx> last_sample_of_row(windows.empty() ? 0 : name_of_row.size(), kNone);
  auto add_sample = [&](Idx r, Idx s, int64_t ns) {
    Idx& last = last_sample_of_row[r];
    if (last != kNone && samples[last].step == s) {
      samples[last].ns += ns;
    } else {
      last = static_cast<Idx>(samples.size());
      samples.push_back({r, s, ns});
    }
  };
  // The own device time of the owner at owned[*at] (0 when *at is past k), moving *at past it.
  auto own_dev = [&](Idx k, size_t* at) {
    int64_t ns = 0;
    for (; *at < owned.size() && owned[*at].first == k; ++*at) ns += dur(owned[*at].second);
    return ns;
  };
  StepCursor own_dev_steps(windows);  // asked in `host` order: time order within a thread
  for (size_t at = 0; at < owned.size();) {
    const Idx k = owned[at].first;
    const int64_t ns = own_dev(k, &at);
    if (ns == 0) continue;
    const Idx i = host[k];
    const Idx r = row_of_name[events.name(i)];
    sums[r].self_dev += ns;
    const Idx s = own_dev_steps.At(events.ts_ns(i));
    if (s == kNone) continue;
    step_dev_ns[s] += ns;
    if (summary.has_device_time) add_sample(r, s, ns);
  }
  int64_t self_cpu_total_ns = 0;
  // The host layers (run.proto): framework dispatch is the self time of the framework's ops
  // (cpu_op: not ProfilerStep#N, `## backward ##` or other annotation ranges), runtime
  // scheduling the self time of the runtime/driver calls.
  int64_t dispatch_cpu_ns = 0;
  int64_t runtime_cpu_ns = 0;
  {
    struct Frame {
      Idx k;
      int64_t children_dur;
      int64_t total_dev;
      Idx step;  // the window the op starts in, or kNone
    };
    size_t at = 0;
    StepCursor steps(windows);  // asked as ranges open: time order within a thread
    WalkNesting<Frame>(
        events, host, end_of,
        [&](Idx k, std::vector<Frame>& stack) {
          const Idx i = host[k];
          if (!stack.empty()) stack.back().children_dur += dur(i);
          return Frame{k, 0, own_dev(k, &at), steps.At(events.ts_ns(i))};
        },
        [&](const Frame& f, Frame* parent) {
          if (parent) parent->total_dev += f.total_dev;
          const Idx i = host[f.k];
          const Idx r = row_of_name[events.name(i)];
          const int64_t self_cpu = dur(i) - f.children_dur;
          RowSums& row = sums[r];
          row.calls += 1;
          row.self_cpu += self_cpu;
          row.total_cpu += dur(i);
          row.total_dev += f.total_dev;
          self_cpu_total_ns += self_cpu;
          const EventKind kind = kind_of(i);
          if (kind == EventKind::kRuntime) runtime_cpu_ns += self_cpu;
          // Legacy traces carry no category: every range is an op but the step windows.
          if (kind == EventKind::kHostOp && !window_name[events.name(i)]) {
            dispatch_cpu_ns += self_cpu;
          }
          const Idx s = f.step;
          if (s == kNone) return;
          step_cpu_ns[s] += self_cpu;
          if (!summary.has_device_time && self_cpu != 0) add_sample(r, s, self_cpu);
        });
  }
  for (size_t s = 0; s < windows.size(); ++s) {
    summary.steps[s].cpu_us = Us(step_cpu_ns[s]);
    summary.steps[s].device_us = Us(step_dev_ns[s]);
  }

  // Everything per event is done: free it before the rows (one std::string each) are built.
  LargeVector<Idx>().swap(host);
  LargeVector<std::pair<Idx, Idx>>().swap(owned);
  std::vector<Idx>().swap(row_of_name);
  std::vector<uint8_t>().swap(window_name);
  std::vector<Idx>().swap(last_sample_of_row);
  if (release) {
    release->events.Release();
    std::vector<LaunchIds>().swap(release->launch_ids);
  }

  // Which rows are made (options.max_op_rows): `slot_of_row` is each row's position in `ops`,
  // kFolded for the rows summed into the kOtherOperatorsName row, which comes last.
  const std::vector<Idx> slot_of_row = RowSlots(sums, name_of_row, trace.strings, options);
  const size_t kept =
      slot_of_row.empty()
          ? sums.size()
          : static_cast<size_t>(std::count_if(slot_of_row.begin(), slot_of_row.end(),
                                              [](Idx slot) { return slot != kFolded; }));
  const bool fold = kept < sums.size();
  std::vector<OpStats>& ops = summary.ops;
  ops.reserve(kept + (fold ? 1 : 0));
  // Figures first, names (a std::string each) once the sums are freed: the two never peak
  // together.
  OpStats other;
  for (size_t r = 0; r < name_of_row.size(); ++r) {
    if (fold && slot_of_row[r] == kFolded) {
      // Summed as the RunSummary sums its remainder row (a self time below 0 counts as 0).
      other.calls += sums[r].calls;
      other.self_cpu_us += Us(std::max<int64_t>(sums[r].self_cpu, 0));
      other.total_cpu_us += Us(sums[r].total_cpu);
      other.self_device_us += Us(std::max<int64_t>(sums[r].self_dev, 0));
      other.total_device_us += Us(sums[r].total_dev);
      ++summary.folded_ops;
      continue;
    }
    OpStats op;
    op.calls = sums[r].calls;
    op.self_cpu_us = Us(sums[r].self_cpu);
    op.total_cpu_us = Us(sums[r].total_cpu);
    op.self_device_us = Us(sums[r].self_dev);
    op.total_device_us = Us(sums[r].total_dev);
    op.step_self_device_us = StepSamples(windows.size());
    ops.push_back(std::move(op));
  }
  std::vector<RowSums>().swap(sums);
  for (size_t r = 0, k = 0; r < name_of_row.size(); ++r) {
    if (fold && slot_of_row[r] == kFolded) continue;
    ops[k++].name = KeyAveragesName(trace.strings.Get(name_of_row[r]));
  }
  std::vector<Idx>().swap(name_of_row);
  // Grouped by row, each row's samples in step order (cheapest for StepSamples::Add); a (row,
  // step) met twice (on two threads) is summed in exact nanoseconds first, so the order of the
  // sort does not matter and it needs no buffer.
  std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return a.row != b.row ? a.row < b.row : a.step < b.step;
  });
  // The folded rows' samples in one value per window (they come row by row, not in step order).
  std::vector<double> other_samples(fold ? windows.size() : 0);
  for (size_t j = 0; j < samples.size();) {
    const Sample& x = samples[j];
    int64_t ns = 0;
    for (; j < samples.size() && samples[j].row == x.row && samples[j].step == x.step; ++j) {
      ns += samples[j].ns;
    }
    if (!fold) {
      ops[x.row].step_self_device_us.Add(x.step, Us(ns));
    } else if (slot_of_row[x.row] == kFolded) {
      other_samples[x.step] += Us(ns);
    } else {
      ops[slot_of_row[x.row]].step_self_device_us.Add(x.step, Us(ns));
    }
  }
  std::vector<Sample>().swap(samples);
  if (fold) {
    other.name = kOtherOperatorsName;
    other.step_self_device_us = StepSamples::FromDense(other_samples);
    ops.push_back(std::move(other));
  }

  std::stable_sort(ops.begin(), ops.end(), [](const OpStats& a, const OpStats& b) {
    if (a.self_device_us != b.self_device_us) return a.self_device_us > b.self_device_us;
    if (a.self_cpu_us != b.self_cpu_us) return a.self_cpu_us > b.self_cpu_us;
    return a.name < b.name;
  });
  summary.self_cpu_total_us = Us(self_cpu_total_ns);

  // Layers: host time split into framework dispatch and runtime calls, then the device layers.
  summary.layers.push_back({Layer::kFrameworkDispatch, Us(dispatch_cpu_ns)});
  summary.layers.push_back({Layer::kRuntimeScheduling, Us(runtime_cpu_ns)});
  if (any_device) {
    summary.layers.push_back({Layer::kDeviceExecution, Us(device_total_ns)});
    summary.layers.push_back({Layer::kIdle, Us(idle_ns)});
  }

  // Device kind and capture facts.
  if (saw_privateuse1) {
    summary.device_kind = DeviceKind::kNeuron;  // devtime's only PrivateUse1 backend
  } else if (any_device || saw_cuda_runtime || trace.device_properties_count.value_or(0) > 0) {
    summary.device_kind = DeviceKind::kCuda;
  }
  summary.capture.active_steps = static_cast<uint32_t>(windows.size());
  SetCaptureTime(first_host_start, last_host_end, trace.base_time_ns, &summary.capture);

  // Quality gate (the first reason found wins).
  if (!summary.invalid_reason) {
    if (n == 0) {
      summary.invalid_reason = "trace has no complete (\"ph\": \"X\") events";
    } else if (windows.empty()) {
      summary.invalid_reason = "no ProfilerStep window in trace";
    } else if (summary.device_kind != DeviceKind::kCpu && !summary.has_device_time) {
      summary.invalid_reason = kDeviceTimeEmpty;
    }
  }
  return summary;
}

}  // namespace

TraceSummary SummarizeRawTrace(const RawTrace& trace, const SummarizeOptions& options) {
  return Summarize(trace, options, nullptr);
}

TraceSummary SummarizeRawTrace(RawTrace&& trace, const SummarizeOptions& options) {
  return Summarize(trace, options, &trace);
}

}  // namespace devtime::trace
