#include "services/collector/analyze/decision.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "proto/wire/change.h"

namespace devtime::analyze {
namespace {

std::vector<detect::Point> PointsOf(std::span<const SeriesPoint> series) {
  std::vector<detect::Point> points;
  points.reserve(series.size() + 1);
  for (const auto& p : series) points.push_back(p.point);
  return points;
}

// The newest point judged against `baseline` (and only it).
absl::StatusOr<detect::GateResult> GateAgainst(std::span<const SeriesPoint> baseline,
                                               const detect::Point& newest,
                                               const detect::DetectorOptions& options) {
  std::vector<detect::Point> points = PointsOf(baseline);
  points.push_back(newest);
  return detect::GateNewest(points, options);
}

bool Slower(const detect::GateResult& gate) {
  return gate.verdict == detect::GateVerdict::kSuspected && gate.relative_change > 0.0;
}

// The points strictly before `at_us`.
std::span<const SeriesPoint> Before(std::span<const SeriesPoint> points, int64_t at_us) {
  size_t n = 0;
  while (n < points.size() && points[n].at_us < at_us) ++n;
  return points.first(n);
}

Decision Move(Verdict verdict, const LiveRegression& live, State to, Resolution resolution,
              std::string reason, std::string confirmation_run_id = "") {
  return Decision{.verdict = verdict,
                  .transition = Transition{.regression_id = live.id,
                                           .to = to,
                                           .resolution = resolution,
                                           .actor = "detector",
                                           .reason = std::move(reason),
                                           .confirmation_run_id = std::move(confirmation_run_id)}};
}

absl::StatusOr<Decision> Confirm(const std::string& run_id, std::span<const SeriesPoint> series,
                                 const LiveRegression& live, const AnalyzerOptions& options) {
  auto gate =
      GateAgainst(Before(series, live.first_bad_at_us), series.back().point, options.detector);
  if (!gate.ok()) return gate.status();
  const std::string which = live.confirmation_requested ? "confirmation run " : "next run ";
  if (Slower(*gate)) {
    return Move(Verdict::kConfirmed, live, v1::REGRESSION_STATE_OPEN, v1::RESOLUTION_UNSPECIFIED,
                absl::StrFormat("%s%s agrees: %s against the baseline (z = %.1f)", which, run_id,
                                wire::FormatFraction(gate->relative_change), gate->z),
                run_id);
  }
  return Move(Verdict::kRefuted, live, v1::REGRESSION_STATE_INVALID, v1::RESOLUTION_UNSPECIFIED,
              absl::StrFormat("%s%s is back at the baseline (%s): not reproduced", which, run_id,
                              wire::FormatFraction(gate->relative_change)),
              run_id);
}

absl::StatusOr<Decision> MaybeResolve(std::span<const SeriesPoint> series,
                                      const LiveRegression& live, const AnalyzerOptions& options) {
  std::span<const SeriesPoint> baseline = Before(series, live.first_bad_at_us);
  const size_t after = series.size() - Before(series, live.first_bad_at_us + 1).size();
  const size_t needed = static_cast<size_t>(std::max(options.resolve_runs, 1));
  if (after <= needed) return Decision{};  // the first bad run itself never counts
  double worst = -INFINITY;
  for (size_t i = series.size() - needed; i < series.size(); ++i) {
    auto gate = GateAgainst(baseline, series[i].point, options.detector);
    if (!gate.ok()) return gate.status();
    if (Slower(*gate)) return Decision{};
    worst = std::max(worst, gate->relative_change);
  }
  return Move(Verdict::kResolved, live, v1::REGRESSION_STATE_RESOLVED, v1::RESOLUTION_FIXED,
              absl::StrFormat("the last %d runs are back at the baseline (at most %+.1f %%)",
                              needed, 100.0 * worst));
}

// A detect::Drift over `series` (its indices index `series`) by run.
DriftFigures FiguresOf(std::span<const SeriesPoint> series, const detect::Drift& d) {
  const SeriesPoint& start = series[d.start_index];
  const SeriesPoint& end = series[d.end_index];
  return DriftFigures{.last_good_run_id = d.start_index > 0 ? series[d.start_index - 1].run_id : "",
                      .start_run_id = start.run_id,
                      .start_at_us = start.at_us,
                      .end_run_id = end.run_id,
                      .end_at_us = end.at_us,
                      .runs = static_cast<int>(d.count),
                      .start_value = d.start_value,
                      .end_value = d.end_value,
                      .slope = d.slope,
                      .slope_per_30 = d.slope_per_30,
                      .relative_change = d.relative_change,
                      .kendall_tau = d.kendall_tau,
                      .z = d.z,
                      .p_value = d.p_value,
                      .confidence = d.confidence};
}

bool Slower(const detect::Drift& drift) { return drift.slope > 0.0 && drift.relative_change > 0.0; }

// A slower drift of the series since its last step (the detector's thresholds).
absl::StatusOr<std::optional<detect::Drift>> SlowerDrift(std::span<const SeriesPoint> series,
                                                         const detect::DetectorOptions& options) {
  std::vector<detect::Point> points = PointsOf(series);
  auto drift = detect::CurrentDrift(points, options);
  if (!drift.ok()) return drift.status();
  if (*drift && !Slower(**drift)) return std::nullopt;
  return drift;
}

// A slower creep over the `drift_recent_runs` runs that end at series[end - 1], at the lax p;
// its indices index `series`.
absl::StatusOr<std::optional<detect::Drift>> RecentCreep(std::span<const SeriesPoint> series,
                                                         size_t end,
                                                         const AnalyzerOptions& options) {
  const size_t runs = static_cast<size_t>(std::max(options.drift_recent_runs, 1));
  const size_t from = end > runs ? end - runs : 0;
  std::vector<detect::Point> points = PointsOf(series.subspan(from, end - from));
  detect::DetectorOptions lax = options.detector;
  lax.drift_max_pvalue = std::max(lax.drift_max_pvalue, options.drift_continue_pvalue);
  auto drift = detect::DetectDrift(points, lax);
  if (!drift.ok()) return drift.status();
  if (!*drift || !Slower(**drift)) return std::nullopt;
  (*drift)->start_index += from;
  (*drift)->end_index += from;
  return drift;
}

// Whether the newest point, which the gate suspects, is the series' creep continuing: a
// slower drift up to it whose fitted line it stays within gate_threshold robust sigmas of
// (the residuals of the runs before it from that line). A jump off the line is a step.
absl::StatusOr<bool> DriftExplainsNewest(std::span<const SeriesPoint> series,
                                         const AnalyzerOptions& options) {
  auto drift = SlowerDrift(series, options.detector);
  if (!drift.ok()) return drift.status();
  if (!*drift) return false;
  const detect::Drift& d = **drift;
  auto fitted = [&](size_t i) {
    return d.end_value - d.slope * static_cast<double>(d.end_index - i);
  };
  std::vector<double> residuals;
  for (size_t i = d.start_index; i < d.end_index; ++i) {
    const double v = series[i].point.value;
    if (std::isfinite(v)) residuals.push_back(std::fabs(v - fitted(i)));
  }
  if (residuals.size() < 3) return false;
  std::nth_element(residuals.begin(), residuals.begin() + residuals.size() / 2, residuals.end());
  const double sigma = std::max(1.4826 * residuals[residuals.size() / 2], 1e-9 * d.end_value);
  const double newest = series[d.end_index].point.value - d.end_value;
  return newest <= options.detector.gate_threshold * sigma;
}

// Opens, updates or resolves the series' drift (see decision.h).
absl::StatusOr<Decision> JudgeDrift(std::span<const SeriesPoint> series,
                                    const std::optional<LiveRegression>& live,
                                    const AnalyzerOptions& options) {
  auto recent = RecentCreep(series, series.size(), options);
  if (!recent.ok()) return recent.status();
  if (*recent) {
    auto drift = SlowerDrift(series, options.detector);
    if (!drift.ok()) return drift.status();
    if (!live) {
      if (!*drift) return Decision{};
      return Decision{.verdict = Verdict::kSuspected, .opened_drift = FiguresOf(series, **drift)};
    }
    // The whole span's figures while they still show the creep, else the recent span's.
    return Decision{.updated_drift =
                        DriftUpdate{.regression_id = live->id,
                                    .figures = FiguresOf(series, *drift ? **drift : **recent)}};
  }
  if (!live) return Decision{};
  const size_t needed = static_cast<size_t>(std::max(options.resolve_runs, 1));
  for (size_t k = 1; k < needed && k < series.size(); ++k) {
    auto earlier = RecentCreep(series, series.size() - k, options);
    if (!earlier.ok()) return earlier.status();
    if (*earlier) return Decision{};  // not flat for long enough yet
  }
  return Move(Verdict::kResolved, *live, v1::REGRESSION_STATE_RESOLVED, v1::RESOLUTION_FIXED,
              absl::StrFormat("the series is flat again: no creep over the last %d runs, %d "
                              "times in a row",
                              options.drift_recent_runs, needed));
}

absl::StatusOr<Decision> GateNewRun(std::span<const SeriesPoint> series,
                                    const AnalyzerOptions& options) {
  std::vector<detect::Point> points = PointsOf(series);
  auto gate = detect::GateNewest(points, options.detector);
  if (!gate.ok()) return gate.status();
  if (gate->verdict == detect::GateVerdict::kInsufficientHistory) {
    return Decision{.verdict = Verdict::kInsufficientHistory};
  }
  if (!Slower(*gate) || series.size() < 2) return Decision{};
  return Decision{.verdict = Verdict::kSuspected, .suspected = *gate};
}

}  // namespace

absl::StatusOr<Decision> Decide(const std::string& run_id, std::span<const SeriesPoint> series,
                                const LiveRegressions& live, const AnalyzerOptions& options) {
  if (series.empty() || series.back().run_id != run_id) {
    return Decision{.verdict = Verdict::kSkipped};
  }
  if (live.step) {
    if (live.step->state == v1::REGRESSION_STATE_SUSPECTED) {
      return Confirm(run_id, series, *live.step, options);
    }
    return MaybeResolve(series, *live.step, options);
  }
  auto gated = GateNewRun(series, options);
  if (!gated.ok() || gated->verdict == Verdict::kInsufficientHistory) return gated;
  if (gated->suspected) {
    // A steady creep crosses the gate too; it is one drift, not a staircase of steps.
    auto explained = DriftExplainsNewest(series, options);
    if (!explained.ok()) return explained.status();
    if (!*explained) return gated;
  }
  return JudgeDrift(series, live.drift, options);
}

absl::StatusOr<Decision> Decide(const std::string& run_id, std::span<const SeriesPoint> series,
                                const std::optional<LiveRegression>& live,
                                const AnalyzerOptions& options) {
  return Decide(run_id, series, LiveRegressions{.step = live}, options);
}

std::optional<SeriesChange> OperatorChange(const std::string& run_id, const std::string& metric,
                                           const std::string& op,
                                           std::span<const SeriesPoint> op_series,
                                           const AnalyzerOptions& options) {
  if (op_series.empty() || op_series.back().run_id != run_id) return std::nullopt;
  std::vector<detect::Point> points = PointsOf(op_series);
  auto gate = detect::GateNewest(points, options.detector);
  if (!gate.ok() || !Slower(*gate)) return std::nullopt;
  return ChangeOf(metric, op, *gate);
}

std::optional<SeriesChange> OperatorDrift(const std::string& run_id, const std::string& metric,
                                          const std::string& op,
                                          std::span<const SeriesPoint> op_series,
                                          const AnalyzerOptions& options) {
  if (op_series.empty() || op_series.back().run_id != run_id) return std::nullopt;
  auto drift = SlowerDrift(op_series, options.detector);
  if (!drift.ok() || !*drift) return std::nullopt;
  return ChangeOf(metric, op, FiguresOf(op_series, **drift));
}

SeriesChange ChangeOf(const std::string& metric, const std::string& op, const DriftFigures& drift) {
  // The drift's own relative change: the fitted rise over the creep's robust level (its
  // median run), never over the fitted start value, which can be near or below zero and
  // would flip the sign (issue 21).
  const LevelChange level{.before = drift.start_value,
                          .after = drift.end_value,
                          .relative_change = drift.relative_change,
                          .z = drift.z};
  return SeriesChange{level, metric, op, drift.runs};
}

SeriesChange ChangeOf(const std::string& metric, const std::string& op,
                      const detect::GateResult& gate) {
  // Baseline: the median of the runs since the last change point; candidate: this run.
  const LevelChange level{.before = gate.baseline,
                          .after = gate.value,
                          .relative_change = wire::ChangeOf(gate.baseline, gate.value).fraction,
                          .z = gate.z};
  return SeriesChange{level, metric, op, static_cast<int>(gate.baseline_count)};
}

double ConfidenceOf(double z) { return 1.0 - 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace devtime::analyze
