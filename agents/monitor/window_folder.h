// Folds neuron-monitor reports into one summary per application and window.
//
// Time is the stream's own: it starts at a given instant (now, or a replay's start) and
// advances by each report's measured execution_stats `period` (B1, B9: rates from the group's
// own period, not the gap between lines), so a replay at speed folds exactly as the live
// stream did. A period belongs to the window holding its midpoint; windows are aligned to
// multiples of the window length (UTC). A window is closed (returned) when its application's
// next period falls in a later window, or when the stream's time passes its end.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agents/monitor/latency_sketch.h"
#include "agents/monitor/monitor_config.h"
#include "agents/monitor/monitor_report.h"

namespace devtime::agent::monitor {

struct WindowSummary {
  std::string tag, model, workload;
  absl::Time start, end;
  std::set<std::string> neff_names;
  uint32_t periods = 0;
  double covered_seconds = 0;
  uint64_t executions = 0;
  std::map<std::string, uint64_t> outcomes, errors;
  double utilization_sum = 0;
  uint32_t utilization_periods = 0;
  LatencySketch device, total;
  uint32_t restarts = 0;
  uint32_t unusable_periods = 0;
  int64_t last_pid = 0;
  std::map<std::string, std::string> instance, hardware;  // the latest instance_info, hw info
};

// What one report did, for the agent's counters.
struct FoldStats {
  int apps_used = 0;
  int apps_unmapped = 0;
  int apps_unusable = 0;              // an entry error, a group error, or bad values
  std::vector<std::string> warnings;  // one line per unusable app, naming the tag and why
};

class WindowFolder {
 public:
  WindowFolder(const MonitorConfig& config, absl::Time stream_start);

  // Folds one report; returns the windows it closed, oldest first.
  std::vector<WindowSummary> Add(const MonitorReport& report, FoldStats& stats);
  // The windows still open (for a checkpoint).
  std::vector<WindowSummary> Open() const;
  // Continues from a checkpoint: its open windows and its stream time (never moving back).
  void Restore(std::vector<WindowSummary> open, absl::Time stream_time);
  // A restarted child: the stream's time resumes at max(its time, `now`).
  void Resume(absl::Time now);
  absl::Time stream_time() const { return time_; }

 private:
  absl::Time WindowStart(absl::Time t) const;

  const MonitorConfig& config_;
  absl::Time time_;
  std::map<std::string, WindowSummary> open_;  // by tag
};

}  // namespace devtime::agent::monitor
