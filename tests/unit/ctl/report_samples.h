// Runs for the report tests, built like the collector returns them from GetRun.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "devtime/v1/run.pb.h"

namespace devtime::ctl {

// A Neuron run of `steps` steps in which each op runs once per step for the given µs, and
// the framework dispatch and device execution layers take the given µs per step.
inline v1::RunSummary StepRun(const std::string& run_id, long long started,
                              const std::vector<std::pair<std::string, double>>& ops, int steps,
                              double dispatch_us, double device_us) {
  v1::RunSummary run;
  run.mutable_identity()->set_run_id(run_id);
  run.mutable_identity()->set_device_kind(v1::DEVICE_KIND_NEURON);
  run.mutable_started_at()->set_seconds(started);
  double total = 0;
  for (const auto& [name, us] : ops) {
    auto* op = run.add_ops();
    op->set_name(name);
    op->set_calls(static_cast<uint64_t>(steps));
    op->set_self_device_us(us * steps);
    total += us;
  }
  for (int step = 0; step < steps; ++step) {
    auto* s = run.add_steps();
    s->set_step(static_cast<uint32_t>(step));
    s->set_device_us(total);
  }
  auto* dispatch = run.add_layers();
  dispatch->set_layer(v1::LAYER_FRAMEWORK_DISPATCH);
  dispatch->set_time_us(dispatch_us * steps);
  auto* device = run.add_layers();
  device->set_layer(v1::LAYER_DEVICE_EXECUTION);
  device->set_time_us(device_us * steps);
  return run;
}

}  // namespace devtime::ctl
