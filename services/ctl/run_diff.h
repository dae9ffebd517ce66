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
  // What each run's times measure: "device", or "self CPU" for a CPU-only profile. Differ
  // only when a comparison crossed device kinds on purpose (--allow-different device).
  std::string before_basis = "device";
  std::string after_basis = "device";
  double before_us = 0;  // each run's time per step (wire::TimePerStep: its series value)
  double after_us = 0;
  double relative_change = 0;  // wire::ChangeOf(before_us, after_us).fraction
  double p_value = 1;          // two-sample t-test over the per-step totals; 1 if too few steps
  bool tested = false;         // both runs had >= 2 steps
  std::vector<OpDelta> ops;    // largest |Δ| first
  std::vector<EnvChange> environment;
};

RunDiff DiffRuns(const v1::RunSummary& before, const v1::RunSummary& after);

// What the times of a diff are, for a heading: "device time per step", "self CPU time per
// step", or, across device kinds, "time per step (self CPU before, device after)".
std::string TimeLabel(const RunDiff& diff);

// "device" or "self CPU": what a run's times measure (store/series.h's metric).
std::string BasisOf(const v1::RunIdentity& id);

// A part of a run's series identity: the collector keys a series by model, workload,
// instance type and metric (services/collector/store/series.h), the metric following the
// device kind (self CPU time for CPU-only profiles).
enum class IdentityKey { kModel, kWorkload, kInstanceType, kDevice };
inline constexpr IdentityKey kIdentityKeys[] = {IdentityKey::kModel, IdentityKey::kWorkload,
                                                IdentityKey::kInstanceType, IdentityKey::kDevice};
// "model", "workload", "instance-type", "device": as --allow-different takes them.
const char* IdentityKeyName(IdentityKey key);

struct IdentityDifference {
  IdentityKey key;
  std::string before;  // "" = unknown (an instance type nobody reported)
  std::string after;
};

// The parts of the series identity in which `before` and `after` differ, in kIdentityKeys'
// order.
std::vector<IdentityDifference> IdentityDifferences(const v1::RunIdentity& before,
                                                    const v1::RunIdentity& after);

// "device cpu vs neuron, workload fused-pr vs fused": the differences, each as
// "key before vs after".
std::string DifferencesText(const std::vector<IdentityDifference>& differences);

// The series a run belongs to, for people: "rmsnorm/fused trn1.2xlarge neuron" (an unknown
// instance type is left out).
std::string SeriesText(const v1::RunIdentity& id);

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
