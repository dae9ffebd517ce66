// devtime::analyze — attribution of a regression: what differs between the last good and
// the first bad run.
//
// Pure functions over two runs' per-step figures (store/series.h computes them from the
// stored runs), unit-tested without a database:
//   - operators: self time per step and calls per step, ranked by |Δ time|; an operator that
//     exists in only one run is compared against 0 (a lost fusion shows as new small ops with
//     more calls, and the fused op gone);
//   - layers (framework dispatch, runtime scheduling, device execution, idle): Δ per step;
//   - environment: every key whose value differs, or that exists on one side only.
#pragma once

#include <map>
#include <string>

#include "services/collector/analyze/regression.h"

namespace devtime::analyze {

// One run's side of the comparison, everything per captured step.
struct RunFigures {
  double total_us = 0.0;                   // the series value (device or CPU time per step)
  std::map<std::string, double> op_us;     // op -> self time per step
  std::map<std::string, double> op_calls;  // op -> calls per step
  std::map<std::string, double> layer_us;  // layer name -> time per step
  std::map<std::string, std::string> environment;
};

inline constexpr int kMaxAttributedOps = 10;

Attribution Attribute(const RunFigures& good, const RunFigures& bad);

// "critical" (>= 25 % slower), "warning" (>= 5 %) or "info".
std::string SeverityFor(double relative_change);

}  // namespace devtime::analyze
