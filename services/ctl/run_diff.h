// The difference between two runs: what `devtimectl compare` prints and what
// `devtimectl check` decides on. Pure functions on the wire messages, no I/O.
#pragma once

#include <string>
#include <vector>

#include "devtime/v1/run.pb.h"

namespace devtime::ctl {

struct OpDelta {
  enum class Kind { kChanged, kAdded, kRemoved };
  std::string name;
  Kind kind = Kind::kChanged;
  double before_us = 0;  // self time per step (device time, or self CPU for CPU runs)
  double after_us = 0;
  double before_calls = 0;  // calls per step
  double after_calls = 0;
};

struct EnvChange {
  std::string key;
  std::string before;  // "" = absent
  std::string after;
};

struct RunDiff {
  std::string basis;     // "device" or "self CPU": what the times measure
  double before_us = 0;  // each run's time per step (wire::TimePerStep: its series value)
  double after_us = 0;
  double relative_change = 0;  // wire::ChangeOf(before_us, after_us).fraction
  double p_value = 1;          // two-sample t-test over the per-step totals; 1 if too few steps
  bool tested = false;         // both runs had >= 2 steps
  std::vector<OpDelta> ops;    // largest |Δ| first
  std::vector<EnvChange> environment;
};

RunDiff DiffRuns(const v1::RunSummary& before, const v1::RunSummary& after);

// The steps a run's totals are spread over, as the collector's series points count them: its
// step records, else the capture's active steps, else 1.
double StepsOf(const v1::RunSummary& run);

struct CheckOptions {
  double min_change = 0.02;  // relative; smaller changes never fail a check
  double max_p = 0.01;       // significance needed when both runs have per-step samples
};

// True when `diff` is a significant slowdown under `options`.
bool IsRegression(const RunDiff& diff, const CheckOptions& options);

std::string RenderDiff(const RunDiff& diff, std::size_t max_ops = 20);

}  // namespace devtime::ctl
