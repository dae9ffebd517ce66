// One neuron-monitor report (one NDJSON line of its stdout), reduced to what the agent folds.
// The format: /work/shared/reference/perfetto-neuron-monitor.md part B (B3-B9).
//
// Read with the care of the trace readers: unknown keys are ignored (fields were added in
// 2.5, 2.7, 2.19, 2.21, 2.23), missing or null sections are "no data", a group whose `error`
// is non-empty is unusable for that period (B5), an application entry with an `error` has no
// report (B4), and `inference_stats` (SDK <= 2.4) is read as `execution_stats` (B6.2). A line
// that is not a JSON object is refused with the reason; nothing here throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace devtime::agent::monitor {

// One latency object's percentiles (seconds): p0 p1 p25 p50 p75 p99 p100.
struct Percentiles {
  double seconds[7] = {};
};

// One application's execution_stats for one period.
struct ExecutionPeriod {
  double period_seconds = 0;                  // the group's own measured period
  std::map<std::string, uint64_t> outcomes;   // execution_summary
  std::map<std::string, uint64_t> errors;     // error_summary
  std::optional<Percentiles> device_latency;  // nullopt: null (idle) or unusable
  std::optional<Percentiles> total_latency;
  bool legacy_name = false;  // read from `inference_stats`
};

struct AppReport {
  std::string tag;  // neuron_runtime_tag
  int64_t pid = 0;
  std::string error;                         // the entry's own error: no report
  std::optional<ExecutionPeriod> execution;  // nullopt: absent, or its group had an error
  std::string execution_error;               // the group's error, when it had one
  std::optional<double> utilization_pct;     // mean over the cores listed, when usable
  std::vector<std::string> neff_names;       // memory_used.loaded_models[].name
  std::vector<std::string> problems;         // values that were skipped, with why
};

struct MonitorReport {
  std::vector<AppReport> apps;
  std::map<std::string, std::string> instance;  // instance_info's strings (instance_type, ...)
  std::map<std::string, std::string> hardware;  // neuron_hardware_info's scalars as text
};

// Parses one line. INVALID_ARGUMENT (saying why, e.g. "not JSON: ..." or "not an object")
// for a line that cannot be used at all.
absl::StatusOr<MonitorReport> ParseMonitorLine(std::string_view line);

}  // namespace devtime::agent::monitor
