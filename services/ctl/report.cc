#include "services/ctl/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "proto/wire/time.h"
#include "services/ctl/report_html.h"
#include "services/ctl/report_monitor.h"

namespace devtime::ctl {
namespace {

constexpr unsigned kRegressionLimit = 1000;  // markers reach back this many regressions
constexpr unsigned kMaxHistoryRuns = 100;    // GetRun calls per series

absl::StatusOr<std::optional<google::protobuf::Timestamp>> ParseSince(const std::string& since) {
  if (since.empty()) return std::nullopt;
  auto at = wire::ParseTimeOrAge(since, wire::Clock::now());
  if (!at.ok()) return at.status();
  return wire::ToTimestamp(*at);
}

grpc::Status ListRuns(const Session& session, const ReportOptions& options,
                      std::vector<v1::RunInfo>* runs) {
  v1::ListRunsRequest request;
  request.set_model(options.model);
  auto since = ParseSince(options.since);
  if (!since.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(since.status().message()));
  }
  if (*since) *request.mutable_since() = **since;
  v1::ListRunsResponse response;
  auto status = InvokeAll(session, &Stub::ListRuns, request, options.limit,
                          &v1::ListRunsResponse::mutable_runs, &response);
  runs->assign(response.runs().begin(), response.runs().end());
  return status;
}

// The model's newest neuron-monitor windows (issue 24); none from an older collector.
std::vector<v1::RunInfo> ListMonitorWindows(const Session& session, const std::string& model) {
  v1::ListRunsRequest request;
  request.set_model(model);
  request.set_source("monitor");
  v1::ListRunsResponse response;
  auto status = InvokeAll(session, &Stub::ListRuns, request, kReportMonitorWindows,
                          &v1::ListRunsResponse::mutable_runs, &response);
  std::vector<v1::RunInfo> windows;
  for (const auto& run : response.runs()) {
    if (status.ok() && run.source() == v1::RUN_SOURCE_MONITOR) windows.push_back(run);
  }
  return windows;
}

// Every regression of the model, any state. An older collector without the RPC leaves
// `note` saying so instead of failing the report.
grpc::Status ListRegressions(const Session& session, const std::string& model,
                             std::vector<v1::Regression>* regressions, std::string* note) {
  v1::ListRegressionsRequest request;
  request.set_model(model);
  for (auto state : {v1::REGRESSION_STATE_SUSPECTED, v1::REGRESSION_STATE_OPEN,
                     v1::REGRESSION_STATE_ACKNOWLEDGED, v1::REGRESSION_STATE_RESOLVED,
                     v1::REGRESSION_STATE_INVALID}) {
    request.add_states(state);
  }
  v1::ListRegressionsResponse response;
  auto status = InvokeAll(session, &Stub::ListRegressions, request, kRegressionLimit,
                          &v1::ListRegressionsResponse::mutable_regressions, &response);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    *note =
        "This collector does not serve regressions (ListRegressions is unimplemented): "
        "no regression markers or table.";
    return grpc::Status::OK;
  }
  regressions->assign(response.regressions().begin(), response.regressions().end());
  return status;
}

grpc::Status GetRun(const Session& session, const std::string& run_id,
                    std::optional<v1::RunSummary>* run) {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  v1::GetRunResponse response;
  auto status = Invoke(session, &Stub::GetRun, request, &response);
  if (status.ok()) *run = std::move(*response.mutable_run());
  return status;
}

// The model's runs split by series identity (workload, instance type, device kind), oldest
// first: a series' baseline is always of its own identity.
std::vector<SeriesReport> SplitSeries(const std::vector<v1::RunInfo>& newest_first) {
  std::map<std::tuple<std::string, std::string, int>, SeriesReport> by_key;
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) {
    const auto& id = it->identity();
    SeriesReport& s = by_key[{id.workload(), id.instance_type(), id.device_kind()}];
    s.workload = id.workload();
    s.instance_type = id.instance_type();
    s.device_kind = id.device_kind();
    s.runs.push_back(*it);
  }
  std::vector<SeriesReport> series;
  for (auto& [key, s] : by_key) series.push_back(std::move(s));
  return series;
}

// The collector's metric for the series (store/series.h; regressions.proto names it).
std::string MetricOf(const SeriesReport& s) {
  return s.device_kind == v1::DEVICE_KIND_CPU ? "cpu_us_per_step" : "device_us_per_step";
}

// The newest `count` OK runs of the series, newest first.
std::vector<const v1::RunInfo*> NewestOk(const SeriesReport& s, unsigned count) {
  std::vector<const v1::RunInfo*> newest;
  for (auto it = s.runs.rbegin(); it != s.runs.rend() && newest.size() < count; ++it) {
    if (it->status() == v1::RUN_STATUS_OK) newest.push_back(&*it);
  }
  return newest;
}

// The summary of `run_id`: from `s.recent` when fetched already, else with GetRun.
grpc::Status FindOrGetRun(const Session& session, const SeriesReport& s, const std::string& run_id,
                          std::optional<v1::RunSummary>* run) {
  for (const auto& fetched : s.recent) {
    if (fetched.identity().run_id() == run_id) {
      *run = fetched;
      return grpc::Status::OK;
    }
  }
  return GetRun(session, run_id, run);
}

