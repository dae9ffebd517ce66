// The public entry points of devtime::detect (detect.h): option validation, the whole-history
// Detect in either mode, the Otava-mode adapter and the incremental Detector. The default
// mode's analysis lives in analysis.cc, the newest-point gate in gate.cc.
#include "services/collector/detect/detect.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "services/collector/detect/analysis.h"
#include "services/collector/detect/otava.h"

namespace devtime::detect {
namespace {

std::vector<ChangePoint> AnalyzeOtava(std::span<const Point> points,
                                      const DetectorOptions& options) {
  std::vector<double> series;
  series.reserve(points.size());
  for (const Point& p : points) series.push_back(std::isfinite(p.value) ? p.value : std::nan(""));
  otava::FillMissing(series);
  if (!series.empty() && std::isnan(series.front())) return {};  // no value at all
  otava::Options otava_options;
  otava_options.window = options.otava_window;
  otava_options.max_pvalue = options.otava_max_pvalue;
  otava_options.min_magnitude = options.otava_min_magnitude;
  std::vector<ChangePoint> result;
  for (const otava::ChangePoint& o : otava::ComputeChangePoints(series, otava_options)) {
    ChangePoint cp;
    cp.index = o.index;
    cp.previous_index = o.index - 1;
    cp.before_mean = o.mean_before;
    cp.after_mean = o.mean_after;
    cp.before_stddev = o.std_before;
    cp.after_stddev = o.std_after;
    cp.before_count = o.count_before;
    cp.after_count = o.count_after;
    cp.relative_change = o.ForwardChange();
    cp.t_statistic = -o.t_statistic;  // upstream computes before minus after
    cp.p_value = o.p_value;
    cp.confidence = 1.0 - o.p_value;
    cp.q_hat = o.q_hat;
    result.push_back(cp);
  }
  return result;
}

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError("detector options: " + message);
}

}  // namespace

absl::Status ValidateOptions(const DetectorOptions& o) {
  if (!(o.max_pvalue > 0.0 && o.max_pvalue <= 1.0)) return Invalid("max_pvalue must be in (0, 1]");
  if (!(o.min_relative_change >= 0.0)) return Invalid("min_relative_change must be >= 0");
  if (!(o.min_within_noise_ratio >= 0.0)) return Invalid("min_within_noise_ratio must be >= 0");
  if (o.min_segment < 1) return Invalid("min_segment must be >= 1");
  if (!(o.outlier_threshold >= 0.0)) return Invalid("outlier_threshold must be >= 0");
  if (o.incremental_horizon < 4 * o.min_segment) {
    return Invalid("incremental_horizon must be >= 4 x min_segment");
  }
  if (!(o.edge_pvalue_factor > 0.0 && o.edge_pvalue_factor <= 1.0)) {
    return Invalid("edge_pvalue_factor must be in (0, 1]");
  }
  if (!(o.drift_max_pvalue > 0.0 && o.drift_max_pvalue <= 1.0)) {
    return Invalid("drift_max_pvalue must be in (0, 1]");
  }
  if (o.drift_min_runs < 3) return Invalid("drift_min_runs must be >= 3");
  if (o.gate_window < 2) return Invalid("gate_window must be >= 2");
  if (o.gate_min_history < 2 || o.gate_min_history > o.gate_window) {
    return Invalid("gate_min_history must be in [2, gate_window]");
  }
  if (!(o.gate_threshold > 0.0)) return Invalid("gate_threshold must be > 0");
  if (o.otava_window < 2) return Invalid("otava_window must be >= 2");
  if (!(o.otava_max_pvalue > 0.0 && o.otava_max_pvalue <= 1.0)) {
    return Invalid("otava_max_pvalue must be in (0, 1]");
  }
  if (!(o.otava_min_magnitude >= 0.0)) return Invalid("otava_min_magnitude must be >= 0");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ChangePoint>> Detect(std::span<const Point> points,
                                                const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  if (options.mode == Mode::kOtava) return AnalyzeOtava(points, options);
  return AnalyzeDefault(points, 0, options);
}

absl::StatusOr<std::vector<ChangePoint>> DetectValues(std::span<const double> values,
                                                      const DetectorOptions& options) {
  std::vector<Point> points(values.size());
  for (size_t i = 0; i < values.size(); ++i) points[i].value = values[i];
  return Detect(points, options);
}

absl::StatusOr<Detector> Detector::Create(const DetectorOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  return Detector(options);
}

void Detector::Reset(std::span<const Point> points) {
  points_.assign(points.begin(), points.end());
  change_points_ = options_.mode == Mode::kOtava ? AnalyzeOtava(points_, options_)
                                                 : AnalyzeDefault(points_, 0, options_);
}

void Detector::Append(Point point) {
  points_.push_back(point);
  if (!std::isfinite(point.value)) return;  // a missing night changes nothing
  if (options_.mode == Mode::kOtava) {
    change_points_ = AnalyzeOtava(points_, options_);
    return;
  }
  const size_t n = points_.size();
  // Re-analyse from the start of the second-to-last segment; when that is further back than
  // the horizon, from the horizon, snapped to a known change point close to it so that the
  // region never starts with a few runs of an older level.
  size_t start = change_points_.size() >= 2 ? change_points_[change_points_.size() - 2].index : 0;
  if (n - start > options_.incremental_horizon) {
    start = n - options_.incremental_horizon;
    const size_t margin = 2 * options_.min_segment;
    for (const ChangePoint& cp : change_points_) {
      if (cp.index + margin > start && cp.index <= start + margin) {
        start = cp.index;
        break;
      }
    }
  }
  // Change points up to `start` stay as they are; the region yields those after it.
  std::vector<ChangePoint> updated;
  for (const ChangePoint& cp : change_points_) {
    if (cp.index <= start) updated.push_back(cp);
  }
  const std::span<const Point> region(points_.data() + start, n - start);
  for (const ChangePoint& cp : AnalyzeDefault(region, start, options_)) {
    if (cp.index > start) updated.push_back(cp);
  }
  change_points_ = std::move(updated);
}

}  // namespace devtime::detect
