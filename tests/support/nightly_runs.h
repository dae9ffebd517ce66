// A nightly RMSNorm run of the TorchNeuron guide's shape (rmsnorm/fused on trn1.2xlarge,
// Neuron, 5 steps), with the ops and noise a test chooses: the histories the regression and
// drift tests upload through the real collector.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "devtime/v1/run.pb.h"

namespace devtime::testing {

inline constexpr int kNightlySteps = 5;

// One op of a run: name, calls per step, self device µs per step.
struct NightlyOp {
  const char* name;
  int calls;
  double device_us;
};
// The fused RMSNorm (one op) and the naive one (five ops, aten::mul 49.5 %).
extern const std::vector<NightlyOp> kFusedRmsNorm;
extern const std::vector<NightlyOp> kNaiveRmsNorm;

struct NightlyRunSpec {
  int n = 0;            // the run id's number
  int64_t started = 0;  // started_at, seconds since the epoch
  std::vector<NightlyOp> ops;
  std::string compiler;  // environment["neuronx-cc"]
  std::string host;
  std::string job;       // "" = an ad-hoc upload
  double noise = 0.005;  // each step's time x uniform(1 - noise, 1 + noise)
  double scale = 1.0;    // every op's time x scale
  std::map<std::string, std::string> environment;  // besides neuronx-cc
};

// Every op's per-step samples draw from `rng`, in op then step order.
v1::RunSummary NightlyRmsNormRun(const NightlyRunSpec& spec, std::mt19937& rng);

}  // namespace devtime::testing
