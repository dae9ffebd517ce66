#include "tests/bench/ingest/wide_run.h"

#include <random>

#include "tests/support/sample_runs.h"

namespace devtime::bench {

v1::RunSummary WideRun(const std::string& run_id, const std::string& workload,
                       long long started_epoch_seconds, const WideRunShape& shape) {
  std::mt19937 rng(shape.seed);
  std::uniform_real_distribution<double> jitter(0.99, 1.01);
  v1::RunSummary run = testing::OkNeuronRun(
      run_id, {"wide-nightly", "wide", workload, "trn-bench-01", "trn1.32xlarge"},
      started_epoch_seconds, 600);
  (*run.mutable_environment())["neuronx-cc"] = "2.21.18";
  run.mutable_capture()->set_active_steps(static_cast<uint32_t>(shape.steps));
  run.mutable_capture()->set_synchronized(true);
  std::vector<double> step_device(static_cast<size_t>(shape.steps), 0.0);
  double device_total = 0;
  for (int i = 0; i < shape.ops; ++i) {
    const double level = shape.scale * (5.0 + 1000.0 / (1 + i));  // a long tail of small ops
    auto* op = run.add_ops();
    op->set_name("op/" + std::to_string(i));
    op->set_calls(static_cast<uint64_t>(shape.steps) * (1 + i % 4));
    double self = 0;
    for (int s = 0; s < shape.steps; ++s) {
      double sample = level * jitter(rng);
      op->add_step_self_device_us(sample);
      step_device[static_cast<size_t>(s)] += sample;
      self += sample;
    }
    op->set_self_device_us(self);
    op->set_total_device_us(self * 1.1);
    op->set_self_cpu_us(3.0 * shape.steps);
    op->set_total_cpu_us(4.0 * shape.steps);
    device_total += self;
  }
  for (int s = 0; s < shape.steps; ++s) {
    auto* step = run.add_steps();
    step->set_step(static_cast<uint32_t>(s));
    step->set_device_us(step_device[static_cast<size_t>(s)]);
    step->set_cpu_us(2000.0);
  }
  auto* layer = run.add_layers();
  layer->set_layer(v1::LAYER_DEVICE_EXECUTION);
  layer->set_time_us(device_total);
  return run;
}

}  // namespace devtime::bench
