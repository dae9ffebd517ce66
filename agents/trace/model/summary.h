// devtime::trace model — the plain result types of a trace summary (TraceSummary, OpStats,
// steps, layers, capture facts) and the options that shape it. Filled by summary/ and the
// Neuron reader, read by everyone above; the entry points are in agents/trace/trace_summary.h.
// It knows nothing of protobuf or gRPC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/trace/model/step_samples.h"

namespace devtime::trace {

// One operator, aggregated over the captured (active) steps, grouped by name as
// key_averages() groups by default. Times are microseconds.
struct OpStats {
  std::string name;
  uint64_t calls = 0;
  double self_cpu_us = 0;
  double total_cpu_us = 0;
  double self_device_us = 0;
  double total_device_us = 0;
  // Self device time per ProfilerStep window, in step order (self CPU time when the
  // trace has no device time). Empty when the trace has no ProfilerStep windows. Stored
  // sparsely (only the steps the op occurs in), read like a std::vector<double>.
  StepSamples step_self_device_us;
};

// Device events of one name (a kernel, a memcpy, nc_exec_running), over the whole trace.
struct KernelStats {
  std::string name;
  uint64_t calls = 0;
  double device_us = 0;
};

// One ProfilerStep#N window.
struct StepStats {
  uint32_t step = 0;
  double device_us = 0;  // device time of events attributed to ops inside the window
  double cpu_us = 0;     // self CPU time of the ops inside the window
};

enum class Layer { kFrameworkDispatch, kRuntimeScheduling, kDeviceExecution, kIdle };

// "framework_dispatch", "runtime_scheduling", "device_execution", "idle": the wire's names of
// the layers too (wire::LayerName), by which the agent converts them.
std::string_view LayerName(Layer layer);

struct LayerTime {
  Layer layer;
  double time_us = 0;
};

// A file that belongs to the capture (framework trace, system trace, NEFF, NTFF, ...).
struct ArtifactRef {
  std::string kind;  // "framework_trace", "system_trace", "key_averages", "neff", "ntff", ...
  std::filesystem::path path;
  uint64_t size_bytes = 0;
  std::string pair_key;  // NEFF/NTFF shared hash, empty otherwise
};

// How the capture was made, as far as the files tell.
struct CaptureInfo {
  uint32_t wait_steps = 0;
  uint32_t warmup_steps = 0;
  uint32_t active_steps = 0;
  bool synchronized = false;
  uint64_t events_dropped = 0;
  // When the capture ran, in ns since the Unix epoch, as far as the files tell: the framework
  // trace's first host event start to its last host event end (baseTimeNanoseconds + ts, or ts
  // itself when it is epoch time), else the Neuron session directory's <timestamp> name (then
  // started == finished), else a harness directory's run.json started_at/finished_at. nullopt:
  // the files do not say (relative timestamps, no session name, no run.json times).
  std::optional<int64_t> started_unix_ns;
  std::optional<int64_t> finished_unix_ns;
  // Where the times come from: "trace", "session_directory" or "run_json".
  std::string time_source;
};

enum class DeviceKind { kCpu, kCuda, kNeuron };

// "cpu", "cuda", "neuron": torch's device type names, and the wire's (wire::DeviceKindName).
std::string_view DeviceKindName(DeviceKind kind);

// How device executions recorded outside the framework trace (a Neuron system trace) were joined
// to the ops that launched them (neuron_join.h). Times are microseconds.
struct DeviceJoin {
  uint64_t by_id = 0;     // executions joined by an id both files carry (exec_id, nrt_sequence_id)
  uint64_t by_order = 0;  // executions joined by order on their NeuronCore queue
  uint64_t unjoined = 0;  // executions left unattributed
  double by_id_us = 0;
  double by_order_us = 0;
  double unjoined_us = 0;
  // "id", "order", "id+order" or "none" (nothing joined).
  std::string Method() const {
    if (by_id > 0 && by_order > 0) return "id+order";
    if (by_id > 0) return "id";
    if (by_order > 0) return "order";
    return "none";
  }
};

struct TraceSummary {
  // "kineto-json", "legacy-array", "key-averages-json" or "neuron-dir".
  std::string source_format;
  DeviceKind device_kind = DeviceKind::kCpu;
  bool has_device_time = false;  // false: device columns are absent (CPU-only profile)
  std::vector<OpStats> ops;      // sorted by self device time, then self CPU time, descending
  std::vector<StepStats> steps;  // in step order
  std::vector<LayerTime> layers;
  std::vector<ArtifactRef> artifacts;
  std::map<std::string, std::string> environment;  // versions, host facts, model commit
  CaptureInfo capture;
  // Set when the capture cannot be trusted (quality gate); the run is then INVALID.
  std::optional<std::string> invalid_reason;
  std::vector<std::string> warnings;  // trustworthy but worth telling the user

