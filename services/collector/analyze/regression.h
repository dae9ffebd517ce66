// devtime::analyze — a regression as the analyzer reasons about it: plain structs, no
// protobuf messages, no SQL. store/regression_codec.h converts them to and from the wire
// messages (regressions.proto) that the database rows and the RPCs carry.
//
// States and resolutions are the generated enums of regressions.proto: plain C++ enums
// whose stored names live once, in proto/wire/names.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devtime/v1/regressions.pb.h"

namespace devtime::analyze {

using State = v1::RegressionState;
using Resolution = v1::Resolution;

// One operator's self time per step in the last good and the first bad run.
struct OpDelta {
  std::string op;
  double before_us = 0.0;
  double after_us = 0.0;
  double delta_us = 0.0;
  double before_calls = 0.0;  // per step
  double after_calls = 0.0;   // per step
  double share = 0.0;         // delta_us / the run's delta (0 when the run did not move)
};

struct LayerDelta {
  std::string layer;  // wire::LayerName: framework_dispatch, runtime_scheduling, ...
  double before_us = 0.0;
  double after_us = 0.0;
  double delta_us = 0.0;
};

// A key whose value differs, or that exists on one side only ("" on the other).
struct EnvironmentChange {
  std::string key;
  std::string before;
  std::string after;
};

struct Attribution {
  std::vector<OpDelta> ops;                    // largest |delta| first, at most kMaxAttributedOps
  std::vector<LayerDelta> layers;              // largest delta first
  std::string dominant_layer;                  // the layer that grew most ("" = none grew)
  std::vector<EnvironmentChange> environment;  // sorted by key
};

// How a series' level moved: before -> after per step, after / before - 1, and the
// detector's z (the gate's robust z, or a drift's Mann-Kendall z).
struct LevelChange {
  double before = 0.0;
  double after = 0.0;
  double relative_change = 0.0;
  double z = 0.0;
};

// One series that moved with the regression: the whole run (op "") or one operator.
struct SeriesChange : LevelChange {
  std::string metric;
  std::string op;
  int baseline_runs = 0;
};

// (model, workload, instance type, metric): what a regression is a regression of.
struct SeriesKey {
  std::string model;
  std::string workload;
  std::string instance_type;
  std::string metric;  // store/series.h: device_us_per_step or cpu_us_per_step
};

// What a regression is: a step (a jump of the level at one run) or a drift (a slow creep).
enum class Kind { kStep, kDrift };
inline const char* KindName(Kind kind) { return kind == Kind::kDrift ? "drift" : "step"; }

// A drift's figures (detect::Drift over the series since its last step), by run.
struct DriftFigures {
  std::string last_good_run_id;  // the run before the creep ("" = it starts at the first run)
  std::string start_run_id;      // where the creep starts
  int64_t start_at_us = 0;
  std::string end_run_id;  // the newest run of the drift
  int64_t end_at_us = 0;
  int runs = 0;               // valid runs from start to end
  double start_value = 0.0;   // fitted level at the start, per step
  double end_value = 0.0;     // fitted level at the newest run
  double slope = 0.0;         // per step per run
  double slope_per_30 = 0.0;  // 0.03 = +3 % every 30 runs
  double relative_change = 0.0;
  double kendall_tau = 0.0;
  double z = 0.0;
  double p_value = 1.0;
  double confidence = 0.0;
};

// The live drift of a series continues: its new figures.
struct DriftUpdate {
  int64_t regression_id = 0;
  DriftFigures figures;
};

// A regression the analyzer opens: a step (state suspected) or a drift (state open).
struct NewRegression {
  SeriesKey series;
  std::string job;
  std::string host;
  std::string severity;  // SeverityFor(relative_change)
  std::string last_good_run_id;
  std::string first_bad_run_id;
  double before = 0.0;  // baseline, per step
  double after = 0.0;   // the first bad run, per step
  double relative_change = 0.0;
  double z = 0.0;
  double confidence = 0.0;
  double baseline_sigma = 0.0;
  int baseline_count = 0;
  std::vector<SeriesChange> series_changes;  // the whole run first
  Attribution attribution;
  std::optional<int64_t> confirmation_request_id;  // the run-now that will confirm it
  std::string reason;                              // the creation's transition reason
  Kind kind = Kind::kStep;
  State state = v1::REGRESSION_STATE_SUSPECTED;
  std::optional<DriftFigures> drift;  // kind drift
};

// What the analyzer needs to know of a live (suspected, open, acknowledged) regression.
struct LiveRegression {
  int64_t id = 0;
  State state = v1::REGRESSION_STATE_SUSPECTED;
  int64_t first_bad_at_us = 0;  // started_at of the first bad run, µs since the epoch
  bool confirmation_requested = false;
};

// A state change the analyzer (or a person) asks for.
struct Transition {
  int64_t regression_id = 0;
  State to = v1::REGRESSION_STATE_UNSPECIFIED;
  Resolution resolution = v1::RESOLUTION_UNSPECIFIED;
  std::string actor;
  std::string reason;
  std::string confirmation_run_id;  // "" = none
};

}  // namespace devtime::analyze
