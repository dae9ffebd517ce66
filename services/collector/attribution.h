// Attribution of a regression: what differs between the last good and the first bad run.
//
// Pure functions over two runs' per-step figures (loaded by regression_analyzer.cc), so they
// are unit-tested without a database:
//   - operators: self time per step and calls per step, ranked by |Δ time|; an operator that
//     exists in only one run is compared against 0 (a lost fusion shows as new small ops with
//     more calls, and the fused op gone);
//   - layers (framework dispatch, runtime scheduling, device execution, idle): Δ per step;
//   - environment: every key whose value differs, or that exists on one side only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "devtime/v1/regressions.pb.h"

namespace devtime::collector {

// One run's side of the comparison, everything per captured step.
struct RunFigures {
  double total_us = 0.0;                   // the series value (device or CPU time per step)
  std::map<std::string, double> op_us;     // op -> self time per step
  std::map<std::string, double> op_calls;  // op -> calls per step
  std::map<std::string, double> layer_us;  // layer key -> time per step
  std::map<std::string, std::string> environment;
};

inline constexpr int kMaxAttributedOps = 10;

v1::Attribution Attribute(const RunFigures& good, const RunFigures& bad);

// "critical" (>= 25 % slower), "warning" (>= 5 %) or "info".
std::string SeverityFor(double relative_change);

// One line for people and alert annotations, e.g.
// "rmsnorm/fused on trn1.2xlarge: device time per step +484.0 % (403.3 -> 2355.0 us);
//  top: aten::mul +1164.5 us/step (new), ...; changed: neuronx-cc 2.21 -> 2.22" (the
//  operator and environment texts are notify/payloads.h's, as in the alerts).
std::string Summarize(const v1::Regression& regression);

}  // namespace devtime::collector
