// devtime::store — neuron-monitor windows (issue 24, "between the nights"): ingest into
// monitor_windows (migration 9), the series built from them, their judgment and the latency
// regressions it opens (rows of `regressions` of kind latency, migration 12, so they live the
// regression lifecycle: regression_store.h), and the reads (runs list --source monitor, the
// report).
//
// Series: per (model, workload, instance type) and metric (device_p50, device_p99, total_p99,
// error_rate), one point per window start: the hosts' windows of that hour merged — their
// latency sketches added (run.proto LatencySketch), so the fleet's p99 is the p99 of all
// executions, not a mean of hosts' p99s — and errors / executions for error_rate.
//
// Judgment (analyze/monitor_judge.h) runs after the ingest that brings the first window of a
// newer hour for its series (so the hour before is complete for the hosts that were on time),
// over the last 14 days. A change found opens one latency regression per series group and
// first bad window (a re-analysis that places it a window or two away finds the open one and
// adds nothing), listing every metric that moved, the hosts that moved (their own level of the
// regression's metric before and after), the environment values that changed (runtime, driver,
// ...), and the nearest nightly profile of the model.
//
// Ingest is idempotent: a window's run id (derived from host, application and window start by
// the agent) is stored once; a re-send, even with different content, is a duplicate.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devtime/v1/collector.pb.h"
#include "services/collector/store/database.h"
#include "services/collector/store/history.h"

namespace devtime::store {

inline constexpr const char* kMonitorMetrics[] = {"device_p50", "device_p99", "total_p99",
                                                  "error_rate"};

struct MonitorSeriesKey {
  std::string model, workload, instance_type;
  auto operator<=>(const MonitorSeriesKey&) const = default;
};

// One hour of a series group, the hosts merged.
struct MonitorHour {
  int64_t window_start_s = 0;
  int64_t window_end_s = 0;
  std::map<std::string, double> values;  // by metric (latencies in µs)
  uint64_t executions = 0;
  int hosts = 0;
};

class MonitorStore {
 public:
  explicit MonitorStore(Database& db) : db_(db), months_(db, {"monitor_windows"}) {}

  // Stores a validated MONITOR run; true when new, false for a duplicate. Then judges its
  // series when this window starts a newer hour (errors of the judgment are logged).
  absl::StatusOr<bool> Ingest(const v1::RunSummary& run);

  // Monitor windows as RunInfo (source MONITOR, monitor figures without sketches), newest
  // first.
  // `after`: keyset paging as RunFilter::after (window start in µs, run id).
  absl::StatusOr<std::vector<v1::RunInfo>> List(
      const std::string& model, const std::string& workload, unsigned limit,
      const std::optional<std::pair<long long, std::string>>& after = std::nullopt);

  // The series group's hours from `since_s` on, oldest first.
  absl::StatusOr<std::vector<MonitorHour>> Hours(const MonitorSeriesKey& key, int64_t since_s);

  // Judges `key` over the hours before `before_s` (exclusive); how many regressions opened.
  absl::StatusOr<int> Judge(const MonitorSeriesKey& key, int64_t before_s);

 private:
  Database& db_;
  MonthPartitions months_;  // of monitor_windows
  std::mutex mu_;
  std::map<MonitorSeriesKey, int64_t> judged_to_;  // hour start judged up to; guarded
};

}  // namespace devtime::store
