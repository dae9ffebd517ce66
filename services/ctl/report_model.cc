// ToReportModel: the collector's messages (ModelReport, report.h) turned into the plain
// ReportModel the renderer draws (report_model.h).
#include <utility>

#include "absl/strings/str_format.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
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
  b.basis = diff.basis;
  b.baseline_us = diff.before_us;
  b.latest_us = diff.after_us;
  b.relative_change = diff.relative_change;
  for (const auto& op : diff.ops) {
    b.ops.push_back({op.name, op.before_us, op.after_us, op.kind != OpDelta::Kind::kAdded,
                     op.kind != OpDelta::Kind::kRemoved});
  }
  return b;
}

ReportRegression Regression(const v1::Regression& r) {
  ReportRegression out;
  out.id = r.id();
  out.state = wire::RegressionStateName(r.state());
  out.live = IsLive(r.state());
  out.severity = r.severity();
  out.workload = r.workload();
  out.instance_type = r.instance_type();
  out.summary = r.summary();
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
  }
  for (const auto& r : report.regressions) model.regressions.push_back(Regression(r));
  model.regressions_note = report.regressions_note;
  return model;
}

}  // namespace devtime::ctl
