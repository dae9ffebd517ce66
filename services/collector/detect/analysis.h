// The default detector's offline change-point analysis (detect.h, steps 1-5): outlier
// replacement and the seasonal cycle (season.h), hierarchical E-Divisive search with the
// selection-corrected t-test gate, pruning (with the shape test, shape.h, and the edge rule),
// joint steps under slopes and the random-walk test (step 4b), and position refinement, over
// the valid runs of one region of a series.
// Internal to devtime::detect: Detect and Detector (detect.cc) run it over a history, and
// GateNewest (gate.cc) over the recent runs to find the current segment. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "services/collector/detect/detect.h"

namespace devtime::detect {

// The shortest creep: a drift starts at least this many valid runs before the end of its span
// (DetectDrift), and a trend that replaces a staircase (analysis.cc) alike.
inline constexpr size_t kMinCreepRuns = 10;

// The valid (non-NaN) runs of a span of points, with their input indices.
struct Valid {
  std::vector<double> values;
  std::vector<double> noise;  // NaN where unknown
  std::vector<size_t> index;  // input index of each valid run
};

// The valid runs of `points`; input indices are offset by `offset`.
Valid CollectValid(std::span<const Point> points, size_t offset);

// Change points of the valid runs (indices are the runs' input indices), sorted.
std::vector<ChangePoint> AnalyzeValid(const Valid& valid, const DetectorOptions& options);

// CollectValid + AnalyzeValid.
std::vector<ChangePoint> AnalyzeDefault(std::span<const Point> points, size_t offset,
                                        const DetectorOptions& options);

}  // namespace devtime::detect
