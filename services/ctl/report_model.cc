// ToReportModel: the collector's messages (ModelReport, report.h) turned into the plain
// ReportModel the renderer draws (report_model.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "proto/wire/trace_links.h"
#include "services/collector/detect/stats.h"
#include "services/ctl/report.h"
#include "services/ctl/run_diff.h"

namespace devtime::ctl {
namespace {

ReportTime Time(const google::protobuf::Timestamp& t) {
  return {static_cast<double>(t.seconds()) + t.nanos() / 1e9, wire::FormatTime(t)};
}

bool IsCpu(const v1::RunIdentity& id) { return id.device_kind() == v1::DEVICE_KIND_CPU; }

// What the times of a series measure (the series basis, as the collector stores it).
std::string Basis(const SeriesReport& s) {
  if (s.latest) return IsCpu(s.latest->identity()) ? "self CPU" : "device";
  if (!s.runs.empty() && IsCpu(s.runs.back().identity())) return "self CPU";
  return "device";
}

ReportRun Run(const v1::RunInfo& info) {
  return {info.identity().run_id(),
          Time(info.started_at()),
          info.status() == v1::RUN_STATUS_OK,
          wire::RunStatusName(info.status()),
          info.status_reason(),
          info.device_us_per_step()};
}

ReportRunRef Ref(const v1::RunSummary& run) {
  return {run.identity().run_id(), Time(run.started_at())};
}

// µs per step in each layer; nullopt when the run reported none. The first entry of a
// layer counts.
std::optional<ReportLayers> Layers(const v1::RunSummary& run) {
  if (run.layers().empty()) return std::nullopt;
  auto per_step = [&run](v1::Layer layer) {
    for (const auto& l : run.layers()) {
      if (l.layer() == layer) return l.time_us() / StepsOf(run);
    }
    return 0.0;
  };
  return ReportLayers{per_step(v1::LAYER_FRAMEWORK_DISPATCH),
                      per_step(v1::LAYER_RUNTIME_SCHEDULING), per_step(v1::LAYER_DEVICE_EXECUTION),
                      per_step(v1::LAYER_IDLE)};
}

std::optional<ReportBreakdown> Breakdown(const SeriesReport& s) {
  if (!s.latest) return std::nullopt;
  ReportBreakdown b;
  b.latest = Ref(*s.latest);
  b.latest_layers = Layers(*s.latest);
  if (s.baseline) {
    b.baseline = Ref(*s.baseline);
    b.baseline_label = s.baseline_label;
    b.baseline_layers = Layers(*s.baseline);
  }
  RunDiff diff = DiffRuns(s.baseline ? *s.baseline : *s.latest, *s.latest);
  b.basis = diff.after_basis;  // the baseline is of the same series (report.h SplitSeries)
  b.baseline_us = diff.before_us;
  b.latest_us = diff.after_us;
  b.relative_change = diff.relative_change;
  for (const auto& op : diff.ops) {
    b.ops.push_back({op.name, op.before_us, op.after_us, op.kind != OpDelta::Kind::kAdded,
                     op.kind != OpDelta::Kind::kRemoved});
  }
  return b;
}

constexpr std::size_t kTopOps = 5;             // operators in each series' operator history
constexpr std::size_t kHistoryNoiseRuns = 30;  // the fallback noise band's window

// The mean and stddev of the run's per-step times (self CPU on CPU runs); no stddev with
// fewer than two steps.
std::pair<double, std::optional<double>> StepSpread(const v1::RunSummary& run) {
  std::vector<double> totals;
  for (const auto& step : run.steps()) {
    totals.push_back(IsCpu(run.identity()) ? step.cpu_us() : step.device_us());
  }
  if (totals.size() < 2) return {totals.empty() ? 0 : totals[0], std::nullopt};
  auto moments = detect::MeanStd(totals, 1);
  return {moments.mean, moments.stddev};
}

// Each run's noise from its fetched summary; "history" when no run has per-step times.
void NoiseBand(const SeriesReport& s, ReportSeries& series) {
  std::map<std::string, double> noise;
  for (const auto& run : s.recent) {
    if (auto sd = StepSpread(run).second) noise[run.identity().run_id()] = *sd;
  }
  std::vector<double> values;
  for (auto& run : series.runs) {
    if (!run.ok) continue;
    values.push_back(run.us_per_step);
    if (auto it = noise.find(run.run_id); it != noise.end()) run.noise_us = it->second;
  }
  if (!noise.empty()) {
    series.noise_source = "run";
  } else if (values.size() >= 3) {
    // The run-to-run jitter of the newest kHistoryNoiseRuns values, robust to a step between
    // them: the median |difference| of neighbours over its expectation for normal noise
    // (0.6745 × √2 σ).
    std::vector<double> diffs;
    std::size_t from = values.size() > kHistoryNoiseRuns ? values.size() - kHistoryNoiseRuns : 0;
    for (std::size_t i = from + 1; i < values.size(); ++i) {
      diffs.push_back(std::fabs(values[i] - values[i - 1]));
    }
    series.noise_source = "history";
    series.history_noise_us = detect::Median(diffs) / 0.9539;
  }
}

// The listed value of the baseline run (else the latest), or its steps' mean when unlisted.
std::optional<double> Reference(const SeriesReport& s) {
  const auto& run = s.baseline ? s.baseline : s.latest;
  if (!run) return std::nullopt;
  for (const auto& info : s.runs) {
    if (info.identity().run_id() == run->identity().run_id()) return info.device_us_per_step();
  }
  return StepSpread(*run).first;
}

// Runs whose environment differs from the fetched run before them.
std::vector<ReportEnvMarker> EnvMarkers(const std::vector<v1::RunSummary>& recent) {
  std::vector<ReportEnvMarker> markers;
  for (std::size_t i = 1; i < recent.size(); ++i) {
    std::map<std::string, std::pair<std::string, std::string>> keys;  // before, after
    for (const auto& [key, value] : recent[i - 1].environment()) keys[key].first = value;
    for (const auto& [key, value] : recent[i].environment()) keys[key].second = value;
    ReportEnvMarker marker{recent[i].identity().run_id(), Time(recent[i].started_at()), {}};
    for (const auto& [key, values] : keys) {
      if (values.first != values.second) {
        marker.changes.push_back({key, values.first, values.second});
      }
    }
    if (!marker.changes.empty()) markers.push_back(std::move(marker));
  }
  return markers;
}

// The kTopOps operators with the largest per-step time in any fetched run, each over the runs
// that have it. Per-step times as the breakdown computes them (DiffRuns).
std::vector<ReportOpHistory> OpHistory(const std::vector<v1::RunSummary>& recent) {
  std::map<std::string, ReportOpHistory> by_name;
  std::map<std::string, double> largest;
  for (const auto& run : recent) {
    for (const auto& op : DiffRuns(run, run).ops) {
      by_name[op.name].op = op.name;
      by_name[op.name].points.push_back(
          {run.identity().run_id(), Time(run.started_at()), op.after_us});
      largest[op.name] = std::max(largest[op.name], op.after_us);
    }
  }
  std::vector<ReportOpHistory> top;
  for (auto& [name, history] : by_name) top.push_back(std::move(history));
  std::stable_sort(top.begin(), top.end(), [&](const ReportOpHistory& a, const ReportOpHistory& b) {
    return largest[a.op] > largest[b.op];
  });
  if (top.size() > kTopOps) top.resize(kTopOps);
  return top;
}

void AddTraces(const std::string& label, const std::string& run_id,
               const google::protobuf::RepeatedPtrField<v1::Artifact>& traces,
               std::vector<ReportTraces>* out) {
  if (traces.empty()) return;
  ReportTraces kept{label, run_id, {}, wire::OpeningLines(traces)};
  for (const v1::Artifact& a : traces) kept.uris.push_back(a.uri());
  out->push_back(std::move(kept));
}

ReportRegression Regression(const v1::Regression& r) {
  ReportRegression out;
  out.id = r.id();
  out.state = wire::RegressionStateName(r.state());
  out.live = IsLive(r.state());
  out.severity = r.severity();
  out.workload = r.workload();
  out.instance_type = r.instance_type();
  out.basis = r.metric() == "cpu_us_per_step" ? "self CPU" : "device";
  out.summary = r.summary();
  // Issue 25: the culprit hunt's verdict, wherever the report shows the regression.
  if (r.has_hunt() && r.hunt().state() != v1::HUNT_STATE_UNSPECIFIED) {
    out.summary += " — " + (r.hunt().verdict().empty() ? std::string("culprit hunt running")
                                                       : r.hunt().verdict());
  }
  out.relative_change = r.relative_change();
  if (r.kind() == "drift") {
    out.kind = "drift";
    out.drift_rate = absl::StrFormat("%+.1f %%/30 runs since %s", 100.0 * r.drift().slope_per_30(),
                                     r.drift().start_run_id());
  }
  out.first_bad_run_id = r.first_bad_run_id();
  out.first_bad_at = Time(r.first_bad_at());
  for (const auto& op : r.attribution().ops()) out.ops.push_back({op.op(), op.delta_us()});
  for (const auto& change : r.attribution().environment()) {
    out.environment.push_back({change.key(), change.before(), change.after()});
  }
  AddTraces("last good run", r.last_good_run_id(), r.last_good_traces(), &out.traces);
  AddTraces("first bad run", r.first_bad_run_id(), r.first_bad_traces(), &out.traces);
  return out;
}

}  // namespace

bool IsLive(v1::RegressionState state) {
  return state == v1::REGRESSION_STATE_SUSPECTED || state == v1::REGRESSION_STATE_OPEN ||
         state == v1::REGRESSION_STATE_ACKNOWLEDGED;
}

ReportModel ToReportModel(const ModelReport& report) {
  ReportModel model;
  model.model = report.model;
  model.generated_at = Time(report.generated_at);
  for (const auto& s : report.series) {
    ReportSeries& series = model.series.emplace_back();
    series.workload = s.workload;
    series.instance_type = s.instance_type;
    series.basis = Basis(s);
    for (const auto& run : s.runs) series.runs.push_back(Run(run));
    series.breakdown = Breakdown(s);
    NoiseBand(s, series);
    series.reference_us = Reference(s);
    series.env_changes = EnvMarkers(s.recent);
    series.op_history = OpHistory(s.recent);
    series.fetched_runs = s.recent.size();
  }
  for (const auto& r : report.regressions) model.regressions.push_back(Regression(r));
  model.regressions_note = report.regressions_note;
  model.threshold = report.threshold;
  return model;
}

}  // namespace devtime::ctl
