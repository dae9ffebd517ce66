// devtime::trace model — a Neuron system trace reduced to what devtime uses, whatever form it
// was read from (JSON fetch API or Explorer JSON: neuron/neuron_reader.h; Perfetto:
// perfetto/pftrace_reader.h): NeuronCore executions (physical-core rows merged), runtime and
// framework intervals, dropped events. Internal to devtime::trace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace devtime::trace {

struct NsInterval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One NeuronCore execution (nc_exec_running, physical-core rows merged): its interval, and what
// can join it to the framework op that launched it.
struct NeuronExecution : NsInterval {
  std::string queue;         // the NeuronCore queue: "<process>/<lnc_idx>" or fetch "<nc_idx>"
  int64_t exec_id = -1;      // exec_id (top level, args or data), -1 when absent
  int64_t sequence_id = -1;  // nrt_sequence_id, -1 when absent
  // The compiled model it ran (perfetto-neuron-monitor.md A4.1, A4.4), as far as the trace says:
  // the NEFF path (the `model_name` arg, else the path in the name `nc_exec_running <neff>`) and
  // the model id (the `model_id` field or arg, else the <id> of the `device_profile` arg
  // `device_profile_model_<id>.pftrace`, the same number as in neff_<id>.neff). Empty when the
  // trace does not say.
  std::string neff;
  std::string model_id;
};

// True for an execution's event name: `nc_exec_running`, or `nc_exec_running <neff>`.
bool IsExecutionName(std::string_view name);

// Fills x->neff and x->model_id from an execution's event name and its `model_name`, `model_id`
// and `device_profile` args (empty when absent); the same rules for every system-trace form.
void SetModelIdentity(std::string_view name, std::string_view model_name, std::string_view model_id,
                      std::string_view device_profile, NeuronExecution* x);

struct NeuronSystemTrace {
  std::string form;  // "fetch-api" or "explorer-json"
  // nc_exec_running, merged per (process, logical core, exec_id) across physical cores.
  std::vector<NsInterval> device;
  std::vector<NeuronExecution> executions;  // the same executions as `device`, with their ids
  // True when `device` is on the host clock (epoch ns): always for form (b), whose JSON output
  // already applies the timestamp_sync_point adjustment (§2.4); for form (a) only when every
  // core had a timestamp_sync_point to adjust with.
  bool device_on_host_clock = false;
  std::vector<NsInterval> runtime;            // software events (nrt_*, nrta_*, kbl_*, ...)
  std::vector<NsInterval> framework;          // framework events carried by the system trace
  uint64_t event_count = 0;                   // event objects read
  uint64_t events_dropped = 0;                // from `warnings` or `events_dropped`
  uint64_t unpaired = 0;                      // fetch-API starts without a stop (or the reverse)
  std::vector<std::string> runtime_warnings;  // `warnings`, verbatim
  std::optional<std::string> invalid_reason;  // negative duration / stop before start
};

// True for the system trace's "hardware" event group (nc_exec_running, cc_running, ...,
// timestamp_sync_point, hw_notify; §2.4): device time, not runtime (software) time.
bool IsNeuronHardwareEvent(std::string_view name);

// One physical core's row of an execution; rows with the same `key` are one execution.
struct ExecutionRow {
  std::string key;
  NeuronExecution execution;
};
// Merges the rows of each execution (first start, last end) and sets out->executions and
// out->device, sorted by (start, end). Used by every system-trace form.
void MergeExecutionRows(const std::vector<ExecutionRow>& rows, NeuronSystemTrace* out);

// "1001 trace events were dropped during capture ..." → 1001 (§2.4); nullopt otherwise.
std::optional<uint64_t> DroppedEventsInWarning(std::string_view warning);

// The same merge for any key type (the fetch API keys rows by a tuple).
// Merges rows that share a key into one execution (first start, last end): the rows of the
// physical cores of one logical core's execution (LNC>1, §2.4). Sets out->device and
// out->executions, sorted by (start, end).
template <typename Key>
void MergeExecutionsByKey(const std::vector<std::pair<Key, NeuronExecution>>& rows,
                          NeuronSystemTrace* out) {
  std::map<Key, NeuronExecution> merged;
  for (const auto& [key, x] : rows) {
    auto [it, inserted] = merged.emplace(key, x);
    if (!inserted) {
      NeuronExecution& m = it->second;
      m.start_ns = std::min(m.start_ns, x.start_ns);
      m.end_ns = std::max(m.end_ns, x.end_ns);
      if (m.sequence_id < 0) m.sequence_id = x.sequence_id;
      if (m.neff.empty()) m.neff = x.neff;
      if (m.model_id.empty()) m.model_id = x.model_id;
    }
  }
  out->executions.clear();
  out->executions.reserve(merged.size());
  for (const auto& [key, x] : merged) out->executions.push_back(x);
  std::sort(out->executions.begin(), out->executions.end(),
            [](const NeuronExecution& a, const NeuronExecution& b) {
              return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns < b.end_ns);
            });
  out->device.clear();
  for (const NeuronExecution& x : out->executions) out->device.push_back({x.start_ns, x.end_ns});
}

}  // namespace devtime::trace
