// Valid RunSummary messages for tests, built from the TorchNeuron guide's RMSNorm numbers
// (naive: aten::mul 1164.5, add 434.6, rsqrt 415.0, mean 340.8 µs of device time).
#pragma once

#include <string>

#include "devtime/v1/run.pb.h"

namespace devtime::testing {

// Where a test run comes from: its identity but for the run id (the device is a Neuron one).
struct RunOrigin {
  std::string job;
  std::string model;
  std::string workload;
  std::string host;
  std::string instance_type;
};

// What every test run has: run `run_id` from `origin` on a Neuron device, OK, started at
// `started_epoch_seconds` and finished `seconds` later. Nothing is measured yet: the caller
// adds the environment, the capture, the ops and the steps.
v1::RunSummary OkNeuronRun(const std::string& run_id, const RunOrigin& origin,
                           long long started_epoch_seconds, int seconds);

// A complete, valid OK run of the naive RMSNorm on a Neuron device with 3 steps.
v1::RunSummary NaiveRmsNormRun(const std::string& run_id, const std::string& workload = "naive",
                               long long started_epoch_seconds = 1795917600);

// Replaces the naive ops of `run` with the fused RMSNorm's one kernel: aten::rms_norm, 3
// calls, 403.3 µs of self and total device time per step over the 3 steps. Steps and layers
// are left as they are (each test says what the fused steps take).
void FuseRmsNormOps(v1::RunSummary& run);

// The n-th canonical test UUID: 00000000-0000-4000-8000-<n as 12 hex digits>.
std::string TestRunId(int n);

}  // namespace devtime::testing