// Fills `s.recent` (the newest `history_runs` OK runs, and at least the two the breakdown
// may need), `s.latest` and `s.baseline` with GetRun.
grpc::Status LoadSummaries(const Session& session, const std::vector<v1::Regression>& regressions,
                           unsigned history_runs, SeriesReport& s) {
  auto newest = NewestOk(s, std::max(history_runs, 2u));
  for (auto it = newest.rbegin(); it != newest.rend(); ++it) {
    std::optional<v1::RunSummary> run;
    if (auto status = GetRun(session, (*it)->identity().run_id(), &run); !status.ok()) {
      return status;
    }
    s.recent.push_back(std::move(*run));
  }
  if (s.recent.empty()) return grpc::Status::OK;
  s.latest = s.recent.back();
  for (const auto& r : regressions) {  // newest first
    if (IsLive(r.state()) && r.workload() == s.workload && r.instance_type() == s.instance_type &&
        r.metric() == MetricOf(s) && !r.last_good_run_id().empty()) {
      s.baseline_label = "last good run of regression " + std::to_string(r.id());
      return FindOrGetRun(session, s, r.last_good_run_id(), &s.baseline);
    }
  }
  if (s.recent.size() < 2) return grpc::Status::OK;
  s.baseline_label = "previous OK run";
  s.baseline = s.recent[s.recent.size() - 2];
  return grpc::Status::OK;
}

grpc::Status CheckModelExists(const Session& session, const std::string& model) {
  v1::ListModelsResponse response;
  auto status = Invoke(session, &Stub::ListModels, v1::ListModelsRequest(), &response);
  if (!status.ok()) return status;
  std::string known;
  for (const auto& m : response.models()) {
    if (m.model() == model) return grpc::Status::OK;
    known += (known.empty() ? "" : ", ") + m.model();
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "no runs of model '" + model + "' (models: " +
                                                       (known.empty() ? "none" : known) + ")");
}

int WriteHtml(const Session& session, const std::string& path, const std::string& html) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << html;
    out.close();
    if (!out) {
      session.err << "devtimectl: cannot write " << path << "\n";
      return 2;
    }
  }
  std::error_code ignored;
  auto absolute = std::filesystem::absolute(path, ignored);
  session.out << (absolute.empty() ? path : absolute.string()) << "\n";
  return 0;
}

}  // namespace

grpc::Status GatherReport(const Session& session, const ReportOptions& options,
                          ModelReport* report) {
  report->model = options.model;
  report->generated_at = wire::ToTimestamp(wire::Clock::now());
  if (auto status = CheckModelExists(session, options.model); !status.ok()) return status;
  std::vector<v1::RunInfo> runs;
  if (auto status = ListRuns(session, options, &runs); !status.ok()) return status;
  auto status =
      ListRegressions(session, options.model, &report->regressions, &report->regressions_note);
  if (!status.ok()) return status;
  report->series = SplitSeries(runs);
  report->threshold = options.min_change;
  for (auto& s : report->series) {
    status = LoadSummaries(session, report->regressions, options.history_runs, s);
    if (!status.ok()) return status;
  }
  return grpc::Status::OK;
}

int Report(const Session& session, const ReportOptions& options) {
  if (auto since = ParseSince(options.since); !since.ok()) {
    session.err << "devtimectl: --since: " << since.status().message() << "\n";
    return 2;
  }
  if (options.history_runs > kMaxHistoryRuns) {
    session.err << "devtimectl: --history-runs: at most " << kMaxHistoryRuns << "\n";
    return 2;
  }
  if (!(options.min_change > 0 && options.min_change < 1)) {
    session.err << "devtimectl: --min-change: a fraction in (0, 1), e.g. 0.01 for 1 %\n";
    return 2;
  }
  ModelReport report;
  if (auto status = GatherReport(session, options, &report); !status.ok()) {
    return ReportError(session, status);
  }
  const ReportModel model = ToReportModel(report);
  const std::vector<v1::RunInfo> windows = ListMonitorWindows(session, options.model);
  if (options.html_path.empty()) {
    session.out << RenderReportText(model) << RenderMonitorText(windows);
    return 0;
  }
  std::string html = RenderReportHtml(model);
  if (auto end = html.rfind("</body>"); end != std::string::npos) {
    html.insert(end, RenderMonitorHtml(windows));
  }
  return WriteHtml(session, options.html_path, html);
}

void AddReportCommand(CLI::App& app, CommandContext& context) {
  auto options = std::make_shared<ReportOptions>();
  auto* report = app.add_subcommand(
      "report", "one model: history charts, latest run against its baseline, live regressions");
  report->add_option("--model", options->model, "the model")->required();
  report->add_option("--html", options->html_path,
                     "write a self-contained HTML page to this file (else a text summary)");
  report->add_option(
      "--since", options->since,
      "only runs started since: 2026-11-01, 2026-11-01T02:00:00Z or an age like 30d");
  report->add_option("--limit", options->limit, "at most this many runs, newest first")
      ->capture_default_str();
  report
      ->add_option("--history-runs", options->history_runs,
                   "per workload, fetch this many newest OK runs (noise band, environment "
                   "markers, operator history; at most 100)")
      ->capture_default_str();
  report
      ->add_option("--min-change", options->min_change,
                   "the detector threshold drawn on the charts (the collector's --min-change)")
      ->capture_default_str();
  OnParsed(report, context, [options](const Session& s) { return Report(s, *options); });
}

}  // namespace devtime::ctl
