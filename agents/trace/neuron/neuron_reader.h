// Reads a Neuron system trace in its two JSON forms (profiler-formats.md §2.5):
//  (a) the runtime fetch API (`nrt_sys_trace_fetch_events`): {"events": [{"event_type",
//      "phase": "start"|"stop", "tracking_id", "nc_idx", "data": {"nc_timestamp_ns", ...}}]},
//      start/stop paired by (event_type, tracking_id, nc_idx, data.device_core_idx);
//  (b) `neuron-profile view` / `neuron-explorer view --output-format json`
//      (system_profile.json): {"trace_event" | "trace_events": [{"name", "timestamp" (epoch ns),
//      "duration" (ns), "lnc_idx", "exec_id" | "args": {"exec_id"}, ...}], "warnings": [...]}.
// and reduces it to the three layers: NeuronCore execution (`nc_exec_running`, one interval
// per execution after merging the rows of its physical cores), runtime (every other software
// event) and the framework events the system trace carries. Internal to devtime::trace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/trace/model/neuron_system_trace.h"

namespace devtime::trace {

// `padded` holds `size` bytes of JSON followed by simdjson::SIMDJSON_PADDING bytes.
absl::StatusOr<NeuronSystemTrace> ParseNeuronSystemTrace(const std::string& padded, size_t size,
                                                         const std::string& origin);
absl::StatusOr<NeuronSystemTrace> ReadNeuronSystemTrace(const std::filesystem::path& path);

}  // namespace devtime::trace
