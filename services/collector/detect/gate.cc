// GateNewest (detect.h): the online check of last night's point against its current segment.
// The segment is found by the offline analysis (analysis.h) over the recent runs; the verdict
// is a robust z against that baseline plus the same minimum effects as a change point.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "services/collector/detect/analysis.h"
#include "services/collector/detect/detect.h"
#include "services/collector/detect/robust.h"
#include "services/collector/detect/stats.h"

namespace devtime::detect {

std::string GateVerdictName(GateVerdict verdict) {
  static constexpr std::pair<GateVerdict, const char*> kNames[] = {
      {GateVerdict::kNone, "none"},
      {GateVerdict::kSuspected, "suspected"},
      {GateVerdict::kInsufficientHistory, "insufficient_history"},
      {GateVerdict::kMissing, "missing"}};
  for (const auto& [v, name] : kNames) {
    if (v == verdict) return name;
  }
  return "unknown";
}

absl::StatusOr<GateResult> GateNewest(std::span<const Point> points,
                                      const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  if (points.empty()) return absl::InvalidArgumentError("GateNewest: empty series");
  GateResult result;
  const Point newest = points.back();
  result.value = newest.value;
  if (!std::isfinite(newest.value)) {
    result.verdict = GateVerdict::kMissing;
    return result;
  }
  // Up to 2 x gate_window valid runs before the newest; keep those after their last change.
  Valid recent;
  for (size_t i = points.size() - 1; i > 0 && recent.values.size() < 2 * options.gate_window; --i) {
    const Point& p = points[i - 1];
    if (!std::isfinite(p.value)) continue;
    recent.values.push_back(p.value);
    recent.noise.push_back(p.noise);
    recent.index.push_back(i - 1);
  }
  std::reverse(recent.values.begin(), recent.values.end());
  std::reverse(recent.noise.begin(), recent.noise.end());
  std::reverse(recent.index.begin(), recent.index.end());
  size_t from = 0;
  {
    DetectorOptions inner = options;
    inner.mode = Mode::kDefault;
    const std::vector<ChangePoint> cps = AnalyzeValid(recent, inner);
    if (!cps.empty()) {
      from = static_cast<size_t>(
          std::lower_bound(recent.index.begin(), recent.index.end(), cps.back().index) -
          recent.index.begin());
    }
  }
  if (recent.values.size() - from > options.gate_window) {
    from = recent.values.size() - options.gate_window;
  }
  const std::span<const double> baseline(recent.values.data() + from, recent.values.size() - from);
  result.baseline_count = baseline.size();
  if (baseline.size() < options.gate_min_history) {
    result.verdict = GateVerdict::kInsufficientHistory;
    return result;
  }
  std::vector<double> scratch;
  result.baseline = Median(baseline);
  result.baseline_sigma = RobustSigma(baseline, scratch);
  const double n = static_cast<double>(baseline.size());
  const double shift = newest.value - result.baseline;
  result.z = shift / (result.baseline_sigma * std::sqrt(1.0 + 1.57 / n));
  result.relative_change = RelativeChange(newest.value, result.baseline);
  bool effect_ok = std::fabs(result.relative_change) >= options.min_relative_change;
  if (effect_ok && options.min_within_noise_ratio > 0.0) {
    scratch.clear();
    for (size_t i = from; i < recent.noise.size(); ++i) {
      if (std::isfinite(recent.noise[i]) && recent.noise[i] > 0.0) {
        scratch.push_back(recent.noise[i]);
      }
    }
    if (std::isfinite(newest.noise) && newest.noise > 0.0) scratch.push_back(newest.noise);
    if (!scratch.empty()) {
      effect_ok = std::fabs(shift) >= options.min_within_noise_ratio * MedianInPlace(scratch);
    }
  }
  result.verdict = effect_ok && std::fabs(result.z) >= options.gate_threshold
                       ? GateVerdict::kSuspected
                       : GateVerdict::kNone;
  return result;
}

}  // namespace devtime::detect
