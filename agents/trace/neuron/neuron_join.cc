#include "agents/trace/neuron/neuron_join.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/strings/str_format.h"
#include "agents/trace/io/timestamp.h"

namespace devtime::trace {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

struct Launch {
  size_t event = 0;   // index in RawTrace::events
  int64_t ts_ns = 0;  // absolute
  int64_t op_external_id = -1;
  bool used = false;
};

}  // namespace

DeviceJoin JoinNeuronExecutions(const std::vector<NeuronExecution>& executions, bool aligned,
                                int64_t lo_ns, int64_t hi_ns, RawTrace* framework,
                                std::vector<std::string>* warnings) {
  DeviceJoin join;
  const int64_t base = framework->base_time_ns.value_or(0);
  const std::optional<uint32_t> driver = framework->strings.Find("privateuse1_driver");
  const std::optional<uint32_t> runtime = framework->strings.Find("privateuse1_runtime");
  auto is_runtime = [&](const RawEvent& e) {
    const std::string_view cat = framework->strings.Get(e.cat);
    return cat.ends_with("_runtime") || cat.ends_with("_driver");
  };
  // The op's External id of each launch: its own, else the one of the runtime event (the
  // operator dispatch) that shares its correlation.
  std::unordered_map<int64_t, int64_t> external_by_correlation;
  for (const RawEvent& e : framework->events) {
    if (is_runtime(e) && e.correlation >= 0 && e.external_id >= 0) {
      external_by_correlation.emplace(e.correlation, e.external_id);
    }
  }
  auto op_external_id = [&](const RawEvent& e) -> int64_t {
    if (e.external_id >= 0) return e.external_id;
    auto it = external_by_correlation.find(e.correlation);
    return e.correlation >= 0 && it != external_by_correlation.end() ? it->second : -1;
  };
  bool has_driver = false;
  for (const RawEvent& e : framework->events) has_driver |= driver && e.cat == *driver;
  const std::optional<uint32_t> launch_cat = has_driver ? driver : runtime;
  std::vector<Launch> launches;  // in time order
  std::unordered_map<size_t, size_t> launch_of_event;
  for (size_t i = 0; i < framework->events.size(); ++i) {
    const RawEvent& e = framework->events[i];
    if (!launch_cat || e.cat != *launch_cat) continue;
    launches.push_back({i, e.ts_ns + base, op_external_id(e), false});
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [](const Launch& a, const Launch& b) { return a.ts_ns < b.ts_ns; });
  for (size_t l = 0; l < launches.size(); ++l) launch_of_event[launches[l].event] = l;

  // 1. By id.
  std::unordered_map<int64_t, int64_t> external_by_exec, external_by_sequence;
  std::unordered_map<int64_t, size_t> launch_by_exec, launch_by_sequence;
  for (const LaunchIds& ids : framework->launch_ids) {
    const int64_t ext = op_external_id(framework->events[ids.event]);
    auto l = launch_of_event.find(ids.event);
    const size_t launch = l == launch_of_event.end() ? kNone : l->second;
    if (ids.exec_id >= 0) {
      external_by_exec.emplace(ids.exec_id, ext);
      launch_by_exec.emplace(ids.exec_id, launch);
    }
    if (ids.sequence_id >= 0) {
      external_by_sequence.emplace(ids.sequence_id, ext);
      launch_by_sequence.emplace(ids.sequence_id, launch);
    }
  }
  std::vector<int64_t> owner(executions.size(), -1);
  std::vector<bool> joined(executions.size(), false);
  for (size_t x = 0; x < executions.size(); ++x) {
    const NeuronExecution& e = executions[x];
    auto by_exec = e.exec_id >= 0 ? external_by_exec.find(e.exec_id) : external_by_exec.end();
    auto by_seq =
        e.sequence_id >= 0 ? external_by_sequence.find(e.sequence_id) : external_by_sequence.end();
    size_t launch = kNone;
    if (by_exec != external_by_exec.end()) {
      owner[x] = by_exec->second;
      launch = launch_by_exec[e.exec_id];
    } else if (by_seq != external_by_sequence.end()) {
      owner[x] = by_seq->second;
      launch = launch_by_sequence[e.sequence_id];
    } else {
      continue;
    }
    if (launch != kNone) launches[launch].used = true;
    if (owner[x] < 0) continue;  // the launch names no op: unattributed
    joined[x] = true;
    ++join.by_id;
    join.by_id_us += Us(e.end_ns - e.start_ns);
  }

  // 2. By order, on one queue, inside the capture window, when every condition holds.
  std::vector<size_t> rest;
  std::set<std::string> queues;
  for (size_t x = 0; x < executions.size(); ++x) {
    if (!joined[x]) {
      rest.push_back(x);
      queues.insert(executions[x].queue);
    }
  }
  std::vector<size_t> free_launches;
  for (size_t l = 0; l < launches.size(); ++l) {
    if (!launches[l].used && launches[l].ts_ns >= lo_ns && launches[l].ts_ns < hi_ns) {
      free_launches.push_back(l);
    }
  }
  std::string why_not;
  if (rest.empty()) {
    why_not = "";
  } else if (!aligned) {
    why_not = "the system trace and the framework trace are not on one clock";
  } else if (queues.size() > 1) {
    why_not = absl::StrFormat("they run on %d NeuronCore queues and the launches name none",
                              queues.size());
  } else if (free_launches.size() != rest.size()) {
    why_not = absl::StrFormat("%d executions but %d %s launches in the ProfilerStep windows",
                              rest.size(), free_launches.size(),
                              launch_cat ? framework->strings.Get(*launch_cat) : "privateuse1");
  } else {
    for (size_t k = 0; k < rest.size(); ++k) {
      if (launches[free_launches[k]].ts_ns > executions[rest[k]].start_ns) {
        why_not = absl::StrFormat(
            "launch %d comes after the execution it would pair with (clocks not aligned?)", k);
        break;
      }
    }
  }
  if (why_not.empty()) {
    for (size_t k = 0; k < rest.size(); ++k) {
      const NeuronExecution& e = executions[rest[k]];
      owner[rest[k]] = launches[free_launches[k]].op_external_id;
      if (owner[rest[k]] < 0) continue;  // the launch names no op: unattributed
      joined[rest[k]] = true;
      ++join.by_order;
      join.by_order_us += Us(e.end_ns - e.start_ns);
    }
  }

  // Every execution becomes a device event; unjoined ones carry no External id.
  const uint32_t name = framework->strings.Intern(kNeuronExecCategory);
  const uint32_t cat = framework->strings.Intern(kNeuronExecCategory);
  const uint32_t pid = framework->strings.Intern("NeuronCore");
  uint64_t index = framework->total_events;
  uint64_t off_clock = 0;
  for (size_t x = 0; x < executions.size(); ++x) {
    const NeuronExecution& e = executions[x];
    // On the framework's relative clock the summary adds ts + dur (+ base): must fit int64.
    const std::optional<int64_t> ts = CheckedSub(e.start_ns, base);
    if (!ts || !CheckedAdd(*ts, e.end_ns - e.start_ns)) {
      ++off_clock;
      continue;
    }
    RawEvent ev;
    ev.index = index++;
    ev.name = name;
    ev.cat = cat;
    ev.pid = pid;
    ev.tid = framework->strings.Intern(e.queue);
    ev.ts_ns = *ts;
    ev.dur_ns = e.end_ns - e.start_ns;
    ev.external_id = joined[x] ? owner[x] : -1;
    framework->events.push_back(ev);
    if (!joined[x]) {
      ++join.unjoined;
      join.unjoined_us += Us(e.end_ns - e.start_ns);
    }
  }
  if (off_clock > 0) {
    warnings->push_back(absl::StrFormat(
        "%d NeuronCore executions are more than int64 nanoseconds away from the framework "
        "trace's baseTimeNanoseconds; not counted",
        off_clock));
  }
  if (join.unjoined > 0) {
    warnings->push_back(absl::StrFormat(
        "%d NeuronCore executions (%.3f us) are not joined to a launching op%s; counted as "
        "unattributed device time",
        join.unjoined, join.unjoined_us,
        why_not.empty() ? std::string()
                        : " (no id to join by, and not by order: " + why_not + ")"));
  }
  return join;
}

}  // namespace devtime::trace
