#include "services/collector/analyze/decision.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

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
                absl::StrFormat("%s%s agrees: %+.1f %% against the baseline (z = %.1f)", which,
                                run_id, 100.0 * gate->relative_change, gate->z),
                run_id);
  }
  return Move(Verdict::kRefuted, live, v1::REGRESSION_STATE_INVALID, v1::RESOLUTION_UNSPECIFIED,
              absl::StrFormat("%s%s is back at the baseline (%+.1f %%): not reproduced", which,
                              run_id, 100.0 * gate->relative_change),
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
                                const std::optional<LiveRegression>& live,
                                const AnalyzerOptions& options) {
  if (series.empty() || series.back().run_id != run_id) {
    return Decision{.verdict = Verdict::kSkipped};
  }
  if (!live) return GateNewRun(series, options);
  if (live->state == v1::REGRESSION_STATE_SUSPECTED) return Confirm(run_id, series, *live, options);
  return MaybeResolve(series, *live, options);
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

SeriesChange ChangeOf(const std::string& metric, const std::string& op,
                      const detect::GateResult& gate) {
  return SeriesChange{.metric = metric,
                      .op = op,
                      .before = gate.baseline,
                      .after = gate.value,
                      .relative_change = gate.relative_change,
                      .z = gate.z,
                      .baseline_runs = static_cast<int>(gate.baseline_count)};
}

double ConfidenceOf(double z) { return 1.0 - 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace devtime::analyze
