// What `devtimectl report` shows, in plain values: the renderer (report_html.h) draws a
// ReportModel and knows nothing of the wire. ToReportModel (report.h, report_model.cc) fills
// one from the collector's messages: the one step from wire types to what the page shows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace devtime::ctl {

// A point in time: seconds for the chart's axis, text for people.
struct ReportTime {
  double seconds = 0;  // since the epoch, with the fraction
  std::string text;    // RFC 3339, UTC, whole seconds: "2026-11-29T02:00:00Z"
};

// One listed run of a series: a point (or, when not OK, a cross) of its history chart.
struct ReportRun {
  std::string run_id;
  ReportTime started_at;
  bool ok = false;            // only OK runs are data
  std::string status;         // "ok", "failed", "invalid", ...
  std::string status_reason;  // why it is not OK
  double us_per_step = 0;     // the collector's series value
  // The stddev of the run's per-step times (the within-run noise the detector weighs), when
  // the report fetched the run's summary and it has two or more steps.
  std::optional<double> noise_us;
};

// A run named in the breakdown: the latest OK run or its baseline.
struct ReportRunRef {
  std::string run_id;
  ReportTime started_at;
};

// One operator, latest run against baseline, in µs per step.
struct ReportOp {
  std::string name;
  double baseline_us = 0;
  double latest_us = 0;
  bool in_baseline = true;  // false: the operator is absent from that run
  bool in_latest = true;
};

// µs per step in each layer of a run (0 = not reported).
struct ReportLayers {
  double framework_dispatch = 0;
  double runtime_scheduling = 0;
  double device_execution = 0;
  double idle = 0;
};

// The latest OK run of a series against its baseline (run_diff.h's difference). Without a
// baseline the numbers are the latest run's against itself, and only its side is shown.
struct ReportBreakdown {
  ReportRunRef latest;
  std::optional<ReportRunRef> baseline;
  std::string baseline_label;  // why that run: "last good run of regression 3", ...
  std::string basis;           // what the times measure: "device" or "self CPU"
  double baseline_us = 0;      // the whole run, per step
  double latest_us = 0;
  double relative_change = 0;                   // (latest - baseline) / baseline
  std::vector<ReportOp> ops;                    // largest |Δ| first
  std::optional<ReportLayers> latest_layers;    // nullopt: the run reported no layers
  std::optional<ReportLayers> baseline_layers;  // nullopt: no baseline, or it has no layers
};

struct ReportEnvChange {
  std::string key;
  std::string before;  // "" = absent
  std::string after;
};

// A run whose environment differs from the previous fetched run's: a marker on the time axis.
struct ReportEnvMarker {
  std::string run_id;
  ReportTime started_at;
  std::vector<ReportEnvChange> changes;  // by key
};

// One operator's per-step time in each fetched run that has it, oldest first.
struct ReportOpPoint {
  std::string run_id;
  ReportTime started_at;
  double us = 0;
};
struct ReportOpHistory {
  std::string op;
  std::vector<ReportOpPoint> points;
};

// One (workload, instance type) of the model.
struct ReportSeries {
  std::string workload;
  std::string instance_type;
  std::string basis;                         // what its times measure: "device" or "self CPU"
  std::vector<ReportRun> runs;               // every listed run, any status, oldest first
  std::optional<ReportBreakdown> breakdown;  // nullopt: no OK run
  std::size_t fetched_runs = 0;  // the newest OK runs whose summaries the report fetched
  // Where the noise band comes from: "run" (each run's own step stddev, ReportRun::noise_us),
  // "history" (no fetched run has per-step times: the run-to-run jitter of the newest 30 OK
  // values, history_noise_us, around every point) or "" (neither: no band).
  std::string noise_source;
  double history_noise_us = 0;
  // The detector's threshold is drawn around this value: the baseline run's (else the latest
  // OK run's) time per step; nullopt without an OK run.
  std::optional<double> reference_us;
  std::vector<ReportEnvMarker> env_changes;  // among the fetched runs, oldest first
  std::vector<ReportOpHistory> op_history;   // the top operators, largest first
};

struct ReportOpChange {
  std::string op;
  double delta_us = 0;  // per step, last good -> first bad run
};

// Where one run of a regression keeps its trace files, and how to open them
// (proto/wire/trace_links.h).
struct ReportTraces {
  std::string label;  // "last good run", "first bad run"
  std::string run_id;
  std::vector<std::string> uris;      // the trace files (file://... links)
  std::vector<std::string> openings;  // "Perfetto UI: trace_processor --httpd '...', then ..."
};

// A regression of the model, with what the page says about it.
struct ReportRegression {
  int64_t id = 0;
  std::string state;  // "suspected", "open", "acknowledged", "resolved", "invalid"
  bool live = false;  // suspected, open or acknowledged: listed in the table
  std::string severity;
  std::string workload;
  std::string instance_type;
  // What the series that moved measures ("device" or "self CPU", from the collector's metric):
  // a CPU job and a Trainium job of the same workload and host type are two series.
  std::string basis;
  std::string summary;
  double relative_change = 0;
  std::string kind = "step";  // or "drift"
  std::string drift_rate;     // a drift's "+3.1 %/30 runs since <run>"; "" for a step
  std::string first_bad_run_id;
  ReportTime first_bad_at;
  std::vector<ReportOpChange> ops;  // the attribution's operators, largest |delta| first
  std::vector<ReportEnvChange> environment;
  std::vector<ReportTraces> traces;  // last good, then first bad; runs without any left out
};

struct ReportModel {
  std::string model;
  ReportTime generated_at;
  std::vector<ReportSeries> series;           // by workload, then instance type
  std::vector<ReportRegression> regressions;  // any state, newest first
  std::string regressions_note;               // why regressions may be missing; "" = complete
  double threshold = 0.01;                    // the smallest relative change the detector reports
};

}  // namespace devtime::ctl
