// devtime::wire — one definition of a change of time per step, and of how a time or a change
// is written, for every place that computes or prints one: devtimectl compare and check
// (text, markdown, junit), regressions list/show, runs show, the HTML report, the collector's
// stored regression figures and its Alertmanager / webhook text, and the dashboards' labels.
//
// The definition:
//   - a run's time per step is its series value: the mean of its steps' device times (self
//     CPU times for CPU-only runs; a bucket of k steps weighs k), else its operators' self time
//     over its step divisor (the capture's active steps, else 1) — TimePerStep() here, which
//     store::RunValue() in the collector calls for the `device_us_per_step` it stores for every
//     run;
//   - a change goes from a baseline to a candidate time per step: delta = candidate -
//     baseline, fraction = candidate / baseline - 1 (0 when the baseline is no time at all,
//     below 1e-6 µs, as the detector's RelativeChange) — ChangeOf();
//   - it is written "+482.0 %" (FormatChange) and its times "403.3 µs", "2.355 ms", "1.017 s"
//     (ScaledTime, proto/wire/units.h: about four significant digits, so that a 1 % change
//     stays visible).
// What differs from place to place is only the baseline, and each place says which it is:
//   - compare / check: the baseline run you name (one run: its time per step);
//   - a regression (regressions list/show, the report's regression rows, alerts, the
//     dashboards' regression table): the detector's baseline, the median of the series
//     values of the runs since the last change point (at most 30, detect::GateNewest),
//     against the first bad run — robust to one odd baseline night, so it is what the
//     detector decides on and what severity is graded by;
//   - the report's "latest against its baseline": the latest OK run against the last good run
//     of the series' live regression, else the previous OK run.
// When the baseline runs are at one level these agree exactly (the same statistic, the same
// formula, the same rounding); before, the lost RMSNorm fusion read +485.8 % in compare,
// +482.0 % in regressions and +489.3 % in the report, because compare took a run's step mean
// only when both runs had two steps or more (else the sum of its operators' times), the
// report compared the latest run rather than the first bad one, and each printed its own way.
//
// How times and fractions are written lives in proto/wire/units.h (no protobuf, so that the
// trace library, which does not link the messages, writes times the same way). Header-only
// (inline), so that every library uses it without a new link dependency.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "devtime/v1/run.pb.h"
#include "proto/wire/units.h"

namespace devtime::wire {

// A change from `baseline_us` to `candidate_us` (µs per step).
struct Change {
  double baseline_us = 0;
  double candidate_us = 0;
  double delta_us = 0;   // candidate - baseline
  double fraction = 0;   // candidate / baseline - 1; 0 when !defined
  bool defined = false;  // the baseline is some time (>= 1e-6 µs): fraction means something
};

inline Change ChangeOf(double baseline_us, double candidate_us) {
  constexpr double kNoTimeUs = 1e-6;  // detect::RelativeChange's: the two must agree
  Change c{baseline_us, candidate_us, candidate_us - baseline_us, 0, false};
  if (std::fabs(baseline_us) >= kNoTimeUs) {
    c.fraction = candidate_us / baseline_us - 1.0;
    c.defined = true;
  }
  return c;
}

// The profiler steps one entry of a run's `steps` covers: 1, or k for a bucket of k steps
// (run.proto's StepTotal.steps; 0 from older agents is one step).
inline double StepWeight(const v1::StepTotal& step) {
  return step.steps() > 1 ? static_cast<double>(step.steps()) : 1.0;
}

// The profiler steps a run's `steps` cover: their number, or more when they are buckets.
inline double StepsCovered(const v1::RunSummary& run) {
  double steps = 0;
  for (const auto& step : run.steps()) steps += StepWeight(step);
  return steps;
}

// Per-step values as a sample for a test: the mean per step, the standard deviation of one
// step, and the number of steps. A bucket holds the mean of k steps, whose variance is
// sigma^2 / k: each entry weighs k in the mean and in the sum of squares, which then
// estimates sigma^2 without bias over (entries - 1) degrees of freedom, as the plain sample
// variance does for unbucketed steps (every k is 1, and this is exactly that).
struct StepSample {
  double mean = 0;
  double stddev = 0;  // of one step; 0 with fewer than two entries
  double steps = 0;   // steps covered: the n of a test
  int entries = 0;    // values given (buckets, or steps when not bucketed)
};

// `values`, one per entry of run.steps() in order (an op's step_self_device_us, the step
// totals), weighted as above; values past the run's steps weigh 1.
template <typename Values>
StepSample WeightedStepSample(const v1::RunSummary& run, const Values& values) {
  auto weight = [&](int i) { return i < run.steps_size() ? StepWeight(run.steps(i)) : 1.0; };
  StepSample sample;
  double sum = 0;
  for (double v : values) {
    const double w = weight(sample.entries++);
    sample.steps += w;
    sum += w * v;
  }
  if (sample.entries == 0) return sample;
  sample.mean = sum / sample.steps;
  if (sample.entries < 2) return sample;
  double squares = 0;
  int i = 0;
  for (double v : values) squares += weight(i++) * (v - sample.mean) * (v - sample.mean);
  sample.stddev = std::sqrt(squares / (sample.entries - 1));
  return sample;
}

// The run's step totals (device time, or self CPU time for a CPU-only run) as a sample.
inline StepSample StepSampleOf(const v1::RunSummary& run) {
  const bool cpu = run.identity().device_kind() == v1::DEVICE_KIND_CPU;
  std::vector<double> totals;
  totals.reserve(static_cast<std::size_t>(run.steps_size()));
  for (const auto& step : run.steps()) totals.push_back(cpu ? step.cpu_us() : step.device_us());
  return WeightedStepSample(run, totals);
}

// A run's time per step: its series value (see above). Device time, or self CPU time for a
// CPU-only run (run.proto's device_kind). A bucket weighs the steps it covers, so a bucketed
// run's time per step is still its total over its steps.
inline double TimePerStep(const v1::RunSummary& run) {
  if (run.steps_size() > 0) return StepSampleOf(run).mean;
  const bool cpu = run.identity().device_kind() == v1::DEVICE_KIND_CPU;
  double total = 0;
  for (const auto& op : run.ops()) total += cpu ? op.self_cpu_us() : op.self_device_us();
  const double steps = run.capture().active_steps() > 0 ? run.capture().active_steps() : 1;
  return total / steps;
}

// The change's fraction as FormatFraction writes it; `undefined` when its baseline is no time.
inline std::string FormatChange(const Change& change, const char* undefined = "-") {
  return change.defined ? FormatFraction(change.fraction) : undefined;
}

}  // namespace devtime::wire
