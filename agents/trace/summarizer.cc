#include "agents/trace/summarizer.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"

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

uint64_t ThreadKey(const RawEvent& e) { return (uint64_t{e.pid} << 32) | e.tid; }

// key_averages()'s one row for all ProfilerStep#N.
constexpr char kStepRowName[] = "ProfilerStep*";

}  // namespace

std::optional<uint32_t> ProfilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep";
  if (!name.starts_with(kPrefix)) return std::nullopt;
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
  for (const RawEvent& e : trace.events) {
    if (e.cat != 0 && !options.host_op_categories.contains(trace.strings.Get(e.cat))) continue;
    if (auto num = ProfilerStepNumber(trace.strings.Get(e.name))) {
      out.push_back({e.ts_ns, e.ts_ns + std::max<int64_t>(e.dur_ns, 0), *num});
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

TraceSummary SummarizeRawTrace(const RawTrace& trace, const SummarizeOptions& options) {
  TraceSummary summary;
  summary.source_format = trace.format;
  summary.event_count = trace.complete_events;
  const std::vector<RawEvent>& events = trace.events;
  const size_t n = events.size();
  const bool legacy = trace.format == "legacy-array";

  // Classify categories once per distinct `cat` string.
  std::vector<EventKind> kind_of_cat(trace.strings.size(), EventKind::kUnknown);
  auto kind_of = [&](const RawEvent& e) {
    EventKind& k = kind_of_cat[e.cat];
    if (k == EventKind::kUnknown) {
      const std::string& cat = trace.strings.Get(e.cat);
      if (e.cat == 0) {
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

  bool saw_privateuse1 = false;
  bool saw_cuda_runtime = false;
  std::vector<size_t> host;    // host ops and runtime events
  std::vector<size_t> device;  // device events
  host.reserve(n);
  std::vector<int64_t> dur(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const RawEvent& e = events[i];
    dur[i] = e.dur_ns;
    if (e.dur_ns < 0) {
      if (!summary.invalid_reason) {
        summary.invalid_reason = absl::StrFormat("negative duration at event %d", e.index);
      }
      dur[i] = 0;
    }
    if (legacy && i > 0 && e.ts_ns < events[i - 1].ts_ns && !summary.invalid_reason) {
      // torch 1.13 writes legacy traces sorted by start time.
      summary.invalid_reason = absl::StrFormat("timestamps go backwards at event %d", e.index);
    }
    const EventKind k = kind_of(e);
    if (k == EventKind::kHostOp || k == EventKind::kAnnotation || k == EventKind::kRuntime) {
      host.push_back(i);
      const std::string& cat = trace.strings.Get(e.cat);
      if (cat.starts_with("privateuse1_")) saw_privateuse1 = true;
      if (cat.starts_with("cuda_")) saw_cuda_runtime = true;
    } else if (k == EventKind::kDevice) {
      device.push_back(i);
    }
  }
  auto end_of = [&](size_t i) { return events[i].ts_ns + dur[i]; };

  // Nest host events per thread exactly as torch's EventList._populate_cpu_children: sort by
  // (start, -end), ties in file order; an event is the child of the top of the stack when it
  // starts before the parent's end and does not end after it. Partial overlaps (common in
  // legacy traces, whose integer µs durations are truncated per event) are not nested — torch
  // does the same, so they are not reported.
  std::stable_sort(host.begin(), host.end(), [&](size_t a, size_t b) {
    const uint64_t ta = ThreadKey(events[a]);
    const uint64_t tb = ThreadKey(events[b]);
    if (ta != tb) return ta < tb;
    if (events[a].ts_ns != events[b].ts_ns) return events[a].ts_ns < events[b].ts_ns;
    return end_of(a) > end_of(b);
  });
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> parent(n, kNone);
  std::vector<int64_t> self_cpu(n, 0);
  {
    std::vector<size_t> stack;
    uint64_t thread = 0;
    for (size_t i : host) {
      const RawEvent& e = events[i];
      if (stack.empty() || ThreadKey(e) != thread) {
        stack.clear();
        thread = ThreadKey(e);
      }
      self_cpu[i] += dur[i];
      while (!stack.empty()) {
        const size_t p = stack.back();
        if (e.ts_ns >= end_of(p) || end_of(i) > end_of(p)) {
          stack.pop_back();
        } else {
          parent[i] = p;
          self_cpu[p] -= dur[i];
          break;
        }
      }
      stack.push_back(i);
    }
  }

  // Attribute device events to the launching op, the way torch does (profiler-formats.md
  // §1.8): device event → the runtime event with the same correlation (its launch) → the host
  // op (not an annotation) whose External id the launch carries. A launch without a usable
  // External id goes to the innermost op enclosing it, annotations skipped (old traces whose ids
  // are correlations, §7.1). A device event without a launch falls back to its own External id.
  // Anything else — a launch outside every op — is unattributed. Lookups are sorted vectors
  // (16 bytes per event; the first in `host` order wins on duplicates).
  using IdIndex = std::vector<std::pair<int64_t, size_t>>;
  auto sorted_index = [&](auto&& wanted, auto&& id_of) {
    IdIndex index;
    for (size_t i : host) {
      if (wanted(events[i]) && id_of(events[i]) >= 0) index.emplace_back(id_of(events[i]), i);
    }
    std::stable_sort(index.begin(), index.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    return index;
  };
  auto find_in = [&](const IdIndex& index, int64_t id) -> size_t {
    if (id < 0) return kNone;
    auto it = std::lower_bound(
        index.begin(), index.end(), id,
        [](const std::pair<int64_t, size_t>& x, int64_t c) { return x.first < c; });
    if (it == index.end() || it->first != id) return kNone;
    return it->second;
  };
  auto can_own = [&](const RawEvent& e) { return kind_of(e) == EventKind::kHostOp; };
  const IdIndex runtime_by_correlation =
      sorted_index([&](const RawEvent& e) { return kind_of(e) == EventKind::kRuntime; },
                   [](const RawEvent& e) { return e.correlation; });
  const IdIndex op_by_external_id =
      sorted_index(can_own, [](const RawEvent& e) { return e.external_id; });
  std::vector<int64_t> own_device(n, 0);
  int64_t device_total_ns = 0;
  int64_t unattributed_ns = 0;
  uint64_t unattributed_events = 0;
  for (size_t d : device) {
    const RawEvent& e = events[d];
    device_total_ns += dur[d];
    size_t owner = kNone;
    if (const size_t r = find_in(runtime_by_correlation, e.correlation); r != kNone) {
      owner = find_in(op_by_external_id, events[r].external_id);
      if (owner == kNone) {
        owner = parent[r];
        while (owner != kNone && !can_own(events[owner])) owner = parent[owner];
      }
    } else {
      owner = find_in(op_by_external_id, e.external_id);
    }
    if (owner == kNone) {
      unattributed_ns += dur[d];
      ++unattributed_events;
      continue;
    }
    own_device[owner] += dur[d];
  }
  // Children come after their parent in `host` order, so a reverse pass completes every
  // child's total before adding it to its parent.
  std::vector<int64_t> total_device = own_device;
  for (auto it = host.rbegin(); it != host.rend(); ++it) {
    if (parent[*it] != kNone) total_device[parent[*it]] += total_device[*it];
  }
  // Per-kernel totals: device events grouped by name.
  {
    std::vector<int64_t> row_of_kernel(trace.strings.size(), -1);
    std::vector<int64_t> kernel_ns;
    for (size_t d : device) {
      int64_t& row = row_of_kernel[events[d].name];
      if (row < 0) {
        row = static_cast<int64_t>(summary.kernels.size());
        summary.kernels.push_back({trace.strings.Get(events[d].name), 0, 0});
        kernel_ns.push_back(0);
      }
      summary.kernels[static_cast<size_t>(row)].calls += 1;
      kernel_ns[static_cast<size_t>(row)] += dur[d];
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
  // Steps: ProfilerStep#N windows, in time order.
  struct Window {
    int64_t start, end;
    uint32_t number;
  };
  std::vector<Window> windows;
  for (size_t i : host) {
    if (auto num = ProfilerStepNumber(trace.strings.Get(events[i].name))) {
      windows.push_back({events[i].ts_ns, end_of(i), *num});
    }
  }
  std::stable_sort(windows.begin(), windows.end(),
                   [](const Window& a, const Window& b) { return a.start < b.start; });
  for (const Window& w : windows) summary.steps.push_back(StepStats{w.number, 0, 0});
  // The window containing `ts`: the last one starting at or before it, if it has not ended.
  auto step_of = [&](int64_t ts) -> size_t {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                               [](int64_t t, const Window& w) { return t < w.start; });
    if (it == windows.begin()) return kNone;
    --it;
    if (ts < it->end || ts == it->start) return static_cast<size_t>(it - windows.begin());
    return kNone;
  };

  // Aggregate by key_averages() name. Distinct strings are distinct names except for the
  // ProfilerStep#N rewrite, so every name that becomes "ProfilerStep*" shares one row and no
  // name-keyed merge (a second copy of every name) is needed.
  constexpr int64_t kNoRow = -1;
  std::vector<int64_t> row_of_name(trace.strings.size(), kNoRow);
  int64_t step_row = kNoRow;  // the "ProfilerStep*" row
  std::vector<OpStats>& ops = summary.ops;
  std::vector<int64_t> row_self_cpu, row_total_cpu, row_self_dev, row_total_dev;
  auto new_row = [&](std::string name) {
    const auto row = static_cast<int64_t>(ops.size());
    OpStats op;
    op.name = std::move(name);
    op.step_self_device_us = StepSamples(windows.size());
    ops.push_back(std::move(op));
    row_self_cpu.push_back(0);
    row_total_cpu.push_back(0);
    row_self_dev.push_back(0);
    row_total_dev.push_back(0);
    return row;
  };
  int64_t self_cpu_total_ns = 0;
  int64_t runtime_cpu_ns = 0;
  for (size_t i : host) {
    const RawEvent& e = events[i];
    int64_t& row = row_of_name[e.name];
    if (row == kNoRow) {
      std::string name = KeyAveragesName(trace.strings.Get(e.name));
      if (name == kStepRowName) {
        if (step_row == kNoRow) step_row = new_row(std::move(name));
        row = step_row;
      } else {
        row = new_row(std::move(name));
      }
    }
    const auto r = static_cast<size_t>(row);
    ops[r].calls += 1;
    row_self_cpu[r] += self_cpu[i];
    row_total_cpu[r] += dur[i];
    row_self_dev[r] += own_device[i];
    row_total_dev[r] += total_device[i];
    self_cpu_total_ns += self_cpu[i];
    if (kind_of(e) == EventKind::kRuntime) runtime_cpu_ns += self_cpu[i];
    if (!windows.empty()) {
      const size_t s = step_of(e.ts_ns);
      if (s != kNone) {
        summary.steps[s].cpu_us += Us(self_cpu[i]);
        summary.steps[s].device_us += Us(own_device[i]);
        ops[r].step_self_device_us.Add(
            s, summary.has_device_time ? Us(own_device[i]) : Us(self_cpu[i]));
      }
    }
  }
  for (size_t r = 0; r < ops.size(); ++r) {
    ops[r].self_cpu_us = Us(row_self_cpu[r]);
    ops[r].total_cpu_us = Us(row_total_cpu[r]);
    ops[r].self_device_us = Us(row_self_dev[r]);
    ops[r].total_device_us = Us(row_total_dev[r]);
  }
  std::stable_sort(ops.begin(), ops.end(), [](const OpStats& a, const OpStats& b) {
    if (a.self_device_us != b.self_device_us) return a.self_device_us > b.self_device_us;
    if (a.self_cpu_us != b.self_cpu_us) return a.self_cpu_us > b.self_cpu_us;
    return a.name < b.name;
  });
  summary.self_cpu_total_us = Us(self_cpu_total_ns);

  // Layers: host time split into framework dispatch and runtime calls; device busy time and
  // the gaps between device work (from the first to the last device event).
  summary.layers.push_back({Layer::kFrameworkDispatch, Us(self_cpu_total_ns - runtime_cpu_ns)});
  summary.layers.push_back({Layer::kRuntimeScheduling, Us(runtime_cpu_ns)});
  if (!device.empty()) {
    std::vector<std::pair<int64_t, int64_t>> spans;
    spans.reserve(device.size());
    for (size_t d : device) spans.emplace_back(events[d].ts_ns, end_of(d));
    std::sort(spans.begin(), spans.end());
    int64_t busy = 0;
    int64_t cur_start = spans.front().first;
    int64_t cur_end = spans.front().second;
    for (const auto& [s, e] : spans) {
      if (s > cur_end) {
        busy += cur_end - cur_start;
        cur_start = s;
      }
      cur_end = std::max(cur_end, e);
    }
    busy += cur_end - cur_start;
    const int64_t span = cur_end - spans.front().first;
    summary.layers.push_back({Layer::kDeviceExecution, Us(device_total_ns)});
    summary.layers.push_back({Layer::kIdle, Us(span - busy)});
  }

  // Device kind and capture facts.
  if (saw_privateuse1) {
    summary.device_kind = DeviceKind::kNeuron;  // devtime's only PrivateUse1 backend
  } else if (!device.empty() || saw_cuda_runtime || trace.device_properties_count.value_or(0) > 0) {
    summary.device_kind = DeviceKind::kCuda;
  }
  summary.capture.active_steps = static_cast<uint32_t>(windows.size());

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

}  // namespace devtime::trace
