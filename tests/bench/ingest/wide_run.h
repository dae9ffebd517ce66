// Realistic runs for the ingest benchmark and the store's tests: a transformer's profile is
// hundreds of distinct operators with a self-time sample per profiled step (issue 10 sizes
// them at 500 operators x 10 steps).
#pragma once

#include <cstdint>
#include <string>

#include "devtime/v1/run.pb.h"

namespace devtime::bench {

struct WideRunShape {
  int ops = 500;
  int steps = 10;
  uint32_t seed = 1;
  double scale = 1.0;  // every time multiplied by this (a slower or faster run)
};

// A valid OK run of model "wide" on a Neuron device; operator i is "op/<i>" with per-step
// samples around a per-operator level (the same levels for every seed), jittered by 1 %.
v1::RunSummary WideRun(const std::string& run_id, const std::string& workload,
                       long long started_epoch_seconds, const WideRunShape& shape = {});

}  // namespace devtime::bench
