// devtime::store — what a run contributes to its series, the one definition of the rules
// the ingest (run_store.h) and the analysis (analysis_repository.h) share:
//  - the metric: device time per step for device profiles, self CPU time per step for
//    CPU-only profiles (run.proto);
//  - the step divisor: the run's steps, else the capture's active steps, else 1;
//  - a run's series value: the mean of its per-step times, with their stddev as noise;
//  - a run's figures for attribution: per-step self time and calls of every operator,
//    layers per step, environment.
#pragma once

#include <optional>
#include <string>

#include "devtime/v1/run.pb.h"
#include "services/collector/analyze/attribution.h"

namespace devtime::store {

inline constexpr char kDeviceMetric[] = "device_us_per_step";
inline constexpr char kCpuMetric[] = "cpu_us_per_step";

bool UsesCpuTime(const v1::RunSummary& run);
std::string MetricOf(const v1::RunSummary& run);
std::string MetricFor(v1::DeviceKind kind);

int StepDivisor(const v1::RunSummary& run);

struct SeriesValue {
  double value = 0;
  std::optional<double> noise;  // stddev over steps; none with fewer than two steps
};

// The run's whole-run series value.
SeriesValue RunValue(const v1::RunSummary& run);

// Operator `op`'s series value in `run`: the mean of its per-step self device samples with
// their sample stddev as noise (none with fewer than two samples), else its self time (CPU
// for CPU-only profiles) over the step divisor. Computed exactly as PostgreSQL's float8
// avg() and stddev_samp() do (Youngs-Cramer accumulation), which is how the points were
// computed before ingest computed them here: stored points stay comparable with history.
SeriesValue OpPoint(const v1::RunSummary& run, const v1::OpStat& op);

// The run's figures per step (`total_us`: its series value). An operator's self time per
// step is the mean of its per-step samples, else its self time over the step divisor,
// exactly as its series point (run_store.cc).
analyze::RunFigures FiguresOf(const v1::RunSummary& run, double total_us);

}  // namespace devtime::store
