#include "services/collector/analyze/monitor_judge.h"

#include <algorithm>
#include <cmath>

namespace devtime::analyze {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
  }
  return m;
}

}  // namespace

detect::DetectorOptions WindowDetectorOptions() {
  detect::DetectorOptions options;
  options.min_relative_change = 0.05;
  options.min_segment = 3;
  options.edge_segment = 3;
  // A change is placed within 2 windows of where the split found it: hourly points that keep a
  // little of their daily cycle look like a walk to the detector, whose walk screen would move
  // a step up to refine_window (10) runs, i.e. 10 hours, to an earlier bump of the cycle.
  options.refine_window = 2;
  return options;
}

std::vector<double> Deseasonalise(const std::vector<MonitorPoint>& points, int64_t window_seconds) {
  std::vector<double> values;
  values.reserve(points.size());
  for (const auto& p : points) values.push_back(p.value);
  if (points.size() < 2 * kMonitorSeasonPeriod || window_seconds <= 0) return values;
  std::vector<std::vector<double>> by_phase(kMonitorSeasonPeriod);
  auto phase = [&](const MonitorPoint& p) {
    const int64_t slot = p.window_start_s / window_seconds;
    return static_cast<int>(((slot % kMonitorSeasonPeriod) + kMonitorSeasonPeriod) %
                            kMonitorSeasonPeriod);
  };
  // Each point's deviation from the running median of the whole cycle around it (the points
  // with a full cycle around them only): a step moves the running median within a few points,
  // where a running mean would smear it over the whole cycle and into the profile.
  const std::size_t half = kMonitorSeasonPeriod / 2;
  for (std::size_t i = half; i + half <= points.size(); ++i) {
    std::vector<double> around(values.begin() + static_cast<long>(i - half),
                               values.begin() + static_cast<long>(i + half));
    by_phase[phase(points[i])].push_back(points[i].value - Median(std::move(around)));
  }
  std::vector<double> profile(kMonitorSeasonPeriod, 0.0);
  double mean = 0;
  int filled = 0;
  for (int k = 0; k < kMonitorSeasonPeriod; ++k) {
    if (by_phase[k].empty()) continue;
    profile[k] = Median(by_phase[k]);
    mean += profile[k];
    ++filled;
  }
  if (filled > 0) mean /= filled;
  for (std::size_t i = 0; i < points.size(); ++i) {
    values[i] = points[i].value - (profile[phase(points[i])] - mean);
  }
  return values;
}

absl::StatusOr<std::vector<MonitorChange>> JudgeMonitorSeries(
    const std::vector<MonitorPoint>& points, const detect::DetectorOptions& options,
    bool increases_only) {
  // Under two cycles a cycle cannot be told from a step: nothing is judged yet.
  if (points.size() < 2 * kMonitorSeasonPeriod) return std::vector<MonitorChange>{};
  std::vector<detect::Point> series;
  series.reserve(points.size());
  for (double v : Deseasonalise(points)) series.push_back({.value = v});
  auto changes = detect::Detect(series, options);
  if (!changes.ok()) return changes.status();
  std::vector<MonitorChange> out;
  for (const auto& c : *changes) {
    if (std::abs(c.relative_change) < options.min_relative_change) continue;
    if (increases_only && c.relative_change <= 0) continue;
    out.push_back({.index = c.index,
                   .previous_index = c.previous_index,
                   .before = c.before_mean,
                   .after = c.after_mean,
                   .relative_change = c.relative_change,
                   .p_value = c.p_value});
  }
  return out;
}

}  // namespace devtime::analyze
