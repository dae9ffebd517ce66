// devtime::wire — one definition of a change of time per step, and of how a time or a change
// is written, for every place that computes or prints one: devtimectl compare and check
// (text, markdown, junit), regressions list/show, runs show, the HTML report, the collector's
// stored regression figures and its Alertmanager / webhook text, and the dashboards' labels.
//
// The definition:
//   - a run's time per step is its series value: the mean of its steps' device times (self
//     CPU times for CPU-only runs), else its operators' self time over its step divisor (the
//     capture's active steps, else 1) — TimePerStep() here, which store::RunValue() in the
//     collector calls for the `device_us_per_step` it stores for every run;
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

// A run's time per step: its series value (see above). Device time, or self CPU time for a
// CPU-only run (run.proto's device_kind).
inline double TimePerStep(const v1::RunSummary& run) {
  const bool cpu = run.identity().device_kind() == v1::DEVICE_KIND_CPU;
  if (run.steps_size() > 0) {
    double sum = 0;
    for (const auto& step : run.steps()) sum += cpu ? step.cpu_us() : step.device_us();
    return sum / run.steps_size();
  }
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
