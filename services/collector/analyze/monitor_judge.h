// devtime::analyze — judging the "between the nights" series (issue 24): hourly points of one
// (model, workload, instance type, metric), from neuron-monitor windows merged over hosts.
//
// Hourly points of a serving fleet have a daily cycle (traffic by hour of day moves latency),
// and the detector's own cycle search (detect/season.h) looks only for periods up to n/4 runs:
// with less than four days of hours it cannot see period 24. So the cycle is taken out here,
// with the period fixed at 24 hours by the hour of day of each window (UTC): the phase profile
// is the median, per hour of day, of the points' deviations from the series' median, centred
// (a step moves all phases alike, so it stays in the residuals, not the profile). The
// deseasonalised points then go through the same detector as the nightly series
// (detect::Detect) with a window configuration (WindowDetectorOptions).
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/collector/detect/detect.h"

namespace devtime::analyze {

inline constexpr int kMonitorSeasonPeriod = 24;  // hourly windows, daily cycle

struct MonitorPoint {
  int64_t window_start_s = 0;  // Unix seconds
  double value = 0;
};

// A change the judge reports: the first bad point and the levels around it.
struct MonitorChange {
  std::size_t index = 0;           // into the points: the first bad window
  std::size_t previous_index = 0;  // the last good window
  double before = 0;               // deseasonalised levels (value units)
  double after = 0;
  double relative_change = 0;  // after / before - 1 (> 0: slower)
  double p_value = 1;
};

// Defaults for hourly points: changes of at least 5 %, p <= 0.001, 3 windows a side.
detect::DetectorOptions WindowDetectorOptions();

// The points less their daily cycle (see above); unchanged when fewer than two days.
std::vector<double> Deseasonalise(const std::vector<MonitorPoint>& points,
                                  int64_t window_seconds = 3600);

// Change points of the deseasonalised series whose relative change is at least
// options.min_relative_change and, when `increases_only`, positive (slower, more errors).
// None before two whole days of points: under two cycles a cycle is not told from a step.
absl::StatusOr<std::vector<MonitorChange>> JudgeMonitorSeries(
    const std::vector<MonitorPoint>& points, const detect::DetectorOptions& options,
    bool increases_only = true);

}  // namespace devtime::analyze
