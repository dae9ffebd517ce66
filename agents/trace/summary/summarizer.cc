#include "agents/trace/summary/summarizer.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
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
  const RawEvents& events = trace.events;
  for (size_t i = 0; i < events.size(); ++i) {
    if (const uint32_t cat = events.cat(i); cat != 0) {
      int8_t& host = host_cat[cat];
      if (host < 0)
        host = options.host_op_categories.contains(std::string(trace.strings.Get(cat))) ? 1 : 0;
      if (host == 0) continue;
    }
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

// One step sample on its way to an op row (rows are built once the events are released).
struct Sample {
  uint32_t row;
  uint32_t step;
  double value;
};

// An op row's figures while the events are read, in exact integer nanoseconds.
struct RowSums {
  uint64_t calls = 0;
  int64_t self_cpu = 0, total_cpu = 0, self_dev = 0, total_dev = 0;
};

// Sorts `v` by `before`, a strict total order, where most elements already are in order: the
// longest in-order run kept greedily stays put, only the rest is sorted and merged back in. Host
// events come that way (a thread's ops in start order; the ranges written after their children,
// such as ProfilerStep#N, are the exceptions), and sorting them all was a tenth of the run time.
template <typename Before>
void SortMostlySorted(std::vector<Idx>* v, Before before) {
  std::vector<Idx> late;
  size_t kept = 0;
  for (size_t j = 0; j < v->size(); ++j) {
    const Idx i = (*v)[j];
    if (kept == 0 || before((*v)[kept - 1], i)) {
      (*v)[kept++] = i;
    } else {
      late.push_back(i);
    }
  }
  if (late.empty()) return;
  v->resize(kept);
  std::sort(late.begin(), late.end(), before);
  std::vector<Idx> merged(v->size() + late.size());
  std::merge(v->begin(), v->end(), late.begin(), late.end(), merged.begin(), before);
  v->swap(merged);
}

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// The union of `v` as disjoint intervals in time order (sorts `v`).
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& x : v) {
    if (!out.empty() && x.first <= out.back().second) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// Idle time (run.proto LAYER_IDLE: "gaps inside the captured steps where the device did
// nothing"): the gaps between the device's busy intervals, counted only where they lie inside
// a step window — the host's time between two steps is no step's idle time. Without windows,
// every gap. Both lists are disjoint and in time order.
int64_t IdleInsideSteps(const std::vector<Interval>& busy, const std::vector<Interval>& steps) {
  int64_t idle = 0;
  size_t w = 0;
  for (size_t i = 1; i < busy.size(); ++i) {
    const Interval gap{busy[i - 1].second, busy[i].first};
    if (steps.empty()) {
      idle += gap.second - gap.first;
      continue;
    }
    while (w < steps.size() && steps[w].second <= gap.first) ++w;
    for (size_t k = w; k < steps.size() && steps[k].first < gap.second; ++k) {
      idle += std::min(gap.second, steps[k].second) - std::max(gap.first, steps[k].first);
    }
  }
  return idle;
}

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

// Host events by an id they carry (correlation, External id), for lookups: the positions in
// `host` sorted by (id, position). The ids are read from the events when they already grow in
// `host` order (one thread: Kineto numbers them as ops start), and kept beside the positions
// only when not — 4 bytes an entry instead of 16 (issue 23: the summarizer's working memory
// per event).
class IdIndex {
 public:
  using Id = int64_t (RawEvents::*)(size_t) const;  // RawEvents::correlation or external_id
  template <typename Wanted>
  static IdIndex Make(const RawEvents& events, const std::vector<Idx>& host, Wanted wanted, Id id) {
    IdIndex index;
    index.id_ = id;
    bool in_order = true;
    int64_t last = INT64_MIN;
    size_t count = 0;
    for (Idx k = 0; k < host.size(); ++k) {
      const Idx i = host[k];
      const int64_t v = (events.*id)(i);
      if (v < 0 || !wanted(i)) continue;
      ++count;
      in_order = in_order && v >= last;
      last = v;
    }
    index.pos_.reserve(count);  // exactly: no grow-and-copy at the peak
    for (Idx k = 0; k < host.size(); ++k) {
      const Idx i = host[k];
      if ((events.*id)(i) >= 0 && wanted(i)) index.pos_.push_back(k);
    }
    if (in_order) return index;
    std::vector<std::pair<int64_t, Idx>> pairs;
    pairs.reserve(index.pos_.size());
    for (Idx k : index.pos_) pairs.emplace_back((events.*id)(host[k]), k);
    std::vector<Idx>().swap(index.pos_);
    std::sort(pairs.begin(), pairs.end());  // (id, position): positions stay in `host` order
    index.pos_.reserve(pairs.size());
    index.ids_.reserve(pairs.size());
    for (const auto& [i, k] : pairs) {
      index.ids_.push_back(i);
      index.pos_.push_back(k);
    }
    return index;
  }

  // The positions of the events with id `id`, in `host` order.
  std::pair<std::vector<Idx>::const_iterator, std::vector<Idx>::const_iterator> Range(
      const RawEvents& events, const std::vector<Idx>& host, int64_t id) const {
    auto id_at = [&](size_t j) { return ids_.empty() ? (events.*id_)(host[pos_[j]]) : ids_[j]; };
    // The first entry whose id is past `id` (or_equal: at or past it).
    auto first_past = [&](bool or_equal) {
      size_t lo = 0, hi = pos_.size();
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int64_t at = id_at(mid);
        if (at < id || (!or_equal && at == id)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return pos_.begin() + static_cast<std::ptrdiff_t>(lo);
    };
    return {first_past(true), first_past(false)};
  }

 private:
  Id id_ = nullptr;
  std::vector<Idx> pos_;
  std::vector<int64_t> ids_;  // the id of each entry, when the events' ids are not in order
};

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
  auto more = [&](Idx a, Idx b) {
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

  // Classify categories once per distinct `cat` string.
  std::vector<EventKind> kind_of_cat(trace.strings.size(), EventKind::kUnknown);
  auto kind_of = [&](Idx i) {
    const uint32_t cat_id = events.cat(i);
    EventKind& k = kind_of_cat[cat_id];
    if (k == EventKind::kUnknown) {
      const std::string cat(trace.strings.Get(cat_id));
      if (cat_id == 0) {
        k = EventKind::kHostOp;  // legacy traces carry no `cat`
      } else if (options.device_categories.contains(cat)) {
        k = EventKind::kDevice;
      } else if (options.host_op_categories.contains(cat)) {
        k = IsRuntimeCategory(cat)       ? EventKind::kRuntime
            : cat == kAnnotationCategory ? EventKind::kAnnotation
                                         : EventKind::kHostOp;
      } else {
        k = EventKind::kIgnored;
      }
    }
    return k;
  };
  // Negative durations count as 0 (and make the capture INVALID below).
  auto dur = [&](Idx i) { return std::max<int64_t>(events.dur_ns(i), 0); };
  auto end_of = [&](Idx i) { return events.ts_ns(i) + dur(i); };

  bool saw_privateuse1 = false;
  bool saw_cuda_runtime = false;
  // The host events' span: when the capture ran (device events may sit on another clock).
  int64_t first_host_start = INT64_MAX;
  int64_t last_host_end = INT64_MIN;
  // Reserved for every event: pages never written cost address space, not memory, and no
  // grow-and-copy doubles a vector's footprint at its peak (the same for `samples` below).
  std::vector<Idx> host;    // host ops and runtime events
  std::vector<Idx> device;  // device events
  host.reserve(n);
  device.reserve(n);
  if (release) release->strings.ReleaseIndex();  // only Get() from here on
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
    const EventKind k = kind_of(i);
    if (k == EventKind::kHostOp || k == EventKind::kAnnotation || k == EventKind::kRuntime) {
      host.push_back(i);
      first_host_start = std::min(first_host_start, ts);
      last_host_end = std::max(last_host_end, end_of(i));
      const std::string_view cat = trace.strings.Get(events.cat(i));
      if (cat.starts_with("privateuse1_")) saw_privateuse1 = true;
      if (cat.starts_with("cuda_")) saw_cuda_runtime = true;
    } else if (k == EventKind::kDevice) {
      device.push_back(i);
    }
  }

  // Nest host events per thread exactly as torch's EventList._populate_cpu_children: sort by
  // (start, -end), ties in file order; an event is the child of the top of the stack when it
  // starts before the parent's end and does not end after it. Partial overlaps (common in
  // legacy traces, whose integer µs durations are truncated per event) are not nested — torch
  // does the same, so they are not reported.
  SortMostlySorted(&host, [&](Idx a, Idx b) {
    const uint64_t ta = events.thread_key(a);
    const uint64_t tb = events.thread_key(b);
    if (ta != tb) return ta < tb;
    if (events.ts_ns(a) != events.ts_ns(b)) return events.ts_ns(a) < events.ts_ns(b);
    if (end_of(a) != end_of(b)) return end_of(a) > end_of(b);
    return a < b;  // file order
  });
  // From here on the per-host-event arrays are indexed by position in `host` (k), not by event:
  // a quarter of the events are device work and need none of them.
  const Idx h = static_cast<Idx>(host.size());
  std::vector<Idx> parent(h, kNone);  // a position in `host`
  {
    std::vector<Idx> stack;  // positions
    uint64_t thread = 0;
    for (Idx k = 0; k < h; ++k) {
      const Idx i = host[k];
      if (stack.empty() || events.thread_key(i) != thread) {
        stack.clear();
        thread = events.thread_key(i);
      }
      while (!stack.empty()) {
        const Idx p = stack.back();
        if (events.ts_ns(i) >= end_of(host[p]) || end_of(i) > end_of(host[p])) {
          stack.pop_back();
        } else {
          parent[k] = p;
          break;
        }
      }
      stack.push_back(k);
    }
  }

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
  // its own correlation: the 2023 form names no op). Anything else is unattributed. Lookups
  // are sorted vectors (16 bytes per event, freed after this pass). `dev` is each event's own
  // device time here, its total (own + children's) further down.
  auto can_own = [&](Idx i) { return kind_of(i) == EventKind::kHostOp; };
  std::vector<int64_t> dev(h, 0);
  int64_t device_total_ns = 0;
  int64_t unattributed_ns = 0;
  uint64_t unattributed_events = 0;
  {
    const IdIndex runtime_by_correlation = IdIndex::Make(
        events, host, [&](Idx i) { return kind_of(i) == EventKind::kRuntime; },
        &RawEvents::correlation);
    const IdIndex op_by_external_id = IdIndex::Make(events, host, can_own, &RawEvents::external_id);
    // The entries of `index` with id `id`: positions in `host`, in `host` order.
    auto all_with = [&](const IdIndex& index, int64_t id) { return index.Range(events, host, id); };
    auto find_in = [&](const IdIndex& index, int64_t id) -> Idx {
      if (id < 0) return kNone;
      auto [lo, hi] = all_with(index, id);
      return lo == hi ? kNone : *lo;
    };
    // Rules 1 and 2 for the launch at position `r`. The ranges enclosing it are looked at up to
    // kMaxEnclosing deep: torch's own stacks are tens deep, and the bound keeps a hostile trace
    // (a launch inside a million nested ops, a million times) linear.
    constexpr int kMaxEnclosing = 256;
    auto enclosing_owner = [&](Idx r) -> Idx {
      const int64_t id = events.external_id(host[r]);
      Idx innermost = kNone;
      int depth = 0;
      for (Idx p = parent[r]; p != kNone && depth < kMaxEnclosing; p = parent[p], ++depth) {
        const Idx op = host[p];
        if (!can_own(op)) continue;
        if (id >= 0 && events.external_id(op) == id) return p;
        if (innermost == kNone) innermost = p;
      }
      return innermost;
    };
    // Rule 3 for the launch at `r`: the last op before it in `host` order that carries its
    // External id, when that op ran on its thread in the same range and ended before it.
    auto sibling_owner = [&](Idx r) -> Idx {
      const Idx launch = host[r];
      const int64_t id = events.external_id(launch);
      if (id < 0 || id == events.correlation(launch)) return kNone;
      auto [lo, hi] = all_with(op_by_external_id, id);
      auto after = std::lower_bound(lo, hi, r);
      if (after == lo) return kNone;
      const Idx k = *std::prev(after);
      const bool before_in_same_range = events.thread_key(host[k]) == events.thread_key(launch) &&
                                        parent[k] == parent[r] &&
                                        end_of(host[k]) <= events.ts_ns(launch);
      return before_in_same_range ? k : kNone;
    };
    for (Idx d : device) {
      device_total_ns += dur(d);
      const int64_t correlation = events.correlation(d);
      const int64_t external_id = events.external_id(d);
      Idx owner = kNone;
      if (const Idx r = find_in(runtime_by_correlation, correlation); r != kNone) {
        owner = enclosing_owner(r);
        if (owner == kNone) owner = sibling_owner(r);
      } else if (external_id != correlation) {
        owner = find_in(op_by_external_id, external_id);
      }
      if (owner == kNone) {
        unattributed_ns += dur(d);
        ++unattributed_events;
        continue;
      }
      dev[owner] += dur(d);
    }
  }
  // Per-kernel totals: device events grouped by name.
  {
    std::vector<Idx> row_of_kernel(trace.strings.size(), kNone);
    std::vector<int64_t> kernel_ns;
    for (Idx d : device) {
      Idx& row = row_of_kernel[events.name(d)];
      if (row == kNone) {
        row = static_cast<Idx>(summary.kernels.size());
        summary.kernels.push_back({std::string(trace.strings.Get(events.name(d))), 0, 0});
        kernel_ns.push_back(0);
      }
      summary.kernels[row].calls += 1;
      kernel_ns[row] += dur(d);
    }
    for (size_t k = 0; k < summary.kernels.size(); ++k)
      summary.kernels[k].device_us = Us(kernel_ns[k]);
    std::sort(summary.kernels.begin(), summary.kernels.end(),
              [](const KernelStats& a, const KernelStats& b) {
                if (a.device_us != b.device_us) return a.device_us > b.device_us;
                return a.name < b.name;
              });
  }
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
  // The device's busy intervals, for the idle layer once the step windows are known.
  const bool any_device = !device.empty();
  std::vector<Interval> busy;
  {
    std::vector<Interval> spans;
    spans.reserve(device.size());
    for (Idx d : device) spans.emplace_back(events.ts_ns(d), end_of(d));
    std::vector<Idx>().swap(device);
    busy = Union(std::move(spans));
  }

  // Steps: ProfilerStep#N windows, in time order.
  struct Window {
    int64_t start, end;
    uint32_t number;
  };
  std::vector<Window> windows;
  for (Idx i : host) {
    if (auto num = ProfilerStepNumber(trace.strings.Get(events.name(i)))) {
      windows.push_back({events.ts_ns(i), end_of(i), *num});
    }
  }
  std::stable_sort(windows.begin(), windows.end(),
                   [](const Window& a, const Window& b) { return a.start < b.start; });
  for (const Window& w : windows) summary.steps.push_back(StepStats{w.number, 0, 0});
  int64_t idle_ns = 0;
  if (any_device) {
    std::vector<Interval> step_spans;
    for (const Window& w : windows) step_spans.emplace_back(w.start, w.end);
    idle_ns = IdleInsideSteps(busy, Union(std::move(step_spans)));
    std::vector<Interval>().swap(busy);
  }
  // The window containing `ts`: the last one starting at or before it, if it has not ended.
  auto step_of = [&](int64_t ts) -> Idx {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                               [](int64_t t, const Window& w) { return t < w.start; });
    if (it == windows.begin()) return kNone;
    --it;
    if (ts < it->end || ts == it->start) return static_cast<Idx>(it - windows.begin());
    return kNone;
  };

  // Rows by key_averages() name. Distinct strings are distinct names except for the
  // ProfilerStep#N rewrite, so every name that becomes "ProfilerStep*" shares one row and no
  // name-keyed merge (a second copy of every name) is needed. Rows are numbered in order of
  // first occurrence in `host`; `name_of_row` keeps one string id per row.
  std::vector<Idx> row_of_name(trace.strings.size(), kNone);
  std::vector<Idx> name_of_row;
  {
    Idx step_row = kNone;  // the "ProfilerStep*" row
    for (Idx i : host) {
      const uint32_t name = events.name(i);
      if (row_of_name[name] != kNone) continue;
      const bool step = KeyAveragesName(trace.strings.Get(name)) == kStepRowName;
      if (step && step_row != kNone) {
        row_of_name[name] = step_row;
        continue;
      }
      row_of_name[name] = static_cast<Idx>(name_of_row.size());
      if (step) step_row = row_of_name[name];
      name_of_row.push_back(name);
    }
  }

  // Figures per row and per step, in two passes so that the per-event arrays never all live at
  // once (issue 23): own device time first, then `dev` becomes total device time (children come
  // after their parent in `host` order, so a reverse pass completes every child's total before
  // adding it to its parent) and is freed; then self CPU (duration - the children's durations)
  // from the parents, which are freed, and the CPU figures.
  std::vector<RowSums> sums(name_of_row.size());
  std::vector<Sample> samples;  // (row, step) in `host` order; repeats merged when adjacent
  if (!windows.empty()) samples.reserve(host.size());
  auto add_sample = [&samples](Idx r, Idx s, double v) {
    if (!samples.empty() && samples.back().row == r && samples.back().step == s) {
      samples.back().value += v;
    } else {
      samples.push_back({r, s, v});
    }
  };
  for (Idx k = 0; k < h; ++k) {
    if (dev[k] == 0) continue;
    const Idx i = host[k];
    const Idx r = row_of_name[events.name(i)];
    sums[r].self_dev += dev[k];
    if (windows.empty()) continue;
    const Idx s = step_of(events.ts_ns(i));
    if (s == kNone) continue;
    summary.steps[s].device_us += Us(dev[k]);
    if (summary.has_device_time) add_sample(r, s, Us(dev[k]));
  }
  for (Idx k = h; k-- > 0;) {
    if (parent[k] != kNone) dev[parent[k]] += dev[k];
  }
  for (Idx k = 0; k < h; ++k) sums[row_of_name[events.name(host[k])]].total_dev += dev[k];
  std::vector<int64_t>().swap(dev);
  std::vector<int64_t> self_cpu(h);
  for (Idx k = 0; k < h; ++k) self_cpu[k] = dur(host[k]);
  for (Idx k = 0; k < h; ++k) {
    if (parent[k] != kNone) self_cpu[parent[k]] -= dur(host[k]);
  }
  std::vector<Idx>().swap(parent);

  int64_t self_cpu_total_ns = 0;
  // The host layers (run.proto): framework dispatch is the self time of the framework's ops
  // (cpu_op: not ProfilerStep#N, `## backward ##` or other annotation ranges), runtime
  // scheduling the self time of the runtime/driver calls.
  int64_t dispatch_cpu_ns = 0;
  int64_t runtime_cpu_ns = 0;
  for (Idx k = 0; k < h; ++k) {
    const Idx i = host[k];
    const Idx r = row_of_name[events.name(i)];
    RowSums& row = sums[r];
    row.calls += 1;
    row.self_cpu += self_cpu[k];
    row.total_cpu += dur(host[k]);
    self_cpu_total_ns += self_cpu[k];
    if (kind_of(i) == EventKind::kRuntime) runtime_cpu_ns += self_cpu[k];
    // Legacy traces carry no category: every range is an op but the step windows.
    if (kind_of(i) == EventKind::kHostOp &&
        !ProfilerStepNumber(trace.strings.Get(events.name(i)))) {
      dispatch_cpu_ns += self_cpu[k];
    }
    if (windows.empty()) continue;
    const Idx s = step_of(events.ts_ns(i));
    if (s == kNone) continue;
    summary.steps[s].cpu_us += Us(self_cpu[k]);
    if (!summary.has_device_time && self_cpu[k] != 0) add_sample(r, s, Us(self_cpu[k]));
  }

  // Everything per event is done: free it before the rows (one std::string each) are built.
  std::vector<Idx>().swap(host);
  std::vector<int64_t>().swap(self_cpu);
  std::vector<Idx>().swap(row_of_name);
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
  // Grouped by row, each row's samples in step order (cheapest for StepSamples::Add).
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) {
    return a.row != b.row ? a.row < b.row : a.step < b.step;
  });
  // The folded rows' samples in one value per window (they come row by row, not in step order).
  std::vector<double> other_samples(fold ? windows.size() : 0);
  for (const Sample& x : samples) {
    if (!fold) {
      ops[x.row].step_self_device_us.Add(x.step, x.value);
    } else if (slot_of_row[x.row] == kFolded) {
      other_samples[x.step] += x.value;
    } else {
      ops[slot_of_row[x.row]].step_self_device_us.Add(x.step, x.value);
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