  // Additions (devtime::trace v1):
  double self_cpu_total_us = 0;  // sum of self CPU over all ops (torch's "Self CPU time total")
  // All counted device time: attributed + unattributed. Equals the sum of self device time of
  // the ops plus unattributed_device_us.
  double device_total_us = 0;
  // Device events whose launching op could not be found (no runtime event with the same
  // correlation, no External id match, or a launch outside every op). Counted in
  // device_total_us, never dropped; a warning says how much.
  double unattributed_device_us = 0;
  uint64_t event_count = 0;  // complete ("X") events read from the trace
  // Set for a Neuron session with a system trace: how its executions were joined to ops.
  std::optional<DeviceJoin> device_join;
  // Device events grouped by name, most device time first (ties by name). All of them: a
  // consumer that keeps the top N sums the rest.
  std::vector<KernelStats> kernels;
  // Operators summed into the kOtherOperatorsName row by SummarizeOptions::max_op_rows (0: none;
  // then every operator has its own row).
  uint64_t folded_ops = 0;
};

// The row that sums the operators past a limit on rows (SummarizeOptions::max_op_rows, and the
// RunSummary's operator limit: agents/contract/contract_fit.h).
inline constexpr char kOtherOperatorsName[] = "(other operators)";

// The quality-gate reason for a device backend whose device time is empty.
inline constexpr char kDeviceTimeEmpty[] = "device backend profiled but device time is empty";

// The kind of a TraceSummary warning, a stable snake_case word for machines
// ("neff_without_ntff", "unattributed_device_events", "executions_not_joined", ...; "other"
// for text this library does not write). Each warning the library writes has its own kind.
std::string WarningKind(std::string_view warning);

// Knobs for Summarize. The defaults follow torch's key_averages() (profiler-formats.md §1.8).
struct SummarizeOptions {
  // Kineto `cat` values whose events are device work, attributed to the launching op.
  std::set<std::string> device_categories = {"kernel", "gpu_memcpy", "gpu_memset"};
  // Kineto `cat` values that are host operators: nested by time per (pid, tid), one table row
  // per name. Legacy traces (no `cat`) treat every event as a host operator.
  std::set<std::string> host_op_categories = {
      "cpu_op",     "user_annotation",     "cuda_runtime",       "cuda_driver",  "xpu_runtime",
      "xpu_driver", "privateuse1_runtime", "privateuse1_driver", "mtia_runtime", "hpu_op"};
  // At most this many operator rows (0: no limit). Past it, the operators with the least time
  // (self device, then self CPU, each below 0 counted as 0, then name: the RunSummary's
  // ranking) are summed into one row kOtherOperatorsName (calls, times, per-step samples) as the
  // rows are made, so a trace with a million distinct names never holds a million rows when
  // its consumer would sum them anyway (`summarize --format json`: wire::kMaxOps, so that the
  // RunSummary's rows are the same as from all the rows). Totals (self_cpu_total_us, steps, layers)
  // stay exact; TraceSummary::folded_ops says how many were summed.
  std::size_t max_op_rows = 0;
};

}  // namespace devtime::trace
