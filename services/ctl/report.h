// devtimectl report --model M [--html FILE]: one model's history, the latest run of each
// workload against its baseline, and its live regressions. Everything comes from the
// collector's gRPC API (ListModels, ListRuns, GetRun, ListRegressions) into a ModelReport,
// which ToReportModel turns into the plain values report_html.h renders. Without --html a short
// summary goes to stdout; with it the self-contained page is written to FILE and its path printed.
//
// ListRuns gives one value per run; the noise band (each run's step stddev), the environment
// markers and the operator history need the runs' summaries, so the report fetches those of
// the newest --history-runs (default 20, at most 100) OK runs of each series, one GetRun each:
// older runs are drawn without band and markers. The detector's threshold is not on the wire
// either: the charts draw detect.h's default (1 %) unless --min-change says otherwise.
//
// A collector that does not serve regressions yet (ListRegressions UNIMPLEMENTED) still gets
// a report: without markers and table, and with a note saying why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "devtime/v1/collector.pb.h"
#include "devtime/v1/regressions.pb.h"
#include "services/collector/detect/detect.h"
#include "services/ctl/cli.h"
#include "services/ctl/report_model.h"
#include "services/ctl/session.h"

namespace devtime::ctl {

// The detector's default smallest relative change (detect.h's min_relative_change). The
// collector does not say which it runs with (its --min-change): `report --min-change` draws
// another.
inline const double kDetectorThreshold = detect::DetectorOptions{}.min_relative_change;

// One (workload, instance type, device kind) of the model as the collector returned it: a
// series of runs (a CPU fallback on a Trainium host is a series of its own, never its baseline).
struct SeriesReport {
  std::string workload;
  std::string instance_type;
  v1::DeviceKind device_kind = v1::DEVICE_KIND_UNSPECIFIED;
  std::vector<v1::RunInfo> runs;           // every listed run, any status, oldest first
  std::optional<v1::RunSummary> latest;    // the newest OK run
  std::optional<v1::RunSummary> baseline;  // what `latest` is compared with, if any
  std::string baseline_label;              // why that run: "last good run of regression 3", ...
  // The summaries (GetRun) of the newest OK runs, at most ReportOptions::history_runs, oldest
  // first: their step spread, environment and operators (ListRuns carries none of them).
  std::vector<v1::RunSummary> recent;
};

// What the report shows, as the collector's messages (GatherReport fills it).
struct ModelReport {
  std::string model;
  google::protobuf::Timestamp generated_at;
  std::vector<SeriesReport> series;         // by workload, then instance type
  std::vector<v1::Regression> regressions;  // of this model, any state, newest first
  std::string regressions_note;             // why regressions may be missing; "" = complete
  double threshold = kDetectorThreshold;    // drawn on each history chart
};

// Suspected, open and acknowledged: the regressions the report's table lists.
bool IsLive(v1::RegressionState state);

// The plain values the renderer draws (report_model.cc).
ReportModel ToReportModel(const ModelReport& report);

struct ReportOptions {
  std::string model;      // required
  std::string html_path;  // "" = text summary on stdout
  std::string since;      // only runs started since (as runs list --since); "" = no bound
  unsigned limit = 1000;  // runs listed, newest first, over all workloads (0 = all)
  // Per series, the summaries of this many newest OK runs are fetched (one GetRun each) for
  // the noise band, the environment markers and the operator history (at most 100).
  unsigned history_runs = 20;
  double min_change = kDetectorThreshold;  // the threshold drawn on the charts
};

// Exit codes as in session.h; 4 (not found) also when the model has no runs, 2 when FILE cannot be
// written or --history-runs / --min-change is out of range.
int Report(const Session& session, const ReportOptions& options);

// What the page shows, from the collector. The baseline of a series is the last good run of
// its newest live regression when there is one, else its previous OK run.
grpc::Status GatherReport(const Session& session, const ReportOptions& options,
                          ModelReport* report);

// Registers `report` on `app`.
void AddReportCommand(CLI::App& app, CommandContext& context);

}  // namespace devtime::ctl
