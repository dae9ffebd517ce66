// A window summary as a wire run (source MONITOR, run.proto MonitorWindow), and back (the
// open windows' checkpoint). The run id is derived from (host, tag, model, workload, window
// start), so a window re-sent after a restart is the same run: the spool and the collector's
// idempotent ingest then store it once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/monitor/window_folder.h"
#include "devtime/v1/run.pb.h"

namespace devtime::agent::monitor {

struct RunContext {
  std::string host;
  std::string instance_type;                       // used when instance_info has none
  std::map<std::string, std::string> environment;  // monitor.environment and the driver
};

std::string WindowRunId(const std::string& host, const WindowSummary& w);
v1::RunSummary ToRunSummary(const WindowSummary& w, const RunContext& context);
WindowSummary FromRunSummary(const v1::RunSummary& run);

// The checkpoint: the stream's time and the open windows, as bytes for a durable file.
std::string EncodeCheckpoint(absl::Time stream_time, const std::vector<WindowSummary>& open,
                             const RunContext& context);
absl::Status DecodeCheckpoint(const std::string& bytes, absl::Time& stream_time,
                              std::vector<WindowSummary>& open);

}  // namespace devtime::agent::monitor
